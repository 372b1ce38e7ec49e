"""Disjoint sets of distinct documents: duplicates within a set, and overlap between sets, are removed.

A held-out or control document that duplicates a suspect document may itself have been trained
on, and one that nearly duplicates it (re-scraped, re-cased, re-quoted, cut shorter) makes the
two sets agree for reasons that are not membership. Overlap is found at three strengths, on text
normalised for what pipelines change (Unicode form, case, typographic quotes and dashes,
whitespace):
- exact: equal normalised text;
- prefix: equal first ``PREFIX_CHARS`` normalised characters, or a short text that opens another
  (a truncated or extended copy);
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
TRANSLATE = str.maketrans({"\u201c": '"', "\u201d": '"', "\u201e": '"', "\u2018": "'", "\u2019": "'", "\u2013": "-", "\u2014": "-", "\u2026": "..."})
SPACES = re.compile(r"\s+")


@dataclass(frozen=True)
class Overlap:
    """Which documents of two sets match each other, and how (pairs counted by the comparison side)."""

    exact: int
    prefix: int
    near: int
    removed: list[int]  # indices into the comparison set, ascending
    removed_reference: list[int]  # indices into the reference set, ascending

    @property
    def count(self) -> int:
        return len(self.removed)


def normalise(text: str) -> str:
    return SPACES.sub(" ", unicodedata.normalize("NFKC", text).translate(TRANSLATE).casefold()).strip()


def _matches(com: list[str], ref: list[str], threshold: float, same: bool) -> tuple[dict[int, set[int]], dict[int, str]]:
    """comparison index -> matching reference indices, and how each comparison index matched.

    ``same``: the two lists are one set, so only earlier documents count as matches of later ones.
    """
    by_text: dict[str, list[int]] = {}
    by_prefix: dict[str, list[int]] = {}
    for j, text in enumerate(ref):
        by_text.setdefault(text, []).append(j)
        by_prefix.setdefault(text[:PREFIX_CHARS], []).append(j)
    allowed = (lambda i, j: j < i) if same else (lambda i, j: True)  # noqa: E731
    pairs: dict[int, set[int]] = {}
    kind: dict[int, str] = {}
    for i, text in enumerate(com):
        exact = {j for j in by_text.get(text, ()) if allowed(i, j)}
        if exact:
            pairs[i], kind[i] = exact, "exact"
            continue
        opened = {j for j in by_prefix.get(text[:PREFIX_CHARS], ()) if allowed(i, j)}
        if len(text) < PREFIX_CHARS:
            opened |= {j for j, r in enumerate(ref) if allowed(i, j) and j not in by_text.get(text, ()) and r.startswith(text)}
        if opened:
            pairs[i], kind[i] = opened, "prefix"
    rest = [i for i in range(len(com)) if i not in pairs]
    if rest and ref:
        scores = process.cdist([com[i] for i in rest], ref, scorer=fuzz.ratio, score_cutoff=threshold, dtype=np.uint8, workers=-1)
        for row, i in enumerate(rest):
            near = {int(j) for j in np.flatnonzero(scores[row]) if allowed(i, j)}
            if near:
                pairs[i], kind[i] = near, "near"
    return pairs, kind


def find_overlap(reference: Sequence[str], comparison: Sequence[str], threshold: float = DEFAULT_THRESHOLD) -> Overlap:
    """Documents of ``comparison`` and of ``reference`` that duplicate, prefix-match or nearly match each other."""
    pairs, kind = _matches([normalise(t) for t in comparison], [normalise(t) for t in reference], threshold, same=False)
    kinds = list(kind.values())
    return Overlap(
        exact=kinds.count("exact"), prefix=kinds.count("prefix"), near=kinds.count("near"),
        removed=sorted(pairs), removed_reference=sorted(set().union(*pairs.values())) if pairs else [],
    )


def find_duplicates(texts: Sequence[str], threshold: float = DEFAULT_THRESHOLD) -> list[int]:
    """Indices of documents that duplicate, prefix-match or nearly match an earlier document of the same set."""
    normalised = [normalise(t) for t in texts]
    return sorted(_matches(normalised, normalised, threshold, same=True)[0])
