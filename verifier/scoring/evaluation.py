"""Evaluate a labelled score table: every signal beside the blind baselines.

The blind rows are not decoration: if a model-free classifier separates the same two sets,
a membership AUC on them is evidence of a distribution shift, not of training.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace

import numpy as np

from verifier.baselines.exchangeability import ExchangeabilityCheck, check_exchangeable
from verifier.baselines.latest_year import latest_year_baseline
from verifier.errors import VerifierError
from verifier.scoring.table import FAILURE_PREFIX, ScoreTable
from verifier.stats.metrics import MembershipMetrics, evaluate_scores

BLIND_CLASSIFIER = "blind_classifier"


def blind_classifier_metrics(check: ExchangeabilityCheck, seed: int) -> MembershipMetrics:
    """The blind classifier's row, with the one AUC every place gives for it (verdict, checks,
    tables, ``evaluate``): re-centred on its permutation null, with the null-calibrated interval.
    The TPRs are read off its out-of-fold scores (the raw AUC is ``check.auc``)."""
    raw = evaluate_scores(BLIND_CLASSIFIER, check.scores, check.labels, seed=seed)
    return replace(raw, auc=check.auc_corrected, auc_ci_low=check.ci_low, auc_ci_high=check.ci_high)


def _blind_classifier(texts: list[str], labels: np.ndarray, seed: int) -> MembershipMetrics:
    members = [t for t, label in zip(texts, labels) if label == 1]
    nonmembers = [t for t, label in zip(texts, labels) if label == 0]
    return blind_classifier_metrics(check_exchangeable(members, nonmembers, seed=seed), seed)


# The model-free rows: the report's blind classifier (the exchangeability check's), and the latest year.
BLIND_BASELINES: dict[str, Callable[[list[str], np.ndarray, int], MembershipMetrics]] = {
    BLIND_CLASSIFIER: _blind_classifier,
    "latest_year": lambda texts, labels, seed: evaluate_scores(
        "latest_year", latest_year_baseline(texts, labels, seed=seed), labels, seed=seed
    ),
}


@dataclass(frozen=True)
class EvaluationRow:
    """One row of the evaluation: ``kind`` is "signal" (uses the model) or "blind" (never does)."""

    kind: str
    name: str
    metrics: MembershipMetrics | None  # None: too few documents were scored to measure anything
    unscored: dict[str, int] = field(default_factory=dict)  # why documents have no score -> how many

    @property
    def note(self) -> str:
        if not self.unscored:
            return ""
        n = sum(self.unscored.values())
        why = "; ".join(f"{k}: {v}" for k, v in self.unscored.items())
        return f"{n} documents unscored ({why})" + ("" if self.metrics else ": too few scored to measure")


def signal_row(table: ScoreTable, name: str, labels: np.ndarray, seed: int) -> EvaluationRow:
    """A signal's metrics over the documents it scored. Unscored ones (failed queries, no usable
    trace) are counted with their reasons; when more than half of either class is unscored no
    metric is computed - an AUC over what is left would describe the survivors, not the model."""
    values = table.signal(name)
    scored = np.isfinite(values)
    if scored.all():
        return EvaluationRow("signal", name, evaluate_scores(name, values, labels, seed=seed))
    column = table.frame.get(FAILURE_PREFIX + name)
    reasons = (
        column[~scored].fillna("no score").value_counts() if column is not None else {"no score": int((~scored).sum())}
    )
    unscored = {str(k): int(v) for k, v in dict(reasons).items()}
    enough = all(
        scored[labels == c].sum() * 2 >= (labels == c).sum() for c in (0, 1)
    )  # as the routes: more than half unscored is too few
    metrics = evaluate_scores(name, values[scored], labels[scored], seed=seed) if enough else None
    return EvaluationRow("signal", name, metrics, unscored)


def evaluate_table(table: ScoreTable, seed: int = 0) -> list[EvaluationRow]:
    labels = table.labels
    if labels is None:
        raise VerifierError("the score table has no labels: score a labelled file (--label-field) to evaluate")
    texts = table.frame["text"].tolist()
    rows = [signal_row(table, name, labels, seed) for name in table.signal_names]
    rows += [EvaluationRow("blind", name, baseline(texts, labels, seed)) for name, baseline in BLIND_BASELINES.items()]
    return rows
