"""How much of the suspect set was trained on, and which documents: bounds that assume nothing about members.

Both rest on the cross-fitting of the set test: suspect and held-out sets are cut into halves, a
non-negative weighting of the signals is learned on one half and scores the other, then the halves
swap (``fold_scores``). Every document's score comes from a weighting that never saw it, so within
a fold the held-out scores are a sample of the held-out population's score distribution F0, and
the suspect scores a sample of G = (1 - pi) F0 + pi F1: a share pi of the suspect population is
member-like beyond the held-out distribution, with F1 anything at all.

**Fraction trained on** (``fraction_trained``). For every threshold t, G(t) >= (1 - pi) F0(t),
since F1(t) >= 0; so pi >= 1 - G(t) / F0(t) whatever F1 is (the identity behind the mixture
proportion estimators of Blanchard, Lee and Scott 2010 and Scott 2015). The bound replaces G by a
Clopper-Pearson upper bound and F0 by a lower bound, at thresholds set at fixed quantile levels of
each fold's held-out scores: F0 at the k-th smallest of n held-out scores is Beta(k, n + 1 - k)
distributed for any F0 (never below it for a discrete one), and given the threshold the suspect
count below it is binomial. The two folds' bounds are summed (pi is the same in both), and a union
bound over folds, levels and the two bounds of each makes the result hold with the stated
confidence, in finite samples and for any member distribution. Why this one: estimators that
assume a shape for F1 (a parametric mixture, Patra and Sen's monotone density) are not valid when
nothing is known about members; DUCI's needs reference models trained with known membership; and
a uniform DKW band over all thresholds costs more than a Bonferroni over a few levels, because the
binomial and Beta bounds are tight near the tails, where member-likeness shows.

**Which documents** (``identified``). Each suspect document's conformal p-value against the
held-out half scored by the same weighting, (1 + #{held-out >= it}) / (1 + n), is valid for a
document from the held-out population; within one fold these p-values share one calibration sample
and are positively dependent (PRDS; Bates et al. 2023), so Benjamini-Hochberg controls the false
discovery rate there. Across folds the dependence is arbitrary (each fold's weighting was learned
on the other's documents), so each fold is run at q / 2: the union's false discovery rate is at
most the sum, q.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.stats import beta, false_discovery_control

from verifier.dataset_inference.statistic import fit_weights

LEVELS = (
    0.5,
    0.7,
    0.85,
    0.95,
)  # held-out quantile levels at which the bound sets its thresholds (fixed before looking)
METHOD = (
    f"mixture-proportion lower bound: Clopper-Pearson (suspect) and order-statistic Beta (held-out) bounds at held-out "
    f"quantile levels {', '.join(map(str, LEVELS))} of each cross-fitted fold, Bonferroni over folds, levels and bounds"
)
FDR_METHOD = "conformal p-values against the held-out half of the same fold; Benjamini-Hochberg at q/2 per fold"


@dataclass(frozen=True)
class FoldScores:
    """Cross-fitted scores of the suspect and held-out documents, per fold (two folds), for many
    trials: ``suspect[f]`` [trials, m_f], ``heldout[f]`` [trials, n_f], and ``suspect_rows[f]``
    [trials, m_f], the suspect rows (of the arrays given) those scores belong to."""

    suspect: tuple[np.ndarray, np.ndarray]
    heldout: tuple[np.ndarray, np.ndarray]
    suspect_rows: tuple[np.ndarray, np.ndarray]


@dataclass(frozen=True)
class FractionTrained:
    """A one-sided lower confidence bound on the share of suspect documents member-like beyond the
    held-out distribution, with the plug-in estimate at the threshold the bound chose."""

    lower_bound: float
    estimate: float
    confidence: float
    method: str = METHOD

    def sentence(self) -> str:
        return f"at least {self.lower_bound:.0%} of the suspect documents ({self.confidence:.0%} confidence)"


def fold_scores(suspect: np.ndarray, heldout: np.ndarray, rng: np.random.Generator) -> FoldScores:
    """Cut ``suspect`` [trials, n_s, F] and ``heldout`` [trials, n_v, F] into random halves, learn
    the weighting on each half and score the other with it."""
    trials, n_s, _ = suspect.shape
    n_v = heldout.shape[1]
    s_order = rng.permuted(np.broadcast_to(np.arange(n_s), (trials, n_s)), axis=1)
    v_order = rng.permuted(np.broadcast_to(np.arange(n_v), (trials, n_v)), axis=1)
    s = np.take_along_axis(suspect.astype(np.float32), s_order[..., None], axis=1)
    v = np.take_along_axis(heldout.astype(np.float32), v_order[..., None], axis=1)
    hs, hv = n_s // 2, n_v // 2
    halves = ((s[:, :hs], v[:, :hv], s_order[:, :hs]), (s[:, hs:], v[:, hv:], s_order[:, hs:]))
    scored_s, scored_v, rows = [], [], []
    for fit, test in ((halves[0], halves[1]), (halves[1], halves[0])):
        _, folded = fit_weights(fit[0][:, None], fit[1][:, None])
        scored_s.append((test[0][:, None] @ folded)[:, 0, :, 0].astype(np.float64))
        scored_v.append((test[1][:, None] @ folded)[:, 0, :, 0].astype(np.float64))
        rows.append(test[2])
    return FoldScores(tuple(scored_s), tuple(scored_v), tuple(rows))  # type: ignore[arg-type]


def fraction_trained(folds: FoldScores, confidence: float = 0.95) -> list[FractionTrained]:
    """The lower bound per trial (see the module docstring)."""
    alpha = 1 - confidence
    share = alpha / (2 * 2 * len(LEVELS))  # two folds x levels x (suspect bound, held-out bound)
    bounds, estimates = [], []
    for level in LEVELS:
        g_up, f_lo, g_hat, f_hat = 0.0, 0.0, 0.0, 0.0
        for s, v in zip(folds.suspect, folds.heldout):
            n, m = v.shape[1], s.shape[1]
            k = min(n, max(1, int(np.ceil(level * (n + 1)))))
            threshold = np.sort(v, axis=1)[:, k - 1]
            below = (s <= threshold[:, None]).sum(axis=1)
            g_up = g_up + np.where(below >= m, 1.0, beta.ppf(1 - share, below + 1, m - below))  # Clopper-Pearson upper
            f_lo = f_lo + beta.ppf(share, k, n + 1 - k)
            g_hat, f_hat = g_hat + below / m, f_hat + k / (n + 1)
        bounds.append(np.clip(1 - g_up / f_lo, 0, 1))
        estimates.append(np.clip(1 - g_hat / f_hat, 0, 1))
    chosen = np.argmax(np.stack(bounds), axis=0)  # ties, including no bound at all: the median level
    columns = np.arange(len(chosen))
    best, estimate = np.stack(bounds)[chosen, columns], np.stack(estimates)[chosen, columns]
    # The bound is rounded down (a bound rounded up could pass the true fraction), the estimate to nearest.
    return [
        FractionTrained(float(np.floor(b * 1e6) / 1e6), round(float(e), 6), confidence) for b, e in zip(best, estimate)
    ]


def conformal_p_values(folds: FoldScores, trial: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Each suspect document's conformal p-value in one trial, with its fold: [m] p-values and
    [m] folds, in suspect-row order."""
    n_rows = sum(len(r[trial]) for r in folds.suspect_rows)
    p = np.empty(n_rows)
    fold_of = np.empty(n_rows, dtype=int)
    for f, (s, v, rows) in enumerate(zip(folds.suspect, folds.heldout, folds.suspect_rows)):
        calibration = v[trial]
        at_least = (calibration[None, :] >= s[trial][:, None]).sum(axis=1)
        p[rows[trial]] = (1 + at_least) / (1 + len(calibration))
        fold_of[rows[trial]] = f
    return p, fold_of


def identified(p: np.ndarray, fold_of: np.ndarray, q: float) -> np.ndarray:
    """Suspect rows identified at false discovery rate ``q``: Benjamini-Hochberg at q / 2 within
    each fold (scipy's adjusted p-values), the union of both."""
    found = []
    for f in np.unique(fold_of):
        rows = np.flatnonzero(fold_of == f)
        adjusted = false_discovery_control(p[rows], method="bh")
        found.append(rows[adjusted <= q / 2])
    return np.sort(np.concatenate(found))
