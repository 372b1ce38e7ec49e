"""Contract checks over every registered signal and route, in the spirit of scikit-learn's
check_estimator: a new signal or route is held to these without writing a test of its own."""

from __future__ import annotations

import json

import numpy as np
import pytest

from verifier.claims import ClaimKind, Evidence
from verifier.report.svg import FIGURES
from verifier.routes import PLANNED, ROUTES
from verifier.signals import LOWER, REFERENCE, REGISTRY, ScoredDocument, computable
from verifier.signals.base import QueryingSignal
from verifier.targets import CAPABILITIES, CausalLMTarget, OpenAICompatibleTarget
from verifier.targets.token_scores import TokenScores
from verifier.verdicts import Verdict


def token_scores(rng: np.random.Generator, n: int = 60, shift: float = 0.0) -> TokenScores:
    """Plausible arrays: top-1 log p near -0.5, the actual token at or below it, mu below both."""
    top1 = -rng.uniform(0.1, 1.0, n)
    logprob = np.minimum(top1, top1 - rng.exponential(2.0, n) + shift)
    return TokenScores(token_ids=rng.integers(0, 500, n + 1), logprob=logprob, mu=top1 - rng.uniform(3, 6, n),
                       sigma=rng.uniform(0.5, 2.0, n), top1=top1, char_start=0, char_end=4 * n)


def document(seed: int, shift: float = 0.0) -> ScoredDocument:
    """A document; ``shift`` raises the target's log p of the actual tokens (more member-like)."""
    rng = np.random.default_rng(seed)
    target = token_scores(rng, shift=shift)
    lower = token_scores(np.random.default_rng(seed + 1000))
    reference = token_scores(np.random.default_rng(seed + 2000))
    return ScoredDocument(text="An ordinary sentence about an event in 2016. " * 5, target=target, lower=lower, reference=reference)


GRAY_BOX = sorted(name for name, cls in REGISTRY.items() if not issubclass(cls, QueryingSignal))


@pytest.mark.parametrize("name", GRAY_BOX)
def test_signal_contract(name):
    cls = REGISTRY[name]
    signal = cls()
    assert cls.needs <= CAPABILITIES | {LOWER, REFERENCE}, "needs must name capabilities or views"
    json.dumps(signal.params())  # recorded with every result
    scores = [signal.score(document(seed)) for seed in range(20)]
    assert np.isfinite(scores).all()
    # Orientation: raising the log p of the actual tokens never makes a document less member-like,
    # and on average makes it more member-like.
    raised = [signal.score(document(seed, shift=1.0)) for seed in range(20)]
    assert all(r >= s - 1e-12 for r, s in zip(raised, scores)) and np.mean(raised) > np.mean(scores)


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_signal_is_not_computable_without_what_it_needs(name):
    needs = REGISTRY[name].needs
    usable, why = computable([name], CausalLMTarget.capabilities | OpenAICompatibleTarget.capabilities | {REFERENCE})
    assert usable == [name]
    usable, why = computable([name], frozenset())
    assert usable == [] and "not computable" in why[name]


@pytest.mark.parametrize("name", sorted(ROUTES))
def test_route_contract(name):
    route = ROUTES[name]
    evidence_keys = set(Evidence.model_fields)
    assert route.requires <= evidence_keys
    assert route.claim_kinds <= set(ClaimKind) and route.claim_kinds
    json.dumps(route.Params.model_json_schema())  # parameters are serialisable, bounds included
    for status, row in route.verdicts.items():
        assert isinstance(status, str)
        if row is None:
            continue
        assert set(row) == set(route.claim_kinds)
        assert all(isinstance(verdict, Verdict) for verdict in row.values())
    if route.needs_target:  # what the engine checks against the target before the walk
        from verifier.policy import load_policy
        from verifier.resources import resource

        params = next(s for s in load_policy(resource("policies", "default.yaml")).routes if s.name == name).params
        assert route.signals_of(params) and set(route.signals_of(params)) <= set(REGISTRY)


def test_planned_routes_declare_known_evidence():
    assert all(planned.requires <= set(Evidence.model_fields) for planned in PLANNED.values())
    assert not set(PLANNED) & set(ROUTES)


def test_a_significant_set_test_never_supports_or_contradicts_a_summary_field():
    route = ROUTES["dataset_inference"]
    assert ClaimKind.SUMMARY_FIELD not in route.claim_kinds
    significant = route.verdicts["significant"]
    assert significant[ClaimKind.TRAINED_ON] == Verdict.SUPPORTED
    assert significant[ClaimKind.NOT_TRAINED_ON] == significant[ClaimKind.DECONTAMINATED] == Verdict.CONTRADICTED
    assert all(v in (Verdict.REJECTED_METHOD, Verdict.INCONCLUSIVE) for s, row in route.verdicts.items() if s != "significant" for v in row.values())


@pytest.fixture(scope="module")
def route_context(tmp_path_factory, tiny_model_dir):
    """A claim giving every document set on two halves of one population, and the demo corpus, with the tiny GPT-2."""
    import shutil

    import yaml

    from conftest import CORPUS, WIKIMIA
    from verifier.claims import load_claim
    from verifier.overlap import digest_files
    from verifier.resources import resource
    from verifier.routes import RouteContext
    from verifier.targets import ScoreCache, load_target

    folder = tmp_path_factory.mktemp("contract")
    shutil.copy(WIKIMIA / "length64.jsonl", folder / "docs.jsonl")
    shutil.copytree(CORPUS, folder / "corpus")
    shutil.copytree(resource("examples", "data", "marks"), folder / "marks")
    half = {"path": "docs.jsonl", "where": {"label": 0}, "year": 2023}
    claim = {"claim": {"id": "contract", "statement": "s", "kind": "not_trained_on", "made_by": "tests"},
             "model": {"target": str(tiny_model_dir)},
             "evidence": {"suspect": half | {"limit": 120}, "heldout": half | {"offset": 120}, "reference": half | {"offset": 120},
                          "corpus": {"index": "corpus", "sha256": digest_files([CORPUS])[0]},
                          "marks": {"registration": "marks/registration.dsse.json", "siblings": "marks/siblings.json"}}}
    claim = json.loads(json.dumps(claim))  # no shared objects: YAML would write them as aliases, which claims refuse
    (folder / "claim.yaml").write_text(yaml.safe_dump(claim))
    manifest, base = load_claim(folder / "claim.yaml")
    target = load_target(str(tiny_model_dir))
    return RouteContext(manifest, base, ScoreCache(folder / "cache"), target_factory=lambda role: target)


@pytest.mark.parametrize("name", sorted(ROUTES))
def test_every_route_runs_to_a_status_of_its_table_and_renders(name, route_context):
    from dataclasses import asdict

    from verifier.policy import load_policy
    from verifier.report import render_html
    from verifier.resources import resource

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
    record = {"route": route, "needs": [], "status": "decided", "reason": "r", "grants": [], "verdict": "INCONCLUSIVE",
              "uncapped_verdict": None, "outcome": outcome, "regulation": []}
    return {"claim": {"claim": {"id": "c", "statement": "s", "kind": "trained_on", "made_by": "m", "regulation_fields": []}},
            "model": {"target": {"spec": "tiny", "kind": "causal_lm", "digests": {}}, "training_cutoff": None, "released": None, "dtype": "fp32", "max_tokens": 256},
            "policy": {"name": "default", "version": 2, "file": "default.yaml", "sha256": "0", "weaker_than_default": [], "other_departures": [],
                       "regulation_map_sha256": "0"},
            "verdict": "INCONCLUSIVE", "verdict_sentence": "x", "path": [record], "inputs": [],
            "environment": {"verifier": "0", "python": "3", "packages": {}}, "seed": 0}


def test_highlighted_spans_and_notes_render_marked_and_escaped():
    from dataclasses import asdict

    from verifier.report import render_html
    from verifier.routes.base import Notes, RouteOutcome, Spans

    text = 'Before <script>alert("x")</script> the match, and after.'
    outcome = RouteOutcome(None, "summary", sections=[Spans("verbatim matches", text, [(7, text.index(" the"), "doc 1 <b>"), (text.index("match"), text.index(","), "doc 2")]),
                                                      Notes("notes", ["<i>x</i>"])])
    html = render_html(findings_with("corpus_lookup", json.loads(json.dumps(asdict(outcome)))), "0" * 64)
    assert html.count("<mark title=") == 2 and "<script>" not in html and "<b>" not in html and "<i>" not in html
    assert '<mark title="doc 2">match</mark>' in html and "&lt;script&gt;" in html


def test_same_population_halves_reach_inconclusive_not_a_verdict(route_context):
    """The route-level INCONCLUSIVE: exchangeable halves of one population, a model that saw neither."""
    from verifier.policy import load_policy
    from verifier.resources import resource

    step = next(s for s in load_policy(resource("policies", "default.yaml")).routes if s.name == "dataset_inference")
    outcome = ROUTES["dataset_inference"]().run(route_context, step.params)
    assert outcome.status == "not_significant", outcome.summary
    assert ROUTES["dataset_inference"].verdict(outcome.status, ClaimKind.NOT_TRAINED_ON) == Verdict.INCONCLUSIVE
    assert outcome.metrics["not_computable"].keys() == {"reference", "prefix_lcs_word", "prefix_lcs_token", "name_cloze"}  # no reference model; open weights answer no queries
