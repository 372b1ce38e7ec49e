"""Registered marks as rank-test trials (``verifier marks test`` and the marks route).

One trial per registered mark: the published mark in the context it was published in, among its
unpublished siblings in the same context (or, for a rephrasing, the whole published rephrasing
among its unpublished ones; for an output-only mark, the published candidate among its siblings
with the cue or anchor as the prompt, after its published context or alone - see
``verifier.marks.replies``); ``verifier.stats.rank_trials`` scores and ranks them.
"""

from __future__ import annotations

from verifier.errors import VerifierError
from verifier.marks.generators import OUTPUT_KINDS, mark_pieces
from verifier.marks.registration import Registration, Secrets
from verifier.marks.replies import PromptFrom, challenge, control_prompts
from verifier.stats.rank_trials import Trial, words_before
from verifier.targets.cache import text_digest

NULL = "the model was not trained on the published marks (each is exchangeable with its unpublished siblings)"


def context_before(document: str, mark: str, words: int) -> str | None:
    """The last ``words`` words before ``mark``'s first occurrence in ``document`` (None: absent)."""
    at = document.find(mark)
    return None if at < 0 else words_before(document, at, words)


def holds_in_order(document: str, pieces: list[str]) -> bool:
    """Whether ``pieces`` occur in ``document`` one after another."""
    at = 0
    for piece in pieces:
        found = document.find(piece, at)
        if found < 0:
            return False
        at = found + len(piece)
    return True


def registered_trials(
    registration: Registration,
    secrets: Secrets,
    suspect: list[str],
    context_words: int,
    prompt: PromptFrom = "context",
) -> tuple[list[Trial], dict[str, str]]:
    """One trial per registered mark; a mark that does not occur in its published document is
    reported and not tested (a fact about the registrant's documents, fixed before training).

    Every registered document must be in the suspect set: testing a subset of the marks would let
    whoever chose the subset keep the marks that happened to score well."""
    by_digest = {text_digest(t): t for t in suspect}
    missing = [m.document for m in registration.predicate.marks if m.document_sha256 not in by_digest]
    if len(missing) == len(registration.predicate.marks):
        raise VerifierError(
            f"refused: the registration is for other documents (none of its {len(missing)} published documents is in "
            "the suspect set)"
        )
    if missing:
        raise VerifierError(
            f"refused: {len(missing)} of the {len(registration.predicate.marks)} registered documents are not in the "
            "suspect "
            f"set (first: {missing[0]!r}); every registered mark must be tested, or marks could be chosen after "
            "seeing their scores"
        )
    trials, excluded = [], {}
    controls = control_prompts(registration.sha256)
    by_id = {m.id: m for m in secrets.marks}
    for mark in registration.predicate.marks:
        secret = by_id[mark.id]
        document = by_digest[mark.document_sha256]
        siblings = [s.text for s in secret.siblings]
        if mark.kind in OUTPUT_KINDS:
            if not secret.cue or not holds_in_order(
                document, mark_pieces(mark.kind, secret.published.text, secret.cue)
            ):
                excluded[mark.id] = f"the mark does not occur in its published document {mark.document!r}"
                continue
            asked, own = challenge(document, secret.cue, prompt, context_words, controls)
            trials.append(Trial(mark.id, mark.kind, "outputs", secret.published.text, siblings, asked, own))
            continue
        if mark.kind == "rephrasing":
            if document != secret.published.text:
                excluded[mark.id] = "the published document is not the registered rephrasing"
                continue
            trials.append(Trial(mark.id, mark.kind, "rephrasing", document, siblings))
            continue
        context = context_before(document, secret.published.text, context_words)
        if context is None:
            excluded[mark.id] = f"the mark does not occur in its published document {mark.document!r}"
            continue
        trials.append(
            Trial(
                mark.id,
                mark.kind,
                mark.format or mark.kind,
                context + secret.published.text,
                [context + s for s in siblings],
            )
        )
    return trials, excluded
