"""Loss attack (Yeom et al. 2018): the mean token log-probability.

Members were fitted during training, so their loss is lower and their mean log-prob higher.
"""

from __future__ import annotations

from dataclasses import dataclass

from verifier.signals.base import ScoredDocument, Signal, register


@register
@dataclass(frozen=True)
class Loss(Signal):
    name = "loss"

    def score(self, doc: ScoredDocument) -> float:
        return float(doc.scores.logprob.mean())
