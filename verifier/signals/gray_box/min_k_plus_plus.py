"""Min-K%++ (Zhang et al. 2025): Min-K% over token log-probs standardised per position.

Each log p(token) is centred and scaled by the mean and spread of log p over the whole
vocabulary at that position, (log p - mu) / sigma: training texts sit near local maxima of the
modelled distribution. sigma is floored so a near-deterministic position cannot divide by zero.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from verifier.signals.base import LowestKSignal, ScoredDocument, lowest_k_mean, register
from verifier.targets.base import PROMPT_LOGPROBS, VOCAB_STATS

SIGMA_FLOOR = 1e-6


@register
@dataclass(frozen=True)
class MinKPlusPlus(LowestKSignal):
    name = "min_k_pp"
    needs = frozenset({PROMPT_LOGPROBS, VOCAB_STATS})

    def score(self, doc: ScoredDocument) -> float:
        t = doc.scores
        assert t.mu is not None and t.sigma is not None, (
            "min_k_plus_plus needs vocab_stats, which the scorer gives with them"
        )
        return lowest_k_mean((t.logprob - t.mu) / np.maximum(t.sigma, SIGMA_FLOOR), self.k)
