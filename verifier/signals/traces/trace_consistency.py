"""Trace consistency ("When Reasoning Leaks Membership", appendix B.1.3, after CDD): a model that
knows a text reasons about it the same way each time it is asked.

Procedure: ``traces`` (default 3, the paper's K) traces of each passage, drawn at temperature 1
with seeds 0..K-1; the mean pairwise normalised edit distance among them (rapidfuzz Levenshtein,
normalised by the longer sequence): over characters (``trace_consistency_char``) or over words
and punctuation marks (``trace_consistency_token``).

Score: minus the mean distance, in [-1, 0]; higher = more consistent = more member-like. A passage
with fewer than two usable traces is NaN.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import Annotated, ClassVar

import numpy as np
from pydantic import Field
from rapidfuzz.distance import Levenshtein

from verifier.signals.base import ScoredDocument, register
from verifier.signals.output_only.prefix_probe import TOKEN
from verifier.signals.tools import SignalTools
from verifier.signals.traces.base import TraceSignal


@dataclass(frozen=True)
class TraceConsistency(TraceSignal):
    unit: ClassVar[str]  # "char" or "token"
    traces: Annotated[
        int, Field(ge=2, le=20, description="traces per passage: consistency compares them, so at least 2")
    ] = 3

    def score_traces(
        self, items: list[tuple[str, list[str]]], docs: Sequence[ScoredDocument], tools: SignalTools
    ) -> list[float | str]:
        out: list[float | str] = []
        for _, traces in items:
            units = [t if self.unit == "char" else TOKEN.findall(t) for t in traces]
            pairs = [Levenshtein.normalized_distance(a, b) for a, b in combinations(units, 2)]
            out.append(-float(np.mean(pairs)) if pairs else "fewer than two usable traces to compare")
        return out


@register
@dataclass(frozen=True)
class TraceConsistencyChar(TraceConsistency):
    name = "trace_consistency_char"
    unit = "char"


@register
@dataclass(frozen=True)
class TraceConsistencyToken(TraceConsistency):
    name = "trace_consistency_token"
    unit = "token"
