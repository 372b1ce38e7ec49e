"""Prefix probing (Karamolegkou et al. 2023), as evaluated by Janicki et al. ("Detecting Data
Contamination in Large Language Models"): the model is given the first half of a passage and asked
for the rest; a model that has memorised the passage reproduces more of its true suffix.

Procedure: the passage's words are cut in two (the prefix gets the first half, rounded down); the
prefix is sent once, greedily. ``mode = "text"`` sends the raw prefix as a completion prompt -
continuing text is what a completion endpoint does, so this is the paper's setting for models
that offer one; ``mode = "chat"`` (the default, as chat-only servers are the common case) wraps it
in an instruction to continue it. The reply is stripped of a repeated prefix and a leading
ellipsis, then cut to the true suffix's length in units.

Score: the longest common subsequence of the continuation and the true suffix, normalised by the
longer of the two (``rapidfuzz.distance.LCSseq.normalized_similarity``), in [0, 1]; 1.0 = the
suffix verbatim; higher = more member-like. Two units, two registered signals:
``prefix_lcs_word`` compares whitespace-separated words, ``prefix_lcs_token`` words and punctuation
marks split apart (regex ``\\w+|[^\\w\\s]``), so "end." against "end" still matches one unit. A
refused, failed or empty reply is NaN, not 0.

Deviations from the paper, and why:
- no title hook: the paper's prompt names the paper the prefix comes from; audited documents come
  without reliable titles, so the instruction names no source;
- a continuous score instead of a member/non-member threshold (the paper's 20 LCS tokens of ~37):
  the route compares score distributions, and a threshold throws that information away; the
  normalisation makes passages of different lengths comparable;
- the model's continuation is cut to the suffix's length, so a model that goes on writing past
  where the passage ends is not penalised for it (the paper asks for a suffix of about the
  prefix's length; a completion endpoint stops only at max_tokens).

``ContinuationSignal`` (the prefix/suffix split and the continuation query) is shared with SaMIA
and CDD: one greedy query of the same prefix in the same mode is one cached answer for all of them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import ClassVar, Literal

from rapidfuzz.distance import LCSseq

from verifier.signals.base import QuerySignal, register
from verifier.targets.queries import CHAT, TEXT, Answer, Query

TOKEN = re.compile(r"\w+|[^\w\s]")
ELLIPSIS = re.compile(r"^\s*(?:\.\.\.|…)\s*")


@dataclass(frozen=True)
class ContinuationSignal(QuerySignal):
    """An attack reading the model's continuations of a passage's first half."""

    mode: Literal["chat", "text"] = (
        "chat"  # "chat": an instruction to continue the prefix; "text": the raw prefix, to a completion endpoint
    )

    @staticmethod
    def halves(passage: str) -> tuple[str, list[str]]:
        """The prefix (first half of the words, rounded down) and the true suffix's words."""
        words = passage.split()
        cut = len(words) // 2
        return " ".join(words[:cut]), words[cut:]

    def continuation_query(self, passage: str, temperature: float = 0.0, sample: int = 0) -> Query | None:
        """The query asking for the rest of ``passage`` (None for a passage of fewer than two words)."""
        prefix, suffix = self.halves(passage)
        if not prefix or not suffix:
            return None
        max_tokens = round(1.5 * len(suffix)) + 8  # about 1.3 tokens a word, with room to spare
        if self.mode == TEXT:
            return Query(TEXT, prefix, max_tokens=max_tokens, temperature=temperature, sample=sample)
        content = (
            f"Continue the text below from exactly where it breaks off, with about {len(suffix)} more words, the way "
            "it goes "
            "on in its original source. Reply with the continuation only: do not repeat the given text and add no "
            f"comment.\n\nText: {prefix}"
        )
        return Query(CHAT, content, max_tokens=max_tokens, temperature=temperature, sample=sample)

    def continuation(self, passage: str, answer: Answer) -> str | None:
        """What the model wrote after the prefix: a repeated prefix and a leading ellipsis
        removed; None when the query failed or nothing is left."""
        if not answer.ok:
            return None
        text = " ".join(answer.text.split())
        prefix, _ = self.halves(passage)
        if text.startswith(prefix):
            text = text[len(prefix) :]
        text = ELLIPSIS.sub("", text).strip()
        return text or None


@dataclass(frozen=True)
class PrefixProbe(ContinuationSignal):
    """Prefix probing scored by normalised LCS in the subclass's ``unit``."""

    unit: ClassVar[str]  # "word" or "token"

    def units(self, text: str) -> list[str]:
        return text.split() if self.unit == "word" else TOKEN.findall(text)

    def passage_queries(self, passage: str) -> list[Query]:
        query = self.continuation_query(passage)
        return [query] if query else []

    def score_passage(self, passage: str, answers: list[Answer]) -> float:
        if len(answers) != 1 or (generated := self.continuation(passage, answers[0])) is None:
            return float("nan")
        truth = self.units(" ".join(self.halves(passage)[1]))
        return float(LCSseq.normalized_similarity(self.units(generated)[: len(truth)], truth))


@register
@dataclass(frozen=True)
class PrefixLcsWord(PrefixProbe):
    name = "prefix_lcs_word"
    unit = "word"


@register
@dataclass(frozen=True)
class PrefixLcsToken(PrefixProbe):
    name = "prefix_lcs_token"
    unit = "token"
