"""The main job end to end: claim -> policy walk -> verdict -> HTML/PDF -> signed bundle -> verify."""

from __future__ import annotations

import copy
import json
import shutil
import subprocess

import numpy as np
import pytest
import yaml
from conftest import ROOT, read_jsonl
from typer.testing import CliRunner

from verifier.audit import run_audit
from verifier.cli import app
from verifier.data import load_documents
from verifier.errors import VerifierError
from verifier.report import render_html
from verifier.targets import ScoreCache
from verifier.targets.cache import text_digest
from verifier.trust.digests import findings_digest

runner = CliRunner()
EXAMPLES = ROOT / "verifier" / "examples"


@pytest.fixture(scope="module")
def testbed_claim(small_testbed, tmp_path_factory):
    """The bundled testbed claim, next to a copy of the session's small testbed as testbed/build/."""
    folder = tmp_path_factory.mktemp("testbed-claim")
    shutil.copy(EXAMPLES / "testbed.yaml", folder / "claim.yaml")
    shutil.copytree(small_testbed.folder, folder / "testbed" / "build")
    return folder / "claim.yaml"


@pytest.fixture(scope="module")
def bundle(testbed_claim, tmp_path_factory):
    work = tmp_path_factory.mktemp("audit")
    assert runner.invoke(app, ["keys", "generate", "--out", str(work / "k.key")]).exit_code == 0
    result = runner.invoke(
        app,
        [
            "audit",
            str(testbed_claim),
            "--out",
            str(work / "evidence"),
            "--sign-key",
            str(work / "k.key"),
            "--cache-dir",
            str(work / "c"),
        ],
    )
    assert result.exit_code == 0, result.output
    (folder,) = (work / "evidence").iterdir()
    return folder


def test_testbed_claim_is_supported_and_bundle_verifies(bundle):
    assert sorted(p.name for p in bundle.iterdir()) == sorted(
        [
            "claim.yaml",
            "policy.yaml",
            "findings.json",
            "scores.parquet",
            "report.html",
            "report.pdf",
            "manifest.json",
            "public_key.pem",
            "envelope.dsse.json",
        ]
    )
    findings = json.loads((bundle / "findings.json").read_text())
    assert findings["verdict"] == "SUPPORTED" and findings["decided_by"] == "dataset_inference"
    di = next(r for r in findings["path"] if r["route"] == "dataset_inference")
    metrics = di["outcome"]["metrics"]
    assert metrics["test"]["p_value"] < 0.05 and metrics["test"]["method"] == "permutation"
    assert metrics["shift_check"]["exchangeable"] and metrics["set_test"]["status"] == "significant"
    assert all(min(w.values()) >= 0 for w in metrics["test"]["weights"])
    assert "control" not in metrics and "no member-free control was run" in findings["verdict_sentence"]
    assert "not exchangeable under the model" in findings["verdict_sentence"]
    assert [r["status"] for r in findings["path"]] == [
        "skipped",
        "skipped",
        "decided",
        "not_reached",
        "not_reached",
        "not_reached",
    ]
    assert bundle.name.endswith(findings_digest(findings)[:16])
    result = runner.invoke(app, ["verify", str(bundle), "--key", str(bundle.parent.parent / "k.key.pub")])
    assert (
        result.exit_code == 0
        and result.stdout.startswith("OK: 8 files intact; signer ")
        and "signer pinned by --key" in result.stdout
    )
    assert "claim testbed-small: SUPPORTED" in result.stdout and "predicate urn:verifier:audit:v1" in result.stdout


def test_any_changed_byte_fails_verify_and_names_the_file(bundle, tmp_path):
    for path in sorted(bundle.iterdir()):
        copy = tmp_path / path.name
        shutil.copytree(bundle, copy)
        data = bytearray((copy / path.name).read_bytes())
        data[len(data) // 2] ^= 0x01
        (copy / path.name).write_bytes(bytes(data))
        result = runner.invoke(app, ["verify", str(copy)])
        assert result.exit_code == 2, path.name
        assert path.name in result.output, (path.name, result.output)


def test_verify_with_another_key_fails(bundle, tmp_path):
    assert runner.invoke(app, ["keys", "generate", "--out", str(tmp_path / "other.key")]).exit_code == 0
    result = runner.invoke(app, ["verify", str(bundle), "--key", str(tmp_path / "other.key.pub")])
    assert result.exit_code == 2 and "signature does not verify" in result.output


def test_same_inputs_give_the_same_findings_digest(testbed_claim, tmp_path):
    cache = ScoreCache(tmp_path)
    first, second = (run_audit(testbed_claim, cache=cache) for _ in range(2))
    assert findings_digest(first.findings) == findings_digest(second.findings)
    assert "/" not in first.findings["model"]["target"]["spec"]  # a name, never a private path
    assert str(testbed_claim.parent) not in json.dumps(first.findings)


def test_stricter_policy_caps_the_verdict(testbed_claim, tmp_path):
    policy = yaml.safe_load((ROOT / "verifier" / "policies" / "default.yaml").read_text())
    next(r for r in policy["routes"] if r["route"] == "dataset_inference")["grants"] = ["REJECTED-METHOD"]
    (testbed_claim.parent / "strict.yaml").write_text(yaml.safe_dump(policy))
    claim = yaml.safe_load(testbed_claim.read_text())
    claim["policy"] = "strict.yaml"
    strict_claim = testbed_claim.parent / "strict-claim.yaml"
    strict_claim.write_text(yaml.safe_dump(claim))
    findings = run_audit(strict_claim, cache=ScoreCache(tmp_path)).findings
    di = next(r for r in findings["path"] if r["route"] == "dataset_inference")
    assert findings["verdict"] == "INCONCLUSIVE" and di["uncapped_verdict"] == "SUPPORTED"
    assert findings["policy"]["weaker_than_default"] == []
    assert findings["policy"]["other_departures"] == ["dataset_inference may not grant CONTRADICTED, SUPPORTED"]


def write_variant(testbed_claim, name: str, **changes) -> object:
    claim = yaml.safe_load(testbed_claim.read_text())
    for key, value in changes.items():
        section, field = key.split("__")
        claim[section][field] = value
    path = testbed_claim.parent / f"{name}.yaml"
    path.write_text(yaml.safe_dump(claim))
    return path


def test_not_trained_on_claim_is_contradicted_and_strict_policy_wants_a_control(testbed_claim, tmp_path):
    cache = ScoreCache(tmp_path)
    contradicted = run_audit(write_variant(testbed_claim, "denial", claim__kind="not_trained_on"), cache=cache).findings
    assert contradicted["verdict"] == "CONTRADICTED"
    claim = yaml.safe_load(testbed_claim.read_text())
    claim["policy"] = "strict"
    path = testbed_claim.parent / "strict-policy.yaml"
    path.write_text(yaml.safe_dump(claim))
    strict = run_audit(path, cache=cache).findings
    assert (
        strict["verdict"] == "INCONCLUSIVE" and "requires a validated member-free control" in strict["verdict_sentence"]
    )
    # A control split off the held-out set's own file and filter is named as unable to validate anything.
    claim["evidence"]["heldout"]["limit"] = 50
    claim["evidence"]["control"] = dict(copy.deepcopy(claim["evidence"]["heldout"]), offset=50, limit=None)
    path.write_text(yaml.safe_dump(claim))
    vacuous = run_audit(path, cache=cache).findings
    metrics = next(r for r in vacuous["path"] if r["route"] == "dataset_inference")["outcome"]["metrics"]
    assert vacuous["verdict"] in ("INCONCLUSIVE", "REJECTED-METHOD") and metrics["control"]["validated"] is False
    assert "split of the held-out population" in vacuous["verdict_sentence"]


def test_a_refused_registration_decides_nothing_and_the_walk_goes_on(testbed_claim, tmp_path):
    claim = yaml.safe_load(testbed_claim.read_text())
    (testbed_claim.parent / "registration.json").write_text("{}")
    claim["evidence"] = {
        "suspect": claim["evidence"]["suspect"] | {"where": {"member": 1, "identifier": 0}},
        "marks": {"registration": "registration.json", "siblings": "registration.json"},
    }
    path = testbed_claim.parent / "marks-claim.yaml"
    path.write_text(yaml.safe_dump(claim))
    findings = run_audit(path, cache=ScoreCache(tmp_path)).findings
    record = {r["route"]: r for r in findings["path"]}["marks"]
    assert record["status"] == "ran" and record["outcome"]["status"] == "refused"
    assert "not a signed registration" in record["outcome"]["summary"]
    assert findings["verdict"] == "UNVERIFIABLE" and findings["decided_by"] == "disclosure"


def test_claim_errors_name_the_file_and_key(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "claim: {id: x, statement: s, kind: maybe, made_by: me}\nmodel: {target: smollm2-135m}\nevidence: {suspect: "
        "{path: a.jsonl}}\n"
    )
    with pytest.raises(VerifierError, match=r"bad.yaml: claim.kind: Input should be"):
        run_audit(bad)
    result = runner.invoke(app, ["audit", str(bad), "--no-sign"])
    assert result.exit_code == 2 and "claim.kind" in result.output


def test_untrusted_text_renders_inert(testbed_claim, tmp_path):
    findings = run_audit(testbed_claim, cache=ScoreCache(tmp_path)).findings
    findings["claim"]["claim"]["statement"] = '<script>alert("x")</script><img src=x onerror="alert(1)">'
    findings["verdict_sentence"] = "</p><script>document.title='pwned'</script>"
    html = render_html(findings, "0" * 64)
    assert "<script" not in html and 'onerror="alert' not in html
    assert "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;" in html


@pytest.mark.skipif(shutil.which("pdftoppm") is None, reason="needs poppler-utils (installed by .ci/run)")
def test_pdf_pages_render_with_text(bundle, tmp_path):
    subprocess.run(["pdftoppm", "-r", "40", "-png", str(bundle / "report.pdf"), str(tmp_path / "page")], check=True)
    pages = sorted(tmp_path.glob("page-*.png"))
    assert len(pages) >= 3 and all(p.stat().st_size > 5_000 for p in pages)
    text = subprocess.run(
        ["pdftotext", str(bundle / "report.pdf"), "-"], check=True, capture_output=True, text=True
    ).stdout
    for needed in (
        "Evidence report",
        "SUPPORTED",
        "Path through the decision tree",
        "Regulation mapping",
        "eu:2.2",
        "Limitations",
    ):
        assert needed in text


def chromium_load(page, tmp_path):
    """Load ``page`` in headless Chromium: (DOM after load, console messages)."""
    run = subprocess.run(
        [
            "chromium",
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--no-first-run",
            "--disable-sync",
            f"--user-data-dir={tmp_path / 'profile'}",
            "--enable-logging=stderr",
            "--v=0",
            "--virtual-time-budget=3000",
            "--dump-dom",
            page.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    return run.stdout, [line for line in run.stderr.splitlines() if "CONSOLE" in line]


@pytest.mark.skipif(shutil.which("chromium") is None, reason="needs Debian's chromium (installed by .ci/run)")
def test_html_report_renders_in_chromium_without_console_errors(bundle, tmp_path):
    dom, console = chromium_load(bundle / "report.html", tmp_path)
    assert "Evidence report" in dom and dom.count("<svg") >= 4
    assert console == []
    # The console check is live: a page that logs an error is caught.
    broken = tmp_path / "broken.html"
    broken.write_text("<html><body><script>console.error('boom')</script></body></html>")
    assert any("boom" in line for line in chromium_load(broken, tmp_path)[1])


@pytest.mark.slow
def test_wikimia_example_is_rejected_as_date_shift(smollm2, tmp_path):
    result = run_audit(
        EXAMPLES / "wikimia-smollm2.yaml", cache=ScoreCache(tmp_path), target_factory=lambda role: smollm2
    )
    findings = result.findings
    assert findings["verdict"] == "REJECTED-METHOD" and findings["decided_by"] == "date_shift"
    route = next(r for r in findings["path"] if r["route"] == "date_shift")
    metrics = route["outcome"]["metrics"]
    assert (
        metrics["shift_check"]["auc_corrected"] > 0.95
        and metrics["shift_check"]["ci_low"] > 0.6
        and metrics["shift_check"]["detected"]
    )
    assert metrics["dates"] and "2016" in metrics["dates"] and "2023" in metrics["dates"]
    assert metrics["best_signal_auc"] < metrics["shift_check"]["auc_corrected"]
    assert "blind classifier AUC" in findings["verdict_sentence"]
    assert len(result.scores) == 542
    blind = next(r for r in metrics["membership_rows"] if r["name"] == "blind_classifier")
    assert blind["auc"] == max(r["auc"] for r in metrics["membership_rows"])  # the blind row out-separates every signal


def test_lowercased_heldout_cannot_contradict_a_denial(tmp_path):
    # The case that returned CONTRADICTED at p = 4e-10: same-period WikiMIA texts on both sides,
    # the held-out copies lowercased as another scraping pipeline might leave them.
    rows = [r for r in read_jsonl(EXAMPLES / "data" / "wikimia" / "length64.jsonl") if r["label"] == 1]
    (tmp_path / "suspect.jsonl").write_text("".join(json.dumps({"text": r["text"]}) + "\n" for r in rows[:100]))
    (tmp_path / "heldout.jsonl").write_text(
        "".join(json.dumps({"text": r["text"].lower()}) + "\n" for r in rows[100:200])
    )
    claim = {
        "claim": {
            "id": "lowercase",
            "statement": "SmolLM2 was not trained on these texts.",
            "kind": "not_trained_on",
            "made_by": "test",
        },
        "model": {"target": "smollm2-135m"},
        "evidence": {
            "suspect": {"path": "suspect.jsonl", "year": 2016},
            "heldout": {"path": "heldout.jsonl", "year": 2016},
        },
    }
    (tmp_path / "claim.yaml").write_text(yaml.safe_dump(claim))
    # SmolLM2's signals separate these sets (AUC > 0.7 when it was scored): the blind check refuses
    # them before the model is ever queried.
    findings = run_audit(
        tmp_path / "claim.yaml",
        cache=ScoreCache(tmp_path / "cache"),
        target_factory=lambda role: pytest.fail("the model was queried for a refused comparison"),
    ).findings
    assert findings["verdict"] == "REJECTED-METHOD" and findings["decided_by"] == "dataset_inference"
    metrics = next(r for r in findings["path"] if r["route"] == "dataset_inference")["outcome"]["metrics"]
    assert metrics["set_test"]["status"] == "shift_detected" and metrics["shift_check"]["auc_corrected"] > 0.95
    assert "test" not in metrics and "measures distribution shift" in findings["verdict_sentence"].lower()


def test_a_preregistered_audit_says_so_and_carries_its_plan(testbed_claim, bundle, tmp_path):
    work = bundle.parent.parent
    key = ["--sign-key", str(work / "k.key")]
    made = runner.invoke(
        app, ["plan", str(testbed_claim), "--out", str(tmp_path / "plan.dsse.json"), "--effect", "0.5", *key]
    )
    assert made.exit_code == 0, made.output
    assert "first route dataset_inference" in made.stdout and "power" in made.stdout
    result = runner.invoke(
        app,
        [
            "audit",
            str(testbed_claim),
            "--plan",
            str(tmp_path / "plan.dsse.json"),
            "--out",
            str(tmp_path / "ev"),
            "--cache-dir",
            str(work / "c"),
            *key,
        ],
    )
    assert result.exit_code == 0, result.output
    (folder,) = (tmp_path / "ev").iterdir()
    findings = json.loads((folder / "findings.json").read_text())
    pre = findings["preregistration"]
    assert (
        pre["registered"]
        and pre["design"]["route"] == "dataset_inference"
        and 0 < pre["design"]["power_at_stated_effect"] < 1
    )
    html = (folder / "report.html").read_text()
    assert "pre-registered: the claim, policy and document sets were fixed in a signed plan" in html
    # The method-validation rows of the deciding route, read from the shipped table, with where they come from.
    validation = findings["method_validation"]
    assert validation["route"] == "dataset_inference" and validation["rows"] and validation["runs"]
    assert (
        "Method validation: how often this route is wrong" in html
        and "fraction bound coverage" in html  # in the annex: every row of the route
        and validation["table_sha256"] in html
    )
    # Page-facing rows are those that bear on this verdict: a SUPPORTED beside its false-verdict rate and power.
    assert [r["quantity"] for r in validation["bearing"]] == [
        "false verdict rate (rule set (default))",
        "false verdict rate (whole rule set, light testbeds)",
        "power (rule set (default))",
    ]
    assert all(r["sentence"] in html for r in validation["bearing"])
    # Rows of the measured regime nearest the audited model's size, and how far that is, in the report.
    from markupsafe import escape

    from verifier.validation import load_table, nearest_regime

    regimes = list({r.regime: None for r in load_table().rows if r.regime is not None})
    assert validation["parameters"] > 0 and validation["regime"] == nearest_regime(
        regimes, validation["parameters"]
    ).model_dump(mode="json")
    assert (
        validation["regime_sentence"].startswith("Measured on a ")
        and str(escape(validation["regime_sentence"])) in html
    )
    assert runner.invoke(app, ["verify", str(folder), "--key", str(work / "k.key.pub")]).exit_code == 0
    # The plan cannot be dropped from the bundle, nor slipped into one whose findings do not name it.
    (folder / "plan.dsse.json").unlink()
    assert "plan.dsse.json: differs: " in runner.invoke(app, ["verify", str(folder)]).output
    shutil.copy(tmp_path / "plan.dsse.json", bundle / "plan.dsse.json")
    try:
        assert "plan.dsse.json: differs" in runner.invoke(app, ["verify", str(bundle)]).output
    finally:
        (bundle / "plan.dsse.json").unlink()
    # The plain audit says it was not pre-registered.
    assert "not pre-registered" in (bundle / "report.html").read_text()


def test_an_audit_refuses_evidence_that_differs_from_its_plan(testbed_claim, bundle, tmp_path):
    from verifier.plan import make_plan
    from verifier.trust.keys import load_private_key
    from verifier.trust.plans import parse_plan

    folder = tmp_path / "claim"
    shutil.copytree(testbed_claim.parent, folder, ignore=shutil.ignore_patterns("*.yaml"))
    shutil.copy(testbed_claim, folder / "claim.yaml")
    key = load_private_key(bundle.parent.parent / "k.key")
    raw, _ = make_plan(folder / "claim.yaml", key)
    (tmp_path / "plan.json").write_bytes(raw)
    documents = folder / "testbed" / "build" / "documents.jsonl"
    rows = read_jsonl(documents)
    documents.write_text("".join(json.dumps(r) + "\n" for r in reversed(rows)))  # the same sets, in another order
    assert parse_plan(make_plan(folder / "claim.yaml", key)[0], "again").subjects == parse_plan(raw, "plan").subjects
    heldout = next(i for i, r in enumerate(rows) if r["member"] == 0 and r["period"] == "pre-2017")
    rows[heldout]["text"] += " One sentence added after the plan."
    documents.write_text("".join(json.dumps(r) + "\n" for r in rows))
    result = runner.invoke(
        app,
        [
            "audit",
            str(folder / "claim.yaml"),
            "--plan",
            str(tmp_path / "plan.json"),
            "--no-sign",
            "--out",
            str(tmp_path / "ev"),
        ],
    )
    assert result.exit_code == 2 and not (tmp_path / "ev").exists()
    assert (
        result.output.strip()
        .splitlines()[-1]
        .startswith("error: --plan plan.json: the held-out set differs from the plan (SHA-256 ")
    )
    documents.write_text("".join(json.dumps(r) + "\n" for r in reversed(rows)))  # back to the planned sets
    rows[heldout]["text"] = rows[heldout]["text"].removesuffix(" One sentence added after the plan.")
    documents.write_text("".join(json.dumps(r) + "\n" for r in rows))
    # Other weights at the same path are another model.
    weights = next((folder / "testbed" / "build" / "model").glob("*.safetensors"))
    data = bytearray(weights.read_bytes())
    data[-1] ^= 1
    weights.write_bytes(bytes(data))
    result = runner.invoke(
        app, ["audit", str(folder / "claim.yaml"), "--plan", str(tmp_path / "plan.json"), "--no-sign"]
    )
    assert result.exit_code == 2 and "the target model differs from the plan" in result.output
    # A plan signed by another key than the audit's is another party's word.
    other = tmp_path / "other.key"
    assert runner.invoke(app, ["keys", "generate", "--out", str(other)]).exit_code == 0
    result = runner.invoke(
        app,
        [
            "audit",
            str(testbed_claim),
            "--plan",
            str(tmp_path / "plan.json"),
            "--sign-key",
            str(other),
            "--out",
            str(tmp_path / "ev2"),
        ],
    )
    assert result.exit_code == 2 and "not by the key that signs this audit" in result.output
    # A plan whose payload was edited after signing is refused as a plan.
    envelope = json.loads(raw)
    envelope["payload"] = envelope["payload"][:-8] + "AAAAAAA="
    (tmp_path / "forged.json").write_text(json.dumps(envelope))
    forged = runner.invoke(
        app, ["audit", str(folder / "claim.yaml"), "--plan", str(tmp_path / "forged.json"), "--no-sign"]
    )
    assert forged.exit_code == 2 and "--plan forged.json" in forged.output


def test_prefixed_and_calibrated_signals_in_an_audit(testbed_claim, small_testbed, tmp_path):
    """ReCaLL's prefix documents are drawn from the held-out set and never tested; Con-ReCall, which
    needs known members, is not computable in an audit; DC-PDD reads the claim's frequency table of
    the testbed's tokenizer (counted over public book openings) and refuses one of another tokenizer."""
    import pandas as pd

    from verifier.targets.cache import text_digest

    folder = testbed_claim.parent
    table = folder / "books.smallbed.npz"
    result = runner.invoke(
        app,
        [
            "frequencies",
            str(folder / "testbed" / "build" / "model"),
            str(EXAMPLES / "data" / "corpus" / "demo-v1" / "pg19-openings.jsonl"),
            "--out",
            str(table),
        ],
    )
    assert result.exit_code == 0, result.output
    policy = (ROOT / "verifier" / "policies" / "default.yaml").read_text()
    policy = policy.replace(
        "signals: [loss, zlib, min_k, min_k_pp, gap_k, reference, prefix_lcs_word, prefix_lcs_token, name_cloze]",
        "signals: [loss, recall, con_recall, dc_pdd, pac]\n      claim_frequencies: true",
        1,
    )
    (folder / "prefixed-policy.yaml").write_text(policy)
    claim = yaml.safe_load(testbed_claim.read_text())
    claim["policy"] = "prefixed-policy.yaml"
    claim["model"]["max_tokens"] = 64  # room for a prefix in the testbed's 128-token window
    claim["evidence"]["token_frequencies"] = table.name
    path = folder / "prefixed.yaml"
    path.write_text(yaml.safe_dump(claim))
    audited = run_audit(path, cache=ScoreCache(tmp_path))
    di = next(r for r in audited.findings["path"] if r["route"] == "dataset_inference")
    metrics = di["outcome"]["metrics"]
    assert metrics["signals"] == ["loss", "recall", "dc_pdd", "pac"]
    assert "member_prefix" in metrics["not_computable"]["con_recall"]
    aux = metrics["auxiliary"]
    assert aux["nonmember_prefix"]["documents"] == 5 and "drawn from the held-out set" in aux["prefix_source"]
    assert aux["prefix_overlap_removed"]["heldout"] >= 5 and set(aux["prefix_overlap_removed"]) == {
        "suspect",
        "heldout",
    }
    assert aux["token_frequencies"]["documents"] == 500
    assert audited.findings["policy"]["weaker_than_default"]  # a claim's own frequency table is the claimant's counts
    heldout = load_documents(
        folder / "testbed" / "build" / "documents.jsonl", label_field=None, where={"member": 0, "period": "pre-2017"}
    )
    assert metrics["n_heldout"] == len(heldout.texts) - 5
    scored = set(audited.scores["text_sha256"])
    held_digests = {text_digest(t) for t in heldout.texts}
    assert len(held_digests - scored) >= 5  # the prefix documents (and only duplicates besides) were never scored
    assert audited.findings["verdict"] == "SUPPORTED"
    assert isinstance(audited.scores, pd.DataFrame) and np.isfinite(audited.scores["recall"]).all()
    # The outside review's attack: every held-out document given twice. A prefix drawn before the
    # duplicates were removed left each prefix document's twin in the set, scored after a prefix
    # holding itself. Now the draw is from distinct documents and every twin leaves every set.
    rows = read_jsonl(folder / "testbed" / "build" / "documents.jsonl")
    held_rows = [r for r in rows if r["member"] == 0 and r["period"] == "pre-2017"]
    (folder / "twice.jsonl").write_text("".join(json.dumps({"text": r["text"]}) + "\n" for r in held_rows + held_rows))
    twice = copy.deepcopy(claim)
    twice["evidence"]["heldout"] = {"path": "twice.jsonl", "year": 2016}
    (folder / "twice.yaml").write_text(yaml.safe_dump(twice))
    doubled = run_audit(folder / "twice.yaml", cache=ScoreCache(tmp_path))
    removed = next(r for r in doubled.findings["path"] if r["route"] == "dataset_inference")["outcome"]["metrics"][
        "auxiliary"
    ]
    assert removed["prefix_overlap_removed"]["heldout"] == 10  # five prefix documents, each with its twin
    scored_held = set(doubled.scores.loc[doubled.scores["role"] == "heldout", "text_sha256"])
    assert (
        held_digests - scored_held == held_digests - scored
    )  # the same prefix, the same documents left out, as without the copies
    # Under the default policy the claim's table is not used: no table matches the testbed's tokenizer.
    default_policy = folder / "prefixed-default.yaml"
    default_policy.write_text(policy.replace("\n      claim_frequencies: true", "", 1))
    claim["policy"] = default_policy.name
    path.write_text(yaml.safe_dump(claim))
    plain = next(
        r for r in run_audit(path, cache=ScoreCache(tmp_path)).findings["path"] if r["route"] == "dataset_inference"
    )
    assert "dc_pdd" in plain["outcome"]["metrics"]["not_computable"]
    assert "claim_frequencies is false" in plain["outcome"]["metrics"]["auxiliary"]["token_frequencies_ignored"]
    claim["policy"] = "prefixed-policy.yaml"
    # A table counted with another tokenizer is refused in one line.
    (folder / "other.npz").write_bytes(
        (EXAMPLES / "data" / "frequencies" / "pg19-openings.smollm2-135m.npz").read_bytes()
    )
    claim["evidence"]["token_frequencies"] = "other.npz"
    path.write_text(yaml.safe_dump(claim))
    with pytest.raises(VerifierError, match="another tokenizer"):
        run_audit(path, cache=ScoreCache(tmp_path))


def test_a_claims_prefix_bearing_on_one_set_is_removed_or_refused(testbed_claim, tmp_path):
    """An outside attack (README only): under ``claim_prefix`` the claimant's prefix held held-out
    documents with every fifth word replaced (below the near-duplicate bar); a model that copies
    from its context then predicts those held-out documents better after the prefix, which ReCaLL
    reads as less member-like, and two member-free sets gave SUPPORTED. Now documents derived from
    a prefix document leave every set, and a prefix closer to one set than the other (here: a
    sentence of it in every held-out document) leaves prefixed signals uncomputed - the method is
    refused where they were all that was asked for."""
    folder = testbed_claim.parent
    rows = read_jsonl(folder / "testbed" / "build" / "documents.jsonl")
    nonmembers = [r["text"] for r in rows if r["member"] == 0 and r["period"] == "pre-2017"]
    half = len(nonmembers) // 2
    suspect, heldout = nonmembers[:half], nonmembers[half:]

    def write(name: str, texts: list[str]) -> None:
        (folder / name).write_text("".join(json.dumps({"text": t}) + "\n" for t in texts))

    edited = [" ".join("xyz" if i % 5 == 4 else w for i, w in enumerate(t.split())) for t in heldout[:5]]
    write("free-suspect.jsonl", suspect)
    write("free-heldout.jsonl", heldout)
    write("edited-prefix.jsonl", edited)
    policy = (ROOT / "verifier" / "policies" / "default.yaml").read_text()
    policy = policy.replace(
        "signals: [loss, zlib, min_k, min_k_pp, gap_k, reference, prefix_lcs_word, prefix_lcs_token, name_cloze]",
        "signals: [loss, recall]\n      claim_prefix: true",
        1,
    )
    (folder / "claim-prefix-policy.yaml").write_text(policy)
    claim = yaml.safe_load(testbed_claim.read_text())
    claim["claim"]["statement"] = "The testbed model was trained on these texts (it was not)."
    claim["policy"] = "claim-prefix-policy.yaml"
    claim["model"]["max_tokens"] = 64
    claim["evidence"] = {
        "suspect": {"path": "free-suspect.jsonl", "year": 2016},
        "heldout": {"path": "free-heldout.jsonl", "year": 2016},
        "prefix": {"path": "edited-prefix.jsonl", "year": 2016},
    }
    (folder / "edited.yaml").write_text(yaml.safe_dump(claim))
    audited = run_audit(folder / "edited.yaml", cache=ScoreCache(tmp_path))
    di = next(r for r in audited.findings["path"] if r["route"] == "dataset_inference")["outcome"]["metrics"]
    relation = di["auxiliary"]["prefix_relation"]
    assert relation["derived_removed"] == {"suspect": 0, "heldout": 5} and relation["balanced"]
    assert di["n_heldout"] == len(heldout) - 5 and "recall" in di["signals"]
    assert audited.findings["verdict"] not in ("SUPPORTED", "CONTRADICTED")

    first_sentences = [t.split(". ")[0] for t in edited]
    write("free-heldout.jsonl", [f"{t} {first_sentences[i % 5]}." for i, t in enumerate(heldout)])
    write("edited-prefix.jsonl", [t.split(". ")[0] + ". " + t for t in edited])
    claim["evidence"]["prefix"] = {"path": "edited-prefix.jsonl", "year": 2016}
    (folder / "edited.yaml").write_text(yaml.safe_dump(claim))
    policy_recall_only = policy.replace("signals: [loss, recall]", "signals: [recall]", 1)
    (folder / "claim-prefix-policy.yaml").write_text(policy_recall_only)
    refused = run_audit(folder / "edited.yaml", cache=ScoreCache(tmp_path))
    record = next(r for r in refused.findings["path"] if r["route"] == "dataset_inference")
    assert record["outcome"]["status"] == "prefix_unbalanced" and refused.findings["verdict"] == "REJECTED-METHOD"
    assert "closer to the held-out documents" in record["outcome"]["metrics"]["not_computable"]["recall"]


@pytest.mark.slow  # a second testbed audit: kept out of make test's 15 minutes
def test_identified_documents_are_named_by_file_and_line(testbed_claim, tmp_path):
    """A rights holder reads which documents were identified as their file and line, not as digests."""
    (testbed_claim.parent / "loose.yaml").write_text(
        "extends: default\nname: loose\nversion: 1\nroutes:\n  dataset_inference:\n    params: {document_fdr: 0.2}\n"
    )
    claim = yaml.safe_load(testbed_claim.read_text()) | {"policy": "loose.yaml"}
    path = testbed_claim.parent / "loose-claim.yaml"
    path.write_text(yaml.safe_dump(claim))
    findings = run_audit(path, cache=ScoreCache(tmp_path)).findings
    decided = next(r for r in findings["path"] if r["route"] == "dataset_inference")
    documents = decided["outcome"]["metrics"]["documents"]
    assert documents["identified_at"], "no document identified: the test needs one"
    lines = (testbed_claim.parent / "testbed" / "build" / "documents.jsonl").read_text().splitlines()
    for at, digest in zip(documents["identified_at"], documents["identified_sha256"], strict=True):
        name, _, number = at.partition(" line ")
        row = json.loads(lines[int(number) - 1])
        assert name == "documents.jsonl" and text_digest(row["text"]) == digest and row["member"] == 1
    table = next(s for s in decided["outcome"]["sections"] if s.get("title", "").startswith("How much of the suspect"))
    assert documents["identified_at"][0] in json.dumps(table)
