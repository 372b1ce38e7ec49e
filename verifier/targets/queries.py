"""Queries to a model that answers text (an API, or any target offering ``answers``), and its answers.

Output-only attacks (DE-COP, name cloze, prefix probing, SaMIA, CDD, familiarity ranking) see a
model only through what it writes. Each attack turns a document into ``Query`` objects; the
target answers them (through its response cache, so a re-run never pays twice) with ``Answer``
objects; the attack turns the answers back into one score. A query is plain data so that the
same query asked by two attacks, or twice by one, is sent once.

An answer that could not be had (the server failed after every retry, refused, or returned
nothing) is an ``Answer`` with ``error`` set: the attack scores that item NaN and the failure is
counted in the findings, never read as a low score.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import asdict, dataclass

# A query is a chat exchange or, for servers offering legacy completions, a raw prompt to continue.
CHAT = "chat"
TEXT = "text"


@dataclass(frozen=True)
class Query:
    """One request. ``sample`` tells apart repeated draws of one sampled request (it seeds them)."""

    kind: str  # CHAT or TEXT
    content: str  # the user message (CHAT) or the prompt to continue (TEXT)
    max_tokens: int = 64
    temperature: float = 0.0  # 0 = greedy
    sample: int = 0
    system: str | None = None

    def __post_init__(self) -> None:
        if self.kind not in (CHAT, TEXT):
            raise ValueError(f"query kind must be {CHAT!r} or {TEXT!r}, not {self.kind!r}")
        if self.max_tokens < 1 or not 0 <= self.temperature <= 2 or self.sample < 0:
            raise ValueError("a query needs max_tokens >= 1, temperature in [0, 2] and sample >= 0")

    @property
    def key(self) -> str:
        """SHA-256 of the query's fields: equal queries share one answer."""
        return hashlib.sha256(json.dumps(asdict(self), sort_keys=True).encode()).hexdigest()


@dataclass(frozen=True)
class Answer:
    """What the model wrote (``text``), its reasoning trace where the server gives one, and why it
    finished. ``error`` names why there is no usable answer (then ``text`` is empty)."""

    text: str = ""
    reasoning: str | None = None
    finish_reason: str | None = None
    error: str | None = None
    transient: bool = False  # a transport failure: not cached, so a later run (or pass) asks again

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def public_error(self) -> str | None:
        """``error`` without any text the server sent (an HTTP error's detail may quote the
        prompt): what may be written into findings and bundles."""
        return None if self.error is None else HTTP_DETAIL.sub(r"\1", self.error)


# Openings by which chat models decline a task. Narrow on purpose: a bare "Sorry," or "I cannot"
# opens ordinary prose too ("I cannot believe it, she said."), and a real continuation read as a
# refusal would drop a member's best evidence; so each pattern names the declining itself.
REFUSAL = re.compile(
    r"^\W*(?:i'?m sorry,? but|i am sorry,? but|sorry,? (?:but )?i (?:can'?t|cannot|won'?t)|i apologi[sz]e|"
    r"i(?: can'?t| cannot| won'?t| will not|'?m unable to| am unable to|'?m not able to| am not able to) "
    r"(?:help|assist|provide|reproduce|share|complete|continue|comply|do that|fulfil|answer)|"
    r"as an ai\b|as a (?:large )?language model|i must decline|unfortunately,? (?:i (?:can'?t|cannot)|that'?s not "
    r"something i))",
    re.IGNORECASE,
)
HTTP_DETAIL = re.compile(r"^(HTTP \d{3}): .*", re.DOTALL)
APOSTROPHES = str.maketrans({"\u2019": "'", "\u02bc": "'", "\u2018": "'"})


def failure_of(text: str, finish_reason: str | None, kind: str = CHAT) -> str | None:
    """Why a completion is not an answer: empty, a refusal (chat only: a text completion continues
    whatever it is given, so it cannot decline), filtered; None when it is one. A completion cut at
    max_tokens is an answer (attacks ask for short outputs and read what came)."""
    stripped = text.strip()
    if not stripped:
        return "empty completion"
    if kind == CHAT and REFUSAL.match(stripped.translate(APOSTROPHES)):
        return "refusal"
    if finish_reason == "content_filter":
        return "content filtered"
    return None
