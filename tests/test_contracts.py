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
from verifier.targets import CAPABILITIES, CausalLMTarget
from verifier.targets.token_scores import TokenScores
from verifier.verdicts import ALWAYS_ALLOWED, Verdict, cap_verdict


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


@pytest.mark.parametrize("name", sorted(REGISTRY))
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
    usable, why = computable([name], CausalLMTarget.capabilities | {REFERENCE})
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
        for kind, verdict in row.items():
            assert isinstance(verdict, Verdict)
            # Whatever a policy grants, the result is the verdict itself or INCONCLUSIVE / UNVERIFIABLE.
            for grants in (set(), {verdict}, set(Verdict)):
                capped = cap_verdict(verdict, grants)
                assert capped in grants | ALWAYS_ALLOWED
    if route.needs_target:
        assert "signals" in route.Params.model_fields


def test_planned_routes_declare_known_evidence():
    assert all(keys <= set(Evidence.model_fields) for keys in PLANNED.values())
    assert not set(PLANNED) & set(ROUTES)


def test_a_significant_set_test_never_supports_or_contradicts_a_summary_field():
    route = ROUTES["dataset_inference"]
    assert ClaimKind.SUMMARY_FIELD not in route.claim_kinds
    significant = route.verdicts["significant"]
    assert significant[ClaimKind.TRAINED_ON] == Verdict.SUPPORTED
    assert significant[ClaimKind.NOT_TRAINED_ON] == significant[ClaimKind.DECONTAMINATED] == Verdict.CONTRADICTED
    assert all(v in (Verdict.REJECTED_METHOD, Verdict.INCONCLUSIVE) for s, row in route.verdicts.items() if s != "significant" for v in row.values())


def test_figure_kinds_are_drawable():
    from verifier.routes.base import Figure

    assert set(FIGURES) >= {"roc", "histogram", "power"}
    assert Figure.__dataclass_fields__["figure"]
