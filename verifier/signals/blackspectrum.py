"""BlackSpectrum ("When Reasoning Leaks Membership", section 5 and Algorithm 1): where a passage's
reasoning trace falls on the axis from recall-like to inference-like reasoning.

Procedure:
1. Each passage's traces (``traces.PROMPT``; ``traces`` per passage, averaged) and the traces of
   the two anchor sets (``anchor_sets``: ``k`` verbatim-recall sequences, ``gamma`` low-information
   synthetic ones, ``anchor_traces`` each, asked of the same target with the same prompt) are
   embedded with ``encoder`` (all-MiniLM-L6-v2 by default, offline).
2. Sequence-specific denoising: each trace embedding loses its projection on the embedding of the
   sequence it was asked about, e_r - <e_r, e_s> / |e_s|^2 e_s (``denoise=False`` for the ablation).
3. Anchors a_M, a_N = the means of the denoised recall and synthetic trace embeddings; axis
   u = (a_N - a_M) / D with D = |a_N - a_M|.
4. Score = 1 - (e - a_M).u / D: 1 at the recall anchor, 0 at the inference anchor; higher = more
   member-like, the paper's orientation.

The anchors are traces of the audited model itself, so they cost ``(k + gamma) * anchor_traces``
queries per run (asked once, cached); fewer than two usable traces on either side leave every
document unscored with that reason. Deviations, and why: the synthetic candidates come from an
offline template generator rather than GPT-3.5 (``anchor_sets``); defaults k = gamma = 20 rather
than 50 (the paper's Figure 7: 5 of each already give most of the effect; queries cost money).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from verifier.errors import VerifierError
from verifier.signals.anchor_sets import select
from verifier.signals.base import ScoredDocument, register
from verifier.signals.tools import DEFAULT_ENCODER, SignalTools
from verifier.signals.traces import TraceSignal, TracesUnusable
from verifier.targets.queries import Query

MIN_ANCHOR_TRACES = 2


def denoised(traces: np.ndarray, sequences: np.ndarray) -> np.ndarray:
    """Each row of ``traces`` minus its projection on the matching row of ``sequences``."""
    coef = np.einsum("ij,ij->i", traces, sequences) / np.einsum("ij,ij->i", sequences, sequences)
    return traces - coef[:, None] * sequences


@register
@dataclass(frozen=True)
class BlackSpectrum(TraceSignal):
    name = "blackspectrum"
    encoder: str = DEFAULT_ENCODER
    denoise: bool = True
    k: int = 20
    gamma: int = 20
    entropy_selection: bool = True
    anchor_traces: int = 3

    def __post_init__(self) -> None:
        super().__post_init__()
        if not 1 <= self.anchor_traces <= 20:
            raise VerifierError(f"signal {self.name}: anchor_traces must be in [1, 20], got {self.anchor_traces}")
        select(self.k, self.gamma, self.entropy_selection)  # checks k and gamma

    def shared_queries(self) -> list[Query]:
        sets = select(self.k, self.gamma, self.entropy_selection)
        return [q for seq in sets.recall + sets.synthetic for q in self.trace_queries(seq, self.anchor_traces)]

    def _embedded(self, pairs: list[tuple[str, str]], tools: SignalTools) -> np.ndarray:
        """Denoised (or raw) embeddings of (sequence, trace) pairs."""
        traces = tools.embed(self.encoder, [t for _, t in pairs])
        if not self.denoise:
            return traces
        return denoised(traces, tools.embed(self.encoder, [s for s, _ in pairs]))

    def anchor(self, sequences: list[str], answers: dict, tools: SignalTools, side: str) -> np.ndarray:
        pairs = []
        for seq in sequences:
            read = [self.read(answers[q.key]) for q in self.trace_queries(seq, self.anchor_traces)]
            pairs += [(seq, t.text) for t in read if t.text is not None]
        if len(pairs) < MIN_ANCHOR_TRACES:
            raise TracesUnusable(f"too few usable {side} anchor traces ({len(pairs)} of {len(sequences) * self.anchor_traces})")
        return self._embedded(pairs, tools).mean(axis=0)

    def score_traces(self, items: list[tuple[str, list[str]]], docs: Sequence[ScoredDocument], tools: SignalTools) -> list[float]:
        answers = dict(docs[0].answers)
        sets = select(self.k, self.gamma, self.entropy_selection)
        recall = self.anchor(sets.recall, answers, tools, "recall")
        inference = self.anchor(sets.synthetic, answers, tools, "synthetic")
        axis = inference - recall
        distance = float(np.linalg.norm(axis))
        if distance == 0:
            raise TracesUnusable("the recall and synthetic anchors coincide (identical traces): no axis")
        pairs = [(passage, t) for passage, traces in items for t in traces]
        projected = (self._embedded(pairs, tools) - recall) @ (axis / distance) / distance
        scores, at = [], 0
        for _, traces in items:
            scores.append(float(np.mean(1 - projected[at : at + len(traces)])))
            at += len(traces)
        return scores

