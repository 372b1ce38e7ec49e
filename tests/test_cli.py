"""The CLI end to end on real WikiMIA text, and its one-line errors on bad input."""

from __future__ import annotations

import json

import pytest
from conftest import ROOT, WIKIMIA
from typer.testing import CliRunner

from verifier.baselines.exchangeability import check_exchangeable
from verifier.cli import app

runner = CliRunner()


@pytest.fixture(scope="module")
def sample(tmp_path_factory, wikimia64):
    rows = wikimia64[:20] + wikimia64[-20:]
    path = tmp_path_factory.mktemp("data") / "sample.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_score_then_evaluate(tiny_model_dir, sample, tmp_path):
    out = tmp_path / "scores.parquet"
    result = runner.invoke(
        app,
        [
            "score",
            "--model",
            str(tiny_model_dir),
            "--data",
            str(sample),
            "--out",
            str(out),
            "--cache-dir",
            str(tmp_path / "c"),
        ],
    )
    assert result.exit_code == 0, result.output
    assert out.exists() and not list(tmp_path.glob(".*.partial"))
    result = runner.invoke(app, ["evaluate", str(out), "--json"])
    assert result.exit_code == 0, result.output
    rows = {row["name"]: row for row in json.loads(result.stdout)}
    assert {"loss", "zlib", "min_k", "min_k_pp", "gap_k", "blind_classifier", "latest_year"} <= set(rows)
    assert rows["blind_classifier"]["kind"] == "blind" and rows["loss"]["kind"] == "signal"
    # One number for the blind classifier: evaluate gives the AUC and interval the audit's checks give.
    texts = [json.loads(line) for line in sample.read_text().splitlines()]
    check = check_exchangeable(
        [r["text"] for r in texts if r["label"] == 1], [r["text"] for r in texts if r["label"] == 0], seed=0
    )
    blind = rows["blind_classifier"]
    assert (blind["auc"], blind["auc_ci_low"], blind["auc_ci_high"]) == (
        check.auc_corrected,
        check.ci_low,
        check.ci_high,
    )
    assert all(r["n_members"] + r["n_nonmembers"] == 40 for r in rows.values())
    table = runner.invoke(app, ["evaluate", str(out)])
    assert "blind_classifier (blind, no model)" in table.stdout and "Null hypothesis" in table.stdout


def test_score_prefixed_and_calibrated_signals_then_evaluate(tiny_model_dir, sample, tmp_path):
    """ReCaLL and Con-ReCall with prefix documents drawn from the labelled data (left out of the
    table), DC-PDD with a table counted by 'verifier frequencies', PAC: all beside the blind rows."""
    table = tmp_path / "freq.npz"
    result = runner.invoke(
        app, ["frequencies", str(tiny_model_dir), str(WIKIMIA / "length128.jsonl"), "--out", str(table)]
    )
    assert result.exit_code == 0 and "tokenizer" in result.output, result.output
    out = tmp_path / "scores.parquet"
    base = [
        "score",
        "--model",
        str(tiny_model_dir),
        "--data",
        str(sample),
        "--out",
        str(out),
        "--cache-dir",
        str(tmp_path / "c"),
        "--max-tokens",
        "64",
        "--prefix-documents",
        "2",
    ]
    signals = [arg for name in ("loss", "recall", "con_recall", "dc_pdd", "pac") for arg in ("--signal", name)]
    result = runner.invoke(
        app, [*base, *signals, "--token-frequencies", str(table), "--signal-param", "pac.augmentations=2"]
    )
    assert result.exit_code == 0, result.output
    rows = {row["name"]: row for row in json.loads(runner.invoke(app, ["evaluate", str(out), "--json"]).stdout)}
    assert {"recall", "con_recall", "dc_pdd", "pac", "blind_classifier"} <= set(rows)
    assert all(r["n_members"] + r["n_nonmembers"] == 36 for r in rows.values())  # 2 + 2 prefix documents left out
    # Without labels there is nothing known to prefix with; a table of another tokenizer is refused.
    refused = runner.invoke(app, [*base, "--signal", "recall", "--label-field", ""])
    assert "labelled" in one_line_error(refused)
    other = ROOT / "verifier" / "examples" / "data" / "frequencies" / "pg19-openings.smollm2-135m.npz"
    refused = runner.invoke(app, [*base, "--signal", "dc_pdd", "--token-frequencies", str(other)])
    assert "another tokenizer" in one_line_error(refused)


def one_line_error(result) -> str:
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1, result.output
    return lines[0]


def test_missing_label_field_fails_cleanly(tiny_model_dir, tmp_path):
    out = tmp_path / "s.parquet"
    result = runner.invoke(
        app,
        [
            "score",
            "--model",
            str(tiny_model_dir),
            "--data",
            str(WIKIMIA / "length32.jsonl"),
            "--label-field",
            "member",
            "--out",
            str(out),
        ],
    )
    assert "missing label field 'member'" in one_line_error(result)
    assert not out.exists()


def test_unreadable_model_fails_cleanly(sample, tmp_path):
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "config.json").write_text("{not json")
    assert "cannot load" in one_line_error(runner.invoke(app, ["score", "--model", str(broken), "--data", str(sample)]))
    assert "not a model folder" in one_line_error(
        runner.invoke(app, ["score", "--model", str(tmp_path / "none"), "--data", str(sample)])
    )


def test_evaluate_refuses_unlabelled_and_foreign_files(tiny_model_dir, sample, tmp_path):
    out = tmp_path / "u.parquet"
    result = runner.invoke(
        app,
        [
            "score",
            "--model",
            str(tiny_model_dir),
            "--data",
            str(sample),
            "--label-field",
            "",
            "--out",
            str(out),
            "--cache-dir",
            str(tmp_path),
        ],
    )
    assert result.exit_code == 0, result.output
    assert "no labels" in one_line_error(runner.invoke(app, ["evaluate", str(out)]))
    (tmp_path / "x.parquet").write_bytes(b"not parquet")
    assert "not a readable Parquet" in one_line_error(runner.invoke(app, ["evaluate", str(tmp_path / "x.parquet")]))


def test_an_internal_error_is_one_line_and_exit_1(monkeypatch, tmp_path):
    import verifier.audit

    def broken(*args, **kwargs):
        raise RuntimeError("something broke\nmore detail")

    monkeypatch.setattr(verifier.audit, "audit_to_bundle", broken)
    result = runner.invoke(app, ["audit", "example:wikimia-smollm2", "--no-sign"])
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert result.exit_code == 1 and len(lines) == 1
    assert "internal error: RuntimeError: something broke" in lines[0] and "VERIFIER_DEBUG" in lines[0]


@pytest.mark.parametrize(
    "args, message",
    [
        (["planify", "x.yaml"], "No such command 'planify'"),
        (["verify"], "Missing argument"),
        (["index", "query", "--ngram", "x", "i"], "Invalid value for '--ngram'"),
    ],
)
def test_usage_errors_are_the_users_with_the_usage_line_and_exit_2(args, message):
    """typer ships its own copy of click; its usage errors were reported as bugs ("internal error: UsageError")."""
    result = runner.invoke(app, args)
    assert result.exit_code == 2 and message in result.output and "internal error" not in result.output
    assert "Usage: " in result.output and "Try " in result.output


def test_bundled_example_names_are_checked():
    result = runner.invoke(app, ["audit", "example:nope", "--no-sign"])
    assert (
        result.exit_code == 2
        and "no such bundled example; bundled: example:api-logprobs-wikimia, example:api-wikimia, "
        "example:corpus-pg19, example:corpus-wikimia-decontaminated, example:marks-testbed, example:testbed, "
        "example:wikimia-smollm2"
        in result.output
    )


def test_index_commands_build_digest_query_and_refuse_in_one_line(tmp_path):
    corpus = ROOT / "verifier" / "examples" / "data" / "corpus" / "demo-v1"
    digest = runner.invoke(app, ["corpus", "digest", str(corpus)])
    assert (
        digest.exit_code == 0
        and "corpus sha256 9888ca4a77f899e825ebbf3fc4a8d90b422383d9eee960f64905593f11c86beb" in digest.output
    )
    built = runner.invoke(
        app, ["index", "build", str(corpus / "wikipedia-events.jsonl"), "--out", str(tmp_path / "ix")]
    )
    assert built.exit_code == 0 and "corpus sha256" in built.output and "indexed 139 documents" in built.output
    text = json.loads((corpus / "wikipedia-events.jsonl").read_text().splitlines()[0])["text"]
    query = runner.invoke(app, ["index", "query", str(tmp_path / "ix"), text, "--json"])
    data = json.loads(query.output)
    assert query.exit_code == 0 and data["lookup"]["verbatim"] and data["found"]["count"] == 1
    again = runner.invoke(app, ["index", "build", str(corpus), "--out", str(tmp_path / "ix")])
    assert again.exit_code == 2 and "exists (use --force" in again.output
    (tmp_path / "ix" / "shard-00000" / "sa.bin").write_bytes(b"\0" * 8)
    broken = runner.invoke(app, ["index", "query", str(tmp_path / "ix"), "x"])
    assert broken.exit_code == 2 and "sa.bin" in broken.output and "Traceback" not in broken.output
    (tmp_path / "bin.txt").write_bytes(b"\x00\x01")
    binary = runner.invoke(app, ["index", "build", str(tmp_path / "bin.txt"), "--out", str(tmp_path / "ix2")])
    assert binary.exit_code == 2 and "bin.txt: binary file" in binary.output
