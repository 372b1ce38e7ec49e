"""The marks and identifiers routes on the small testbed, whose training data is known exactly:
the bundled example's marked documents were inserted 1, 4 and 16 times, and 30% of the pool texts
carry a natural identifier drawn independently of membership."""

from __future__ import annotations

import base64
import json
import shutil
from datetime import date, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest
import yaml
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from scipy import stats
from test_marks import carriers
from tsa import LoopbackTSA, make_tsa_ca
from typer.testing import CliRunner

from verifier.audit import run_audit
from verifier.boundary.resources import resource
from verifier.cli import app
from verifier.marks.generators import MarkSpec
from verifier.marks.make import PUBLISHED, REGISTRATION, SECRETS, make_marks, write_marks
from verifier.targets import ScoreCache
from verifier.targets.model_source import resolve_model
from verifier.targets.rephrase import OfflineRephraser
from verifier.trust.envelopes import public_pem
from verifier.trust.timestamps import stamp_envelope

EXAMPLE = resource("examples", "data", "marks")
runner = CliRunner()


@pytest.fixture(scope="module")
def workspace(small_testbed, tmp_path_factory):
    """A claim folder holding the testbed and the example marks, and a trust store pinning the example's registrant."""
    folder = tmp_path_factory.mktemp("marks-claims")
    shutil.copytree(small_testbed.folder, folder / "testbed")
    shutil.copytree(EXAMPLE, folder / "marks")
    (folder / "marks" / "siblings.json").chmod(0o600)  # the package's copy is readable by all; a user's is not
    trust = tmp_path_factory.mktemp("trust")
    shutil.copy(EXAMPLE / "registrant.pub", trust / "example.pem")
    return folder, trust


@pytest.fixture()
def trusted(workspace, monkeypatch):
    monkeypatch.setenv("VERIFIER_TRUST_DIR", str(workspace[1]))
    return workspace[0]


def registered_on(path: Path) -> date:
    """The date a registration states for itself (its signed predicate's ``created``)."""
    payload = json.loads(base64.b64decode(json.loads(path.read_text())["payload"]))
    return datetime.fromisoformat(payload["predicate"]["created"]).date()


def released_after(path: Path) -> str:
    """A declared model release the day after the registration: tests never depend on the day they run."""
    return (registered_on(path) + timedelta(days=1)).isoformat()


def audit(
    folder: Path,
    name: str,
    kind: str = "trained_on",
    model: dict | None = None,
    suspect: dict | None = None,
    marks: dict | None = None,
    policy: str | None = None,
) -> dict:
    registration = folder / (marks or {}).get("registration", "marks/registration.dsse.json")
    claim = {
        "claim": {"id": name, "statement": "s", "kind": kind, "made_by": "tests"},
        "model": {"target": "testbed/model", "released": released_after(registration)} | (model or {}),
        "evidence": {"suspect": suspect or {"path": "marks/published.jsonl"}},
    }
    if marks is not False:
        claim["evidence"]["marks"] = marks or {
            "registration": "marks/registration.dsse.json",
            "siblings": "marks/siblings.json",
        }
    claim["model"] = {k: v for k, v in claim["model"].items() if v is not None}
    if policy:
        claim["policy"] = policy
    (folder / f"{name}.yaml").write_text(yaml.safe_dump(claim))
    return run_audit(folder / f"{name}.yaml", cache=ScoreCache(folder / "cache")).findings


def route(findings: dict, name: str) -> dict:
    return next(r for r in findings["path"] if r["route"] == name)


def test_example_marks_support_training_and_contradict_its_denial(trusted):
    findings = audit(trusted, "trained")
    assert findings["verdict"] == "SUPPORTED" and findings["decided_by"] == "marks"
    test = route(findings, "marks")["outcome"]["metrics"]["test"]
    assert test["p_value"] < 1e-4 and test["n_marks"] == 24 and not test["excluded"]
    assert {k["kind"] for k in test["by_kind"]} == {"canary", "trap", "rephrasing"}
    assert all(k["combined_p"] < 0.05 for k in test["by_kind"])
    assert test["paired"]["n_documents"] == 8 and test["paired"]["mean_difference"] > 0
    assert "H0: the model was not trained on the published marks" in findings["verdict_sentence"]
    denied = audit(trusted, "denied", kind="not_trained_on")
    assert denied["verdict"] == "CONTRADICTED" and denied["decided_by"] == "marks"


def test_a_siblings_file_others_can_read_is_refused_like_a_key(trusted):
    """Whoever else can read the siblings can blind the test: the registration is refused as
    evidence, naming the file, as a readable signing key is refused; only a bundled example's
    (which ships with the package) is read, and said."""
    siblings = trusted / "marks" / "siblings.json"
    siblings.chmod(0o644)
    try:
        refused = route(audit(trusted, "siblings-644"), "marks")["outcome"]
    finally:
        siblings.chmod(0o600)
    assert refused["status"] == "refused"
    assert "siblings.json: the private siblings file must be owned and readable by you only" in refused["summary"]
    assert str(trusted) not in str(refused)
    record = route(audit(trusted, "siblings-600"), "marks")
    assert record["outcome"]["metrics"].get("siblings_file_private", True)
    assert not any("siblings file was readable" in x for x in record["outcome"]["limitations"])


def test_marks_never_trained_on_give_uniform_p_values_and_never_support(trusted, tmp_path_factory, monkeypatch):
    """60 canaries and traps published on carriers the testbed never saw: the control."""
    key = Ed25519PrivateKey.generate()
    trust = tmp_path_factory.mktemp("trust-control")
    (trust / "k.pem").write_bytes(public_pem(key.public_key()))
    monkeypatch.setenv("VERIFIER_TRUST_DIR", str(trust))
    specs = [MarkSpec(kind="canary", format="words", siblings=19), MarkSpec(kind="trap", siblings=19)] * 30
    write_marks(make_marks(carriers(60, 100), specs, "control", seed=11), trusted / "control", key)
    findings = audit(
        trusted,
        "control",
        marks={"registration": "control/registration.dsse.json", "siblings": "control/private/siblings.json"},
        suspect={"path": "control/published.jsonl"},
    )
    assert route(findings, "marks")["status"] in ("ran", "decided")
    p = [r["p_value"] for r in route(findings, "marks")["outcome"]["metrics"]["test"]["results"]]
    assert len(p) == 60 and stats.kstest(p, "uniform").pvalue > 1e-3 and np.mean(np.array(p) <= 0.05) <= 0.2
    assert (
        findings["verdict"] != "SUPPORTED" or route(findings, "marks")["outcome"]["metrics"]["test"]["p_value"] <= 0.05
    )


@pytest.mark.parametrize(
    "change, reason",
    [
        (
            {"model": {"released": registered_on(EXAMPLE / REGISTRATION).isoformat()}},
            "not before the model's declared release",
        ),  # its own day
        (
            {"model": {"released": None, "training_cutoff": 2026}},
            "not before the year of the model's declared training cutoff",
        ),
        ({"model": {"released": None}}, "declares neither"),
        (
            {"suspect": {"path": "marks/published.jsonl", "limit": 20}},
            "4 of the 24 registered documents are not in the suspect set",
        ),
        (
            {"suspect": {"path": "testbed/documents.jsonl", "where": {"identifier": 0}}},
            "registration is for other documents",
        ),
        (
            {
                "marks": {
                    "registration": "marks/registration.dsse.json",
                    "siblings": "marks/siblings.json",
                    "sha256": "0" * 64,
                }
            },
            "not the registration the claim pins",
        ),
        (
            # The published documents named as the siblings: every document set is read before the routes
            # run, so the file is refused as one already read as documents (before its digest is compared).
            {"marks": {"registration": "marks/registration.dsse.json", "siblings": "marks/published.jsonl"}},
            "read as a document set already",
        ),
    ],
)
def test_registrations_that_cannot_be_evidence_are_refused_and_decide_nothing(trusted, change, reason):
    findings = audit(trusted, "refused", **change)
    record = route(findings, "marks")
    assert record["status"] == "ran" and record["outcome"]["status"] == "refused", record["reason"]
    assert reason in record["outcome"]["summary"]
    assert findings["decided_by"] != "marks"


def test_an_unpinned_registrant_is_refused(workspace, monkeypatch, tmp_path):
    monkeypatch.setenv("VERIFIER_TRUST_DIR", str(tmp_path))
    findings = audit(workspace[0], "unpinned")
    assert "signed by a key not pinned in the trust store" in route(findings, "marks")["outcome"]["summary"]


def test_rephrasings_made_by_the_target_are_refused(trusted, monkeypatch, tmp_path):
    class TargetAsRephraser(OfflineRephraser):
        identity = {
            "rephraser": "model",
            "digests": {"weights": resolve_model(str(trusted / "testbed" / "model")).digest()},
        }

    key = Ed25519PrivateKey.generate()
    (tmp_path / "k.pem").write_bytes(public_pem(key.public_key()))
    monkeypatch.setenv("VERIFIER_TRUST_DIR", str(tmp_path))
    write_marks(
        make_marks(
            carriers(3, 5),
            [MarkSpec(kind="rephrasing", siblings=19)] * 3,
            "self",
            seed=3,
            rephraser=TargetAsRephraser(),
        ),
        trusted / "self",
        key,
    )
    findings = audit(
        trusted,
        "self",
        marks={"registration": "self/registration.dsse.json", "siblings": "self/private/siblings.json"},
        suspect={"path": "self/published.jsonl"},
    )
    assert "made by the model under test" in route(findings, "marks")["outcome"]["summary"]


def test_a_mark_missing_from_its_document_is_reported_and_a_too_small_design_refused(trusted, monkeypatch, tmp_path):
    key = Ed25519PrivateKey.generate()
    (tmp_path / "k.pem").write_bytes(public_pem(key.public_key()))
    monkeypatch.setenv("VERIFIER_TRUST_DIR", str(tmp_path))
    marked = make_marks(carriers(3, 10), [MarkSpec(kind="canary", format="hex", siblings=1)] * 3, "small", seed=4)
    first = marked.secrets["marks"][0]["published"]["text"]
    marked.published[0]["text"] = marked.published[0]["text"].replace(first + " ", "")  # registered without its mark
    from verifier.targets.cache import text_digest

    marked.predicate["marks"][0]["document_sha256"] = text_digest(marked.published[0]["text"])
    write_marks(marked, trusted / "small", key)
    findings = audit(
        trusted,
        "small",
        marks={"registration": "small/registration.dsse.json", "siblings": "small/private/siblings.json"},
        suspect={"path": "small/published.jsonl"},
    )
    outcome = route(findings, "marks")["outcome"]
    assert outcome["status"] == "design_too_small" and "cannot reach alpha 0.05" in outcome["summary"]
    assert outcome["metrics"]["test"]["excluded"] == {
        "mark-0": "the mark does not occur in its published document '" + marked.published[0]["id"] + "'"
    }


@pytest.mark.slow
def test_natural_identifiers_detect_members_and_not_non_members(trusted):
    """No registration, no held-out set: the identifiers route tests the suspect set's own identifiers."""
    members = audit(
        trusted,
        "ids-members",
        marks=False,
        suspect={"path": "testbed/documents.jsonl", "where": {"member": 1, "identifier": 1}, "year": 2024},
    )
    assert members["decided_by"] == "identifiers" and members["verdict"] == "SUPPORTED"
    test = route(members, "identifiers")["outcome"]["metrics"]["test"]
    assert (
        test["n_marks"] > 40
        and test["p_value"] < 0.05
        and test["null_hypothesis"].startswith("the model was not trained on text containing")
    )
    others = audit(
        trusted,
        "ids-others",
        marks=False,
        suspect={"path": "testbed/documents.jsonl", "where": {"member": 0, "identifier": 1}, "year": 2024},
    )
    p = [r["p_value"] for r in route(others, "identifiers")["outcome"]["metrics"]["test"]["results"]]
    assert stats.kstest(p, "uniform").pvalue > 1e-3
    none = audit(
        trusted,
        "ids-none",
        marks=False,
        suspect={"path": "testbed/documents.jsonl", "where": {"identifier": 0}, "year": 2024},
    )
    assert route(none, "identifiers")["outcome"]["status"] == "no_marks" and none["decided_by"] == "disclosure"


@pytest.mark.parametrize(
    "year, model, reason",
    [
        (None, {}, "declares no year"),
        (2026, {}, "not before the model's release"),
        (2024, {"released": None, "training_cutoff": 2023}, "after the model's training cutoff"),
        (2024, {"released": None}, "declares neither"),
    ],
)
def test_identifiers_of_documents_not_shown_to_predate_the_model_are_not_tested(trusted, year, model, reason):
    suspect = {"path": "testbed/documents.jsonl", "where": {"member": 1, "identifier": 1}} | (
        {"year": year} if year else {}
    )
    findings = audit(trusted, "ids-undated", marks=False, suspect=suspect, model=model)
    outcome = route(findings, "identifiers")["outcome"]
    assert outcome["status"] == "undated" and reason in outcome["summary"] and findings["decided_by"] == "disclosure"


def test_cli_marks_make_test_and_identifiers(trusted, tmp_path):
    docs = tmp_path / "docs.jsonl"
    docs.write_text("".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in carriers(4, 20)))
    key = tmp_path / "k.key"
    assert runner.invoke(app, ["keys", "generate", "--out", str(key)]).exit_code == 0
    made = runner.invoke(
        app,
        [
            "marks",
            "make",
            str(docs),
            "--out",
            str(tmp_path / "m"),
            "--kind",
            "canary",
            "--format",
            "hex",
            "--siblings",
            "19",
            "--sign-key",
            str(key),
            "--seed",
            "1",
        ],
    )
    assert made.exit_code == 0, made.output
    assert (
        (tmp_path / "m" / PUBLISHED).is_file()
        and (tmp_path / "m" / REGISTRATION).is_file()
        and (tmp_path / "m" / SECRETS).is_file()
    )
    again = runner.invoke(app, ["marks", "make", str(docs), "--out", str(tmp_path / "m"), "--sign-key", str(key)])
    assert again.exit_code == 2 and "refusing to overwrite" in again.output
    bad = runner.invoke(
        app, ["marks", "make", str(docs), "--out", str(tmp_path / "n"), "--kind", "poem", "--sign-key", str(key)]
    )
    assert bad.exit_code == 2 and "kind" in bad.output and len([x for x in bad.output.splitlines() if x.strip()]) == 1
    model = str(trusted / "testbed" / "model")
    args = [
        "marks",
        "test",
        "--model",
        model,
        "--registration",
        str(EXAMPLE / REGISTRATION),
        "--siblings",
        str(EXAMPLE / "siblings.json"),
        "--published",
        str(EXAMPLE / PUBLISHED),
        "--released",
        released_after(EXAMPLE / REGISTRATION),
        "--cache-dir",
        str(trusted / "cache"),
    ]
    tested = runner.invoke(app, args)
    assert tested.exit_code == 0 and "significant: combined p" in tested.output and "24 marks" in tested.output
    late = runner.invoke(app, args[:-4] + ["--released", registered_on(EXAMPLE / REGISTRATION).isoformat()])
    assert late.exit_code == 2 and "not before the model's declared release" in late.output
    ids = runner.invoke(
        app,
        [
            "identifiers",
            "test",
            str(trusted / "testbed" / "documents.jsonl"),
            "--model",
            model,
            "--max-identifiers",
            "30",
            "--cache-dir",
            str(trusted / "cache"),
        ],
    )
    assert ids.exit_code == 0 and "30 identifiers" in ids.output


def test_identifiers_a_model_merely_likes_are_not_evidence(trusted):
    """The outside attack that gave a signed SUPPORTED: documents the testbed never saw, carrying
    random lower-case short links and 40-digit numbers (which a model likes whatever it was trained on)."""
    rng = np.random.default_rng(7)
    lower = "abcdefghijklmnopqrstuvwxyz0123456789"
    texts = [
        f"Report {i} on the harbour works, filed with the council. Read it at bit.ly/"
        + "".join(lower[j] for j in rng.integers(0, 36, 7))
        + " or ask the clerk."
        for i in range(10)
    ]
    texts += [
        f"Ledger entry {i} for the mill, reference number " + "".join(str(d) for d in rng.integers(0, 10, 40)) + "."
        for i in range(10)
    ]
    (trusted / "liked.jsonl").write_text("".join(json.dumps({"text": t}) + "\n" for t in texts))
    findings = audit(trusted, "liked", marks=False, suspect={"path": "liked.jsonl", "year": 2016})
    outcome = route(findings, "identifiers")["outcome"]
    assert outcome["metrics"]["identifiers"] == 10 and outcome["metrics"]["set_aside"] == {"not random-looking": 10}
    assert findings["verdict"] != "SUPPORTED" and outcome["status"] == "not_significant"


STAMPED = {"registration": "stamped/registration.dsse.json", "siblings": "stamped/siblings.json"}


@pytest.fixture(scope="module")
def stamped(workspace, tmp_path_factory):
    """The example registration dated today by a real TSA (its registrant's own date is older), and
    two trust stores pinning the registrant: one also pins the TSA, one does not."""
    folder, plain = workspace
    ca = make_tsa_ca(tmp_path_factory.mktemp("tsa"))
    with_tsa = tmp_path_factory.mktemp("trust-with-tsa")
    shutil.copy(EXAMPLE / "registrant.pub", with_tsa / "example.pem")
    (with_tsa / "tsa").mkdir()
    shutil.copy(ca / "ca.crt", with_tsa / "tsa" / "test-tsa.pem")
    shutil.copytree(EXAMPLE, folder / "stamped")
    (folder / "stamped" / "siblings.json").chmod(0o600)
    with LoopbackTSA(ca) as tsa:
        (token,) = stamp_envelope((folder / "stamped" / "registration.dsse.json").read_bytes(), [tsa.url()])
        other = make_marks(carriers(3, 5), [MarkSpec(kind="canary", format="words", siblings=19)] * 3, "other", seed=5)
        key = Ed25519PrivateKey.generate()
        write_marks(other, folder / "other-stamped", key, tsa=[tsa.url()])
    (folder / "stamped" / "registration.timestamp-1.tsr").write_bytes(token)
    return {"folder": folder, "with_tsa": with_tsa, "without_tsa": plain, "ca": ca}


def test_a_pinned_timestamp_dates_the_registration_and_refuses_a_back_dated_one(stamped, monkeypatch):
    """The registrant's signed date is old, but a pinned TSA saw the registration only today: against a
    model released the day after the registrant's date, the registration is refused (back-dated)."""
    folder = stamped["folder"]
    monkeypatch.setenv("VERIFIER_TRUST_DIR", str(stamped["with_tsa"]))
    findings = audit(folder, "backdated", marks=STAMPED)
    outcome = route(findings, "marks")["outcome"]
    assert outcome["status"] == "refused" and findings["decided_by"] != "marks"
    assert "by a pinned time-stamping authority, not before the model's declared release" in outcome["summary"]
    # Released after the TSA's date: the same registration is evidence, dated by the TSA's clock.
    tomorrow = (date.today() + timedelta(days=2)).isoformat()
    findings = audit(folder, "timestamped", marks=STAMPED, model={"released": tomorrow})
    outcome = route(findings, "marks")["outcome"]
    dated = outcome["metrics"]["registration"]["dated"]
    assert findings["verdict"] == "SUPPORTED" and dated["trusted_timestamp"] and "CN=Test TSA" in dated["by"]
    assert any("is the clock of the time-stamping authority CN=Test TSA" in line for line in outcome["limitations"])


def test_an_unpinned_tsa_leaves_the_registrants_own_date_and_says_so(stamped, monkeypatch):
    monkeypatch.setenv("VERIFIER_TRUST_DIR", str(stamped["without_tsa"]))
    findings = audit(stamped["folder"], "registrant-dated", marks=STAMPED)
    dated = route(findings, "marks")["outcome"]["metrics"]["registration"]["dated"]
    assert (
        findings["verdict"] == "SUPPORTED"
        and not dated["trusted_timestamp"]
        and "registrant's own statement" in dated["by"]
    )
    assert [t["pinned"] for t in dated["timestamps"]] == [False]
    assert any("its signer's statement" in line for line in route(findings, "marks")["outcome"]["limitations"])


def test_a_policy_requiring_a_timestamp_refuses_the_registrants_own_date(stamped, monkeypatch):
    monkeypatch.setenv("VERIFIER_TRUST_DIR", str(stamped["without_tsa"]))
    findings = audit(stamped["folder"], "required", policy="strict")  # the example registration, no token beside it
    outcome = route(findings, "marks")["outcome"]
    assert outcome["status"] == "refused" and "requires a timestamp of a time-stamping authority" in outcome["summary"]


def test_a_token_of_another_registration_is_refused(stamped, monkeypatch, tmp_path):
    folder = stamped["folder"]
    monkeypatch.setenv("VERIFIER_TRUST_DIR", str(stamped["with_tsa"]))
    shutil.copytree(folder / "stamped", folder / "moved")
    shutil.copy(
        folder / "other-stamped" / "registration.timestamp-1.tsr", folder / "moved" / "registration.timestamp-1.tsr"
    )
    findings = audit(
        folder,
        "moved",
        marks={"registration": "moved/registration.dsse.json", "siblings": "moved/siblings.json"},
        model={"released": (date.today() + timedelta(days=2)).isoformat()},
    )
    outcome = route(findings, "marks")["outcome"]
    assert (
        outcome["status"] == "refused"
        and "registration.timestamp-1.tsr: differs: the token dates other data" in outcome["summary"]
    )
