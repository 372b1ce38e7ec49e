"""Set-level dataset inference (after Maini et al. 2024), done so its false-positive rate holds.

Question: was the *suspect* set, as a whole, in the training data, compared with a *validation*
set the model certainly never saw from the same distribution and period?

Null hypothesis H0: suspect and validation documents are exchangeable with respect to the model
(the suspect set was not trained on). Alternative: suspect documents score higher.

Procedure, per random split (seeded):
1. split suspect and validation each into halves A and B;
2. standardise the signal features with the mean and spread of A only (both sets' A halves);
3. learn a weighting of the features on A: logistic regression, suspect = 1, validation = 0;
4. score the B halves with that weighting; one-sided Welch t-test (``equal_var=False``) of
   "suspect B scores higher than validation B".
Because the weighting never sees B, each split's p-value is valid under H0. The splits reuse the
same documents, so their p-values are dependent; they are combined by quantile aggregation
(Meinshausen, Meier and Buehlmann 2009) with gamma = 1/2: p = min(1, 2 x median), which keeps the
false-positive rate at or below alpha under *any* dependence. (Averaging or taking the minimum
would not.) ``benchmarks/soundness.py`` shows the rate by simulation.

Where this differs from the reference code, and why:
- it uses a Student t-test (equal variances) on a single split; Welch does not assume the two
  halves have equal variance, and several combined splits make the result less split-dependent;
- it normalises with the suspect set's statistics over all rows, so B leaks into the features;
  here only A's statistics are used;
- it crashes below 40 rows; here sets below ``MIN_SET_SIZE`` are refused with a clear message.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.stats import t as student_t

from verifier.errors import VerifierError
from verifier.stats.logistic import fit_logistic_batch

MIN_SET_SIZE = 20  # per set: halves of 10, enough for a Welch test on a 4-7 feature weighting
DEFAULT_SPLITS = 5  # odd, so the median is one split's p-value; 5 keeps 500 trials x 6 sizes near 5 s


@dataclass(frozen=True)
class DatasetInferenceResult:
    """Outcome of one set-level test; ``p_value`` is the aggregated one the decision uses."""

    p_value: float
    split_p_values: list[float]
    effect_size: float  # median over splits of Cohen's d between suspect B and validation B scores
    alpha: float
    significant: bool
    n_suspect: int
    n_validation: int
    features: list[str]
    n_splits: int
    seed: int
    null_hypothesis: str = "suspect and validation documents are exchangeable (suspect not trained on)"


def dataset_inference(
    suspect: np.ndarray,
    validation: np.ndarray,
    features: list[str],
    alpha: float = 0.05,
    n_splits: int = DEFAULT_SPLITS,
    seed: int = 0,
    min_set_size: int = MIN_SET_SIZE,
) -> DatasetInferenceResult:
    """Test ``suspect`` [n_s, features] against ``validation`` [n_v, features]."""
    for name, block in (("suspect", suspect), ("validation", validation)):
        if len(block) < min_set_size:
            raise VerifierError(f"dataset inference needs at least {min_set_size} {name} documents, got {len(block)}")
        if not np.isfinite(block).all():
            raise VerifierError(f"dataset inference: the {name} features contain NaN or infinite values")
    p, d = split_p_values(suspect[None], validation[None], n_splits=n_splits, rng=np.random.default_rng(seed))
    combined = float(aggregate_p_values(p)[0])
    return DatasetInferenceResult(
        p_value=combined,
        split_p_values=[float(v) for v in p[0]],
        effect_size=float(np.median(d[0])),
        alpha=alpha,
        significant=combined < alpha,
        n_suspect=len(suspect),
        n_validation=len(validation),
        features=list(features),
        n_splits=n_splits,
        seed=seed,
    )


def split_p_values(
    suspect: np.ndarray, validation: np.ndarray, n_splits: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """Per-split one-sided Welch p-values and Cohen's d for many trials at once.

    ``suspect`` is [trials, n_s, features] and ``validation`` [trials, n_v, features]; returns two
    [trials, n_splits] arrays. All trials and splits share one batched logistic-regression fit.
    """
    # float32: the arrays are [splits, trials, n, features] and the work is memory-bound; the
    # signals are standardised, so single precision loses nothing a p-value could show.
    suspect, validation = suspect.astype(np.float32), validation.astype(np.float32)
    trials, n_s, _ = suspect.shape
    n_v = validation.shape[1]
    half_s, half_v = n_s // 2, n_v // 2
    # One independent permutation per (split, trial) of each set's rows.
    perm_s = rng.permuted(np.broadcast_to(np.arange(n_s), (n_splits, trials, n_s)), axis=2)
    perm_v = rng.permuted(np.broadcast_to(np.arange(n_v), (n_splits, trials, n_v)), axis=2)
    take = lambda data, perm: np.take_along_axis(data[None], perm[..., None], axis=2)  # noqa: E731
    s, v = take(suspect, perm_s), take(validation, perm_v)  # [splits, trials, n, features]
    a = np.concatenate([s[:, :, :half_s], v[:, :, :half_v]], axis=2)
    mean = a.mean(axis=2, keepdims=True)
    std = a.std(axis=2, keepdims=True)
    std = np.where(std > 0, std, 1.0)
    a = ((a - mean) / std).reshape(n_splits * trials, half_s + half_v, -1)
    y = np.concatenate([np.ones(half_s), np.zeros(half_v)]).astype(np.float32)
    w, _ = fit_logistic_batch(a, np.broadcast_to(y, (n_splits * trials, half_s + half_v)))
    # Score B with A's standardisation folded into the weights: x_std . w = x . (w / std) - const,
    # and the constant cancels in the two-sample test; one batched product, no standardised copy.
    w = (w.reshape(n_splits, trials, -1).astype(np.float32) / std[:, :, 0])[..., None]
    score_s = (s[:, :, half_s:] @ w)[..., 0]  # [splits, trials, n_s - half_s]
    score_v = (v[:, :, half_v:] @ w)[..., 0]
    # One-sided Welch test from the moments, which Cohen's d needs as well (computed once).
    n1, n2 = score_s.shape[2], score_v.shape[2]
    m1, m2 = score_s.mean(axis=2, dtype=np.float64), score_v.mean(axis=2, dtype=np.float64)
    v1, v2 = score_s.var(axis=2, ddof=1, dtype=np.float64), score_v.var(axis=2, ddof=1, dtype=np.float64)
    se2 = v1 / n1 + v2 / n2
    with np.errstate(divide="ignore", invalid="ignore"):
        t_stat = (m1 - m2) / np.sqrt(se2)
        df = se2**2 / ((v1 / n1) ** 2 / (n1 - 1) + (v2 / n2) ** 2 / (n2 - 1))
        p = np.nan_to_num(student_t.sf(t_stat, df), nan=1.0)  # constant scores (no weighting learned): no evidence
        pooled = np.sqrt((v1 + v2) / 2)
        cohen_d = np.where(pooled > 0, (m1 - m2) / pooled, 0.0)
    return p.T, cohen_d.T


def aggregate_p_values(p: np.ndarray) -> np.ndarray:
    """Quantile aggregation with gamma = 1/2 over the last axis: min(1, 2 x median).

    A single split needs no correction. For an even count the upper median is used, which only
    makes the result more conservative.
    """
    if p.shape[-1] == 1:
        return p[..., 0]
    return np.minimum(1.0, 2.0 * np.quantile(p, 0.5, axis=-1, method="higher"))
