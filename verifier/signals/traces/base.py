"""Reasoning traces: how they are asked for, read, and checked before any trace attack uses them.

The query ("When Reasoning Leaks Membership", section 5.1): the passage with a recall cue - say
whether you recognise the text and how it goes on - and a next-word task, so a model that has
seen the text recalls it and one that has not reasons its way to a guess. The trace is read from
where the server puts it: ``reasoning_content`` / ``reasoning`` fields or ``<think>`` blocks
(``openai_compatible.parse_answer`` keeps them apart from the answer). A model that does not
reason natively - the local SmolLM2 server - is asked by the same prompt to write its reasoning
after ``Reasoning:`` and the word after ``Answer:``; its trace is then the reply without the
``Answer:`` part (a small model often writes no marker at all: the whole reply is its trace, the
closest thing it has to one). Which source each trace came from is counted in the findings.

Bad input is recorded per item, never scored: a failed query (server error, refusal), no trace
(a non-reasoning reply with nothing before ``Answer:``), an empty or near-empty trace
(``min_words``), or a trace not in English (the default encoder and judge prompt are English: a
trace in another language would be scored on its language, not on its reasoning). A passage
without a usable trace is NaN; a document without one is NaN with the reason in the score table.

Several traces per passage (``traces``, drawn at ``temperature`` with seeds 0..traces-1) are all
cached through the target's response cache; attacks average over them or, for consistency,
compare them.
"""

from __future__ import annotations

import re
from abc import abstractmethod
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated

import numpy as np
from pydantic import Field
from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

from verifier.errors import VerifierError
from verifier.signals.base import Evaluation, QueryingSignal, ScoredDocument
from verifier.signals.tools import SignalTools
from verifier.targets.queries import CHAT, Answer, Query

PROMPT = (
    "Below is the start of a text. Before answering, think out loud: say whether you have seen this text before and "
    "recall how it continues, or, if you do not know it, reason about what could come next. Write your thinking after "
    "'Reasoning:', then the next word of the text after 'Answer:'.\n\nText: {passage}"
)
ANSWER_MARK = re.compile(r"\n?\s*\**answer\**\s*:", re.IGNORECASE)
REASONING_MARK = re.compile(r"^\W*reasoning\W*:?\s*", re.IGNORECASE)
WORD = re.compile(r"[^\W\d_]+")
ENGLISH_SHARE = 0.15  # English prose runs at 40-55% stop words (sklearn's list); other languages near 0-10%


class TracesUnusable(Exception):
    """The run's traces allow no score for any document (e.g. too few usable anchor traces)."""


@dataclass(frozen=True)
class Trace:
    """One reply read as a trace: ``text`` when usable, else ``problem``; ``source`` says where it came from."""

    text: str | None
    source: str  # "reasoning field" | "prompted reply" | "none"
    problem: str | None = None


def english(text: str) -> bool:
    """Whether ``text`` reads as English: enough of its words are English stop words, and its
    letters are mostly Latin ones."""
    words = [w.lower() for w in WORD.findall(text)]
    if not words:
        return False
    latin = sum(ch.isascii() for w in words for ch in w) / sum(len(w) for w in words)
    return latin >= 0.8 and sum(w in ENGLISH_STOP_WORDS for w in words) / len(words) >= ENGLISH_SHARE


@dataclass(frozen=True)
class TraceSignal(QueryingSignal):
    """An attack reading the target's reasoning traces of each passage."""

    traces: Annotated[int, Field(ge=1, le=20)] = 1
    temperature: Annotated[float, Field(ge=0, le=2)] = 1.0
    max_tokens: Annotated[int, Field(ge=16, le=8192)] = 192
    min_words: Annotated[int, Field(ge=1, le=1000)] = 5

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.temperature == 0 and self.traces > 1:  # greedy draws are one trace paid for n times
            raise VerifierError(
                f"signal {self.name}: {self.traces} traces need a temperature above 0 (greedy traces are identical)"
            )

    def trace_queries(self, sequence: str, count: int | None = None) -> list[Query]:
        """``count`` (default ``traces``) trace queries of one sequence, told apart by their seed."""
        return [
            Query(
                CHAT,
                PROMPT.format(passage=sequence),
                max_tokens=self.max_tokens,
                temperature=self.temperature,
                sample=i,
            )
            for i in range(self.traces if count is None else count)
        ]

    def passage_queries(self, passage: str) -> list[Query]:
        return self.trace_queries(passage)

    def read(self, answer: Answer) -> Trace:
        """The trace in ``answer``, or why there is none. A reply cut at max_tokens while still
        reasoning (empty content, a trace) keeps its trace; a refusal has none."""
        if answer.reasoning and answer.reasoning.strip() and answer.error != "refusal":
            return self._checked(answer.reasoning.strip(), "reasoning field")
        if not answer.ok:
            return Trace(None, "none", answer.public_error)
        before = ANSWER_MARK.split(answer.text, maxsplit=1)[0]
        text = REASONING_MARK.sub("", before).strip()
        if not text:
            return Trace(None, "none", "no trace (the reply holds only an answer)")
        return self._checked(text, "prompted reply")

    def _checked(self, text: str, source: str) -> Trace:
        if (
            len(text.split()) < self.min_words and len(text) < 10 * self.min_words
        ):  # characters too: scripts without spaces
            return Trace(None, source, "empty trace")
        if not english(text):
            return Trace(None, source, "trace not in English")
        return Trace(text, source)

    def sequence_traces(self, sequence: str, answers: Mapping[str, Answer]) -> tuple[list[str], Counter, Counter]:
        """The usable traces of one sequence, a count of the problems of the others, and where the usable ones came
        from."""
        read = [self.read(answers[q.key]) for q in self.trace_queries(sequence)]
        return (
            [t.text for t in read if t.text is not None],
            Counter(t.problem for t in read if t.problem),
            Counter(f"traces from the {t.source}" for t in read if t.text is not None),
        )

    def usable(
        self, docs: Sequence[ScoredDocument]
    ) -> tuple[list[tuple[str, list[str]]], list[int], list[Counter], Counter]:
        """Every passage with usable traces (and its document's index), each document's trace
        problems, and where the usable traces came from."""
        items, owners, problems, sources = [], [], [], Counter()
        for i, doc in enumerate(docs):
            found = Counter()
            for passage in self.split(doc.text):
                usable, passage_problems, passage_sources = self.sequence_traces(passage, doc.answers)
                found += passage_problems
                sources += passage_sources
                if usable:
                    items.append((passage, usable))
                    owners.append(i)
            problems.append(found)
        return items, owners, problems, sources

    def followup(self, docs: Sequence[ScoredDocument]) -> tuple[str, list[Query]] | None:
        """Queries made from the traces (the judge's), as (who answers, queries), so
        an audit can ask them for every set together; None for attacks that ask nothing more."""
        return None

    def evaluate(self, docs: Sequence[ScoredDocument], tools: SignalTools | None = None) -> Evaluation:
        if tools is None:
            raise VerifierError(
                f"signal {self.name}: reads traces through models lent by the scoring step (no tools given)"
            )
        items, owners, problems, sources = self.usable(docs)
        try:
            scores = self.score_traces(items, docs, tools) if items else []
        except TracesUnusable as exc:
            return Evaluation(np.full(len(docs), np.nan), [str(exc)] * len(docs), dict(sources))
        per_doc: list[list[float]] = [[] for _ in docs]
        for i, value in zip(owners, scores, strict=True):
            if isinstance(value, str):
                problems[i][value] += 1
            elif np.isfinite(value):
                per_doc[i].append(value)
        values = np.array([float(np.mean(v)) if v else float("nan") for v in per_doc])
        reasons = [
            None if v else (problems[i].most_common(1)[0][0] if problems[i] else "traces gave no score")
            for i, v in enumerate(per_doc)
        ]
        return Evaluation(values, reasons, self.run_counts(docs) | dict(sources))

    def run_counts(self, docs: Sequence[ScoredDocument]) -> dict[str, object]:
        """What else the signal read, for the findings (BlackSpectrum: its anchors' digest)."""
        return {}

    @abstractmethod
    def score_traces(
        self, items: list[tuple[str, list[str]]], docs: Sequence[ScoredDocument], tools: SignalTools
    ) -> list[float | str]:
        """One score per (passage, usable traces) item, higher = more member-like; where the
        traces allow none, the reason (a short fixed text). ``docs`` gives access to the run's
        answers (e.g. anchor sequences')."""
