"""The library call behind ``verifier marks identifiers``: the identifiers route's test outside an audit."""

from __future__ import annotations

from pathlib import Path

from verifier.data import load_documents
from verifier.errors import VerifierError
from verifier.identifiers.trials import NULL, identifier_trials
from verifier.scoring.table import TargetScorer
from verifier.stats.rank_trials import RankFinding, run_rank_tests


def test_identifiers(
    scorer: TargetScorer,
    documents: Path,
    samples: int,
    alpha: float,
    combine: str,
    level: float,
    context_words: int,
    max_identifiers: int,
    seed: int,
    text_field: str = "text",
) -> RankFinding:
    """The identifiers route's test outside an audit."""
    trials, _ = identifier_trials(
        load_documents(documents, text_field=text_field).texts, samples, context_words, max_identifiers
    )
    if not trials:
        raise VerifierError(f"{documents.name}: holds no random-looking identifiers to test")
    return run_rank_tests(trials, scorer, NULL, combine, alpha, level, 0.8, seed)  # type: ignore[arg-type]
