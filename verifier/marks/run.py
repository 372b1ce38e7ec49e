"""Library calls behind ``verifier marks make / test / identifiers`` (the CLI only parses and prints)."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import numpy as np

from verifier.audit import signing_key
from verifier.data import Documents, load_documents, load_identified
from verifier.errors import VerifierError
from verifier.marks.checks import checked_registration
from verifier.marks.evaluate import MarksFinding, identifier_trials, registered_trials, run_rank_tests
from verifier.marks.generators import MarkSpec
from verifier.marks.make import make_marks, write_marks
from verifier.marks.rephrase import make_rephraser
from verifier.routes.identifiers import NULL as IDENTIFIERS_NULL
from verifier.routes.marks import NULL as MARKS_NULL
from verifier.scoring.table import Progress, score_documents
from verifier.targets import ScoreCache, ScoringOptions, load_target


def make_files(documents: Path, out: Path, specs: list[MarkSpec], key_path: Path | None, name: str, text_field: str = "text",
               id_field: str = "id", rephraser: str = "offline", seed: int | None = None, force: bool = False,
               tsa: list[str] | None = None, access: object = None) -> tuple[dict[str, Path], Path | None]:
    """Mark the documents of ``documents`` with ``specs`` (in equal blocks, in file order); write the
    publication and its signed registration, dated by each TSA in ``tsa``. Signs with ``key_path``,
    else the default key (created if missing: returned second)."""
    key, created = signing_key(key_path)
    docs = load_identified(documents, text_field, id_field)
    if len(specs) > len(docs):
        raise VerifierError(f"{documents}: {len(docs)} documents cannot take {len(specs)} kinds of mark (one each)")
    try:
        chosen = make_rephraser(rephraser) if any(spec.kind == "rephrasing" for spec in specs) else None
    except ValueError as exc:
        raise VerifierError(str(exc)) from None
    marked = make_marks(docs, [specs[i * len(specs) // len(docs)] for i in range(len(docs))], name, seed, chosen)
    return write_marks(marked, out, key, force=force, tsa=tsa, access=access), created


class TargetScorer:
    """Scores texts with a model through the forward-pass cache (a ``marks.evaluate.Scorer``)."""

    def __init__(self, model: str, options: ScoringOptions, cache_dir: Path | None, progress: Progress | None) -> None:
        self.target = load_target(model, options)
        self.cache = ScoreCache(cache_dir)
        self.progress = progress

    def __call__(self, role: str, texts: list[str], signal: str) -> np.ndarray:
        return score_documents(Documents(texts, None, role), self.target, signal_names=[signal], cache=self.cache,
                               progress=self.progress).signal(signal)


def test_registered(scorer: TargetScorer, registration: Path, siblings: Path, published: Path, released: date | None,
                    cutoff: int | None, alpha: float, combine: str, level: float, context_words: int, seed: int,
                    trust_dir: Path | None = None, text_field: str = "text", rephraser: str | None = None) -> MarksFinding:
    """The marks route's test outside an audit (same checks, same statistics)."""
    reg, secrets = checked_registration(registration, siblings, released, cutoff, lambda: scorer.target.identity.digests.get("weights"),
                                        rephraser_model=rephraser, trust_dir=trust_dir)
    trials, excluded = registered_trials(reg, secrets, load_documents(published, text_field=text_field).texts, context_words)
    if not trials:
        raise VerifierError(f"{published.name}: none of the registered marks can be tested ({'; '.join(list(excluded.values())[:3])})")
    return run_rank_tests(trials, scorer, MARKS_NULL, combine, alpha, level, 0.8, seed, excluded)  # type: ignore[arg-type]


def test_identifiers(scorer: TargetScorer, documents: Path, samples: int, alpha: float, combine: str, level: float,
                     context_words: int, max_identifiers: int, seed: int, text_field: str = "text") -> MarksFinding:
    """The identifiers route's test outside an audit."""
    trials, _ = identifier_trials(load_documents(documents, text_field=text_field).texts, samples, context_words, max_identifiers)
    if not trials:
        raise VerifierError(f"{documents.name}: holds no random-looking identifiers to test")
    return run_rank_tests(trials, scorer, IDENTIFIERS_NULL, combine, alpha, level, 0.8, seed)  # type: ignore[arg-type]
