"""Blind latest-year baseline: the most recent four-digit year a text mentions.

Post-hoc benchmarks take members from before a cutoff and non-members from after it, so the
date a text talks about predicts its label with no model at all. Which set is the older one is
not known in advance (a suspect set may be the newer one), and choosing the direction on the
same labels that are then scored would inflate the AUC on sets that years do not separate. So
the direction is cross-fitted, as the bag-of-words baseline's classifier is: each fold is
scored in the direction its complement's labels favour. Texts that mention no year get the
median of the years found, a neutral rank.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np
from sklearn.metrics import roc_auc_score
from sklearn.model_selection import StratifiedKFold

from verifier.errors import VerifierError

YEAR = re.compile(r"(?<!\d)(1[5-9]\d\d|20\d\d)(?!\d)")


def latest_year(text: str) -> int | None:
    years = [int(match) for match in YEAR.findall(text)]
    return max(years) if years else None


def latest_year_scores(texts: Sequence[str]) -> np.ndarray:
    """The negated latest year (older = higher), the direction of a cutoff-based benchmark."""
    years = np.array([latest_year(text) or np.nan for text in texts], dtype=np.float64)
    fill = np.nanmedian(years) if np.isfinite(years).any() else 0.0
    return -np.where(np.isfinite(years), years, fill)


def latest_year_baseline(texts: Sequence[str], labels: np.ndarray, seed: int = 0, folds: int = 5) -> np.ndarray:
    """Out-of-fold year scores, each fold oriented by the others; needs ``folds`` documents per class."""
    labels = np.asarray(labels).astype(int)
    smallest = int(min(labels.sum(), (labels == 0).sum()))
    if smallest < folds:
        raise VerifierError(
            f"latest-year baseline: {folds}-fold cross-fitting needs {folds} documents per class, got {smallest}"
        )
    # Centred on a label-free median, so folds scored in opposite directions share one scale.
    older = latest_year_scores(texts)
    older = older - np.median(older)
    scores = np.empty_like(older)
    for train, held in StratifiedKFold(n_splits=folds, shuffle=True, random_state=seed).split(older, labels):
        direction = np.sign(roc_auc_score(labels[train], older[train]) - 0.5)  # 0: no direction, a constant fold
        scores[held] = direction * older[held]
    return scores
