"""Lowercase ratio (Carlini et al. 2021): how much lowercasing hurts the model.

A memorised text is likely in its exact casing; lowercasing it makes it less likely. The score
is the ratio of mean negative log-likelihoods, lowercased over original: higher = member-like.
Needs a second forward pass over the lowercased text (the ``lower`` view).
"""

from __future__ import annotations

from dataclasses import dataclass

from verifier.signals.base import LOWER, ScoredDocument, Signal, register
from verifier.targets.base import PROMPT_LOGPROBS


@register
@dataclass(frozen=True)
class LowercaseRatio(Signal):
    name = "lowercase"
    needs = frozenset({PROMPT_LOGPROBS, LOWER})

    def score(self, doc: ScoredDocument) -> float:
        assert doc.lower is not None
        return float(doc.lower.logprob.mean() / doc.scores.logprob.mean())
