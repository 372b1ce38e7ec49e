"""Min-K% Prob (Shi et al. 2024): the mean of the k% lowest token log-probs.

Unseen text tends to hold a few outlier tokens of very low probability; members fewer.
"""

from __future__ import annotations

from dataclasses import dataclass

from verifier.signals.base import LowestKSignal, ScoredDocument, lowest_k_mean, register


@register
@dataclass(frozen=True)
class MinK(LowestKSignal):
    name = "min_k"

    def score(self, doc: ScoredDocument) -> float:
        return lowest_k_mean(doc.scores.logprob, self.k)
