"""The median log p of a text's tokens: a membership signal in one file, registered by import."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

import numpy as np
from pydantic import Field

from verifier.signals.base import ScoredDocument, Signal, register


@register
@dataclass(frozen=True)
class MedianLogprob(Signal):
    """Higher = more member-like: a trained-on text's tokens are likelier, so their median is higher."""

    name = "median_logprob"
    min_tokens: Annotated[int, Field(ge=1, le=10_000)] = 4  # fewer scored tokens give no score

    def score(self, doc: ScoredDocument) -> float:
        logprob = doc.target.logprob
        return float(np.median(logprob)) if len(logprob) >= self.min_tokens else float("nan")
