"""A claim is loaded once and its input files read once per audit; a plan commits to every input
file a route declares (the token frequency table included), and the findings name the same list."""

from __future__ import annotations

import builtins
import io
from pathlib import Path

import pytest
import yaml
from conftest import write_refused_claim

from verifier.audit import run_audit
from verifier.claims import load_claim
from verifier.errors import VerifierError
from verifier.plan import make_plan
from verifier.trust.keys import generate_key, load_private_key


def never_load(role: str):
    pytest.fail(f"the {role} model was loaded")


@pytest.fixture
def planned(tmp_path) -> tuple[Path, Path]:
    """A refused claim (no model loads) naming a token frequency table, and its signed plan."""
    claim = write_refused_claim(tmp_path, "files")
    (tmp_path / "freq.npz").write_bytes(b"a table the plan commits to")
    data = yaml.safe_load(claim.read_text())
    data["evidence"]["token_frequencies"] = "freq.npz"
    claim.write_text(yaml.safe_dump(data))
    generate_key(tmp_path / "k.key")
    plan, _ = make_plan(claim, load_private_key(tmp_path / "k.key"))
    (tmp_path / "plan.dsse.json").write_bytes(plan)
    return claim, tmp_path / "plan.dsse.json"


def test_each_document_file_is_read_once_in_a_preregistered_audit(planned, monkeypatch):
    claim, plan = planned
    reads: list[str] = []
    real_open = builtins.open

    def counting_open(file, mode="r", *args, **kwargs):
        if Path(str(file)).name == "docs.jsonl":
            reads.append(mode)
        return real_open(file, mode, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", counting_open)
    monkeypatch.setattr(io, "open", counting_open)
    findings = run_audit(load_claim(claim), target_factory=never_load, plan=plan).findings
    assert findings["preregistration"]["registered"] is True
    assert reads == ["rb"], reads  # the suspect and dated sets share the file: one read gives both, and their digest


def test_the_plan_and_the_findings_name_the_token_frequency_table(planned, tmp_path):
    claim, plan = planned
    findings = run_audit(claim, target_factory=never_load, plan=plan).findings
    assert [e["role"] for e in findings["inputs"]] == ["suspect", "heldout", "token frequencies"]
    (tmp_path / "freq.npz").write_bytes(b"another table")
    with pytest.raises(VerifierError, match=r"--plan plan.dsse.json: the token frequencies file differs from the plan"):
        run_audit(claim, target_factory=never_load, plan=plan)
