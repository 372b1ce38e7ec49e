"""Date-shift rejection: refuse a membership test whose reference set differs from the suspect set
in ways a model-free classifier can see.

Before any held-out or reference set is used, the suspect texts (label 1) and the reference
texts (label 0) go to the blind bag-of-words baseline. If the lower end of its AUC's 95% CI lies
above ``threshold`` (default 0.60), a membership test on these sets would measure the
distribution shift, not training, and is refused. Declared dates are checked too: a reference
dated after the model's training cutoff against a suspect dated before it is refused outright,
whatever the texts look like.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from verifier.baselines.bag_of_words import bag_of_words_scores
from verifier.stats.metrics import MembershipMetrics, evaluate_scores

DEFAULT_THRESHOLD = 0.60


@dataclass(frozen=True)
class ShiftCheck:
    """Whether a suspect/reference pair may be used, and why not."""

    refused: bool
    reason: str
    blind: MembershipMetrics
    threshold: float
    dates_straddle_cutoff: bool

    def as_finding(self) -> dict[str, object]:
        """The numbers a report shows for this check."""
        return {
            "refused": self.refused,
            "reason": self.reason,
            "blind_auc": self.blind.auc,
            "blind_auc_ci": [self.blind.auc_ci_low, self.blind.auc_ci_high],
            "threshold": self.threshold,
            "dates_straddle_cutoff": self.dates_straddle_cutoff,
        }


def check_shift(
    suspect_texts: Sequence[str],
    reference_texts: Sequence[str],
    threshold: float = DEFAULT_THRESHOLD,
    seed: int = 0,
    suspect_years: Sequence[int] | None = None,
    reference_years: Sequence[int] | None = None,
    cutoff_year: int | None = None,
) -> ShiftCheck:
    labels = np.r_[np.ones(len(suspect_texts), dtype=int), np.zeros(len(reference_texts), dtype=int)]
    texts = list(suspect_texts) + list(reference_texts)
    blind = evaluate_scores("bag_of_words", bag_of_words_scores(texts, labels, seed=seed), labels, seed=seed)
    straddle = (
        cutoff_year is not None
        and bool(suspect_years)
        and bool(reference_years)
        and max(suspect_years) <= cutoff_year < min(reference_years)
    )
    if straddle:
        reason = (
            f"measures distribution shift: the reference set is dated after the training cutoff ({cutoff_year}) "
            f"and the suspect set before it; blind bag-of-words AUC {blind.auc:.3f} "
            f"[{blind.auc_ci_low:.3f}, {blind.auc_ci_high:.3f}]"
        )
    elif blind.auc_ci_low > threshold:
        reason = (
            f"measures distribution shift: a classifier that never sees the model tells the sets apart, "
            f"blind bag-of-words AUC {blind.auc:.3f} [{blind.auc_ci_low:.3f}, {blind.auc_ci_high:.3f}] > {threshold:.2f}"
        )
    else:
        reason = (
            f"blind bag-of-words AUC {blind.auc:.3f} [{blind.auc_ci_low:.3f}, {blind.auc_ci_high:.3f}]: "
            f"CI does not lie above {threshold:.2f}, sets usable"
        )
    return ShiftCheck(
        refused=straddle or blind.auc_ci_low > threshold,
        reason=reason,
        blind=blind,
        threshold=threshold,
        dates_straddle_cutoff=straddle,
    )
