"""DC-PDD (Zhang et al. 2024, "Pretraining Data Detection for Large Language Models: A
Divergence-based Calibration Method").

A token the model finds likely is evidence of membership only if it is not simply a common
token. Each token's probability is weighted by its surprise in a reference corpus,
alpha = p(x_i) * log(1 / f(x_i)) with f the Laplace-smoothed corpus frequency, capped at ``a``,
and averaged over the first occurrence of each distinct token: higher = member-like (the
paper's sign; mimir negates it).

Departures: the text's first token is context only here (as for every signal), so it is not
averaged (the paper's code prepends an end-of-text token to score it); first occurrences are
still found over the whole text, so a token the first token repeats is not counted. The table
must be counted with the target's tokenizer (``signals.frequencies``); a server that returns no
token ids gives no score.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

import numpy as np
from pydantic import Field

from verifier.signals.base import NO_TOKENS, TOKEN_FREQUENCIES, ScoredDocument, Signal, register
from verifier.targets.base import PROMPT_LOGPROBS


@register
@dataclass(frozen=True)
class DCPDD(Signal):
    name = "dc_pdd"
    needs = frozenset({PROMPT_LOGPROBS, TOKEN_FREQUENCIES})
    by_default = False  # reads a frequency table of the target's tokenizer, which only some runs have
    a: Annotated[float, Field(gt=0, le=100)] = 0.01

    def score(self, doc: ScoredDocument) -> float:
        ids = np.asarray(doc.scores.token_ids, dtype=np.int64)
        if (
            doc.scores.n_scored == 0
            or len(ids) != doc.scores.n_scored + 1
            or (ids < 0).any()
            or (ids >= len(doc.aux.frequencies.counts)).any()
        ):
            return float("nan")
        _, first = np.unique(ids, return_index=True)
        first = np.sort(first[first > 0])  # positions of first occurrences; position 0 is not scored
        if not len(first):
            return float("nan")
        p = np.exp(doc.scores.logprob[first - 1])
        alpha = np.minimum(p * -np.log(doc.aux.frequencies.probabilities(ids[first])), self.a)
        return float(np.mean(alpha))

    def why_not(self, doc: ScoredDocument) -> str:
        ids = np.asarray(doc.target.token_ids) if doc.target is not None else np.zeros(0)
        if (ids < 0).any():
            return "the server gave no token ids"
        if (ids >= len(doc.aux.frequencies.counts)).any():
            return (
                "a token id beyond the frequency table's vocabulary: the table was not counted with the target's "
                "tokenizer"
            )
        return NO_TOKENS
