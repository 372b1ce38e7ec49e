"""Rank tests with an exact null: a published mark against unpublished siblings of the same generator.

When a mark (a canary, a trap, a rephrasing, a natural identifier) and its M siblings are
independent draws of one generator and which of them was published was decided before
training, then under H0 (the model was not trained on the published one) the published mark's
score is exchangeable with the siblings'. Its rank among the M + 1 is then uniform, and
p = (1 + #{siblings scoring at least as high}) / (M + 1) is an exact p-value (ties counted
against the mark, so it can only be conservative). Nothing about the model's score
distribution is assumed: the siblings are the null (Zhang et al. 2024: without a null that can
be sampled there is no proof).

Independent marks are combined by Fisher's method (valid, conservatively, for discrete
p-values that are uniform or larger under H0) or by a binomial count of marks significant at
a fixed level. Both report the smallest p-value the design could reach, so a design that can
never reach alpha is refused before the model is queried.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from scipy import stats

Combine = Literal["fisher", "binomial"]
MAX_MARKS_NEEDED = 100_000


def rank_p_value(published: float, siblings: Sequence[float]) -> float:
    """Exact p-value of the published score being the highest of ``published`` and its siblings
    (H0: exchangeable); NaN scores of siblings count against the mark."""
    values = np.asarray(siblings, dtype=np.float64)
    if not np.isfinite(published):
        return 1.0
    at_least = int(np.sum(~(values < published)))  # NaN siblings are "at least as high"
    return (1 + at_least) / (len(values) + 1)


def smallest_p(n_siblings: Sequence[int], method: Combine, level: float) -> float:
    """The smallest combined p-value marks with these sibling counts could give."""
    if not len(n_siblings):
        return 1.0
    if method == "fisher":
        statistic = float(np.sum(2 * np.log(np.asarray(n_siblings, dtype=np.float64) + 1)))
        return float(stats.chi2.sf(statistic, 2 * len(n_siblings)))
    reachable = [m for m in n_siblings if 1 / (m + 1) <= level]
    return float(level ** len(reachable)) if reachable else 1.0


def combine(p_values: Sequence[float], method: Combine, level: float = 0.05) -> float:
    """One p-value for independent marks (H0: none of them was trained on).

    fisher: -2 sum log p against chi-squared with 2n degrees of freedom.
    binomial: the count of marks with p <= ``level`` against Binomial(n, level); callers leave out
    marks whose siblings are too few to reach ``level`` (they could never count).
    """
    p = np.asarray(p_values, dtype=np.float64)
    if not len(p):
        return 1.0
    if method == "fisher":
        return float(stats.chi2.sf(-2 * np.sum(np.log(p)), 2 * len(p)))
    hits = int(np.sum(p <= level))
    return float(stats.binom.sf(hits - 1, len(p), level)) if hits else 1.0


def _member_like(p: np.ndarray, method: Combine, level: float) -> bool:
    """Whether the marks lean the member way at all (else no number of them would help)."""
    if method == "fisher":
        return float(np.mean(-2 * np.log(p))) > 2.0  # E[-2 log U] = 2 under H0
    return float(np.mean(p <= level)) > level


def marks_needed(
    p_values: Sequence[float],
    alpha: float,
    power: float,
    method: Combine,
    level: float = 0.05,
    seed: int = 0,
    draws: int = 2000,
) -> int | None:
    """Marks needed for ``power`` if new marks behaved like these (resampling their p-values).

    A planning figure that assumes the observed effect is real; None when the marks do not lean
    the member way, or when even 100,000 marks would not do.
    """
    p = np.asarray(p_values, dtype=np.float64)
    if not len(p) or not _member_like(p, method, level):
        return None
    rng = np.random.default_rng(seed)

    def achieved(n: int) -> float:
        sample = p[rng.integers(0, len(p), size=(max(200, min(draws, 20_000_000 // n)), n))]  # bounded memory
        if method == "fisher":
            combined = stats.chi2.sf(-2 * np.log(sample).sum(axis=1), 2 * n)
        else:
            hits = (sample <= level).sum(axis=1)
            combined = np.where(hits > 0, stats.binom.sf(hits - 1, n, level), 1.0)
        return float(np.mean(combined <= alpha))

    low, high = 0, 1
    while achieved(high) < power:
        low, high = high, high * 2
        if high > MAX_MARKS_NEEDED:
            return None
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (low, middle) if achieved(middle) >= power else (middle, high)
    return high


@dataclass(frozen=True)
class PairedResult:
    """STAMP-style comparison over documents: published minus mean of private rephrasings."""

    n_documents: int
    mean_difference: float
    effect_size: float  # Cohen's d_z: mean difference / its standard deviation
    t_p_value: float  # one-sided paired t-test (H0: mean difference <= 0)
    wilcoxon_p_value: float  # one-sided Wilcoxon signed-rank (H0: differences symmetric about 0)


def paired_tests(published: Sequence[float], private_means: Sequence[float]) -> PairedResult | None:
    """The paired t-test and Wilcoxon signed-rank test STAMP reports (approximate nulls: the
    route decides with the exact rank test and shows these beside it); None under 2 documents."""
    a, b = np.asarray(published, dtype=np.float64), np.asarray(private_means, dtype=np.float64)
    if len(a) < 2:
        return None
    diff = a - b
    spread = float(np.std(diff, ddof=1))
    t_p = (
        float(stats.ttest_rel(a, b, alternative="greater").pvalue) if spread > 0 else (0.0 if diff.mean() > 0 else 1.0)
    )
    w_p = float(stats.wilcoxon(diff, alternative="greater").pvalue) if np.any(diff != 0) else 1.0
    return PairedResult(len(a), float(diff.mean()), float(diff.mean() / spread) if spread > 0 else 0.0, t_p, w_p)
