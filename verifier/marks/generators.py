"""Generators of marks: each draw is independent, so unpublished siblings sample the null.

A mark is useful as evidence only if the published one and its siblings come from the same
generator and the choice of which is published was random and fixed before training. Then any
statistic of the model's scores is exchangeable between them under H0 (not trained on).

Formats:
- canaries (data watermarks, Wei et al. 2024): ``words`` (random words from a bundled list of
  2,048, 11 bits each), ``hex`` and ``base32`` identifiers, ``sentence`` (a natural-looking
  sentence from a small grammar: about 33 bits);
- traps (Meeus et al. 2024): ``trap`` sentences of random words, high-perplexity by
  construction, meant to be repeated inside a published document;
- output-only marks, tested from generated text alone (no log-probs): ``cue_reply`` (a cue of
  random words followed by a secret reply of random words; the audit prompts with the cue and
  looks for the reply) and ``cooccurrence`` (secret pairs of random words written near each other
  after a public anchor; the audit prompts with the anchor and counts the pairs). The cue or
  anchor is drawn once per mark, before and independently of the candidates, and is the same
  for the published candidate and its siblings: the prompt cannot favour any of them.
"""

from __future__ import annotations

import string
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from verifier.boundary.resources import word_list

Kind = Literal["canary", "trap", "rephrasing", "cue_reply", "cooccurrence"]
OUTPUT_KINDS = frozenset({"cue_reply", "cooccurrence"})  # tested from generated text: no log-probs needed
CUE_WORDS = 5  # words of a cue or anchor: about 55 bits, so no text and no other mark shares one
CanaryFormat = Literal["words", "hex", "base32", "sentence"]
BASE32 = string.ascii_uppercase + "234567"

# A small grammar for natural-looking canaries: "<name> <verb> the <adjective> <noun> of <place> in <year>."
NAMES = (
    "Adela",
    "Bertram",
    "Cosima",
    "Dorian",
    "Elspeth",
    "Fenwick",
    "Greta",
    "Horatio",
    "Imelda",
    "Jasper",
    "Kerensa",
    "Leopold",
    "Marisol",
    "Nikolai",
    "Ottilie",
    "Percival",
    "Quentin",
    "Rosalind",
    "Soren",
    "Tamsin",
    "Ulric",
    "Vesna",
    "Wilhelmina",
    "Xavier",
    "Yolanda",
    "Zebulon",
    "Anselm",
    "Briony",
    "Casimir",
    "Delphine",
    "Evander",
    "Fiora",
)
VERBS = (
    "repainted",
    "catalogued",
    "buried",
    "rebuilt",
    "auctioned",
    "mislaid",
    "translated",
    "smuggled",
    "restored",
    "measured",
    "photographed",
    "inherited",
    "dismantled",
    "sketched",
    "weighed",
    "insured",
    "polished",
    "borrowed",
    "guarded",
    "surveyed",
    "carved",
    "rescued",
    "abandoned",
    "copied",
    "decorated",
    "repaired",
    "sold",
    "mapped",
    "counted",
    "hid",
    "found",
    "returned",
)
ADJECTIVES = (
    "crooked",
    "amber",
    "silent",
    "copper",
    "hollow",
    "velvet",
    "frozen",
    "scarlet",
    "ancient",
    "brittle",
    "gilded",
    "narrow",
    "humble",
    "stormy",
    "marble",
    "woollen",
    "restless",
    "pale",
    "clockwork",
    "northern",
    "borrowed",
    "twelfth",
    "lopsided",
    "fragrant",
    "rusted",
    "secret",
    "painted",
    "lonely",
    "distant",
    "tiny",
    "oaken",
    "wandering",
)
NOUNS = (
    "lighthouse",
    "harpsichord",
    "orchard",
    "ledger",
    "tapestry",
    "windmill",
    "observatory",
    "chapel",
    "barometer",
    "greenhouse",
    "carousel",
    "granary",
    "telescope",
    "atlas",
    "fountain",
    "bridge",
    "lantern",
    "aqueduct",
    "violin",
    "archive",
    "ferry",
    "sundial",
    "mosaic",
    "belltower",
    "compass",
    "kiln",
    "loom",
    "statue",
    "cellar",
    "garden",
    "printing press",
    "gatehouse",
)
PLACES = (
    "Aldermoor",
    "Brackenford",
    "Calderwick",
    "Dunmarrow",
    "Elmstead",
    "Farrowdale",
    "Glenhallow",
    "Harwick Cross",
    "Ivybridge Vale",
    "Juniper Hollow",
    "Kestrel Point",
    "Larkspur",
    "Mossley Fen",
    "Northcombe",
    "Oakhurst",
    "Pellinor",
    "Quarry End",
    "Ravensworth",
    "Saltmarsh",
    "Thornbury Down",
    "Upwater",
    "Valewood",
    "Wexcombe",
    "Yarrowby",
    "Ashgrove",
    "Bellhaven",
    "Coldharbour",
    "Drymoor",
    "Eastwold",
    "Fallowmere",
    "Greystone",
    "Hollins",
)


class MarkSpec(BaseModel):
    """How one document is marked: the kind, its format and length, and the number of siblings."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Kind
    format: CanaryFormat | None = Field(None, description="canaries only")
    length: int = Field(
        0,
        ge=0,
        le=200,
        description="words (words, trap, cue_reply's reply), characters (hex, base32), pairs (cooccurrence); 0: the "
        "kind's default",
    )
    siblings: int = Field(99, ge=1, le=10_000, description="unpublished siblings M: the smallest p-value is 1/(M+1)")
    repeats: int = Field(1, ge=1, le=1000, description="traps: copies inside the published document")

    @model_validator(mode="after")
    def consistent(self) -> MarkSpec:
        if self.kind == "canary" and self.format is None:
            raise ValueError("a canary needs a format (words, hex, base32 or sentence)")
        if self.kind != "canary" and self.format is not None:
            raise ValueError(f"format applies to canaries only, not to a {self.kind}")
        if self.kind != "trap" and self.repeats != 1:
            raise ValueError("repeats applies to traps only")
        if (self.kind == "rephrasing" or self.format == "sentence") and self.length:
            raise ValueError(
                f"length does not apply to {'rephrasings' if self.kind == 'rephrasing' else 'sentence canaries'}"
            )
        if self.kind in OUTPUT_KINDS and not 2 <= self.size <= 20:
            unit = "reply words" if self.kind == "cue_reply" else "pairs"
            raise ValueError(f"a {self.kind} mark needs length 2 to 20 ({unit})")
        return self

    @property
    def size(self) -> int:
        defaults = {"words": 8, "hex": 32, "base32": 26, "sentence": 0, "trap": 25, "cue_reply": 4, "cooccurrence": 4}
        return self.length or defaults.get(self.format or self.kind, 0)


def random_words(rng: np.random.Generator, count: int) -> list[str]:
    """``count`` words drawn uniformly, independently, from the bundled list of 2,048."""
    return [word_list()[i] for i in rng.integers(0, 2048, count)]


def draw_cue(rng: np.random.Generator) -> str:
    """A cue (``cue_reply``) or anchor (``cooccurrence``): CUE_WORDS random words, capitalised."""
    return " ".join(random_words(rng, CUE_WORDS)).capitalize()


def pairs_of(candidate: str) -> list[tuple[str, str]]:
    """The word pairs of a ``cooccurrence`` candidate as written ("a b; c d")."""
    return [tuple(pair.split()) for pair in candidate.split("; ")]  # type: ignore[misc]


def mark_pieces(kind: str, mark: str, cue: str | None) -> list[str]:
    """What a marked document holds of its mark, in order (none for a rephrasing: it is the
    document): the canary or trap; "<cue>: <reply>."; or "<anchor>:" then each pair "<a> and <b>"."""
    if kind == "cue_reply":
        return [f"{cue}: {mark}."]
    if kind == "cooccurrence":
        return [f"{cue}:", *(f"{a} and {b}" for a, b in pairs_of(mark))]
    return [] if kind == "rephrasing" else [mark]


def draw(spec: MarkSpec, rng: np.random.Generator) -> str:
    """One mark of ``spec`` (a canary, a trap, or an output-only mark's candidate: a reply, or pairs
    written "a b; c d"); every draw independent of every other."""
    if spec.kind == "cue_reply":
        return " ".join(random_words(rng, spec.size))
    if spec.kind == "cooccurrence":
        pairs: list[str] = []
        while len(pairs) < spec.size:
            first, second = random_words(rng, 2)
            if first != second:
                pairs.append(f"{first} {second}")
        return "; ".join(pairs)
    if spec.kind == "trap":
        words = [word_list()[i] for i in rng.integers(0, 2048, spec.size)]
        return " ".join(words).capitalize() + "."
    if spec.format == "words":
        return " ".join(word_list()[i] for i in rng.integers(0, 2048, spec.size))
    if spec.format == "hex":
        return "".join("0123456789abcdef"[i] for i in rng.integers(0, 16, spec.size))
    if spec.format == "base32":
        return "".join(BASE32[i] for i in rng.integers(0, 32, spec.size))
    if spec.format == "sentence":

        def pick(options: tuple[str, ...]) -> str:
            return options[int(rng.integers(0, len(options)))]

        return (
            f"{pick(NAMES)} {pick(VERBS)} the {pick(ADJECTIVES)} {pick(NOUNS)} of {pick(PLACES)} in "
            f"{int(rng.integers(1700, 1950))}."
        )
    raise ValueError(f"no generator for {spec}")


def draw_distinct(spec: MarkSpec, rng: np.random.Generator, count: int) -> list[str]:
    """``count`` distinct draws (a repeated draw is redrawn: the pool stays exchangeable)."""
    found: list[str] = []
    seen: set[str] = set()
    for _ in range(count * 20):
        mark = draw(spec, rng)
        if mark not in seen:
            seen.add(mark)
            found.append(mark)
            if len(found) == count:
                return found
    raise ValueError(
        f"the {spec.format or spec.kind} generator at length {spec.size} cannot give {count} distinct marks"
    )
