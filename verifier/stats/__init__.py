"""Statistics: membership metrics with confidence intervals (later: set-level tests, power)."""

from verifier.stats.metrics import MembershipMetrics, bootstrap_auc_ci, evaluate_scores, tpr_at_fpr

__all__ = ["MembershipMetrics", "bootstrap_auc_ci", "evaluate_scores", "tpr_at_fpr"]
