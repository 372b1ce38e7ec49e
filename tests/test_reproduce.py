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
