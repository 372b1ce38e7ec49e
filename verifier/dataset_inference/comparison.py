"""What both set-level routes show: the blind check's table, and every signal beside the blind rows.

A membership number means nothing without the model-free baseline next to it: where the blind
rows separate the sets, so will any signal. The blind classifier's row reuses the out-of-fold
scores of the exchangeability check (it is fitted once per pair of sets); the latest-year row is
a cross-fitted one-feature baseline.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

import numpy as np
from sklearn.metrics import roc_curve

from verifier.baselines.exchangeability import ExchangeabilityCheck
from verifier.baselines.latest_year import latest_year_baseline
from verifier.findings import Cell, Figure, Section, Table
from verifier.scoring.evaluation import BLIND_CLASSIFIER, blind_classifier_metrics
from verifier.stats.formats import num, pval
from verifier.stats.metrics import evaluate_scores, fill_failed

ROC_POINTS = 101
HISTOGRAM_BINS = 20


def shift_rows(check: ExchangeabilityCheck) -> list[list[Cell]]:
    """The blind check as rows of a checks table: what it measured, its null, what it could miss."""
    rows: list[list[Cell]] = [
        [
            "blind classifier, suspect vs comparison (no model: words, characters, casing, punctuation, whitespace, "
            "length, "
            "format, years); AUC re-centred on its permutation null, null-calibrated two-sided 95% interval "
            "(the test below is one-sided at its level, so a detection can sit beside an interval reaching 0.5)",
            f"{num(check.auc_corrected)} [{num(check.ci_low, 3)}, {num(check.ci_high, 3)}] (raw out-of-fold "
            f"{num(check.auc, 3)})",
        ],
        [
            f"exact permutation p-value (H0: {check.null_hypothesis}; {check.n_permutations} relabellings)",
            pval(check.p_value) + (" (shift detected)" if check.detected else ""),
        ],
        [
            "lower-tail p-value: the sets more alike than random halves would be (matched, not drawn)",
            pval(check.p_value_mirrored) + (" (sets look matched)" if check.mirrored else ""),
        ],
        ["smallest shift this check could detect at this size (AUC, power 0.8)", num(check.smallest_detectable, 3)],
        [
            "exchangeability established (nothing detected and the interval's upper end below the margin "
            f"{num(check.margin, 3)})",
            "yes" if check.exchangeable else "no",
        ],
    ]
    if check.n_checked_first < check.n_first or check.n_checked_second < check.n_second:
        rows.append(
            ["documents the check used (seeded subsample)", f"{check.n_checked_first} / {check.n_checked_second}"]
        )
    return rows


def compare_sets(
    signals: Sequence[str],
    suspect: np.ndarray,
    comparison: np.ndarray,
    suspect_texts: Sequence[str],
    comparison_texts: Sequence[str],
    blind: ExchangeabilityCheck,
    seed: int,
) -> tuple[list[dict[str, Any]], list[Section]]:
    """Rows (signal and blind AUCs, suspect = positive class) and the report sections showing them."""
    labels = np.r_[np.ones(len(suspect), dtype=int), np.zeros(len(comparison), dtype=int)]
    texts = list(suspect_texts) + list(comparison_texts)
    pooled, _ = fill_failed(
        np.r_[suspect, comparison]
    )  # failed items (counted by RouteContext.features) carry no information
    columns = {name: (pooled[:, i], labels, "signal") for i, name in enumerate(signals)}
    columns[BLIND_CLASSIFIER] = (blind.scores, blind.labels, "blind")
    columns["latest_year"] = (latest_year_baseline(texts, labels, seed=seed), labels, "blind")
    rows, roc, histograms = [], {}, {}
    for name, (scores, truth, kind) in columns.items():
        metrics = (
            blind_classifier_metrics(blind, seed)
            if name == BLIND_CLASSIFIER
            else evaluate_scores(name, scores, truth, seed=seed)
        )
        rows.append({"kind": kind, **asdict(metrics)} | ({"auc_raw": blind.auc} if name == BLIND_CLASSIFIER else {}))
        fpr, tpr, _ = roc_curve(truth, scores)
        grid = np.linspace(0, 1, ROC_POINTS)
        roc[name] = {"fpr": grid.round(4).tolist(), "tpr": np.interp(grid, fpr, tpr).round(4).tolist(), "kind": kind}
        if kind == "signal":
            edges = np.histogram_bin_edges(scores, bins=HISTOGRAM_BINS)
            histograms[name] = {
                "edges": edges.round(6).tolist(),
                "suspect": np.histogram(scores[truth == 1], bins=edges)[0].tolist(),
                "comparison": np.histogram(scores[truth == 0], bins=edges)[0].tolist(),
            }
    best = best_signal(rows)["name"]
    table = Table(
        "Membership signals beside the blind baselines",
        ["score", "uses model", "AUC", "95% CI", "TPR@1%FPR", "TPR@5%FPR", "n suspect / comparison"],
        [
            [
                r["name"],
                "yes" if r["kind"] == "signal" else "no (blind)",
                num(r["auc"]),
                f"[{num(r['auc_ci_low'], 3)}, {num(r['auc_ci_high'], 3)}]",
                num(r["tpr_at_1_fpr"], 3),
                num(r["tpr_at_5_fpr"], 3),
                f"{r['n_members']} / {r['n_nonmembers']}",
            ]
            for r in rows
        ],
        row_classes=[r["kind"] for r in rows],
        note=(
            "Document-level AUCs, suspect set as the positive class; null hypothesis AUC = 0.5; CIs from a "
            "stratified bootstrap "
            f"(1,000 resamples, seed {seed}). The blind classifier's row is the exchangeability check's: its AUC "
            "re-centred on its permutation null with the null-calibrated interval, the same number as the checks "
            f"and the verdict (raw out-of-fold AUC {num(blind.auc, 3)}). "
            "Where a blind row separates the sets, the signal rows measure the difference between the sets, not "
            "training."
        ),
    )
    sections: list[Section] = [
        table,
        Figure("roc", roc, "ROC curves: membership signals (solid) and blind baselines (dashed)."),
        Figure("histogram", histograms[best], f"Scores of the best signal ({best}): suspect vs comparison set."),
    ]
    return rows, sections


def best_signal(rows: list[dict[str, Any]]) -> dict[str, Any]:
    return max((r for r in rows if r["kind"] == "signal"), key=lambda r: r["auc"])
