"""The conformance kits (``verifier.conformance``) over every registered route, signal and target
kind, as scikit-learn runs check_estimator: a new part is held to them without a test of its own.
Then what needs a model: every route runs to a status of its table and renders."""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np
import pytest

from verifier.claims import ClaimKind, Evidence
from verifier.conformance import NonConformance, check_discovery, check_route, check_signal, check_target
from verifier.report.svg import FIGURES
from verifier.routes import PLANNED, ROUTES
from verifier.routes.base import Route
from verifier.signals import REGISTRY, Signal
from verifier.targets import KINDS, TargetKind
from verifier.verdicts import Verdict


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_every_signal_conforms(name):
    check_signal(REGISTRY[name])


@pytest.mark.parametrize("name", sorted(ROUTES))
def test_every_route_conforms(name):
    check_route(ROUTES[name])
    if ROUTES[name].needs_target:  # the default policy names signals the registry holds
        from verifier.boundary.resources import resource
        from verifier.policy import load_policy

        params = next(s for s in load_policy(resource("policies", "default.yaml")).routes if s.name == name).params
        assert ROUTES[name].signals_of(params) and set(ROUTES[name].signals_of(params)) <= set(REGISTRY)


@pytest.mark.parametrize("name", sorted(KINDS))
def test_every_target_kind_conforms(name):
    check_target(KINDS[name])


def test_every_loaded_target_kind_renders_in_the_report(tiny_model_dir, smollm2_logprob_server):
    """Each kind's real identity, as loaded: a local model, an API answering only, an API with
    prompt log-probs (its identity then carries the scoring options and what the probe found: a
    report template reading a local model's fields from it failed every such audit)."""
    from fault_server import FaultServer

    from verifier.conformance import check_loaded_target
    from verifier.targets import ApiOptions, OpenAICompatibleTarget, load_target

    texts = ["The treaty was signed in the spring.", "A second short text."]
    check_loaded_target(load_target(str(tiny_model_dir)), texts)
    with FaultServer() as server:
        answers_only = OpenAICompatibleTarget(server.spec("ok"), ApiOptions(timeout_s=2, retries=0))
        check_loaded_target(answers_only, texts)
        assert answers_only.capabilities == {"answers"}
    scoring = OpenAICompatibleTarget(smollm2_logprob_server.spec)
    check_loaded_target(scoring, texts)
    assert scoring.identity.as_finding()["probed"]["prompt_logprobs_form"] == "prompt_logprobs"


def test_every_module_of_the_part_folders_registers_a_part(monkeypatch):
    check_discovery()
    modules = REGISTRY.modules()
    monkeypatch.setattr(
        REGISTRY, "_modules", lambda: modules + ["verifier.signals.tools"]
    )  # a module that registers nothing
    with pytest.raises(NonConformance, match="signals: verifier.signals.tools registered nothing"):
        check_discovery()


def test_the_kits_catch_broken_parts():
    """Each kit fails on a part that breaks its contract (the kits are tests that can fail)."""

    @dataclass(frozen=True)
    class Reversed(Signal):  # oriented the wrong way round, needing a view nobody offers, not registered
        name = "reversed_loss"
        needs = frozenset({"prompt_logprobs", "telepathy"})

        def score(self, doc):
            return -float(np.mean(doc.target.logprob))

    with pytest.raises(NonConformance) as caught:
        check_signal(Reversed)
    assert all(
        part in str(caught.value)
        for part in ("not registered as 'reversed_loss'", "neither a capability nor a view: ['telepathy']")
    )

    @dataclass(frozen=True)
    class Upside(Signal):
        name = "upside"

        def score(self, doc):
            return -float(np.mean(doc.target.logprob))

    with pytest.raises(NonConformance, match="oriented higher = more member-like"):
        check_signal(Upside)

    class Loose(Route):
        name = "loose"
        Params = dict  # not a RouteParams model
        requires = frozenset({"diary"})
        claim_kinds = frozenset({ClaimKind.TRAINED_ON})
        verdicts = {"significant": {ClaimKind.TRAINED_ON: "SUPPORTED"}}

        def run(self, ctx, params):
            raise NotImplementedError

    with pytest.raises(NonConformance) as caught:
        check_route(Loose)
    assert all(
        part in str(caught.value)
        for part in ("not registered", "['diary']", "Params must subclass", "verdicts['significant']")
    )

    class Careless:
        kind = "careless"
        capabilities = frozenset({"mind_reading"})
        limitations = ()
        remote = True
        load = check_spec = unloaded_identity = classmethod(lambda cls, *a: None)

    with pytest.raises(NonConformance) as caught:
        check_target(TargetKind(Careless, "careless", None))
    assert all(
        part in str(caught.value)
        for part in (
            "not registered",
            "mind_reading",
            "must state what its answers attest to",
            "prefix must end with ':'",
        )
    )


def test_planned_routes_declare_known_evidence():
    assert all(planned.requires <= set(Evidence.model_fields) for planned in PLANNED.values())
    assert not set(PLANNED) & set(ROUTES)


def test_a_significant_set_test_never_supports_or_contradicts_a_summary_field():
    route = ROUTES["dataset_inference"]
    assert ClaimKind.SUMMARY_FIELD not in route.claim_kinds
    significant = route.verdicts["significant"]
    assert significant[ClaimKind.TRAINED_ON] == Verdict.SUPPORTED
    assert significant[ClaimKind.NOT_TRAINED_ON] == significant[ClaimKind.DECONTAMINATED] == Verdict.CONTRADICTED
    assert all(
        v in (Verdict.REJECTED_METHOD, Verdict.INCONCLUSIVE)
        for s, row in route.verdicts.items()
        if s != "significant"
        for v in row.values()
    )


@pytest.fixture(scope="module")
def route_context(tmp_path_factory, tiny_model_dir):
    """A claim giving every document set on two halves of one population, and the demo corpus, with the tiny GPT-2."""
    import shutil

    import yaml
    from conftest import CORPUS, WIKIMIA

    from verifier.boundary.resources import resource
    from verifier.claims import load_claim
    from verifier.corpus import digest_files
    from verifier.scoring.session import RouteContext
    from verifier.targets import ScoreCache, load_target

    folder = tmp_path_factory.mktemp("contract")
    shutil.copy(WIKIMIA / "length64.jsonl", folder / "docs.jsonl")
    shutil.copytree(CORPUS, folder / "corpus")
    shutil.copytree(resource("examples", "data", "marks"), folder / "marks")
    (folder / "marks" / "siblings.json").chmod(0o600)  # the package's copy is readable by all
    half = {"path": "docs.jsonl", "where": {"label": 0}, "year": 2023}
    claim = {
        "claim": {"id": "contract", "statement": "s", "kind": "not_trained_on", "made_by": "tests"},
        "model": {"target": str(tiny_model_dir)},
        "evidence": {
            "suspect": half | {"limit": 120},
            "heldout": half | {"offset": 120},
            "dated": half | {"offset": 120},
            "corpus": {"index": "corpus", "sha256": digest_files([CORPUS])[0]},
            "marks": {"registration": "marks/registration.dsse.json", "siblings": "marks/siblings.json"},
        },
    }
    claim = json.loads(json.dumps(claim))  # no shared objects: YAML would write them as aliases, which claims refuse
    (folder / "claim.yaml").write_text(yaml.safe_dump(claim))
    loaded = load_claim(folder / "claim.yaml")
    manifest, base = loaded.manifest, loaded.base
    target = load_target(str(tiny_model_dir))
    return RouteContext(manifest, base, ScoreCache(folder / "cache"), target_factory=lambda role: target)


@pytest.mark.parametrize("name", sorted(ROUTES))
def test_every_route_runs_to_a_status_of_its_table_and_renders(name, route_context):
    from dataclasses import asdict

    from verifier.boundary.resources import resource
    from verifier.policy import load_policy
    from verifier.report import render_html

    step = next(s for s in load_policy(resource("policies", "default.yaml")).routes if s.name == name)
    outcome = ROUTES[name]().run(route_context, step.params)
    assert outcome.status in ROUTES[name].verdicts
    data = json.loads(json.dumps(asdict(outcome)))  # plain data, JSON-serialisable
    for section in data["sections"]:
        assert section["kind"] in ("table", "figure", "spans", "notes")
        if section["kind"] == "figure":
            assert section["figure"] in FIGURES
            FIGURES[section["figure"]](section["data"])  # drawable from its own numbers
        if section["kind"] == "table":
            assert all(len(row) == len(section["columns"]) for row in section["rows"])
    assert "NaN" not in json.dumps(data) and "Infinity" not in json.dumps(data)  # finite numbers only
    html = render_html(findings_with(name, data), "0" * 64)
    assert outcome.summary[:40] in html.replace("&#39;", "'")


def findings_with(route: str, outcome: dict) -> dict:
    """The smallest findings the report template renders, holding one route's outcome."""
    record = {
        "route": route,
        "needs": [],
        "status": "decided",
        "reason": "r",
        "grants": [],
        "verdict": "INCONCLUSIVE",
        "uncapped_verdict": None,
        "outcome": outcome,
        "regulation": [],
    }
    return {
        "claim": {
            "claim": {"id": "c", "statement": "s", "kind": "trained_on", "made_by": "m", "regulation_fields": []}
        },
        "model": {
            "target": {"spec": "tiny", "kind": "causal_lm", "digests": {}},
            "training_cutoff": None,
            "released": None,
            "dtype": "fp32",
            "max_tokens": 256,
        },
        "policy": {
            "name": "default",
            "version": 2,
            "file": "default.yaml",
            "sha256": "0",
            "weaker_than_default": [],
            "other_departures": [],
            "regulation_map_sha256": "0",
        },
        "verdict": "INCONCLUSIVE",
        "decided_by": "none",
        "lead": "l",
        "verdict_sentence": "x",
        "path": [record],
        "regulation": [],
        "inputs": [],
        "environment": {"verifier": "0", "python": "3", "packages": {}},
        "seed": 0,
    }


def test_highlighted_spans_and_notes_render_marked_and_escaped():
    from dataclasses import asdict

    from verifier.findings import Notes, RouteOutcome, Spans
    from verifier.report import render_html

    text = 'Before <script>alert("x")</script> the match, and after.'
    outcome = RouteOutcome(
        None,
        "summary",
        sections=[
            Spans(
                "verbatim matches",
                text,
                [(7, text.index(" the"), "doc 1 <b>"), (text.index("match"), text.index(","), "doc 2")],
            ),
            Notes("notes", ["<i>x</i>"]),
        ],
    )
    html = render_html(findings_with("corpus", json.loads(json.dumps(asdict(outcome)))), "0" * 64)
    assert html.count("<mark title=") == 2 and "<script>" not in html and "<b>" not in html and "<i>" not in html
    assert '<mark title="doc 2">match</mark>' in html and "&lt;script&gt;" in html


def test_same_population_halves_reach_inconclusive_not_a_verdict(route_context):
    """The route-level INCONCLUSIVE: exchangeable halves of one population, a model that saw neither."""
    from verifier.boundary.resources import resource
    from verifier.policy import load_policy

    step = next(s for s in load_policy(resource("policies", "default.yaml")).routes if s.name == "dataset_inference")
    outcome = ROUTES["dataset_inference"]().run(route_context, step.params)
    assert outcome.status == "not_significant", outcome.summary
    assert ROUTES["dataset_inference"].verdict(outcome.status, ClaimKind.NOT_TRAINED_ON) == Verdict.INCONCLUSIVE
    assert outcome.metrics["not_computable"].keys() == {
        "reference",
        "prefix_lcs_word",
        "prefix_lcs_token",
        "name_cloze",
    }  # no reference model; open weights answer no queries
