"""Attributing model outputs to the corpus: the long verbatim spans of each output, with the corpus
documents they occur in (what OLMoTrace shows). Useful when the model is at hand but the suspect
text is not: a span of many words reproduced from one corpus document points at that document.

The outputs come from the caller (``verifier corpus attribution`` generates them with
``targets.base.generating``), so the corpus engine reads no model.
"""

from __future__ import annotations

from dataclasses import dataclass

from verifier.corpus.backends import CorpusBackend
from verifier.corpus.queries import Lookup
from verifier.errors import VerifierError


@dataclass(frozen=True)
class Attribution:
    prompt: str
    output: str
    lookup: Lookup


def attribute_outputs(
    backend: CorpusBackend, prompts: list[str], outputs: list[str], *, min_span_words: int = 8, span_documents: int = 3
) -> list[Attribution]:
    """The verbatim spans in the corpus of each output (generated for the prompt beside it)."""
    if len(prompts) != len(outputs):
        raise VerifierError(f"{len(prompts)} prompts but {len(outputs)} outputs: one output per prompt")
    lookups = backend.lookup(outputs, min_span_words=min_span_words, spans=20, span_documents=span_documents)
    return [Attribution(p, o, lk) for p, o, lk in zip(prompts, outputs, lookups, strict=True)]
