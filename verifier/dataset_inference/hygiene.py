"""Disjoint sets of distinct documents: duplicates within a set, and overlap between sets, are removed.

A held-out or control document that duplicates a suspect document may itself have been trained
on, and one that nearly duplicates it (re-scraped, re-cased, re-quoted, cut shorter) makes the
two sets agree for reasons that are not membership. Overlap is found at three strengths, on text
normalised for what pipelines change (Unicode form, case, typographic quotes and dashes,
whitespace):
- exact: equal normalised text;
- prefix: equal first ``PREFIX_CHARS`` normalised characters, or one text of at least
  ``MIN_OPENING`` characters that opens another, in either direction (a truncated or extended
  copy; a blank or one-word text opens nothing);
- near: rapidfuzz ``fuzz.ratio`` >= ``threshold`` (edits, boilerplate, small rewrites).
Both documents of an overlapping pair leave the comparison: removing only the held-out side would
take the common, templated documents out of one set and leave them in the other, which is itself
a shift. Within a set, later copies of a document are removed, since the tests treat rows as
independent draws. Everything removed is counted in the findings.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from rapidfuzz import fuzz, process

DEFAULT_THRESHOLD = 90.0
PREFIX_CHARS = 120
MIN_OPENING = 40  # a text shorter than this (or empty) never counts as the opening of another
CDIST_ROWS = 1000
TRANSLATE = str.maketrans(
    {
        "\u201c": '"',
        "\u201d": '"',
        "\u201e": '"',
        "\u2018": "'",
        "\u2019": "'",
        "\u2013": "-",
        "\u2014": "-",
        "\u2026": "...",
    }
)
SPACES = re.compile(r"\s+")


@dataclass(frozen=True)
class Overlap:
    """Which documents of two sets match each other, and how (pairs counted by the comparison side)."""

    exact: int
    prefix: int
    near: int
    removed: list[int]  # indices into the other set (held-out or control), ascending
    removed_suspect: list[int]  # indices into the suspect set, ascending

    @property
    def count(self) -> int:
        return len(self.removed)


def normalise(text: str) -> str:
    """NFKC, typographic quotes and dashes plain, case-folded, spacing collapsed, and invisible
    format characters (zero-width spaces and joiners, soft hyphens, direction marks) deleted: a copy
    salted with them is still the same document."""
    if not text.isascii():
        text = "".join(ch for ch in text if unicodedata.category(ch) != "Cf")
    return SPACES.sub(" ", unicodedata.normalize("NFKC", text).translate(TRANSLATE).casefold()).strip()


def _matches(
    com: list[str], ref: list[str], threshold: float, same: bool
) -> tuple[dict[int, set[int]], dict[int, str]]:
    """``com`` index -> matching ``ref`` indices, and how each ``com`` index matched.

    ``same``: the two lists are one set, so a document matches only earlier documents still kept
    (a chain of near copies A ~ B ~ C removes B and C only if each is near a kept one).
    """
    by_text: dict[str, list[int]] = {}
    by_prefix: dict[str, list[int]] = {}
    short: dict[
        str, list[int]
    ] = {}  # ``ref`` texts too short for the prefix key, but long enough to count as an opening
    for j, text in enumerate(ref):
        by_text.setdefault(text, []).append(j)
        by_prefix.setdefault(text[:PREFIX_CHARS], []).append(j)
        if MIN_OPENING <= len(text) < PREFIX_CHARS:
            short.setdefault(text, []).append(j)
    candidates: dict[int, tuple[set[int], str]] = {}
    for i, text in enumerate(com):
        exact = set(by_text.get(text, ())) - {i if same else -1}
        if exact:
            candidates[i] = (exact, "exact")
            continue
        opened = set(by_prefix.get(text[:PREFIX_CHARS], ())) if len(text) >= MIN_OPENING else set()
        if MIN_OPENING <= len(text) < PREFIX_CHARS:  # a short text that opens a longer one
            opened |= {j for j, r in enumerate(ref) if r.startswith(text)}
        opened |= {
            j for r, js in short.items() if text.startswith(r) for j in js
        }  # a longer text opened by a short one
        opened.discard(i if same else -1)
        if opened:
            candidates[i] = (opened, "prefix")
    rest = [i for i in range(len(com)) if i not in candidates]
    for start in range(0, len(rest), CDIST_ROWS):  # bounded memory: [rows, len(ref)] uint8 at a time
        block = rest[start : start + CDIST_ROWS]
        if not ref:
            break
        scores = process.cdist(
            [com[i] for i in block], ref, scorer=fuzz.ratio, score_cutoff=threshold, dtype=np.uint8, workers=-1
        )
        for row, i in enumerate(block):
            near = {int(j) for j in np.flatnonzero(scores[row])} - {i if same else -1}
            if near:
                candidates[i] = (near, "near")
    pairs: dict[int, set[int]] = {}
    kind: dict[int, str] = {}
    for i in sorted(candidates):
        matched, how = candidates[i]
        if same:
            matched = {j for j in matched if j < i and j not in pairs}
        if matched:
            pairs[i], kind[i] = matched, how
    return pairs, kind


def find_overlap(suspect: Sequence[str], others: Sequence[str], threshold: float = DEFAULT_THRESHOLD) -> Overlap:
    """Documents of ``others`` (a held-out or control set) and of ``suspect`` that duplicate, prefix-match or nearly
    match each other."""
    pairs, kind = _matches([normalise(t) for t in others], [normalise(t) for t in suspect], threshold, same=False)
    kinds = list(kind.values())
    return Overlap(
        exact=kinds.count("exact"),
        prefix=kinds.count("prefix"),
        near=kinds.count("near"),
        removed=sorted(pairs),
        removed_suspect=sorted(set().union(*pairs.values())) if pairs else [],
    )


def find_duplicates(texts: Sequence[str], threshold: float = DEFAULT_THRESHOLD) -> list[int]:
    """Indices of documents that duplicate, prefix-match or nearly match an earlier document of the same set."""
    normalised = [normalise(t) for t in texts]
    return sorted(_matches(normalised, normalised, threshold, same=True)[0])
