"""How many documents a set-level test would need: power of the test at an observed effect size.

When no known members exist (a real audit), power cannot be simulated; it can be computed for
the effect the test observed, *if that effect is real*, from the noncentral t distribution:
- ``permutation`` (cross-fitted): every document is scored once by a weighting that never saw
  it, so the test behaves like a one-sided two-sample t-test on n documents per set at alpha;
- ``split_median``: each split tests halves of n/2 documents, and the 2 x median aggregation
  rejects at alpha roughly when the median split rejects at alpha / 2.
This is an estimate for planning, not a guarantee: it ignores the cost of learning the weights.
"""

from __future__ import annotations

import numpy as np
from scipy.stats import nct, norm, t

SIZES = np.unique(np.round(np.logspace(np.log10(20), 5, 60)).astype(int))


def set_test_power(
    effect_size: float, n_per_set: np.ndarray | int, alpha: float, method: str = "permutation"
) -> np.ndarray:
    tested = np.asarray(n_per_set, dtype=float) / (1 if method == "permutation" else 2)
    level = alpha if method == "permutation" else alpha / 2
    df = 2 * tested - 2
    critical, shift = t.ppf(1 - level, df), effect_size * np.sqrt(tested / 2)
    power = nct.sf(critical, df, shift)
    # scipy's noncentral t returns NaN at some large noncentralities (d = 1.83, n = 853: cdf NaN, sf 1.0);
    # there the normal approximation is exact to many digits, and a NaN must never reach the findings.
    return np.where(np.isfinite(power), power, norm.sf(critical - shift))


def power_curve(effect_size: float, alpha: float, method: str = "permutation") -> dict[str, list[float]]:
    return {"n": SIZES.tolist(), "power": np.round(set_test_power(effect_size, SIZES, alpha, method), 4).tolist()}


def size_needed(effect_size: float, alpha: float, target_power: float, method: str = "permutation") -> int | None:
    """Smallest n per set (up to 100,000) reaching ``target_power``; None if the effect is not positive."""
    if effect_size <= 0:
        return None
    reached = SIZES[set_test_power(effect_size, SIZES, alpha, method) >= target_power]
    return int(reached[0]) if len(reached) else None
