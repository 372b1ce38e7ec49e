"""Blind bag-of-words baseline (after Das et al. 2024): can the two sets be told apart without the model?

TF-IDF over word unigrams feeds a logistic regression (liblinear: exact and fast on sparse text); every document is
scored by
the fold that did not train on it (stratified k-fold, seeded), so the AUC of these out-of-fold
scores estimates how separable the sets are from their text alone. A high value means any
membership number on the same sets may be measuring a distribution shift, not training.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import StratifiedKFold, cross_val_predict
from sklearn.pipeline import make_pipeline

from verifier.errors import VerifierError


def bag_of_words_scores(texts: Sequence[str], labels: np.ndarray, seed: int = 0, folds: int = 5) -> np.ndarray:
    """Out-of-fold P(label = 1 | text); needs at least ``folds`` documents of each class."""
    labels = np.asarray(labels).astype(int)
    smallest = int(min(labels.sum(), (labels == 0).sum()))
    if smallest < folds:
        raise VerifierError(
            f"bag-of-words baseline: {folds}-fold cross-validation needs {folds} documents per class, got {smallest}"
        )
    model = make_pipeline(
        TfidfVectorizer(sublinear_tf=True),
        LogisticRegression(C=10.0, solver="liblinear"),
    )
    cv = StratifiedKFold(n_splits=folds, shuffle=True, random_state=seed)
    return cross_val_predict(model, list(texts), labels, cv=cv, method="predict_proba")[:, 1]
