"""DE-COP (Duarte et al. 2024), as evaluated by Janicki et al. ("Detecting Data Contamination in
Large Language Models"): a multiple-choice question whose four options are the verbatim passage
and three paraphrases of it; a model that has read the passage picks the verbatim one more often
than chance (1/4).

Procedure: the three paraphrases come from the offline synonym rephraser
(``verifier.targets.rephrase``), seeded from the passage's SHA-256, so the same passage always gives
the same options. The question is asked once per option order - all 24 permutations (``orders =
"all"``, the paper's debiasing against a model's preferred letter) or the 4 rotations
(``"cyclic"``, a cheaper variant in which the verbatim passage still takes every position once) -
greedily, with a few tokens for the answer. The reply is read as one letter A-D ("B", "(B)", "b)",
"Answer: B", "The answer is B."); a reply naming no letter, or several, is a failed query, left
out like a refusal or a server error, never counted as a wrong choice.

Score: the fraction of readable answers that chose the verbatim passage, in [0, 1]; higher = more
member-like (chance is 0.25). NaN when no answer could be read, or when the rephraser cannot make
three paraphrases of the passage (too few words it knows how to vary), in which case no query is
asked.

Deviations from the paper, and why:
- no title hook: the paper asks which passage is verbatim from the paper or article named in the
  prompt; an audit's documents come without reliable titles, so the question names no source and
  says instead that one passage is the published original and the others reworded copies;
- paraphrases from a seeded synonym table rather than an LLM (Claude Haiku 3 in the paper). It is
  a model other than the target, as DE-COP requires, and deterministic, but its rewordings are
  cruder than an LLM's, so a capable model can often spot the original by fluency alone: the
  accuracy of non-members is then high too, and only the difference between members and
  non-members (the route's comparison) carries the signal.
"""

from __future__ import annotations

import hashlib
import itertools
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

from verifier.signals.base import QuerySignal, register
from verifier.targets.queries import CHAT, Answer, Query
from verifier.targets.rephrase import make_rephraser

LETTERS = "ABCD"
ANSWER_TOKENS = 8  # a letter, perhaps with "Answer:" or brackets around it


def passage_seed(passage: str, salt: str = "") -> int:
    """A seed drawn from the passage's SHA-256 (``salt`` gives independent seeds for separate uses)."""
    return int.from_bytes(hashlib.sha256((salt + passage).encode("utf-8")).digest()[:8], "big")


@lru_cache(maxsize=4096)
def paraphrases(passage: str, count: int) -> tuple[str, ...]:
    """``count`` distinct paraphrases of ``passage``, none equal to it, from the offline rephraser
    seeded by the passage; empty when the rephraser cannot make that many."""
    rephraser = make_rephraser("offline")
    seed = passage_seed(passage, "paraphrase:")
    for asked in (count + 1, count):  # one spare, as a draw may keep every word as it was
        try:
            found = [p for p in rephraser.rephrase(passage, asked, seed) if p != passage]
        except ValueError:
            continue
        if len(found) >= count:
            return tuple(found[:count])
    return ()


# Reading a reply as a letter. A reply naming several letters (or none) is unreadable.
_ALONE = re.compile(r"^\W*([A-Da-d])\W*$")  # "B", "(B)", "b)", "B."
_LEADING = re.compile(r"^\W*([A-Da-d])(?:[).:,\]]|\s*$)")  # "B) The passage ...", "b. because", "C, since"
_NAMED = re.compile(
    r"\b(?i:answer|option|choice|passage)\s*(?i:is|would be)?\s*[:\-]?\s*[(\[]?([A-D]|[a-d](?=\W*$|\)))(?![\w'’])"
)
_CAPITAL = re.compile(r"(?<![\w'’])([A-D])(?![\w'’])")


def parse_letter(text: str) -> int | None:
    """The option index (0-3) a reply names, or None when it names none or several."""
    stripped = text.strip()
    for pattern in (_ALONE, _LEADING):
        if match := pattern.match(stripped):
            return LETTERS.index(match.group(1).upper())
    named = {m.group(1).upper() for m in _NAMED.finditer(stripped)}
    if len(named) == 1:
        return LETTERS.index(named.pop())
    if named:
        return None
    capitals = {m.group(1) for m in _CAPITAL.finditer(stripped)}
    return LETTERS.index(capitals.pop()) if len(capitals) == 1 else None


@register
@dataclass(frozen=True)
class DeCop(QuerySignal):
    name = "decop"
    orders: Literal["all", "cyclic"] = "all"  # "all": the 24 permutations of the options; "cyclic": their 4 rotations

    def option_orders(self) -> list[tuple[int, ...]]:
        """Each order lists, for positions A-D, which candidate stands there (0 = the verbatim passage)."""
        if self.orders == "all":
            return list(itertools.permutations(range(4)))
        return [tuple((start + i) % 4 for i in range(4)) for start in range(4)]

    @staticmethod
    def prompt(options: list[str]) -> str:
        listed = "\n\n".join(f"{letter}. {option}" for letter, option in zip(LETTERS, options))
        return (
            "This is a multiple-choice test. Exactly one of the four passages below is the original text, word for "
            "word, "
            "as it was published; the other three are reworded versions of it. Which passage is the verbatim "
            "original?\n\n"
            f"{listed}\n\nReply with the letter of your choice (A, B, C or D) and nothing else."
        )

    def passage_queries(self, passage: str) -> list[Query]:
        others = paraphrases(passage, 3)
        if not others:
            return []
        candidates = (passage, *others)
        return [
            Query(CHAT, self.prompt([candidates[i] for i in order]), max_tokens=ANSWER_TOKENS)
            for order in self.option_orders()
        ]

    def score_passage(self, passage: str, answers: list[Answer]) -> float:
        orders = self.option_orders()
        if len(answers) != len(orders):  # no paraphrases, so nothing was asked
            return float("nan")
        chosen = [(order, parse_letter(a.text)) for order, a in zip(orders, answers) if a.ok]
        read = [order[letter] == 0 for order, letter in chosen if letter is not None]
        return sum(read) / len(read) if read else float("nan")
