"""BlackSpectrum ("When Reasoning Leaks Membership", section 5 and Algorithm 1): where a passage's
reasoning trace falls on the axis from recall-like to inference-like reasoning.

Procedure:
1. Each passage's traces (``traces.PROMPT``; ``traces`` per passage, averaged) and the traces of
   the two anchor sets (``anchor_sets``: ``k`` verbatim-recall sequences, ``gamma`` low-information
   synthetic ones, ``anchor_traces`` each, asked of the same target with the same prompt) are
   embedded with ``encoder`` (all-MiniLM-L6-v2 by default, offline).
2. Sequence-specific denoising: each trace embedding loses its projection on the embedding of the
   sequence it was asked about, e_r - <e_r, e_s> / |e_s|^2 e_s (``denoise=False`` for the ablation).
3. Anchors a_M, a_N = the means (over sequences, of each sequence's mean) of the denoised recall
   and synthetic trace embeddings; axis u = (a_N - a_M) / D with D = |a_N - a_M|.
4. Score = 1 - (e - a_M).u / D: 1 at the recall anchor, 0 at the inference anchor; higher = more
   member-like, the paper's orientation.

The anchors are traces of the audited model itself, so they cost ``(k + gamma) * anchor_traces``
queries per run (asked once, cached, and in an audit asked for every set before any is scored).
No document is scored - each gets the reason - when an anchor query failed in transport (it would
be asked again for the next set, which could then be scored on another axis), when either side has
fewer than five usable traces, or when the two sides' raw trace embeddings do not differ
(permutation test of the distance between their means, 999 relabellings, seed 0, p > 0.05): an
axis between two indistinguishable sides would turn the passages' own wording into scores.
Deviations, and why: the synthetic candidates come from an
offline template generator rather than GPT-3.5 (``anchor_sets``); defaults k = gamma = 20 rather
than 50 (the paper's Figure 7: 5 of each already give most of the effect; queries cost money).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated

import numpy as np
from pydantic import Field

from verifier.errors import VerifierError
from verifier.signals.base import ScoredDocument, register
from verifier.signals.tools import DEFAULT_ENCODER, SignalTools
from verifier.signals.traces.anchors import RECALL_ANCHORS, SYNTHETIC_ANCHORS, select
from verifier.signals.traces.base import TraceSignal, TracesUnusable
from verifier.targets.queries import Answer, Query

MIN_ANCHOR_TRACES = (
    5  # per side: fewer cannot show the two sides differ at 5% (a permutation test of 2 x 4 has p >= 0.03)
)
AXIS_ALPHA = 0.05
AXIS_PERMUTATIONS = 999


def denoised(traces: np.ndarray, sequences: np.ndarray) -> np.ndarray:
    """Each row of ``traces`` minus its projection on the matching row of ``sequences``."""
    coef = np.einsum("ij,ij->i", traces, sequences) / np.einsum("ij,ij->i", sequences, sequences)
    return traces - coef[:, None] * sequences


def separation_p(a: np.ndarray, b: np.ndarray, seed: int = 0) -> float:
    """Permutation p-value (H0: the two sides' traces are exchangeable) of the distance between
    their mean embeddings: an axis between two sides that do not differ would measure noise."""
    pooled, n = np.vstack([a, b]), len(a)
    observed = np.linalg.norm(a.mean(axis=0) - b.mean(axis=0))
    rng = np.random.default_rng(seed)
    hits = 0
    for _ in range(AXIS_PERMUTATIONS):
        order = rng.permutation(len(pooled))
        hits += np.linalg.norm(pooled[order[:n]].mean(axis=0) - pooled[order[n:]].mean(axis=0)) >= observed - 1e-12
    return (1 + hits) / (1 + AXIS_PERMUTATIONS)


@register
@dataclass(frozen=True)
class BlackSpectrum(TraceSignal):
    name = "blackspectrum"
    encoder: Annotated[str, Field(min_length=1)] = DEFAULT_ENCODER
    denoise: bool = True
    k: Annotated[int, Field(ge=1, le=RECALL_ANCHORS, description="recall anchors (the shipped set holds 50)")] = 20
    gamma: Annotated[
        int, Field(ge=1, le=SYNTHETIC_ANCHORS, description="synthetic anchors (100 shipped candidates)")
    ] = 20
    entropy_selection: bool = True
    anchor_traces: Annotated[int, Field(ge=1, le=20)] = 3

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.temperature == 0 and self.anchor_traces > 1:
            raise VerifierError(f"signal {self.name}: {self.anchor_traces} anchor traces need a temperature above 0")
        try:
            select(self.k, self.gamma, self.entropy_selection)  # checks k and gamma against the shipped sets
        except VerifierError as exc:
            raise VerifierError(f"signal {self.name}: {exc}") from None

    def shared_queries(self) -> list[Query]:
        sets = select(self.k, self.gamma, self.entropy_selection)
        return [q for seq in sets.recall + sets.synthetic for q in self.trace_queries(seq, self.anchor_traces)]

    def _embedded(self, pairs: list[tuple[str, str]], tools: SignalTools) -> np.ndarray:
        """Denoised (or raw) embeddings of (sequence, trace) pairs."""
        traces = tools.embed(self.encoder, [t for _, t in pairs])
        if not self.denoise:
            return traces
        return denoised(traces, tools.embed(self.encoder, [s for s, _ in pairs]))

    def anchor(
        self, sequences: list[str], answers: Mapping[str, Answer], tools: SignalTools, side: str
    ) -> tuple[np.ndarray, np.ndarray]:
        """Eq. 5: the mean over sequences of each sequence's mean denoised trace embedding; and
        the raw embeddings of the side's traces (for the check that the two sides differ).

        Every anchor query must have an answer the cache keeps: a transport failure is asked again
        in the next pass, so one set could be scored on other anchors than the other."""
        queries = {seq: self.trace_queries(seq, self.anchor_traces) for seq in sequences}
        if lost := sum(answers[q.key].transient for qs in queries.values() for q in qs):
            raise TracesUnusable(
                f"{lost} {side} anchor queries failed in transport: re-run to complete them (the anchors must be "
                "the same for every set)"
            )
        pairs, owner = [], []
        for i, (seq, qs) in enumerate(queries.items()):
            for q in qs:
                if (trace := self.read(answers[q.key]).text) is not None:
                    pairs.append((seq, trace))
                    owner.append(i)
        if len(pairs) < MIN_ANCHOR_TRACES:
            raise TracesUnusable(
                f"too few usable {side} anchor traces ({len(pairs)} of {len(sequences) * self.anchor_traces})"
            )
        embedded, owner = self._embedded(pairs, tools), np.array(owner)
        center = np.mean([embedded[owner == i].mean(axis=0) for i in np.unique(owner)], axis=0)
        return center, tools.embed(self.encoder, [t for _, t in pairs])

    def run_counts(self, docs: Sequence[ScoredDocument]) -> dict[str, object]:
        """The SHA-256 of every anchor answer read: equal for every set an audit scores, or the sets were scored on
        different axes."""
        if not docs:
            return {}
        digest = hashlib.sha256()
        for query in self.shared_queries():
            answer = docs[0].answers[query.key]
            digest.update(json.dumps([query.key, answer.text, answer.reasoning, answer.error]).encode())
        return {"anchor answers sha256": digest.hexdigest()}

    def score_traces(
        self, items: list[tuple[str, list[str]]], docs: Sequence[ScoredDocument], tools: SignalTools
    ) -> list[float | str]:
        answers = docs[0].answers
        sets = select(self.k, self.gamma, self.entropy_selection)
        recall, recall_raw = self.anchor(sets.recall, answers, tools, "recall")
        inference, inference_raw = self.anchor(sets.synthetic, answers, tools, "synthetic")
        if (p := separation_p(recall_raw, inference_raw)) > AXIS_ALPHA:
            raise TracesUnusable(
                f"the recall and synthetic anchor traces do not differ (permutation p = {p:.3f}): no recall-inference "
                "axis"
            )
        axis = inference - recall
        distance = float(np.linalg.norm(axis))
        if distance == 0:
            raise TracesUnusable("the recall and synthetic anchors coincide (identical traces): no axis")
        pairs = [(passage, t) for passage, traces in items for t in traces]
        projected = (self._embedded(pairs, tools) - recall) @ (axis / distance) / distance
        scores: list[float | str] = []
        at = 0
        for _, traces in items:
            scores.append(float(np.mean(1 - projected[at : at + len(traces)])))
            at += len(traces)
        return scores
