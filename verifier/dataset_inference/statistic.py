"""Set-level dataset inference (after Maini et al. 2024), done so its false-positive rate holds.

Question: was the *suspect* set, as a whole, in the training data, compared with a *held-out*
set the model certainly never saw from the same population and period?

Null hypothesis H0: suspect and held-out documents are exchangeable with respect to the model
(the suspect set was not trained on). Alternative: suspect documents are *more* member-like.

The statistic is a learned weighting of the signals, and the weighting is constrained: every
signal is oriented "higher = member", so the weights are non-negative (``stats.logistic``). A set
that is less member-like than the held-out set on every signal gets all-zero weights and no
evidence, instead of a "significant" two-sided difference read as training.

Two ways to get a p-value from it (``method``):

``permutation`` (default): cross-fitting with an exact permutation p-value. Suspect and
held-out sets are each cut into halves at random; the weighting is learned on one half (features
standardised with that half's statistics only) and scores the other, and then the halves swap,
so every document is scored by a weighting that never saw it. The statistic is the mean of the
two one-sided Welch t statistics. The whole procedure (random halves, standardisation, fit,
scoring) is re-run on ``n_permutations`` random relabellings of the pooled documents; under H0
the labels are exchangeable, so p = (1 + #{relabelled >= observed}) / (1 + n_permutations) is
exact at any set size: the false-positive rate is at most alpha and close to it (at most 0.049
at alpha 0.05 with 999 relabellings; ties, e.g. all-zero weights, only lower it), where the
split design's is about 1%, and every document counts.

``split_median``: the published one-split design made robust: per seeded split, learn on half A,
one-sided Welch t-test on half B; splits are combined by quantile aggregation (Meinshausen, Meier
and Buehlmann 2009), p = min(1, 2 x median), valid under any dependence between splits but
conservative (about 1% false positives at alpha 0.05), which costs power.

Where both differ from the published code, and why:
- it uses a Student t-test (equal variances) on a single split and an unconstrained weighting,
  which makes its "one-sided" test an omnibus two-sample test;
- it normalises with the suspect set's statistics over all rows, so B leaks into the features;
  here only the fitting half's statistics are used;
- it crashes below 40 rows; here sets below ``MIN_SET_SIZE`` are refused with a clear message.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy.stats import t as student_t

from verifier.errors import VerifierError
from verifier.stats.logistic import fit_logistic_batch

MIN_SET_SIZE = 20  # per set: halves of 10, enough for a Welch test on a 4-7 feature weighting
DEFAULT_SPLITS = 5  # split_median: odd, so the median is one split's p-value
DEFAULT_PERMUTATIONS = 999  # permutation: smallest reachable p-value 0.001
METHODS = ("permutation", "split_median")
# Batched problems are [problems, rows, features] float32; keep one chunk near 64 MB.
CHUNK_ELEMENTS = 16_000_000


@dataclass(frozen=True)
class DatasetInferenceResult:
    """Outcome of one set-level test; ``p_value`` is the one the decision uses."""

    p_value: float
    method: str
    statistic: float  # permutation: mean cross-fitted Welch t; split_median: median split t
    effect_size: float  # Cohen's d between suspect and held-out scores (held-out halves)
    alpha: float
    significant: bool
    n_suspect: int
    n_heldout: int
    features: list[str]
    weights: list[dict[str, float]]  # per fold or split: the learned non-negative weights (standardised units)
    seed: int
    n_permutations: int = 0
    n_splits: int = 0
    split_p_values: list[float] = field(default_factory=list)
    null_hypothesis: str = "suspect and held-out documents are exchangeable (suspect not trained on)"


def dataset_inference(
    suspect: np.ndarray,
    heldout: np.ndarray,
    features: list[str],
    alpha: float = 0.05,
    method: str = "permutation",
    n_permutations: int = DEFAULT_PERMUTATIONS,
    n_splits: int = DEFAULT_SPLITS,
    seed: int = 0,
    min_set_size: int = MIN_SET_SIZE,
) -> DatasetInferenceResult:
    """Test ``suspect`` [n_s, features] against ``heldout`` [n_v, features]."""
    if method not in METHODS:
        raise VerifierError(f"dataset inference: unknown method {method!r}; use one of {', '.join(METHODS)}")
    for name, block in (("suspect", suspect), ("held-out", heldout)):
        if len(block) < min_set_size:
            raise VerifierError(f"dataset inference needs at least {min_set_size} {name} documents, got {len(block)}")
        if not np.isfinite(block).all():
            raise VerifierError(f"dataset inference: the {name} features contain NaN or infinite values")
    rng = np.random.default_rng(seed)
    common: dict[str, Any] = {
        "alpha": alpha,
        "method": method,
        "n_suspect": len(suspect),
        "n_heldout": len(heldout),
        "features": list(features),
        "seed": seed,
    }
    if method == "permutation":
        test = cross_fit_permutation(suspect[None], heldout[None], n_permutations, rng)
        p = float(test.p_values[0])
        return DatasetInferenceResult(
            p_value=p,
            statistic=float(test.statistic[0]),
            effect_size=float(test.effect_size[0]),
            significant=p < alpha,
            weights=_named(test.weights[0], features),
            n_permutations=n_permutations,
            **common,
        )
    split = split_tests(suspect[None], heldout[None], n_splits, rng)
    p = float(aggregate_p_values(split.p_values)[0])
    return DatasetInferenceResult(
        p_value=p,
        statistic=float(np.median(split.statistic[0])),
        effect_size=float(np.median(split.effect_size[0])),
        significant=p < alpha,
        weights=_named(split.weights[0], features),
        n_splits=n_splits,
        split_p_values=[float(v) for v in split.p_values[0]],
        **common,
    )


def trial_p_values(
    suspect: np.ndarray,
    heldout: np.ndarray,
    rng: np.random.Generator,
    method: str = "permutation",
    n_permutations: int = DEFAULT_PERMUTATIONS,
    n_splits: int = DEFAULT_SPLITS,
) -> np.ndarray:
    """One p-value per trial for ``suspect`` [trials, n_s, F] against ``heldout`` [trials, n_v, F]."""
    if method == "permutation":
        return cross_fit_permutation(suspect, heldout, n_permutations, rng).p_values
    return aggregate_p_values(split_tests(suspect, heldout, n_splits, rng).p_values)


@dataclass(frozen=True)
class BatchedTest:
    p_values: np.ndarray  # [trials] (permutation) or [trials, splits] (split tests)
    statistic: np.ndarray
    effect_size: np.ndarray
    weights: np.ndarray  # [trials, folds or splits, features]


def cross_fit_permutation(
    suspect: np.ndarray, heldout: np.ndarray, n_permutations: int, rng: np.random.Generator
) -> BatchedTest:
    """Cross-fitted, direction-constrained statistic with an exact permutation p-value, for many trials.

    Relabelling 0 is the observed labelling (random halves within each set); relabellings
    1..n_permutations draw which pooled documents play "suspect" afresh, and everything after
    that (halves, standardisation, fit, scores) is the same procedure. Work is chunked over
    trials and relabellings, so memory stays bounded for large sets.
    """
    if n_permutations < 1:
        raise VerifierError("dataset inference: n_permutations must be at least 1")
    trials, n_s, features = suspect.shape
    n = n_s + heldout.shape[1]
    pooled = np.concatenate([suspect, heldout], axis=1).astype(np.float32)
    per_trial = n_permutations + 1
    # Jobs are (trial, relabelling) pairs, batched across trials; relabelling 0 of each trial is
    # the observed labelling. Row orders: the first n_s rows of each order play "suspect".
    observed = np.concatenate(
        [
            rng.permuted(np.broadcast_to(np.arange(n_s), (trials, n_s)), axis=1),
            n_s + rng.permuted(np.broadcast_to(np.arange(n - n_s), (trials, n - n_s)), axis=1),
        ],
        axis=1,
    )
    chunk = max(1, CHUNK_ELEMENTS // (n * (features + 1) * 3))
    statistic = np.empty(trials * per_trial)
    effect = np.empty(trials)
    weights = np.empty((trials, 2, features))
    for start in range(0, trials * per_trial, chunk):
        jobs = np.arange(start, min(start + chunk, trials * per_trial))
        trial, relabelling = jobs // per_trial, jobs % per_trial
        orders = rng.permuted(np.broadcast_to(np.arange(n), (len(jobs), n)), axis=1)
        orders[relabelling == 0] = observed[trial[relabelling == 0]]
        t_stat, d, w = _cross_fit(pooled[trial[:, None], orders], n_s)
        statistic[jobs] = t_stat
        first = relabelling == 0
        effect[trial[first]], weights[trial[first]] = d[first], w[first]
    statistic = statistic.reshape(trials, per_trial)
    exceed = (statistic[:, 1:] >= statistic[:, :1]).sum(axis=1)
    return BatchedTest(
        p_values=(1 + exceed) / (1 + n_permutations), statistic=statistic[:, 0], effect_size=effect, weights=weights
    )


def _cross_fit(rows: np.ndarray, n_s: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """[k, n, F] row orders (first n_s rows "suspect"): mean cross-fitted t, mean d, [k, 2, F] weights."""
    s, v = rows[None, :, :n_s], rows[None, :, n_s:]
    hs, hv = n_s // 2, v.shape[2] // 2
    first, second = (s[:, :, :hs], v[:, :, :hv]), (s[:, :, hs:], v[:, :, hv:])
    t_ab, d_ab, w_ab, _ = _fit_and_score(*first, *second)
    t_ba, d_ba, w_ba, _ = _fit_and_score(*second, *first)
    return (t_ab[0] + t_ba[0]) / 2, (d_ab[0] + d_ba[0]) / 2, np.stack([w_ab[0], w_ba[0]], axis=1)


def split_tests(suspect: np.ndarray, heldout: np.ndarray, n_splits: int, rng: np.random.Generator) -> BatchedTest:
    """Per-split one-sided Welch p-values (learn on A, test on B) for many trials: [trials, splits]."""
    trials, n_s, _ = suspect.shape
    n_v = heldout.shape[1]
    perm_s = rng.permuted(np.broadcast_to(np.arange(n_s), (trials, n_splits, n_s)), axis=2)
    perm_v = rng.permuted(np.broadcast_to(np.arange(n_v), (trials, n_splits, n_v)), axis=2)
    s = np.take_along_axis(suspect.astype(np.float32)[:, None], perm_s[..., None], axis=2)
    v = np.take_along_axis(heldout.astype(np.float32)[:, None], perm_v[..., None], axis=2)
    hs, hv = n_s // 2, n_v // 2
    t_stat, d, w, df = _fit_and_score(s[:, :, :hs], v[:, :, :hv], s[:, :, hs:], v[:, :, hv:])
    p = np.where(df > 0, student_t.sf(t_stat, np.where(df > 0, df, 1.0)), 1.0)
    return BatchedTest(p_values=p, statistic=t_stat, effect_size=d, weights=w)


def _fit_and_score(
    fit_s: np.ndarray, fit_v: np.ndarray, test_s: np.ndarray, test_v: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Learn non-negative weights on the fit halves, score the test halves: Welch t, Cohen's d, weights, df.

    All arrays are [trials, k, rows, features] (k splits or relabellings); returns [trials, k]
    statistics, [trials, k, features] weights in standardised units and [trials, k] Welch
    degrees of freedom. Constant scores (all weights zero: no member-like direction) give t = 0,
    d = 0 and df = 0: no evidence.
    """
    w, folded = fit_weights(fit_s, fit_v)
    score_s, score_v = (test_s @ folded)[..., 0], (test_v @ folded)[..., 0]
    n1, n2 = score_s.shape[2], score_v.shape[2]
    m1, m2 = score_s.mean(axis=2, dtype=np.float64), score_v.mean(axis=2, dtype=np.float64)
    v1, v2 = score_s.var(axis=2, ddof=1, dtype=np.float64), score_v.var(axis=2, ddof=1, dtype=np.float64)
    se = np.sqrt(v1 / n1 + v2 / n2)
    pooled = np.sqrt((v1 + v2) / 2)
    with np.errstate(divide="ignore", invalid="ignore"):
        t_stat = np.where(se > 0, (m1 - m2) / se, 0.0)
        cohen_d = np.where(pooled > 0, (m1 - m2) / pooled, 0.0)
        df = np.where(se > 0, se**4 / ((v1 / n1) ** 2 / (n1 - 1) + (v2 / n2) ** 2 / (n2 - 1)), 0.0)
    return t_stat, cohen_d, w, np.nan_to_num(df)


def fit_weights(fit_s: np.ndarray, fit_v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Non-negative logistic weights learned on [trials, k, rows, features] fit halves: the weights
    in standardised units [trials, k, features], and the same weights in raw units
    [trials, k, features, 1], the fit half's standardisation folded in (x_std . w = x . (w / std)
    - const; the constant cancels in any comparison of scores)."""
    trials, k, a_s, features = fit_s.shape
    a = np.concatenate([fit_s, fit_v], axis=2)
    mean = a.mean(axis=2, keepdims=True)
    std = a.std(axis=2, keepdims=True)
    std = np.where(std > 0, std, 1.0)
    a = ((a - mean) / std).reshape(trials * k, a.shape[2], features)
    y = np.concatenate([np.ones(a_s), np.zeros(fit_v.shape[2])]).astype(np.float32)
    w, _ = fit_logistic_batch(a, np.broadcast_to(y, a.shape[:2]), nonnegative=True)
    w = w.reshape(trials, k, features)
    return w, (w.astype(np.float32) / std[:, :, 0])[..., None]


def aggregate_p_values(p: np.ndarray) -> np.ndarray:
    """Quantile aggregation with gamma = 1/2 over the last axis: min(1, 2 x median).

    A single split needs no correction. For an even count the upper median is used, which only
    makes the result more conservative.
    """
    if p.shape[-1] == 1:
        return p[..., 0]
    return np.minimum(1.0, 2.0 * np.quantile(p, 0.5, axis=-1, method="higher"))


def _named(weights: np.ndarray, features: list[str]) -> list[dict[str, float]]:
    return [{name: round(float(value), 6) for name, value in zip(features, row)} for row in weights]
