"""The batch's error control, a few lines of numpy on the trust floor (so ``verify`` needs no scipy),
checked against scipy's Benjamini-Hochberg and a direct reading of Holm's step-down procedure."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import false_discovery_control

from verifier.trust.error_control import adjusted_p_values


def holm_by_definition(p: np.ndarray, alpha: float) -> np.ndarray:
    """Which hypotheses Holm rejects at ``alpha``: step down through the sorted p-values while
    p_(i) <= alpha / (n - i), stopping at the first that fails."""
    rejected = np.zeros(len(p), dtype=bool)
    for i, j in enumerate(np.argsort(p, kind="stable")):
        if p[j] > alpha / (len(p) - i):
            break
        rejected[j] = True
    return rejected


@pytest.mark.parametrize("seed", range(20))
def test_the_adjustments_match_scipy_and_holms_procedure(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 40))
    # Mixed families: some true effects (tiny p), ties, and values at the edges.
    p = np.where(rng.random(n) < 0.3, rng.random(n) * 1e-3, rng.random(n))
    p[rng.integers(0, n, size=n // 4)] = p[0]
    bh = adjusted_p_values(p, "bh")
    # The same arithmetic as scipy's, so a p-value at the level's edge (0.03 of 5 tested at rank 3 -> 0.05) falls on the
    # same side.
    assert np.array_equal(bh, np.maximum(false_discovery_control(p, method="bh"), p))
    holm = adjusted_p_values(p, "holm")
    assert np.all(holm >= p) and np.all(holm <= 1)
    for alpha in (0.01, 0.05, 0.1):
        assert np.array_equal(holm <= alpha, holm_by_definition(p, alpha))


def test_a_p_value_adjusted_to_the_level_keeps_scipys_side_of_it():
    p = np.array([0.001, 0.03, 0.04, 0.01, 0.6])
    assert adjusted_p_values(p, "bh")[1] == false_discovery_control(p, method="bh")[1] == 0.05


def test_an_empty_family_adjusts_to_nothing():
    assert adjusted_p_values(np.array([]), "holm").size == 0 and adjusted_p_values(np.array([]), "bh").size == 0
