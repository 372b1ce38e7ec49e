"""SaMIA (Kaneko et al. 2024), a baseline of BlackSpectrum ("When Reasoning Leaks Membership",
appendix B): sampled continuations of a member's first half resemble its true second half more
than those of a non-member do.

Procedure: the passage's words are cut in two; ``samples`` continuations of the prefix are drawn
at temperature 1.0 (``Query.sample`` = 0 .. samples-1 tells the draws apart), through a completion
endpoint (``mode = "text"``, the original setting) or, by default, an instruction to continue the
text (``mode = "chat"``, BlackSpectrum's adaptation for chat-only models) - the same prefix split
and query wording as prefix probing (``prefix_probe.ContinuationSignal``).

Score: the mean ROUGE-1 F1 between each continuation and the true suffix, in [0, 1]; higher = more
member-like. ROUGE-1 here is unigram F1 with clipped counts after lowercasing and splitting on
anything that is not a letter or digit - what ``rouge-score``'s default tokenizer does (without
stemming, which it also leaves off by default), written out in a few lines because that package
is not a dependency. Failed samples (refused, empty, server error) are left out of the mean; NaN
when none is left.

Deviations from the paper, and why: the zlib-weighted variant (SaMIA*zlib) is not implemented, and
no reference-free threshold is set; the route compares score distributions. Each continuation is
scored as written (not cut to the suffix's length): ROUGE's precision already charges a
continuation for words that are not in the suffix, as in the original.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from typing import Annotated

import numpy as np
from pydantic import Field

from verifier.signals.base import register
from verifier.signals.output_only.prefix_probe import ContinuationSignal
from verifier.targets.queries import Answer, Query

TEMPERATURE = 1.0
ROUGE_TOKEN = re.compile(r"[^\W_]+")


def rouge1_f1(candidate: str, reference: str) -> float:
    """Unigram F1 of ``candidate`` against ``reference`` (lowercased, letters and digits only)."""
    cand, ref = Counter(ROUGE_TOKEN.findall(candidate.lower())), Counter(ROUGE_TOKEN.findall(reference.lower()))
    overlap = sum((cand & ref).values())
    if not overlap:
        return 0.0
    precision, recall = overlap / sum(cand.values()), overlap / sum(ref.values())
    return 2 * precision * recall / (precision + recall)


@register
@dataclass(frozen=True)
class SaMIA(ContinuationSignal):
    name = "samia"
    samples: Annotated[int, Field(ge=1, le=100)] = 10

    def passage_queries(self, passage: str) -> list[Query]:
        queries = [self.continuation_query(passage, TEMPERATURE, i) for i in range(self.samples)]
        return [q for q in queries if q is not None]

    def score_passage(self, passage: str, answers: list[Answer]) -> float:
        suffix = " ".join(self.halves(passage)[1])
        scores = [rouge1_f1(text, suffix) for a in answers if (text := self.continuation(passage, a)) is not None]
        return float(np.mean(scores)) if scores else float("nan")
