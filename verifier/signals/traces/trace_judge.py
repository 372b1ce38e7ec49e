"""LLM-based judgement ("When Reasoning Leaks Membership", appendix B.1.4): a third model reads
the trace and rates how certain the reasoning is - recalled text reads certain, inferred text
hesitant.

Procedure: each usable trace is sent, greedily, to ``judge`` with ``JUDGE_PROMPT``; the first
integer 0-10 of the reply is the rating (a reply without one is a failed item). ``judge`` is an
``openai-compatible:URL#model`` spec of a separate model, or ``target`` (the default, the only
model an offline run has): the audited endpoint judging its own traces - weaker, and said so in
the signal's parameters. The judge's answers are cached like the target's.

Score: the mean rating over a passage's traces, 0-10; higher = more certain = more member-like.
Deviation: the paper's judge template is a figure not reproduced in its text; ``JUDGE_PROMPT``
asks the same question (certainty of recall vs inference) on a 0-10 scale.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated

import numpy as np
from pydantic import Field

from verifier.errors import VerifierError
from verifier.signals.base import ScoredDocument, register
from verifier.signals.tools import TARGET, SignalTools
from verifier.signals.traces.base import TraceSignal
from verifier.targets.kinds.openai_compatible import PREFIX as API_PREFIX
from verifier.targets.kinds.openai_compatible import parse_spec
from verifier.targets.queries import CHAT, Query

JUDGE_PROMPT = (
    "Below is the reasoning a language model wrote while trying to predict the next word of a text. Rate how certain "
    "the reasoning is that the model recognised and recalled the text, from 0 (it is clearly guessing or inferring) "
    "to 10 (it recalls the exact text with confidence). Reply with the number only.\n\nReasoning:\n{trace}"
)
RATING = re.compile(r"(?<![-\d.])\b(10|[0-9])\b(?![.,]?\d)")  # "-7", "3.5" and "100" are no rating
MAX_TRACE_CHARS = 4000


@register
@dataclass(frozen=True)
class TraceJudge(TraceSignal):
    name = "trace_judge"
    judge: str = TARGET
    judge_max_tokens: Annotated[int, Field(ge=1, le=8192)] = (
        1024  # room for a reasoning judge's own thinking before the number
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.judge != TARGET:
            if not self.judge.startswith(API_PREFIX):
                raise VerifierError(
                    f"signal {self.name}: judge must be 'target' or an openai-compatible:URL#model spec, got "
                    f"{self.judge!r}"
                )
            try:
                parse_spec(self.judge)  # an unusable endpoint fails here, not after the traces were paid for
            except VerifierError as exc:
                raise VerifierError(f"signal {self.name}: judge: {exc}") from None

    def judge_queries(self, items: list[tuple[str, list[str]]]) -> list[Query]:
        return [
            Query(CHAT, JUDGE_PROMPT.format(trace=t[:MAX_TRACE_CHARS]), max_tokens=self.judge_max_tokens)
            for _, traces in items
            for t in traces
        ]

    def followup(self, docs: Sequence[ScoredDocument]) -> tuple[str, list[Query]]:
        return self.judge, self.judge_queries(self.usable(docs)[0])

    def score_traces(
        self, items: list[tuple[str, list[str]]], docs: Sequence[ScoredDocument], tools: SignalTools
    ) -> list[float | str]:
        answers = tools.ask(self.judge, self.judge_queries(items))
        ratings = iter(
            [
                float(m.group(1))
                if a.ok and (m := RATING.search(a.text))
                else f"judge gave no rating ({a.public_error or 'no number 0-10 in its reply'})"
                for a in answers
            ]
        )
        out: list[float | str] = []
        for _, traces in items:
            got = [next(ratings) for _ in traces]
            finite = [r for r in got if isinstance(r, float)]
            out.append(float(np.mean(finite)) if finite else got[0])
        return out
