"""How many documents a set-level test would need: power of the split test at an effect size.

When no known members exist (a real audit), power cannot be simulated; it can be computed for
the effect the test observed, *if that effect is real*. Each split compares two halves of n/2
documents with a one-sided Welch test, and the 2 x median aggregation rejects at alpha roughly
when the median split rejects at alpha / 2, so the power of one split at alpha / 2 (noncentral t)
approximates the aggregated test's power. This is an estimate for planning, not a guarantee.
"""

from __future__ import annotations

import numpy as np
from scipy.stats import nct, t

SIZES = np.unique(np.round(np.logspace(np.log10(20), 5, 60)).astype(int))


def split_test_power(effect_size: float, n_per_set: np.ndarray | int, alpha: float) -> np.ndarray:
    half = np.asarray(n_per_set, dtype=float) / 2
    df = 2 * half - 2
    noncentrality = effect_size * np.sqrt(half / 2)
    return 1 - nct.cdf(t.ppf(1 - alpha / 2, df), df, noncentrality)


def power_curve(effect_size: float, alpha: float) -> dict[str, list[float]]:
    return {"n": SIZES.tolist(), "power": np.round(split_test_power(effect_size, SIZES, alpha), 4).tolist()}


def size_needed(effect_size: float, alpha: float, target_power: float) -> int | None:
    """Smallest n per set (up to 100,000) reaching ``target_power``; None if the effect is not positive."""
    if effect_size <= 0:
        return None
    reached = SIZES[split_test_power(effect_size, SIZES, alpha) >= target_power]
    return int(reached[0]) if len(reached) else None
