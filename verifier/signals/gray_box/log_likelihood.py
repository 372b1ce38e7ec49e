"""Log-likelihood: the sum of token log-probabilities of the whole text.

Not a document-level attack (it grows with length), but the statistic of rank tests where the
compared texts share everything except a mark: a shared context adds the same log-probabilities
to every text, so the ranking is the ranking of the mark's own log-likelihood in that context.
"""

from __future__ import annotations

from dataclasses import dataclass

from verifier.signals.base import ScoredDocument, Signal, register


@register
@dataclass(frozen=True)
class LogLikelihood(Signal):
    name = "log_likelihood"
    by_default = False

    def score(self, doc: ScoredDocument) -> float:
        return float(doc.scores.logprob.sum())
