"""Evaluate a labelled score table: every signal beside the blind baselines.

The blind rows are not decoration: if a model-free classifier separates the same two sets,
a membership AUC on them is evidence of a distribution shift, not of training.
"""

from __future__ import annotations

from dataclasses import dataclass

from verifier.baselines import bag_of_words_scores
from verifier.baselines.latest_year import latest_year_baseline
from verifier.errors import VerifierError
from verifier.scoring import ScoreTable
from verifier.stats import MembershipMetrics, evaluate_scores

BLIND_BASELINES = {
    "bag_of_words": lambda texts, labels, seed: bag_of_words_scores(texts, labels, seed=seed),
    "latest_year": lambda texts, labels, seed: latest_year_baseline(texts, labels, seed=seed),
}


@dataclass(frozen=True)
class EvaluationRow:
    """One row of the evaluation: ``kind`` is "signal" (uses the model) or "blind" (never does)."""

    kind: str
    metrics: MembershipMetrics


def evaluate_table(table: ScoreTable, seed: int = 0) -> list[EvaluationRow]:
    labels = table.labels
    if labels is None:
        raise VerifierError("the score table has no labels: score a labelled file (--label-field) to evaluate")
    texts = table.frame["text"].tolist()
    rows = [EvaluationRow("signal", evaluate_scores(name, table.signal(name), labels, seed=seed)) for name in table.signal_names]
    rows += [
        EvaluationRow("blind", evaluate_scores(name, baseline(texts, labels, seed), labels, seed=seed))
        for name, baseline in BLIND_BASELINES.items()
    ]
    return rows
