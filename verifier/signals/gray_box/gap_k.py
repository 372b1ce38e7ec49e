"""Gap-K%: the mean of the k% largest gaps between a token and the model's top-1 prediction.

Per position the gap log p(token) - log p(top-1 token) is <= 0; on memorised text the actual
token is usually the top prediction, so its worst gaps stay close to 0 (higher = member-like).
"""

from __future__ import annotations

from dataclasses import dataclass

from verifier.signals.base import LowestKSignal, ScoredDocument, lowest_k_mean, register
from verifier.targets.base import PROMPT_LOGPROBS, VOCAB_STATS


@register
@dataclass(frozen=True)
class GapK(LowestKSignal):
    name = "gap_k"
    needs = frozenset({PROMPT_LOGPROBS, VOCAB_STATS})

    def score(self, doc: ScoredDocument) -> float:
        return lowest_k_mean(doc.scores.logprob - doc.scores.top1, self.k)
