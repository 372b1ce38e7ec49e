"""How much of a set, and which documents: the bounds must hold whatever the members look like.

Synthetic scores stand in for the signals (what is tested is the statistics from cross-fitted
scores to a bound): member-free suspects, members of every shape - shifted, heavy-tailed, a
few extreme ones - and suspects less member-like than the held-out set. The whole route, on real
texts, is exercised through the rules at the end.
"""

from __future__ import annotations

import numpy as np
import pytest
from test_rules import FAST, SIGNALS, periods, sets  # noqa: F401 - periods is a fixture

from verifier.dataset_inference.fraction import conformal_p_values, fold_scores, fraction_trained, identified
from verifier.dataset_inference.power import wilson
from verifier.dataset_inference.rules import SetStatus, run_set_membership

TRIALS = 300


def bounds(suspect: np.ndarray, heldout: np.ndarray, seed: int = 0) -> np.ndarray:
    folds = fold_scores(suspect, heldout, np.random.default_rng(seed))
    return np.array([f.lower_bound for f in fraction_trained(folds)])


def members(rng: np.random.Generator, shape: tuple[int, ...], kind: str) -> np.ndarray:
    """Member features of a given shape of distribution (the bound may assume none)."""
    if kind == "shifted":
        return rng.normal(size=shape) + 1.0
    if kind == "heavy-tailed":
        return rng.standard_t(1.5, size=shape) + 0.5
    return np.where(rng.random(shape[:-1] + (1,)) < 0.2, 6.0, 0.0) + rng.normal(size=shape)  # a few extreme ones


@pytest.mark.parametrize("kind", ["shifted", "heavy-tailed", "a few extreme"])
@pytest.mark.parametrize("share", [0.0, 0.25, 1.0])
def test_the_lower_bound_holds_whatever_the_members_look_like(kind, share):
    rng = np.random.default_rng(7)
    n = 100
    k = round(share * n)
    suspect = rng.normal(size=(TRIALS, n, 3))
    suspect[:, :k] = members(rng, (TRIALS, k, 3), kind)
    found = bounds(suspect, rng.normal(size=(TRIALS, n, 3)))
    covered = wilson(int((found <= share + 1e-9).sum()), TRIALS)
    assert covered.ci_high >= 0.95 and covered.value >= 0.93, (kind, share, covered)
    if share == 1.0 and kind == "shifted":
        assert found.mean() > 0.15  # a real effect gives a bound that says something


def test_member_free_and_reversed_suspects_get_a_zero_bound_and_no_documents():
    rng = np.random.default_rng(3)
    heldout_members = rng.normal(size=(TRIALS, 100, 3)) + 1.0  # the held-out set is the member-like one
    for suspect, heldout in (
        (rng.normal(size=(TRIALS, 100, 3)), rng.normal(size=(TRIALS, 100, 3))),
        (rng.normal(size=(TRIALS, 100, 3)), heldout_members),
    ):
        found = bounds(suspect, heldout)
        assert (found == 0).mean() >= 0.95
        folds = fold_scores(suspect, heldout, np.random.default_rng(1))
        listed = sum(len(identified(*conformal_p_values(folds, t), 0.1)) > 0 for t in range(100))
        assert listed <= 15  # any list is a false discovery; at most q of the lists are non-empty on average


def test_the_false_discovery_rate_is_controlled():
    rng = np.random.default_rng(11)
    n, k = 200, 50
    suspect = rng.normal(size=(TRIALS, n, 3))
    suspect[:, :k] += 2.0
    folds = fold_scores(suspect, rng.normal(size=(TRIALS, n, 3)), rng)
    proportions, sizes = [], []
    for t in range(TRIALS):
        found = identified(*conformal_p_values(folds, t), 0.1)
        proportions.append((found >= k).sum() / max(1, len(found)))
        sizes.append(len(found))
    mean, spread = np.mean(proportions), np.std(proportions) / np.sqrt(TRIALS)
    assert mean - 2 * spread <= 0.1 and np.mean(sizes) > 5


def test_conformal_p_values_belong_to_their_documents():
    # A document moved to another row keeps its p-value: the rows of the folds are tracked.
    rng = np.random.default_rng(5)
    suspect, heldout = rng.normal(size=(1, 60, 2)) + 1.0, rng.normal(size=(1, 60, 2))
    suspect[0, 17] = 50.0  # unmistakable, under any weighting learned on the other half
    p, fold_of = conformal_p_values(fold_scores(suspect, heldout, rng))
    assert p[17] == pytest.approx(1 / 31) == p.min() and set(fold_of) == {0, 1} and len(p) == 60


def test_the_route_states_a_fraction_only_under_a_significant_test(periods):  # the fixture
    suspect, heldout, _ = sets(periods, 150, seed=0, member_shift=1.5)
    finding = run_set_membership(suspect, heldout, SIGNALS, params=FAST)
    assert finding.status == SetStatus.SIGNIFICANT and finding.documents.stated
    assert finding.documents.fraction.lower_bound > 0.3 and finding.documents.identified
    assert set(finding.documents.identified) <= set(finding.documents.p_values)
    suspect, heldout, _ = sets(periods, 60, seed=1, member_shift=0.0)
    quiet = run_set_membership(suspect, heldout, SIGNALS, params=FAST)
    assert quiet.status == SetStatus.NOT_SIGNIFICANT and not quiet.documents.stated
    assert quiet.documents.fraction.lower_bound == 0 and quiet.documents.identified == []
