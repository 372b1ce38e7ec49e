"""CDD, contamination detection via output distribution (Dong et al. 2024), a baseline of
BlackSpectrum ("When Reasoning Leaks Membership", appendix B): a model that has memorised a text
answers its prefix almost the same way every time, so its sampled outputs crowd around the greedy
one (a peaked output distribution).

Procedure: for the passage's first half (the prefix split and query of prefix probing,
``prefix_probe.ContinuationSignal``; ``mode`` "chat" by default, or "text"), one greedy output and
``samples`` outputs sampled at temperature 0.8 (``Query.sample`` = 0 .. samples-1). Each sample's
distance to the greedy output is the word-level edit distance
(``rapidfuzz.distance.Levenshtein.distance`` on lists of words).

Score: the peakedness, the share of samples within ``alpha * l`` edits of the greedy output, where
``l`` is the length in words of the longest output (greedy included) - the empirical distribution
of distances summed from 0 to alpha*l, as in the paper; in [0, 1], higher = more member-like;
``alpha`` defaults to the paper's 0.05. Failed samples are left out; NaN when the greedy output
failed or no sample is left.

Deviations from the paper, and why: words instead of the model's tokens (an output-only target
gives no tokenizer); 10 samples by default rather than the paper's 50, as each one is a paid query
(the parameter allows more); no threshold (the paper's xi = 0.01) is applied - the route compares
score distributions.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from pydantic import Field
from rapidfuzz.distance import Levenshtein

from verifier.signals.base import register
from verifier.signals.output_only.prefix_probe import ContinuationSignal
from verifier.targets.queries import Answer, Query

TEMPERATURE = 0.8


@register
@dataclass(frozen=True)
class CDD(ContinuationSignal):
    name = "cdd"
    samples: Annotated[int, Field(ge=1, le=100)] = 10
    alpha: Annotated[float, Field(ge=0, le=1)] = 0.05

    def passage_queries(self, passage: str) -> list[Query]:
        greedy = self.continuation_query(passage)
        if greedy is None:
            return []
        return [greedy, *(self.continuation_query(passage, TEMPERATURE, i) for i in range(self.samples))]

    def score_passage(self, passage: str, answers: list[Answer]) -> float:
        if not answers or (greedy := self.continuation(passage, answers[0])) is None:
            return float("nan")
        reference = greedy.split()
        drawn = [text.split() for a in answers[1:] if (text := self.continuation(passage, a)) is not None]
        if not drawn:
            return float("nan")
        limit = self.alpha * max(len(reference), *(len(d) for d in drawn))
        close = [Levenshtein.distance(d, reference) <= limit + 1e-9 for d in drawn]
        return sum(close) / len(close)
