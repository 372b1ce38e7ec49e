"""Document-level comparison of two sets: every signal beside the blind baselines, with figure data.

Both set-level routes show this table, because a membership number means nothing without the
model-free baseline next to it: where the blind rows separate the sets, so will any signal.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

import numpy as np
from sklearn.metrics import roc_curve

from verifier.evaluation import BLIND_BASELINES
from verifier.stats import evaluate_scores

ROC_POINTS = 101
HISTOGRAM_BINS = 20


def compare_sets(
    signals: Sequence[str],
    suspect: np.ndarray,
    other: np.ndarray,
    suspect_texts: Sequence[str],
    other_texts: Sequence[str],
    seed: int,
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Rows (signal and blind AUCs, suspect = positive class) and ROC / histogram data."""
    labels = np.r_[np.ones(len(suspect), dtype=int), np.zeros(len(other), dtype=int)]
    texts = list(suspect_texts) + list(other_texts)
    columns = {name: np.r_[suspect[:, i], other[:, i]] for i, name in enumerate(signals)}
    columns |= {name: baseline(texts, labels, seed) for name, baseline in BLIND_BASELINES.items()}
    rows, roc, histograms = [], {}, {}
    for name, scores in columns.items():
        kind = "blind" if name in BLIND_BASELINES else "signal"
        rows.append({"kind": kind, **asdict(evaluate_scores(name, scores, labels, seed=seed))})
        fpr, tpr, _ = roc_curve(labels, scores)
        grid = np.linspace(0, 1, ROC_POINTS)
        roc[name] = {"fpr": grid.round(4).tolist(), "tpr": np.interp(grid, fpr, tpr).round(4).tolist(), "kind": kind}
        if kind == "signal":
            edges = np.histogram_bin_edges(scores, bins=HISTOGRAM_BINS)
            histograms[name] = {
                "edges": edges.round(6).tolist(),
                "suspect": np.histogram(scores[labels == 1], bins=edges)[0].tolist(),
                "other": np.histogram(scores[labels == 0], bins=edges)[0].tolist(),
            }
    return rows, {"roc": roc, "histograms": histograms}


def best_signal(rows: list[dict[str, Any]]) -> dict[str, Any]:
    return max((r for r in rows if r["kind"] == "signal"), key=lambda r: r["auc"])


def blind_row(rows: list[dict[str, Any]]) -> dict[str, Any]:
    return next(r for r in rows if r["name"] == "bag_of_words")
