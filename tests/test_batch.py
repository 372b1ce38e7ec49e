"""Many claims in one audit: per-claim bundles, error control across the batch, a signed index, resume.

Twenty claims on the small testbed: ten name sets of members (true), ten sets of non-members
(false), all against one held-out set of non-members. The adjustment may only weaken verdicts;
an interrupted batch resumes from its parts, and a part edited on disk is audited again.
"""

from __future__ import annotations

import json
import shutil

import pytest
import yaml
from typer.testing import CliRunner

from verifier.batch import adjust, run_batch
from verifier.cli import app
from verifier.errors import VerifierError
from verifier.report.svg import tree_svg
from verifier.trust.bundle import BATCH_INDEX, verify_batch
from verifier.trust.keys import generate_key, load_private_key

runner = CliRunner()
CLAIMS = 20
SET = 20
HELDOUT = 155  # the non-members from this row on are the shared held-out set; the false claims' sets overlap below it


def write_claims(folder, testbed_folder) -> None:
    shutil.copytree(testbed_folder, folder / "testbed")
    rows = [json.loads(line) for line in (folder / "testbed" / "documents.jsonl").read_text().splitlines()]
    assert (
        sum(r["member"] == 1 for r in rows) >= SET * CLAIMS // 2
        and sum(r["member"] == 0 for r in rows) >= HELDOUT + 2 * SET
    )
    names = []
    for i in range(CLAIMS):
        true = i % 2 == 0
        claim = {
            "claim": {
                "id": f"work-{i:02d}",
                "statement": f"The testbed model was trained on work {i}.",
                "kind": "trained_on",
                "made_by": "a rights holder (test)",
            },
            "model": {"target": "testbed/model"},
            "evidence": {
                "suspect": {
                    "path": "testbed/documents.jsonl",
                    "where": {"member": 1 if true else 0},
                    "offset": SET * (i // 2) if true else 14 * (i // 2),
                    "limit": SET,
                },
                "heldout": {
                    "path": "testbed/documents.jsonl",
                    "where": {"member": 0},
                    "offset": HELDOUT,
                    "limit": 2 * SET,
                },
            },
            "policy": "default",
        }
        (folder / f"work-{i:02d}.yaml").write_text(yaml.safe_dump(claim))
        names.append(f"work-{i:02d}.yaml")
    (folder / "batch.yaml").write_text(
        yaml.safe_dump({"batch": {"id": "works", "statement": "twenty works"}, "claims": names})
    )


@pytest.fixture(scope="module")
def batch_folder(small_testbed, tmp_path_factory):
    folder = tmp_path_factory.mktemp("batch")
    write_claims(folder, small_testbed.folder)
    generate_key(folder / "k.key")
    return folder


@pytest.fixture(scope="module")
def interrupted_then_resumed(batch_folder):
    """The batch stopped after 7 claims (Ctrl-C), then run again: what each run did."""
    from verifier.audit import run_audit

    key = load_private_key(batch_folder / "k.key")
    done = []

    def stopping(*args, **kwargs):
        if len(done) == 7:
            raise KeyboardInterrupt
        done.append(1)
        return run_audit(*args, **kwargs)

    with pytest.raises(KeyboardInterrupt):
        run_batch(batch_folder / "batch.yaml", batch_folder / "out", key, batch_folder / "cache", audit=stopping)
    parts = sorted((batch_folder / "out" / "works" / ".parts").glob("*.json"))
    assert len(parts) == 7 and not (batch_folder / "out" / "works" / BATCH_INDEX).exists()
    # A part edited on disk (its verdict raised) is not ours any more: that claim is audited again.
    data = json.loads(parts[1].read_text())
    data["body"]["findings"]["verdict"] = "SUPPORTED"
    parts[1].write_text(json.dumps(data))
    return run_batch(batch_folder / "batch.yaml", batch_folder / "out", key, batch_folder / "cache")


def test_a_batch_resumes_and_writes_a_bundle_per_claim_and_a_signed_index(interrupted_then_resumed, batch_folder):
    result = interrupted_then_resumed
    assert result.resumed == 6 and len(result.bundles) == CLAIMS and result.signed
    assert not (result.folder / ".parts").exists()
    verdicts = {f["claim"]["claim"]["id"]: f["verdict"] for f in result.findings}
    false_claims = [v for c, v in verdicts.items() if int(c.split("-")[1]) % 2]
    assert "SUPPORTED" not in false_claims  # no claim on non-members is supported
    assert sum(v == "SUPPORTED" for v in verdicts.values()) >= 3  # the members' claims are found despite the adjustment
    for findings in result.findings:
        record = findings["batch"]
        assert record["error_control"] == "holm" and record["claims"] == CLAIMS
        if record["in_family"]:
            assert record["adjusted_p_value"] >= record["p_value"]
            # the test ran enough relabellings to reach alpha / 20 (the policy's 999 stop at 0.001)
            metrics = next(r for r in findings["path"] if r["status"] == "decided")["outcome"]["metrics"]
            assert metrics["family_size"] == CLAIMS and metrics["test"]["n_permutations"] == 3999
    checked = verify_batch(result.folder, (batch_folder / "k.key.pub").read_bytes())
    assert checked.bundles == CLAIMS and checked.pinned_by == "--key"
    shown = runner.invoke(app, ["verify", str(result.folder), "--key", str(batch_folder / "k.key.pub")])
    assert shown.exit_code == 0 and "batch works: index and 20 bundles intact" in shown.stdout


def test_a_batch_index_names_exactly_its_bundles(interrupted_then_resumed, tmp_path):
    copy = tmp_path / "works"
    shutil.copytree(interrupted_then_resumed.folder, copy)
    stray = copy / "stray-bundle"
    shutil.copytree(interrupted_then_resumed.bundles[0], stray)
    with pytest.raises(VerifierError, match="stray-bundle: differs: not a bundle of this batch"):
        verify_batch(copy)
    shutil.rmtree(stray)
    shutil.rmtree(copy / interrupted_then_resumed.bundles[3].name)
    with pytest.raises(VerifierError, match="the index names a bundle that is missing"):
        verify_batch(copy)


def findings_with(p: float | None, verdict: str, alpha: float = 0.05) -> dict:
    outcome = {"p_value": p, "alpha": alpha if p is not None else None}
    return {
        "verdict": verdict,
        "verdict_sentence": f"{verdict}: a claim.",
        "path": [
            {
                "route": "dataset_inference",
                "status": "decided",
                "verdict": verdict,
                "outcome": outcome,
                "because": "the sets differ",
                "needs": ["suspect", "heldout"],
            }
        ],
        "regulation": [{"field": "eu:2.2", "status": "shown", "finding": f"{verdict} by dataset_inference"}],
    }


@pytest.mark.parametrize("control", ["holm", "bh"])
def test_the_adjustment_only_ever_weakens_a_verdict(control):
    claims = [
        findings_with(0.001, "SUPPORTED"),
        findings_with(0.03, "CONTRADICTED"),
        findings_with(0.04, "SUPPORTED"),
        findings_with(0.01, "INCONCLUSIVE"),
        findings_with(0.6, "INCONCLUSIVE"),
        findings_with(None, "VERIFIED"),
        findings_with(None, "REJECTED-METHOD"),
    ]
    adjusted = adjust(claims, control, "b")
    order = {
        "REJECTED-METHOD": 0,
        "INCONCLUSIVE": 0,
        "UNVERIFIABLE": 0,
        "SUPPORTED": 1,
        "CONTRADICTED": 1,
        "VERIFIED": 1,
    }
    for before, after in zip(claims, adjusted):
        assert order[after["verdict"]] <= order[before["verdict"]]
        assert after["verdict"] == before["verdict"] or after["verdict"] == "INCONCLUSIVE"
    assert [a["verdict"] for a in adjusted][:3] == ["SUPPORTED", "INCONCLUSIVE", "INCONCLUSIVE"]
    assert (
        adjusted[5]["verdict"] == "VERIFIED"
        and not adjusted[5]["batch"]["in_family"]
        and adjusted[0]["batch"]["tested"] == 5
    )
    assert "tested as one of 5 claims of batch b" in adjusted[1]["verdict_sentence"]
    # What a weakened verdict showed is withdrawn everywhere page 1 and the regulation mapping say it.
    assert adjusted[1]["lead"] == (
        "The evidence does not establish the claim either way: 5 claims were tested together and, corrected for "
        "that, this claim's test is not significant. Alone it would be CONTRADICTED. This does not show whether the "
        "claim is true or false."
    )
    weakened = adjusted[1]["path"][0]
    assert weakened["adjusted_verdict"] == "INCONCLUSIVE" and weakened["verdict"] == "CONTRADICTED"
    assert "dataset_inference  [decided] \u2192 INCONCLUSIVE (alone CONTRADICTED)" in tree_svg(adjusted[1]["path"])
    assert adjusted[1]["regulation"][0]["status"] == "not established" and adjusted[0]["regulation"][0]["status"] == (
        "shown"
    )


def test_a_batch_refuses_claims_under_different_policies_naming_the_claim(batch_folder, tmp_path):
    folder = tmp_path / "mixed"
    folder.mkdir()
    for name in ("work-00.yaml", "work-01.yaml"):
        claim = yaml.safe_load((batch_folder / name).read_text())
        claim["evidence"] = {"suspect": {"path": "d.jsonl"}}
        claim["policy"] = "strict" if name == "work-01.yaml" else "default"
        (folder / name).write_text(yaml.safe_dump(claim))
    (folder / "d.jsonl").write_text("".join(json.dumps({"text": f"text {i}"}) + "\n" for i in range(3)))
    (folder / "batch.yaml").write_text(
        yaml.safe_dump({"batch": {"id": "mixed"}, "claims": ["work-00.yaml", "work-01.yaml"]})
    )
    result = runner.invoke(app, ["audit", str(folder / "batch.yaml"), "--no-sign", "--out", str(tmp_path / "ev")])
    assert result.exit_code == 2 and "claims.1: its policy (strict.yaml) is not the policy of claims.0" in result.output
    (folder / "batch.yaml").write_text(
        yaml.safe_dump({"batch": {"id": "mixed"}, "claims": ["work-00.yaml", "../work-00.yaml"]})
    )
    result = runner.invoke(app, ["audit", str(folder / "batch.yaml"), "--no-sign", "--out", str(tmp_path / "ev")])
    assert result.exit_code == 2 and "must be a path relative to the batch's folder" in result.output


def test_a_signer_cannot_list_a_verdict_the_adjustment_does_not_give(interrupted_then_resumed, batch_folder, tmp_path):
    # The signer re-signs a false claim's bundle as SUPPORTED (verdict, unadjusted verdict and the
    # deciding route's record alike) and re-signs the index over it: verify recomputes the
    # adjustment from the bundles' own p-values and refuses it.
    import io

    import pandas as pd

    from verifier.batch import load_batch, write_index
    from verifier.findings import AuditResult
    from verifier.trust import write_bundle

    copy = tmp_path / "works"
    shutil.copytree(interrupted_then_resumed.folder, copy)
    key = load_private_key(batch_folder / "k.key")
    bundles = sorted(p for p in copy.iterdir() if p.is_dir())
    findings = [json.loads((b / "findings.json").read_text()) for b in bundles]
    victim = next(i for i, f in enumerate(findings) if f["verdict"] == "INCONCLUSIVE" and f["batch"]["in_family"])
    forged = findings[victim]
    decided = next(r for r in forged["path"] if r["status"] == "decided")
    forged["verdict"] = forged["batch"]["unadjusted_verdict"] = forged["batch"]["verdict"] = decided["verdict"] = (
        "SUPPORTED"
    )
    old = bundles[victim]
    result = AuditResult(
        forged,
        pd.read_parquet(io.BytesIO((old / "scores.parquet").read_bytes())),
        (old / "claim.yaml").read_bytes(),
        (old / "policy.yaml").read_bytes(),
    )
    new = write_bundle(result, "<html></html>", b"%PDF-1.4", copy, key)
    shutil.rmtree(old)
    bundles[victim] = new
    write_index(copy, bundles, findings, load_batch(batch_folder / "batch.yaml"), key)
    with pytest.raises(VerifierError, match="its verdict is not what the batch's adjustment gives"):
        verify_batch(copy, (batch_folder / "k.key.pub").read_bytes())
