"""Membership metrics with honest uncertainty.

The null hypothesis behind every AUC here is "the score does not separate members from
non-members" (AUC = 0.5). The 95% CI is a seeded percentile bootstrap that resamples members
and non-members separately (stratified), so every resample keeps both classes and the set
sizes of the real data. TPR at a fixed FPR is the operating point an accusation needs.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.stats import rankdata
from sklearn.metrics import roc_auc_score, roc_curve

from verifier.errors import VerifierError

N_BOOTSTRAP = 1000


@dataclass(frozen=True)
class MembershipMetrics:
    """How well one score separates members (label 1) from non-members (label 0)."""

    name: str
    auc: float
    auc_ci_low: float
    auc_ci_high: float
    tpr_at_1_fpr: float
    tpr_at_5_fpr: float
    best_balanced_accuracy: float  # at the best threshold, chosen on the same data: an upper bound
    n_members: int
    n_nonmembers: int
    n_bootstrap: int
    seed: int


def evaluate_scores(
    name: str, scores: np.ndarray, labels: np.ndarray, seed: int = 0, n_bootstrap: int = N_BOOTSTRAP
) -> MembershipMetrics:
    """All metrics for one score column (higher = more member-like)."""
    scores = np.asarray(scores, dtype=np.float64)
    labels = np.asarray(labels).astype(int)
    if not np.isfinite(scores).all():
        raise VerifierError(f"signal {name!r}: {int((~np.isfinite(scores)).sum())} scores are NaN or infinite")
    n_pos, n_neg = int(labels.sum()), int((labels == 0).sum())
    if n_pos == 0 or n_neg == 0:
        raise VerifierError(f"signal {name!r}: metrics need both members and non-members (got {n_pos} and {n_neg})")
    low, high = bootstrap_auc_ci(scores, labels, seed=seed, n_bootstrap=n_bootstrap)
    fpr, tpr, _ = roc_curve(labels, scores)
    return MembershipMetrics(
        name=name,
        auc=float(roc_auc_score(labels, scores)),
        auc_ci_low=low,
        auc_ci_high=high,
        tpr_at_1_fpr=tpr_at_fpr(fpr, tpr, 0.01),
        tpr_at_5_fpr=tpr_at_fpr(fpr, tpr, 0.05),
        best_balanced_accuracy=float(np.max((tpr + 1 - fpr) / 2)),
        n_members=n_pos,
        n_nonmembers=n_neg,
        n_bootstrap=n_bootstrap,
        seed=seed,
    )


def fill_failed(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``values`` [n, signals] with each NaN (an item whose queries failed) replaced by its column's
    median over all rows, and the count of replaced values per column.

    The fill never looks at labels, so a permutation or rank test on the filled pooled rows keeps
    its null distribution; a filled item carries no membership information either way. Callers
    report the counts (and refuse columns that failed too often) - a fill is never silent.
    """
    values = np.array(values, dtype=np.float64, copy=True)
    failed = ~np.isfinite(values)
    for column in np.flatnonzero(failed.any(axis=0)):
        finite = values[~failed[:, column], column]
        values[failed[:, column], column] = float(np.median(finite)) if finite.size else 0.0
    return values, failed.sum(axis=0)


def tpr_at_fpr(fpr: np.ndarray, tpr: np.ndarray, target: float) -> float:
    """Highest TPR among ROC points whose FPR does not exceed ``target`` (no interpolation)."""
    return float(tpr[fpr <= target].max())


def bootstrap_auc_ci(
    scores: np.ndarray, labels: np.ndarray, seed: int = 0, n_bootstrap: int = N_BOOTSTRAP, level: float = 0.95
) -> tuple[float, float]:
    """Stratified percentile bootstrap CI of the ROC AUC, all resamples at once.

    AUC = (rank sum of members - n1(n1+1)/2) / (n1 n0) with average ranks for ties, which is
    exactly what ``roc_auc_score`` computes; vectorising over resamples keeps 1,000 of them cheap.
    """
    rng = np.random.default_rng(seed)
    pos, neg = scores[labels == 1], scores[labels == 0]
    n1, n0 = len(pos), len(neg)
    sample = np.concatenate(
        [pos[rng.integers(0, n1, (n_bootstrap, n1))], neg[rng.integers(0, n0, (n_bootstrap, n0))]], axis=1
    )
    ranks = rankdata(sample, axis=1)
    aucs = (ranks[:, :n1].sum(axis=1) - n1 * (n1 + 1) / 2) / (n1 * n0)
    tail = (1 - level) / 2
    low, high = np.quantile(aucs, [tail, 1 - tail])
    return float(low), float(high)
