"""Count of thinking tokens ("When Reasoning Leaks Membership", section 4 and appendix B.1.1):
traces full of "hmm", "wait", "maybe" come from a model feeling its way, which suggests a
non-member.

Procedure: each trace is split into words and word n-grams up to trigrams after English stop
words are removed (sklearn's list, less the seed words themselves, so "maybe" or "perhaps" can
count); a candidate counts when its cosine similarity with some seed word, under ``encoder``, is
at least ``threshold`` (the paper's delta = 0.8).

Score: minus the count, averaged over a passage's traces (higher = fewer thinking tokens = more
member-like). Deviation: the paper's seed list is a figure not reproduced in its text; ``SEEDS``
is the thinking vocabulary of the works it cites (s1's "Wait", "Hmm", "Alternatively", ...).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated

import numpy as np
from pydantic import Field
from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

from verifier.signals.base import ScoredDocument, register
from verifier.signals.tools import DEFAULT_ENCODER, SignalTools
from verifier.signals.traces.base import TraceSignal

SEEDS = (
    "hmm",
    "wait",
    "so",
    "alternatively",
    "maybe",
    "perhaps",
    "actually",
    "hold on",
    "let me think",
    "let me check",
    "on second thought",
    "i think",
    "not sure",
    "hmm wait",
    "but wait",
    "or maybe",
    "let me reconsider",
    "okay",
)
STOP = ENGLISH_STOP_WORDS - {w for seed in SEEDS for w in seed.split()}
WORD = re.compile(r"[a-z']+")


def candidates(trace: str) -> list[str]:
    """Words and word n-grams up to trigrams of ``trace``, stop words removed."""
    words = [w for w in WORD.findall(trace.lower()) if w not in STOP]
    return [" ".join(words[i : i + n]) for n in (1, 2, 3) for i in range(len(words) - n + 1)]


@register
@dataclass(frozen=True)
class ThinkingTokens(TraceSignal):
    name = "thinking_tokens"
    encoder: Annotated[str, Field(min_length=1)] = DEFAULT_ENCODER
    threshold: Annotated[float, Field(gt=0, le=1, description="a cosine similarity")] = 0.8

    def score_traces(
        self, items: list[tuple[str, list[str]]], docs: Sequence[ScoredDocument], tools: SignalTools
    ) -> list[float | str]:
        grams = [candidates(t) for _, traces in items for t in traces]
        vocabulary = sorted({g for gs in grams for g in gs})
        seeds = tools.embed(self.encoder, list(SEEDS))
        if vocabulary:
            vectors = tools.embed(self.encoder, vocabulary)
            cos = (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)) @ (
                seeds / np.linalg.norm(seeds, axis=1, keepdims=True)
            ).T
            thinking = {g for g, best in zip(vocabulary, cos.max(axis=1)) if best >= self.threshold}
        else:
            thinking = set()
        counts = iter([sum(g in thinking for g in gs) for gs in grams])
        return [-float(np.mean([next(counts) for _ in traces])) for _, traces in items]
