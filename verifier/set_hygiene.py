"""Disjoint sets: a document of the comparison set that is also (nearly) in the suspect set is removed.

A held-out or control document that duplicates a suspect document may itself have been trained
on, and one that nearly duplicates it (re-scraped, re-cased, re-quoted, cut shorter) makes the
two sets agree for reasons that are not membership. Overlap is found at three strengths, on text
normalised for what pipelines change (Unicode form, case, typographic quotes and dashes,
whitespace):
- exact: equal normalised text;
- prefix: equal first ``PREFIX_CHARS`` normalised characters (a truncated or extended copy);
- near: rapidfuzz ``fuzz.ratio`` >= ``threshold`` (edits, boilerplate, small rewrites).
The overlapping documents of the *comparison* set are removed and counted; the suspect set is
never changed, since it is what the claim is about.
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
    """Which documents of the comparison set overlap the reference set, and how."""

    exact: int
    prefix: int
    near: int
    removed: list[int]  # indices into the comparison set, ascending

    @property
    def count(self) -> int:
        return len(self.removed)


def normalise(text: str) -> str:
    return SPACES.sub(" ", unicodedata.normalize("NFKC", text).translate(TRANSLATE).casefold()).strip()


def find_overlap(reference: Sequence[str], comparison: Sequence[str], threshold: float = DEFAULT_THRESHOLD) -> Overlap:
    """Documents of ``comparison`` that duplicate, prefix-match or nearly match any of ``reference``."""
    ref = [normalise(t) for t in reference]
    com = [normalise(t) for t in comparison]
    ref_full, ref_prefix = set(ref), {t[:PREFIX_CHARS] for t in ref}
    exact = {i for i, t in enumerate(com) if t in ref_full}
    prefix = {i for i, t in enumerate(com) if i not in exact and (t[:PREFIX_CHARS] in ref_prefix or any(r.startswith(t) for r in ref if len(t) < PREFIX_CHARS))}
    near: set[int] = set()
    rest = [i for i in range(len(com)) if i not in exact and i not in prefix]
    if rest and ref:
        scores = process.cdist([com[i] for i in rest], ref, scorer=fuzz.ratio, score_cutoff=threshold, dtype=np.uint8, workers=-1)
        near = {rest[i] for i in np.flatnonzero(scores.max(axis=1) > 0)}
    return Overlap(exact=len(exact), prefix=len(prefix), near=len(near), removed=sorted(exact | prefix | near))
