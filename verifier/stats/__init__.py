"""Statistics: membership metrics with CIs; dataset inference and power live in their own modules."""

from verifier.stats.metrics import MembershipMetrics, bootstrap_auc_ci, evaluate_scores, tpr_at_fpr

__all__ = ["MembershipMetrics", "bootstrap_auc_ci", "evaluate_scores", "tpr_at_fpr"]
