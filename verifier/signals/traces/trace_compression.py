"""Compression rate of the trace ("When Reasoning Leaks Membership", appendix B.1.2): a trace of
hesitation and parallel options carries more information, so it compresses worse, which suggests
a non-member. The rate is approximated, as in the paper, by the trace's per-token negative
log-likelihood under a scoring LM.

Score: the mean log-probability per token of each trace under ``scoring_lm`` (minus the NLL),
averaged over a passage's traces; higher = more compressible = more member-like. The scoring
LM's token scores go through the score cache. Deviation: the paper uses GPT-2; the default here
is the bundled SmolLM2-135M (no download), and any causal-LM spec can be named.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated

import numpy as np
from pydantic import Field

from verifier.signals.base import ScoredDocument, register
from verifier.signals.tools import SignalTools
from verifier.signals.traces.base import TraceSignal


@register
@dataclass(frozen=True)
class TraceCompression(TraceSignal):
    name = "trace_compression"
    scoring_lm: Annotated[str, Field(min_length=1)] = "smollm2-135m"

    def score_traces(
        self, items: list[tuple[str, list[str]]], docs: Sequence[ScoredDocument], tools: SignalTools
    ) -> list[float | str]:
        flat = [t for _, traces in items for t in traces]
        values = iter(tools.mean_logprob(self.scoring_lm, flat))
        out = []
        for _, traces in items:
            finite = [v for v in (next(values) for _ in traces) if np.isfinite(v)]
            out.append(float(np.mean(finite)) if finite else "trace too short for the scoring LM")
        return out
