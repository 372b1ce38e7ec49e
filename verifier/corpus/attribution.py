"""Attributing model outputs to the corpus: generate from the target, then attribute the long
verbatim spans of each output to corpus documents (what OLMoTrace shows). Useful when the model
is at hand but the suspect text is not: a span of many words reproduced from one corpus document
points at that document."""

from __future__ import annotations

from dataclasses import dataclass

from verifier.corpus.backends import CorpusBackend
from verifier.corpus.queries import Lookup
from verifier.errors import VerifierError
from verifier.targets.base import GENERATE, Target


@dataclass(frozen=True)
class Attribution:
    prompt: str
    output: str
    lookup: Lookup


def attribute_outputs(backend: CorpusBackend, target: Target, prompts: list[str], *, max_new_tokens: int = 64,
                  min_span_words: int = 8, span_documents: int = 3) -> list[Attribution]:
    """Greedy outputs of ``target`` for ``prompts`` and their verbatim spans in the corpus."""
    if GENERATE not in target.capabilities:
        raise VerifierError(f"model {target.identity.spec}: cannot generate text, so its outputs cannot be attributed")
    if not 1 <= max_new_tokens <= 4096:
        raise VerifierError(f"max_new_tokens {max_new_tokens}: from 1 to 4096")
    outputs = target.generate(prompts, max_new_tokens)  # type: ignore[attr-defined]
    lookups = backend.lookup(outputs, min_span_words=min_span_words, spans=20, span_documents=span_documents)
    return [Attribution(p, o, lk) for p, o, lk in zip(prompts, outputs, lookups)]
