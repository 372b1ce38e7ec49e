"""verifier reproduce: an audit re-run from its bundle, every number compared within its tolerance."""

from __future__ import annotations

import json
import shutil

import pytest

from verifier.audit import audit_to_bundle
from verifier.boundary.resources import resource
from verifier.errors import VerifierError
from verifier.reproduce import Reproduction, compare, reproduce_bundle, same_number
from verifier.trust.keys import generate_key

EXAMPLES = resource("examples")


@pytest.fixture(scope="module")
def corpus_bundle(tmp_path_factory):
    folder = tmp_path_factory.mktemp("repro")
    generate_key(folder / "k.key")
    return audit_to_bundle("example:corpus-pg19", out_dir=folder / "evidence", sign_key=folder / "k.key").folder


def test_a_bundled_examples_bundle_reproduces_exactly(corpus_bundle):
    found = reproduce_bundle(corpus_bundle, EXAMPLES)
    assert found.compared > 500 and found.differences == []


def test_a_changed_input_or_finding_is_reported(corpus_bundle, tmp_path):
    inputs = tmp_path / "inputs"
    shutil.copytree(EXAMPLES / "data" / "corpus", inputs / "data" / "corpus")
    opening = inputs / "data" / "corpus" / "demo-v1" / "pg19-openings.jsonl"
    rows = opening.read_text().splitlines()
    first = json.loads(rows[0])
    rows[0] = json.dumps(first | {"text": first["text"].replace("Vain Fortune", "Plain Fortune")})
    opening.write_text("\n".join(rows) + "\n")
    found = reproduce_bundle(corpus_bundle, inputs)
    assert any(d.path.startswith("inputs") and d.path.endswith("sha256") for d in found.differences)
    edited = tmp_path / "edited"
    shutil.copytree(corpus_bundle, edited)
    findings = json.loads((edited / "findings.json").read_text())
    (edited / "findings.json").write_text(json.dumps(findings | {"verdict": "CONTRADICTED"}))
    with pytest.raises(VerifierError, match="differs"):
        reproduce_bundle(edited, EXAMPLES)  # numbers nobody signed are not compared


def test_floats_agree_within_the_stated_tolerance_and_nothing_else_does():
    assert same_number(0.7312, 0.7312 * (1 + 5e-4)) and not same_number(0.7312, 0.7312 * (1 + 5e-3))
    assert same_number(0.0, 5e-7) and same_number(float("nan"), float("nan")) and not same_number(0.0, float("nan"))
    found = Reproduction()
    compare({"n": 3, "d": "ab", "p": 0.5, "l": [1, 2]}, {"n": 4, "d": "ab", "p": 0.5000001, "l": [1]}, "", found)
    assert [d.path for d in found.differences] == ["l (length)", "n"]


def test_outside_review_holes_in_the_comparison_are_closed():
    """An outside review: a count 1000 against 1000.9 agreed (a mixed int/float pair got the float
    tolerance), True agreed with 1, and 0.5 with infinity."""
    for a, b in ((1000, 1000.9), (True, 1), (False, 0.0), (0.5, float("inf")), (None, 0)):
        found = Reproduction()
        compare({"v": a}, {"v": b}, "", found)
        assert [d.path for d in found.differences] == ["v"], (a, b)
    assert same_number(float("inf"), float("inf")) and not same_number(float("-inf"), float("inf"))


def test_a_forged_batch_record_does_not_hide_the_verdict(corpus_bundle, tmp_path):
    """An outside review: an unsigned bundle whose findings carry a made-up batch record (verdict
    SUPPORTED, unadjusted CONTRADICTED) reproduced, because the batch's fields were not compared."""
    from verifier.trust.bundle import sha256

    forged = tmp_path / "forged"
    shutil.copytree(corpus_bundle, forged)
    for name in ("envelope.dsse.json", "public_key.pem", "report.pdf"):
        (forged / name).unlink(missing_ok=True)
    findings = json.loads((forged / "findings.json").read_text())
    findings |= {"verdict": "SUPPORTED", "batch": {"claims": 1, "unadjusted_verdict": "CONTRADICTED"}}
    (forged / "findings.json").write_text(json.dumps(findings))
    files = {p.name: sha256(p.read_bytes()) for p in forged.iterdir() if p.name != "manifest.json"}
    manifest = json.loads((forged / "manifest.json").read_text()) | {"files": files}
    (forged / "manifest.json").write_text(json.dumps(manifest))
    found = reproduce_bundle(forged, EXAMPLES)
    assert any(d.path.startswith("verdict") for d in found.differences)
