"""Library calls behind ``verifier marks make`` and ``verifier marks test`` (the CLI only parses and prints)."""

from __future__ import annotations

from datetime import date
from pathlib import Path

from verifier.data import load_documents, load_identified
from verifier.errors import VerifierError
from verifier.marks.checks import checked_registration
from verifier.marks.evaluate import NULL, registered_trials
from verifier.marks.generators import MarkSpec
from verifier.marks.make import make_marks, write_marks
from verifier.marks.replies import Asked, Protocol, answer_scorer, control_prompts, sampler, servable_trials
from verifier.scoring.table import TargetScorer
from verifier.stats.rank_trials import FROM_OUTPUTS, STATISTIC, RankFinding, run_rank_tests
from verifier.targets.rephrase import make_rephraser
from verifier.trust.keys import signing_key


def make_files(
    documents: Path,
    out: Path,
    specs: list[MarkSpec],
    key_path: Path | None,
    name: str,
    text_field: str = "text",
    id_field: str = "id",
    rephraser: str = "offline",
    seed: int | None = None,
    force: bool = False,
    tsa: list[str] | None = None,
    access: object = None,
) -> tuple[dict[str, Path], Path | None, list[str]]:
    """Mark the documents of ``documents`` with ``specs`` (in equal blocks, in file order); write the
    publication and its signed registration, dated by each TSA in ``tsa``. Signs with ``key_path``,
    else the default key (created if missing: returned second); third, warnings about marks a
    common pipeline's normalisation would erase."""
    key, created = signing_key(key_path)
    docs = load_identified(documents, text_field, id_field)
    if len(specs) > len(docs):
        raise VerifierError(f"{documents}: {len(docs)} documents cannot take {len(specs)} kinds of mark (one each)")
    try:
        chosen = make_rephraser(rephraser) if any(spec.kind == "rephrasing" for spec in specs) else None
    except ValueError as exc:
        raise VerifierError(str(exc)) from None
    marked = make_marks(docs, [specs[i * len(specs) // len(docs)] for i in range(len(docs))], name, seed, chosen)
    return write_marks(marked, out, key, force=force, tsa=tsa, access=access), created, marked.warnings


def test_registered(
    scorer: TargetScorer,
    registration: Path,
    siblings: Path,
    published: Path,
    released: date | None,
    cutoff: int | None,
    alpha: float,
    combine: str,
    level: float,
    context_words: int,
    seed: int,
    trust_dir: Path | None = None,
    text_field: str = "text",
    rephraser: str | None = None,
    protocol: Protocol | None = None,
) -> RankFinding:
    """The marks route's test outside an audit (same checks, same statistics; output-only marks
    challenged by ``protocol``, the route's defaults unless given)."""
    reg, secrets = checked_registration(
        registration,
        siblings,
        released,
        cutoff,
        lambda: scorer.target.identity.digests.get("weights"),
        rephraser_model=rephraser,
        trust_dir=trust_dir,
    )
    protocol = protocol or Protocol()
    trials, excluded = registered_trials(
        reg, secrets, load_documents(published, text_field=text_field).texts, context_words, protocol.prompt
    )
    if not trials:
        raise VerifierError(
            f"{published.name}: none of the registered marks can be tested ({'; '.join(list(excluded.values())[:3])})"
        )
    trials, set_aside, _, untested = servable_trials(trials, scorer.target.capabilities)
    excluded |= set_aside
    asked = Asked()
    outputs = any(STATISTIC[t.kind] in FROM_OUTPUTS and t.id not in untested for t in trials)
    answers = (
        answer_scorer(sampler(scorer.target, protocol, scorer.cache, asked), asked, control_prompts(reg.sha256))
        if outputs
        else None
    )
    return run_rank_tests(
        trials,
        scorer,
        NULL,
        combine,  # type: ignore[arg-type]
        alpha,
        level,
        0.8,
        seed,
        excluded,
        answers,
        untested,
    )
