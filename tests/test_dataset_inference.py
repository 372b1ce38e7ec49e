"""Dataset inference and its power simulation: valid under the null, powerful under a shift."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression

from verifier.errors import VerifierError
from verifier.stats.dataset_inference import aggregate_p_values, dataset_inference
from verifier.stats.logistic import fit_logistic_batch
from verifier.stats.power import simulate_power, wilson

FEATURES = ["loss", "zlib", "min_k", "min_k_pp"]


def test_batched_logistic_equals_sklearn():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(3, 80, 4))
    y = (x[..., 0] + 0.5 * x[..., 1] + rng.normal(size=(3, 80)) > 0).astype(float)
    w, b = fit_logistic_batch(x, y, c=1.0)
    for t in range(3):
        ref = LogisticRegression(C=1.0, tol=1e-10, max_iter=10_000).fit(x[t], y[t])
        np.testing.assert_allclose(w[t], ref.coef_[0], atol=1e-5)
        assert b[t] == pytest.approx(ref.intercept_[0], abs=1e-5)


def correlated_pool(rng, n, shift=0.0):
    """Four correlated signals like loss/zlib/min-k/min-k++; members shifted by ``shift``."""
    base = rng.normal(size=(n, 1)) + shift
    return base + 0.6 * rng.normal(size=(n, 4))


def test_false_positive_rate_holds_under_the_null():
    rng = np.random.default_rng(1)
    pool = correlated_pool(rng, 3000)
    table = simulate_power(pool[:10], pool, FEATURES, sizes=[50, 200], trials=1000, seed=2)
    for row in table.rows:
        assert row.fpr.ci_low <= 0.05  # at or below alpha, within sampling error
        assert row.fpr.value <= 0.07


def test_power_grows_with_set_size_under_a_real_shift():
    rng = np.random.default_rng(3)
    members, nonmembers = correlated_pool(rng, 800, shift=0.3), correlated_pool(rng, 1600)
    table = simulate_power(members, nonmembers, FEATURES, sizes=[25, 100, 400], trials=200, seed=4)
    power = [row.power.value for row in table.rows]
    assert power[0] < power[1] < power[2] and power[2] > 0.8


def test_sizes_the_pools_cannot_fill_are_skipped():
    rng = np.random.default_rng(5)
    table = simulate_power(correlated_pool(rng, 60), correlated_pool(rng, 90), FEATURES, sizes=[25, 50, 100], trials=50)
    assert [r.n for r in table.rows] == [25, 50] and table.skipped_sizes == [100]
    assert table.rows[1].fpr is None and table.rows[1].power is not None  # 2 x 50 > 90 non-members


def test_single_test_detects_a_shift_and_refuses_small_sets():
    rng = np.random.default_rng(6)
    result = dataset_inference(correlated_pool(rng, 300, shift=0.5), correlated_pool(rng, 300), FEATURES, seed=0)
    assert result.significant and result.p_value < 0.01 and result.effect_size > 0.2
    assert len(result.split_p_values) == result.n_splits
    same = dataset_inference(correlated_pool(rng, 300), correlated_pool(rng, 300), FEATURES, seed=0)
    assert same.p_value > result.p_value
    with pytest.raises(VerifierError, match="at least 20 suspect documents, got 19"):
        dataset_inference(correlated_pool(rng, 19), correlated_pool(rng, 300), FEATURES)


def test_quantile_aggregation():
    assert aggregate_p_values(np.array([[0.01, 0.02, 0.9]])).tolist() == [0.04]
    assert aggregate_p_values(np.array([[0.3]])).tolist() == [0.3]
    assert aggregate_p_values(np.array([[0.6, 0.7, 0.8]])).tolist() == [1.0]


def test_wilson_interval():
    rate = wilson(25, 500)
    assert rate.value == 0.05 and rate.ci_low == pytest.approx(0.0341, abs=1e-3) and rate.ci_high == pytest.approx(0.0728, abs=1e-3)


def test_batched_welch_equals_scipy():
    from scipy.stats import ttest_ind

    from verifier.stats.dataset_inference import split_p_values

    rng = np.random.default_rng(8)
    suspect, validation = correlated_pool(rng, 60, shift=0.3)[None], correlated_pool(rng, 50)[None]
    p, _ = split_p_values(suspect, validation, n_splits=3, rng=np.random.default_rng(0))
    # Recompute split 0 by hand with scipy, from the same permutation stream.
    again = np.random.default_rng(0)
    perm_s = again.permuted(np.broadcast_to(np.arange(60), (3, 1, 60)), axis=2)[0, 0]
    perm_v = again.permuted(np.broadcast_to(np.arange(50), (3, 1, 50)), axis=2)[0, 0]
    s, v = suspect[0][perm_s].astype(np.float32), validation[0][perm_v].astype(np.float32)
    a = np.r_[s[:30], v[:25]]
    mean, std = a.mean(0), a.std(0)
    ref = LogisticRegression(C=1.0, tol=1e-10, max_iter=10_000).fit((a - mean) / std, np.r_[np.ones(30), np.zeros(25)])
    w = ref.coef_[0]
    want = ttest_ind(((s[30:] - mean) / std) @ w, ((v[25:] - mean) / std) @ w, equal_var=False, alternative="greater").pvalue
    assert p[0, 0] == pytest.approx(want, rel=1e-3)
