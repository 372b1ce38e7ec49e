"""Membership metrics: exact values on constructed data, and a bootstrap that behaves."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score

from verifier.errors import VerifierError
from verifier.stats.metrics import bootstrap_auc_ci, evaluate_scores


def test_perfect_and_reversed_separation():
    labels = np.array([0] * 50 + [1] * 50)
    scores = np.arange(100, dtype=float)
    good = evaluate_scores("s", scores, labels)
    assert (good.auc, good.auc_ci_low, good.tpr_at_1_fpr, good.best_balanced_accuracy) == (1.0, 1.0, 1.0, 1.0)
    bad = evaluate_scores("s", -scores, labels)
    assert bad.auc == 0.0 and bad.tpr_at_5_fpr == 0.0


def test_tpr_at_fpr_reads_the_roc_curve():
    # 100 non-members 0..99; members: 10 above every non-member, 90 tied low.
    neg = np.arange(100, dtype=float)
    pos = np.r_[np.full(10, 1000.0), np.full(90, -1.0)]
    m = evaluate_scores("s", np.r_[pos, neg], np.r_[np.ones(100), np.zeros(100)])
    assert m.tpr_at_1_fpr == pytest.approx(0.10)
    assert m.tpr_at_5_fpr == pytest.approx(0.10)


def test_bootstrap_matches_sklearn_and_covers_the_truth():
    rng = np.random.default_rng(1)
    labels = rng.integers(0, 2, 400)
    scores = rng.normal(size=400) + 0.5 * labels  # true AUC = Phi(0.5 / sqrt 2) = 0.638
    m = evaluate_scores("s", scores, labels, seed=7)
    assert m.auc == pytest.approx(roc_auc_score(labels, scores))
    assert m.auc_ci_low < m.auc < m.auc_ci_high
    assert m.auc_ci_low < 0.638 < m.auc_ci_high
    assert 0.06 < m.auc_ci_high - m.auc_ci_low < 0.14  # ~ 2 * 1.96 * sqrt(AUC var) at n = 400
    assert bootstrap_auc_ci(scores, labels, seed=7) == (m.auc_ci_low, m.auc_ci_high)
    assert bootstrap_auc_ci(scores, labels, seed=8) != (m.auc_ci_low, m.auc_ci_high)


def test_vectorised_bootstrap_aucs_equal_sklearn_with_ties():
    # With one resample of n_bootstrap=1 the percentile interval is that resample's AUC.
    scores = np.array([0.1, 0.4, 0.4, 0.35, 0.8, 0.4, 0.2, 0.9])
    labels = np.array([0, 0, 1, 1, 1, 0, 1, 1])
    low, high = bootstrap_auc_ci(scores, labels, seed=3, n_bootstrap=1)
    rng = np.random.default_rng(3)
    pos, neg = scores[labels == 1], scores[labels == 0]
    resampled_pos = pos[rng.integers(0, len(pos), (1, len(pos)))][0]
    resampled_neg = neg[rng.integers(0, len(neg), (1, len(neg)))][0]
    want = roc_auc_score(np.r_[np.ones(len(pos)), np.zeros(len(neg))], np.r_[resampled_pos, resampled_neg])
    assert low == pytest.approx(want) and high == pytest.approx(want)


def test_refuses_one_class_and_nan():
    with pytest.raises(VerifierError, match="both members and non-members"):
        evaluate_scores("s", np.arange(5.0), np.ones(5))
    with pytest.raises(VerifierError, match="NaN"):
        evaluate_scores("s", np.array([0.1, np.nan, 0.3, 0.2]), np.array([0, 1, 0, 1]))
