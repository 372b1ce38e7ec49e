"""What a first-time user meets before any number is computed: the version, exit statuses a
pipeline can gate on, inputs refused in one line before a model loads (with the nearest key, route
or model named, and YAML errors at line:column), an identical re-run that finds its bundle, and
Ctrl-C that says what was kept."""

from __future__ import annotations

import json
import shutil

import pytest
import yaml
from conftest import ROOT, WIKIMIA, corpus_claim, write_refused_claim
from typer.testing import CliRunner

import verifier
from verifier.cli import app
from verifier.verdicts import EXIT_CONTRADICTED, EXIT_HOLDS, EXIT_NO_RESULT, Verdict, exit_status

runner = CliRunner()
EXAMPLES = ROOT / "verifier" / "examples"


def one_line(result) -> str:
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1, result.output
    return " ".join(lines[0].split())


def test_version():
    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0 and result.output.strip() == f"verifier {verifier.__version__}"


def test_exit_status_carries_the_verdict_and_a_batch_its_worst_claim():
    assert exit_status([Verdict.VERIFIED]) == exit_status(["SUPPORTED"]) == EXIT_HOLDS == 0
    assert exit_status(["CONTRADICTED"]) == EXIT_CONTRADICTED == 3
    assert {exit_status([v]) for v in ("INCONCLUSIVE", "REJECTED-METHOD", "UNVERIFIABLE")} == {EXIT_NO_RESULT} == {4}
    assert exit_status(["SUPPORTED", "INCONCLUSIVE", "CONTRADICTED", "VERIFIED"]) == 3
    assert exit_status(["SUPPORTED", "UNVERIFIABLE"]) == 4 and exit_status([]) == 0
    with pytest.raises(ValueError):
        exit_status(["PASSED"])


def test_audit_exits_with_its_verdict_and_an_identical_rerun_finds_its_bundle(tmp_path):
    out = ["--no-sign", "--out", str(tmp_path / "ev"), "--cache-dir", str(tmp_path / "c")]
    verified = runner.invoke(app, ["audit", str(corpus_claim(tmp_path, "trained_on")), *out])
    assert verified.exit_code == 0, verified.output
    contradicted = runner.invoke(app, ["audit", str(corpus_claim(tmp_path, "not_trained_on")), *out])
    assert contradicted.exit_code == 3 and "The evidence contradicts the claim:" in contradicted.output
    refused = runner.invoke(app, ["audit", str(write_refused_claim(tmp_path, "refused")), *out])
    assert refused.exit_code == 4 and "The evidence offered cannot test the claim:" in refused.output
    again = runner.invoke(app, ["audit", str(corpus_claim(tmp_path, "not_trained_on")), *out])
    assert again.exit_code == 3 and "already holds these very findings" in again.output
    assert len(list((tmp_path / "ev").iterdir())) == 3
    # A signed run does not pass off the unsigned bundle as its own: it refuses, as before.
    assert runner.invoke(app, ["keys", "generate", "--out", str(tmp_path / "k.key")]).exit_code == 0
    signed = runner.invoke(
        app,
        [
            "audit",
            str(corpus_claim(tmp_path, "not_trained_on")),
            "--out",
            str(tmp_path / "ev"),
            "--sign-key",
            str(tmp_path / "k.key"),
            "--cache-dir",
            str(tmp_path / "c"),
        ],
    )
    assert signed.exit_code == 2 and "refusing to replace it" in signed.output


def _claim(folder, evidence: dict, **model) -> str:
    shutil.copy(WIKIMIA / "length64.jsonl", folder / "docs.jsonl")
    claim = {
        "claim": {"id": "first", "statement": "s", "kind": "trained_on", "made_by": "tests"},
        "model": {"target": "smollm2-135m", **model},
        "evidence": evidence,
    }
    (folder / "claim.yaml").write_text(yaml.safe_dump(claim))
    return str(folder / "claim.yaml")


SAME_PERIOD = {
    "suspect": {"path": "docs.jsonl", "where": {"label": 1}},
    "heldout": {"path": "docs.jsonl", "where": {"label": 1}},
}


@pytest.mark.parametrize(
    "evidence, model, said",
    [
        (
            {
                "suspect": {"path": "docs.jsonl", "where": {"label": 1}},
                "heldout": {"path": "docs.jsonl", "where": {"label": 7}},
            },
            {},
            "evidence.heldout: docs.jsonl: no row has 'label' equal to 7",
        ),
        (
            {"suspect": {"path": "docs.jsonl", "limit": 3}, "heldout": {"path": "docs.jsonl", "offset": 100}},
            {},
            "evidence.suspect has 3 documents; the dataset_inference route needs at least 20 per set",
        ),
        (SAME_PERIOD, {"target": "smollm2-135n"}, "model.target: model smollm2-135n: not found: "),
        (
            SAME_PERIOD,
            {"traning_cutoff": 2024},
            "model.traning_cutoff: not a key here; did you mean 'training_cutoff'?",
        ),
        (
            {"suspect": {"path": "docs.jsonl", "were": {"label": 1}}},
            {},
            "evidence.suspect.were: not a key here; did you mean 'where'?",
        ),
    ],
)
def test_inputs_are_refused_in_one_line_before_any_model_loads(tmp_path, monkeypatch, evidence, model, said):
    import verifier.audit

    def never(*args, **kwargs):
        raise AssertionError("a model was loaded for inputs that cannot be tested")

    monkeypatch.setattr(verifier.audit, "load_target", never, raising=True)
    result = runner.invoke(
        app, ["audit", _claim(tmp_path, evidence, **model), "--no-sign", "--out", str(tmp_path / "ev")]
    )
    assert result.exit_code == 2 and said in one_line(result), result.output
    assert not (tmp_path / "ev").exists()  # nothing signed, nothing written
    if "smollm2-135n" in said:
        assert "did you mean smollm2-135m?" in one_line(result) and "['" not in one_line(result)  # no Python repr


def test_yaml_errors_name_line_and_column(tmp_path):
    bad = tmp_path / "claim.yaml"
    bad.write_text("claim:\n  id: x\n  statement: [unclosed\nmodel: {target: a}\n")
    said = one_line(runner.invoke(app, ["audit", str(bad)]))
    assert f"{bad}:4:6: not valid YAML: expected ',' or ']'" in said


def test_a_mistyped_route_in_a_policy_gets_the_nearest_name(tmp_path):
    policy = yaml.safe_load((ROOT / "verifier" / "policies" / "default.yaml").read_text())
    policy["routes"][0]["route"] = "corpuss"
    (tmp_path / "p.yaml").write_text(yaml.safe_dump(policy))
    claim = yaml.safe_load(write_refused_claim(tmp_path, "typo").read_text()) | {"policy": "p.yaml"}
    (tmp_path / "claim.yaml").write_text(yaml.safe_dump(claim))
    said = one_line(runner.invoke(app, ["audit", str(tmp_path / "claim.yaml"), "--no-sign"]))
    assert "routes.0.route: unknown route 'corpuss'; did you mean 'corpus'?" in said


def test_device_and_dtype_are_checked_and_recorded(tmp_path):
    claim = write_refused_claim(tmp_path, "device")
    said = one_line(runner.invoke(app, ["audit", str(claim), "--device", "gpu"]))
    assert said == "error: --device gpu: use auto, cpu, cuda or cuda:N"
    result = runner.invoke(
        app, ["audit", str(claim), "--device", "cpu", "--dtype", "bf16", "--no-sign", "--out", str(tmp_path / "ev")]
    )
    assert result.exit_code == 4, result.output
    (bundle,) = (tmp_path / "ev").iterdir()
    findings = json.loads((bundle / "findings.json").read_text())
    assert findings["claim"]["model"]["device"] == "cpu" and findings["claim"]["model"]["dtype"] == "bf16"


def test_cuda_asked_for_where_there_is_none_is_an_input_error(tmp_path):
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a CUDA device")
    claim = _claim(tmp_path, SAME_PERIOD)
    said = one_line(runner.invoke(app, ["audit", claim, "--device", "cuda", "--no-sign"]))
    assert "no CUDA device is available" in said


def test_ctrl_c_says_what_was_kept_and_that_a_rerun_resumes(monkeypatch, tmp_path):
    import verifier.audit

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(verifier.audit, "run_audit", interrupted)
    result = runner.invoke(
        app, ["audit", str(write_refused_claim(tmp_path, "c")), "--no-sign", "--out", str(tmp_path / "ev")]
    )
    assert result.exit_code == 130
    said = one_line(result)
    assert said.startswith("stopped by Ctrl-C; 0 documents' scores and 0 API answers were stored in the cache")
    assert "the same command again resumes from them" in said and not (tmp_path / "ev").exists()


def test_init_checks_the_claim_it_writes_and_writes_nothing_it_cannot_audit(tmp_path):
    folder = tmp_path / "audit"
    folder.mkdir()
    shutil.copy(WIKIMIA / "length32.jsonl", folder / "docs.jsonl")
    (folder / "few.jsonl").write_text('{"text": "one"}\n{"text": "two"}\n{"text": "three"}\n')
    claim = folder / "claim.yaml"
    base = ["init", str(claim), "--model", "smollm2-135m", "--made-by", "tests"]
    small = one_line(
        runner.invoke(app, [*base, "--suspect", str(folder / "few.jsonl"), "--heldout", str(folder / "docs.jsonl")])
    )
    assert "not written: evidence.suspect has 3 documents; the dataset_inference route needs at least 20" in small
    assert sorted(p.name for p in folder.iterdir()) == ["docs.jsonl", "few.jsonl"]  # no claim, no draft left
    outside = one_line(runner.invoke(app, [*base, "--suspect", str(WIKIMIA / "length32.jsonl")]))
    assert "outside the claim's folder" in outside and "verifier init" in outside
    typo = one_line(
        runner.invoke(
            app,
            ["init", str(claim), "--model", "smollm2-135", "--made-by", "t", "--suspect", str(folder / "docs.jsonl")],
        )
    )
    assert "did you mean smollm2-135m?" in typo
    made = runner.invoke(app, [*base, "--suspect", str(folder / "docs.jsonl"), "--kind", "decontaminated"])
    assert made.exit_code == 0 and made.stdout.strip() == f"verifier audit {claim}"
    written = yaml.safe_load(claim.read_text())
    assert written["claim"] == {
        "id": "audit",
        "statement": "smollm2-135m was decontaminated of the documents in docs.jsonl.",
        "kind": "decontaminated",
        "made_by": "tests",
    }
    assert written["evidence"] == {"suspect": {"path": "docs.jsonl"}} and written["model"]["device"] == "auto"
    again = one_line(runner.invoke(app, [*base, "--suspect", str(folder / "docs.jsonl")]))
    assert again == f"error: {claim}: exists; not replaced (--force replaces it)"


def test_a_rerun_finds_only_its_own_intact_bundle(tmp_path):
    """A folder of these very findings that someone altered (or signed with another key) is not passed
    off as this run's bundle: the re-run refuses to replace it, as for any other folder there."""
    assert runner.invoke(app, ["keys", "generate", "--out", str(tmp_path / "k.key")]).exit_code == 0
    args = ["audit", str(corpus_claim(tmp_path, "trained_on")), "--out", str(tmp_path / "ev")]
    args += ["--sign-key", str(tmp_path / "k.key"), "--cache-dir", str(tmp_path / "c")]
    assert runner.invoke(app, args).exit_code == 0
    again = runner.invoke(app, args)
    assert again.exit_code == 0 and "already holds these very findings" in again.output
    (bundle,) = (tmp_path / "ev").iterdir()
    report = bundle / "report.html"
    report.write_text(report.read_text().replace("The lookup confirms the claim", "The lookup refutes the claim"))
    altered = runner.invoke(app, args)
    assert altered.exit_code == 2 and "refusing to replace it" in altered.output


def test_every_model_loading_command_takes_device_and_dtype():
    from verifier.cli.options import precision
    from verifier.errors import VerifierError

    for command in (["score"], ["audit"], ["marks", "test"], ["identifiers", "test"], ["corpus", "attribution"]):
        shown = runner.invoke(app, [*command, "--help"], terminal_width=200).output
        assert "--device" in shown and "--dtype" in shown, command
    assert precision("bf16") == "bf16"
    with pytest.raises(VerifierError, match="--dtype f16: use fp32 or bf16"):
        precision("f16")


def test_what_init_writes_reads_back_as_given_and_a_missing_key_names_the_mistyped_one(tmp_path):
    folder = tmp_path / "audit"
    folder.mkdir()
    shutil.copy(WIKIMIA / "length32.jsonl", folder / "docs.jsonl")
    made_by = 'Jos\u00e9 a\u0085b\u2028c "quoted" # not a comment'
    args = ["init", str(folder / "claim.yaml"), "--model", "smollm2-135m", "--suspect", str(folder / "docs.jsonl")]
    assert runner.invoke(app, [*args, "--made-by", made_by]).exit_code == 0
    assert yaml.safe_load((folder / "claim.yaml").read_text())["claim"]["made_by"] == made_by
    device = ["--made-by", "x", "--device", "cpu # x", "--force"]
    assert "use auto, cpu, cuda" in one_line(runner.invoke(app, [*args, *device]))
    claim = yaml.safe_load((folder / "claim.yaml").read_text())
    claim["claim"]["statment"] = claim["claim"].pop("statement")
    (folder / "typo.yaml").write_text(yaml.safe_dump(claim))
    said = one_line(runner.invoke(app, ["audit", str(folder / "typo.yaml")]))
    assert "claim.statment: not a key here; did you mean 'statement'?" in said


def test_an_unsigned_rerun_refuses_an_altered_folder_and_a_rerun_asking_more_rewrites_nothing(tmp_path):
    args = ["audit", str(corpus_claim(tmp_path, "trained_on")), "--out", str(tmp_path / "ev"), "--no-sign"]
    args += ["--cache-dir", str(tmp_path / "c")]
    assert runner.invoke(app, args).exit_code == 0
    assert "already holds these very findings" in runner.invoke(app, args).output
    (bundle,) = (tmp_path / "ev").iterdir()
    (bundle / "report.pdf").unlink()
    altered = runner.invoke(app, args)
    assert altered.exit_code == 2 and "refusing to replace it" in altered.output
    # Asking for a timestamp the existing bundle lacks is never answered with the old bundle.
    stamped = runner.invoke(app, [*args[:-3], "--tsa", "http://127.0.0.1:9/", "--cache-dir", str(tmp_path / "c")])
    assert "already holds" not in stamped.output and stamped.exit_code == 2
