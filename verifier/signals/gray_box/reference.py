"""Reference-model difference (Carlini et al. 2021): target minus reference log-likelihood.

A reference model trained on similar but not the same data calibrates away how easy a text is.
The two models may use different tokenizers, so each side is the total log-prob of its scored
tokens per character covered (nats per character), not a per-token mean.
"""

from __future__ import annotations

from dataclasses import dataclass

from verifier.signals.base import REFERENCE, ScoredDocument, Signal, register
from verifier.targets.base import PROMPT_LOGPROBS
from verifier.targets.token_scores import TokenScores


@register
@dataclass(frozen=True)
class ReferenceDifference(Signal):
    name = "reference"
    needs = frozenset({PROMPT_LOGPROBS, REFERENCE})

    def score(self, doc: ScoredDocument) -> float:
        assert doc.reference is not None
        return _per_char(doc.scores) - _per_char(doc.reference)


def _per_char(scores: TokenScores) -> float:
    """Total log-prob of the scored tokens per character they cover."""
    return float(scores.logprob.sum() / max(1, scores.char_end - scores.char_start))
