"""The engine's contracts: policies validated when read, caps that only lower, one verdict table per
route, failing routes recorded, model-free refusals that never load the model, capability checks."""

from __future__ import annotations

import copy
import re
import shutil
from pathlib import Path

import pytest
import yaml
from conftest import ROOT

from verifier.audit import run_audit
from verifier.errors import VerifierError
from verifier.policy import departures_from_default, load_policy
from verifier.policy.engine import AuditIncomplete
from verifier.routes.dataset_inference import DatasetInferenceRoute
from verifier.targets import ScoreCache
from verifier.verdicts import Verdict, cap_verdict

DEFAULT = ROOT / "verifier" / "policies" / "default.yaml"
DATA = ROOT / "verifier" / "examples" / "data" / "wikimia" / "length64.jsonl"


def default_policy() -> dict:
    return yaml.safe_load(DEFAULT.read_text())


def route_of(policy: dict, name: str) -> dict:
    return next(r for r in policy["routes"] if r["route"] == name)


def write_policy(folder: Path, policy: dict, name: str = "policy.yaml") -> Path:
    path = folder / name
    path.write_text(yaml.safe_dump(policy))
    return path


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"alpha": 1.0}, r"routes\.2\.params\.alpha: Input should be less than or equal to 0.2"),
        ({"condition_on_text": "false"}, r"routes\.2\.params\.condition_on_text: Input should be a valid boolean"),
        ({"shift_permutations": 19, "shift_alpha": 0.05}, r"routes\.2\.params.*no p-value can fall below 0.05"),
        ({"margin_cap": 1.0}, r"routes\.2\.params\.margin_cap"),
        ({"min_set_size": 2}, r"routes\.2\.params\.min_set_size"),
        ({"blind_threshold": 0.6}, r"routes\.2\.params\.blind_threshold: not a key here \(keys: "),
        ({"target_power": 1.5}, r"routes\.2\.params\.target_power: Input should be less than 1"),
        ({"signals": ["loss", "lossy"]}, r"routes\.2\.params\.signals: unknown signal\(s\) \['lossy'\]"),
        ({"signals": None}, r"routes\.2\.params\.signals"),
        ({"signals": ["loss", "loss"]}, r"routes\.2\.params\.signals: signal\(s\) \['loss'\] listed more than once"),
        ({"min_set_size": 10**9}, r"routes\.2\.params\.min_set_size: Input should be less than or equal to 100000"),
    ],
)
def test_policy_cannot_switch_a_safeguard_off(tmp_path, change, message):
    policy = default_policy()
    params = route_of(policy, "dataset_inference")["params"]
    params.update(change)
    params = {k: v for k, v in params.items() if v is not None}  # None: the key is missing
    route_of(policy, "dataset_inference")["params"] = params
    with pytest.raises(VerifierError, match=f"policy.yaml: {message}"):
        load_policy(write_policy(tmp_path, policy))


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (
            lambda p: route_of(p, "dataset_inference").update(when="heldot"),
            r"routes\.2\.when: not a key here \(keys: grants, params, route\)",
        ),
        (
            lambda p: route_of(p, "dataset_inference").update(route="dataset_inferense"),
            r"routes\.2\.route: unknown route 'dataset_inferense'",
        ),
        (
            lambda p: route_of(p, "dataset_inference").update(grants=["VERIFIED"]),
            r"routes\.2\.grants: dataset_inference can never reach VERIFIED",
        ),
        (
            lambda p: route_of(p, "date_shift").update(grants=["SUPPORTED"]),
            r"routes\.4\.grants: date_shift can never reach SUPPORTED",
        ),
        (
            lambda p: p["routes"].append(copy.deepcopy(route_of(p, "disclosure"))),
            r"routes\.6\.route: 'disclosure' appears twice",
        ),
        (lambda p: p.pop("routes"), r"routes: Field required"),
        (lambda p: route_of(p, "date_shift")["params"].update(shift_alpha=0.9), r"routes\.4\.params\.shift_alpha"),
        (
            lambda p: route_of(p, "corpus").update(params={"ngramz": -5}),
            r"routes\.0\.params\.ngramz: not a key here; did you mean 'ngram'\?",
        ),
        (
            lambda p: route_of(p, "marks").update(grants=["VERIFIED"]),
            r"routes\.1\.grants: marks can never reach VERIFIED",
        ),
    ],
)
def test_policy_errors_name_the_file_and_key(tmp_path, edit, message):
    policy = default_policy()
    edit(policy)
    with pytest.raises(VerifierError, match=f"policy.yaml: {message}"):
        load_policy(write_policy(tmp_path, policy))


def test_bundled_policies_load_and_strict_is_not_weaker():
    assert departures_from_default(load_policy(DEFAULT)) == ([], [])
    strict = load_policy(ROOT / "verifier" / "policies" / "strict.yaml")
    assert departures_from_default(strict) == (
        [],
        ["marks.require_timestamp True (default False)", "dataset_inference.require_control True (default False)"],
    )


def test_weaker_policy_is_named_in_every_way_it_is_weaker(tmp_path):
    policy = default_policy()
    params = route_of(policy, "dataset_inference")["params"]
    params.update(
        alpha=0.1, shift_alpha=0.01, margin_cap=0.75, n_permutations=199, method="split_median", min_set_size=500
    )
    route_of(policy, "date_shift")["grants"] = []
    route_of(policy, "dataset_inference")["grants"] = ["SUPPORTED", "REJECTED-METHOD"]
    policy["routes"] = [r for r in policy["routes"] if r["route"] != "marks"]
    policy["routes"][-1], policy["routes"][-2] = policy["routes"][-2], policy["routes"][-1]
    looser, other = departures_from_default(load_policy(write_policy(tmp_path, policy)))
    assert sorted(other) == sorted(
        [
            "routes reordered: corpus > dataset_inference > identifiers > disclosure > date_shift",
            "date_shift may not grant REJECTED-METHOD",
            "dataset_inference may not grant CONTRADICTED",  # can hide an adverse result from a denial
            "dataset_inference.method split_median (default permutation)",
            "dataset_inference.min_set_size 500 (default 20)",  # can refuse every claim
        ]
    )
    assert sorted(looser) == sorted(
        [
            "route marks removed",
            "dataset_inference.alpha 0.1 (default 0.05)",
            "dataset_inference.n_permutations 199 (default 999)",
            "dataset_inference.shift_alpha 0.01 (default 0.05)",
            "dataset_inference.margin_cap 0.75 (default 0.7)",
        ]
    )


@pytest.mark.parametrize(
    ("verdict", "grants", "expected"),
    [
        (
            Verdict.INCONCLUSIVE,
            {Verdict.REJECTED_METHOD},
            Verdict.INCONCLUSIVE,
        ),  # a cap never asserts a rejection no check made
        (
            Verdict.CONTRADICTED,
            {Verdict.SUPPORTED},
            Verdict.INCONCLUSIVE,
        ),  # SUPPORTED granted does not let CONTRADICTED through
        (Verdict.SUPPORTED, {Verdict.CONTRADICTED}, Verdict.INCONCLUSIVE),
        (Verdict.REJECTED_METHOD, {Verdict.SUPPORTED}, Verdict.INCONCLUSIVE),
        (Verdict.VERIFIED, set(), Verdict.INCONCLUSIVE),
        (Verdict.UNVERIFIABLE, set(), Verdict.UNVERIFIABLE),
        (Verdict.SUPPORTED, {Verdict.SUPPORTED}, Verdict.SUPPORTED),
        (Verdict.REJECTED_METHOD, {Verdict.REJECTED_METHOD}, Verdict.REJECTED_METHOD),
    ],
)
def test_caps_only_lower_to_inconclusive(verdict, grants, expected):
    assert cap_verdict(verdict, grants) == expected


@pytest.fixture()
def claim_folder(tmp_path, tiny_model_dir):
    """A folder with the WikiMIA-64 file and the tiny GPT-2 next to a claim writer."""
    shutil.copy(DATA, tmp_path / "docs.jsonl")
    return tmp_path


def write_claim(
    folder: Path, model: Path, evidence: dict, kind: str = "trained_on", policy: str = "default", **model_extra
) -> Path:
    claim = {
        "claim": {"id": "t", "statement": "s", "kind": kind, "made_by": "tests"},
        "model": {"target": str(model), **model_extra},
        "evidence": copy.deepcopy(evidence),  # no shared objects: YAML would write aliases, which claims refuse
        "policy": policy,
    }
    path = folder / "claim.yaml"
    path.write_text(yaml.safe_dump(claim))
    return path


def never_load(role: str):
    pytest.fail(f"the {role} model was loaded, though no check needed it")


OLD_VS_NEW = {
    "suspect": {"path": "docs.jsonl", "where": {"label": 1}, "year": 2016},
    "heldout": {"path": "docs.jsonl", "where": {"label": 0}, "year": 2023},
}


def test_refusal_by_dates_never_queries_the_model(claim_folder, tiny_model_dir, tmp_path):
    findings = run_audit(
        write_claim(claim_folder, tiny_model_dir, OLD_VS_NEW),
        cache=ScoreCache(tmp_path / "c"),
        target_factory=never_load,
    ).findings
    assert findings["verdict"] == "REJECTED-METHOD" and findings["decided_by"] == "dataset_inference"
    assert "the model was not queried" in findings["verdict_sentence"]
    assert findings["model"]["target"]["loaded"] is False


def test_summary_field_claim_is_not_decided_by_dataset_inference(claim_folder, tiny_model_dir, tmp_path):
    path = write_claim(claim_folder, tiny_model_dir, OLD_VS_NEW, kind="summary_field")
    findings = run_audit(path, cache=ScoreCache(tmp_path / "c"), target_factory=never_load).findings
    route = next(r for r in findings["path"] if r["route"] == "dataset_inference")
    assert route["status"] == "skipped" and "does not bear on a summary_field claim" in route["reason"]
    assert findings["verdict"] == "UNVERIFIABLE" and findings["decided_by"] == "disclosure"


def test_grants_lower_the_routes_verdict(claim_folder, tiny_model_dir, tmp_path):
    policy = default_policy()
    route_of(policy, "dataset_inference")["grants"] = ["SUPPORTED"]
    write_policy(claim_folder, policy, "narrow.yaml")
    findings = run_audit(
        write_claim(claim_folder, tiny_model_dir, OLD_VS_NEW, policy="narrow.yaml"),
        cache=ScoreCache(tmp_path / "c"),
        target_factory=never_load,
    ).findings
    route = next(r for r in findings["path"] if r["route"] == "dataset_inference")
    assert (findings["verdict"], route["uncapped_verdict"]) == ("INCONCLUSIVE", "REJECTED-METHOD")


def test_a_set_no_row_matches_is_refused_before_any_route_runs(claim_folder, tiny_model_dir, tmp_path):
    evidence = {"suspect": OLD_VS_NEW["suspect"], "heldout": dict(OLD_VS_NEW["heldout"], where={"label": 7})}
    claim = write_claim(claim_folder, tiny_model_dir, evidence)
    with pytest.raises(VerifierError) as info:
        run_audit(claim, cache=ScoreCache(tmp_path / "c"), target_factory=never_load)
    assert str(info.value) == f"{claim}: evidence.heldout: docs.jsonl: no row has 'label' equal to 7"


def test_a_failing_route_stops_the_audit_naming_no_private_path(claim_folder, tiny_model_dir, tmp_path, monkeypatch):
    from verifier.routes.dataset_inference import DatasetInferenceRoute

    def failing(self, ctx, params):
        raise VerifierError(f"{claim_folder / 'docs.jsonl'}: line 3: unreadable")

    monkeypatch.setattr(DatasetInferenceRoute, "run", failing)
    with pytest.raises(AuditIncomplete) as info:
        run_audit(
            write_claim(claim_folder, tiny_model_dir, OLD_VS_NEW),
            cache=ScoreCache(tmp_path / "c"),
            target_factory=never_load,
        )
    message = str(info.value)
    assert message.startswith("the audit did not complete: route dataset_inference failed:") and "line 3" in message
    assert "<claim folder>/docs.jsonl" in message and str(claim_folder) not in message


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        ({"seed": -1}, r"claim.yaml: seed: Input should be greater than or equal to 0"),
        ({"policy": "strct"}, r"policy 'strct': no bundled policy of that name; bundled: default, strict"),
        ({"policy": "regulation"}, r"policy 'regulation': no bundled policy"),
    ],
)
def test_claim_level_policy_and_seed_errors(claim_folder, tiny_model_dir, edit, message):
    path = write_claim(claim_folder, tiny_model_dir, OLD_VS_NEW)
    claim = yaml.safe_load(path.read_text()) | edit
    path.write_text(yaml.safe_dump(claim))
    with pytest.raises(VerifierError, match=message):
        run_audit(path, target_factory=never_load)


def test_a_route_bug_stops_the_audit_instead_of_letting_disclosure_decide(
    claim_folder, tiny_model_dir, tmp_path, monkeypatch
):
    """A route that could not examine its evidence must not let the walk go on to the developer's
    disclosure and hand the claim UNVERIFIABLE (or anything else) about evidence never examined."""

    def broken(self, ctx, params):
        raise RuntimeError("boom\nsecond line")

    monkeypatch.setattr(DatasetInferenceRoute, "run", broken)
    with pytest.raises(
        AuditIncomplete,
        match=r"^the audit did not complete: route dataset_inference failed with an internal "
        r"error \(RuntimeError: boom; a bug in verifier\)$",
    ):
        run_audit(
            write_claim(claim_folder, tiny_model_dir, OLD_VS_NEW),
            cache=ScoreCache(tmp_path / "c"),
            target_factory=never_load,
        )


# Two halves of the post-2023 texts: same population, same year (the blind check finds no shift).
SAME_PERIOD = {
    "suspect": {"path": "docs.jsonl", "where": {"label": 0}, "limit": 120, "year": 2023},
    "heldout": {"path": "docs.jsonl", "where": {"label": 0}, "offset": 120, "year": 2023},
}


def test_signals_the_target_cannot_compute_are_refused_at_load_or_recorded(
    claim_folder, tiny_model_dir, tiny_reference_dir, tmp_path
):
    policy = default_policy()
    route_of(policy, "dataset_inference")["params"]["signals"] = ["reference"]
    write_policy(claim_folder, policy, "ref-only.yaml")
    with pytest.raises(
        VerifierError, match=r"ref-only.yaml: routes\.2\.params\.signals: target .* can compute none of \['reference'\]"
    ):
        run_audit(
            write_claim(claim_folder, tiny_model_dir, SAME_PERIOD, policy="ref-only.yaml"), target_factory=never_load
        )
    # With a reference model named in the claim, the reference signal enters the test.
    route_of(policy, "dataset_inference")["params"]["signals"] = ["loss", "reference"]
    write_policy(claim_folder, policy, "ref.yaml")
    path = write_claim(claim_folder, tiny_model_dir, SAME_PERIOD, policy="ref.yaml", reference=str(tiny_reference_dir))
    findings = run_audit(path, cache=ScoreCache(tmp_path / "c")).findings
    metrics = next(r for r in findings["path"] if r["route"] == "dataset_inference")["outcome"]["metrics"]
    assert metrics["signals"] == ["loss", "reference"] and metrics["not_computable"] == {}, metrics["set_test"]
    assert "test" in metrics, metrics["set_test"]["reason"]
    assert set(metrics["test"]["weights"][0]) == {"loss", "reference"}
    assert findings["model"]["reference"]["digests"]["weights"]
    # Without it, the signal is recorded as not computable and the test runs on the rest.
    path = write_claim(claim_folder, tiny_model_dir, SAME_PERIOD, policy="ref.yaml")
    findings = run_audit(path, cache=ScoreCache(tmp_path / "c")).findings
    metrics = next(r for r in findings["path"] if r["route"] == "dataset_inference")["outcome"]["metrics"]
    assert metrics["signals"] == ["loss"] and "reference" in metrics["not_computable"]
    assert "not computable" in metrics["not_computable"]["reference"]


def test_date_shift_without_a_shift_passes_the_decision_on(claim_folder, tiny_model_dir, tmp_path):
    # The dated set under its old name, evidence.reference (read for a release): the findings name it dated.
    evidence = {"suspect": SAME_PERIOD["suspect"], "reference": SAME_PERIOD["heldout"]}
    findings = run_audit(write_claim(claim_folder, tiny_model_dir, evidence), cache=ScoreCache(tmp_path / "c")).findings
    assert findings["claim"]["evidence"]["dated"] and "reference" not in findings["claim"]["evidence"]
    assert {i["role"] for i in findings["inputs"]} == {"suspect", "dated"}
    route = next(r for r in findings["path"] if r["route"] == "date_shift")
    assert route["status"] == "ran" and route["outcome"]["status"] == "dated_membership_unknown"
    assert findings["verdict"] == "UNVERIFIABLE" and findings["decided_by"] == "disclosure"


@pytest.mark.parametrize(
    ("evidence", "message"),
    [
        ({"suspect": {"path": "missing.jsonl"}}, r"claim.yaml: evidence.suspect.path: file missing.jsonl not found"),
        (
            {"suspect": {"path": "docs.jsonl"}, "corpus": {"path": "docs.jsonl"}},
            # The key given where another was meant is named, with the keys the corpus takes.
            r"claim.yaml: evidence.corpus.path: not a key here "
            r"\(keys: api, exclude, index, index_sha256, sha256, version\)",
        ),
        (
            {"suspect": {"path": "docs.jsonl"}, "marks": {"registration": "reg.json", "siblings": "docs.jsonl"}},
            r"evidence.marks.registration: file reg.json not found",
        ),
        (
            {"suspect": {"path": "docs.jsonl"}, "marks": {"registration": "docs.jsonl"}},
            r"evidence.marks.siblings: Field required",
        ),
        (
            {"suspect": {"path": "docs.jsonl"}, "marks": {"registration": "docs.jsonl", "siblings": "../x.json"}},
            r"evidence.marks.siblings: ../x.json must be a path relative to the claim's folder and inside it",
        ),
    ],
)
def test_evidence_is_checked_when_the_claim_is_read(claim_folder, tiny_model_dir, evidence, message):
    with pytest.raises(VerifierError, match=message):
        run_audit(write_claim(claim_folder, tiny_model_dir, evidence), target_factory=never_load)


def test_claim_dtype_is_validated_with_its_key(claim_folder, tiny_model_dir):
    with pytest.raises(VerifierError, match=r"claim.yaml: model.dtype: Input should be 'fp32' or 'bf16'"):
        run_audit(write_claim(claim_folder, tiny_model_dir, OLD_VS_NEW, dtype="fp8"), target_factory=never_load)


@pytest.mark.parametrize("control_path", ["x/../docs.jsonl", "copy-of-docs.jsonl"])
def test_a_split_of_the_heldout_file_cannot_pass_as_a_control_by_spelling(
    claim_folder, tiny_model_dir, tmp_path, control_path
):
    # Respelled, or a byte-identical copy under another name (found by an outside attack from the README).
    (claim_folder / "x").mkdir()
    shutil.copy(claim_folder / "docs.jsonl", claim_folder / "copy-of-docs.jsonl")
    evidence = {
        "suspect": {"path": "docs.jsonl", "where": {"label": 0}, "limit": 100, "year": 2023},
        "heldout": {"path": "docs.jsonl", "where": {"label": 0}, "offset": 100, "limit": 80, "year": 2023},
        "control": {"path": control_path, "where": {"label": "0"}, "offset": 180, "year": 2023},
    }
    findings = run_audit(
        write_claim(claim_folder, tiny_model_dir, evidence, policy="strict"), cache=ScoreCache(tmp_path / "c")
    ).findings
    metrics = next(r for r in findings["path"] if r["route"] == "dataset_inference")["outcome"]["metrics"]
    assert "control" in metrics, metrics["set_test"]["reason"]
    assert metrics["control"]["validated"] is False
    assert any("split of the held-out population" in p for p in metrics["control"]["problems"])
    assert findings["verdict"] in ("INCONCLUSIVE", "REJECTED-METHOD")


def test_old_names_are_read_for_a_release_and_never_both(tmp_path, claim_folder, tiny_model_dir):
    """A policy naming corpus_lookup is the default policy, not a departure; a claim giving the
    dated set under both its names is refused rather than one silently winning."""
    policy = yaml.safe_load(DEFAULT.read_text())
    route_of(policy, "corpus")["route"] = "corpus_lookup"
    (tmp_path / "old.yaml").write_text(yaml.safe_dump(policy))
    old = load_policy(tmp_path / "old.yaml")
    assert old.routes[0].name == "corpus" and departures_from_default(old) == ([], [])
    evidence = {
        "suspect": SAME_PERIOD["suspect"],
        "reference": copy.deepcopy(SAME_PERIOD["heldout"]),
        "dated": copy.deepcopy(SAME_PERIOD["heldout"]),
    }
    with pytest.raises(VerifierError, match="evidence.reference is the old name of evidence.dated: give one of them"):
        run_audit(write_claim(claim_folder, tiny_model_dir, evidence))


def test_strict_is_the_default_with_two_parameters_tightened():
    from verifier.policy.schema import resolve_policy_path

    strict = load_policy(resolve_policy_path("strict", Path(".")))
    default = load_policy(resolve_policy_path("default", Path(".")))
    changed = {
        (a.name, key)
        for a, b in zip(strict.routes, default.routes, strict=True)
        for key in type(a.params).model_fields
        if getattr(a.params, key) != getattr(b.params, key)
    }
    assert changed == {("marks", "require_timestamp"), ("dataset_inference", "require_control")}
    assert [r.grants for r in strict.routes] == [r.grants for r in default.routes]
    # The bytes the bundle carries are the resolved policy, naming both files by digest.
    assert (
        strict.raw.startswith(b'# "strict.yaml" resolved: "default.yaml" as resolved (SHA-256 ')
        and b"extends" not in strict.raw
    )


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            "name: x\nversion: 1\nextends: default\nroutes:\n  nope:\n    params: {a: 1}\n",
            "routes.nope: default has no route 'nope'",
        ),
        ("name: x\nversion: 1\nextends: loop.yaml\n", "extends: more than 4 policies in one chain"),
        (
            "name: x\nversion: 1\nextends: default\nroutes:\n  marks:\n    params: {alpha: 0.9}\n",
            "routes.marks.params.alpha",
        ),
        ("name: x\nversion: 1\nextends: default\ncolour: red\n", "colour"),
    ],
)
def test_a_policy_that_extends_another_is_checked_in_one_line(tmp_path, body, message):
    (tmp_path / "loop.yaml").write_text(body)
    with pytest.raises(VerifierError, match=re.escape(message)):
        load_policy(tmp_path / "loop.yaml")


def test_the_resolved_policy_reads_back_as_the_policy_that_decides(tmp_path):
    """A file name holding a line break cannot add a key to the resolved policy the bundle carries."""
    name = 'x\nerror_control: bh\nzz: "\n#.yaml'
    (tmp_path / name).write_text("name: x\nversion: 1\nextends: default\n")
    policy = load_policy(tmp_path / name)
    assert policy.error_control == "holm" and yaml.safe_load(policy.raw)["error_control"] == "holm"
    assert load_policy(write_policy(tmp_path, yaml.safe_load(policy.raw))).routes == policy.routes
