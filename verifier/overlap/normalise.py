"""The one text form the corpus index stores and every query is compared in.

Decontamination checks are evaded by trivial edits if they compare raw bytes: a benchmark item
re-cased, re-punctuated, re-spaced or sprinkled with zero-width characters in a crawl is still
the item. Both the corpus and every query therefore pass through ``normalise`` (NFKC, invisible
format characters deleted, case folding, every run of characters that are not letters or digits
made one space). Look-alike letters from other scripts are not folded. Matches are whole words: the index stores each document as
`` word word ... word `` (a space at both ends) and queries are framed the same way, so "cat"
never matches inside "concatenate".
"""

from __future__ import annotations

import re
import unicodedata

import numpy as np

NORMALISATION = "nfkc-casefold-alnum-nocf/1"
_NOT_WORD = re.compile(r"[\W_]+")
# Invisible format characters (zero-width spaces and joiners, soft hyphens, bidi controls, BOM)
# are deleted, not made spaces: inserted inside words they would otherwise split every word of
# a copied text and hide it from the lookup.
_INVISIBLE = re.compile("[\u00ad\u061c\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb]")


# ASCII text (most of any English corpus) takes a byte-table path with the same result: NFKC
# and case folding of ASCII are lower-casing, and the non-word characters are the non-alphanumerics.
_ASCII = bytes(ord(chr(c).lower()) if chr(c).isalnum() else 0x20 for c in range(128)) + b" " * 128


def normalise(text: str) -> str:
    """Words of ``text`` in compared form, separated by single spaces, no leading or trailing space."""
    if text.isascii():
        return b" ".join(text.encode("ascii").translate(_ASCII).split()).decode("ascii")
    return normalise_unicode(text)


def normalise_unicode(text: str) -> str:
    """The general path of ``normalise`` (any text)."""
    return _NOT_WORD.sub(" ", _INVISIBLE.sub("", unicodedata.normalize("NFKC", text)).casefold()).strip()


def framed(text: str) -> bytes:
    """``normalise(text)`` as the index stores a document: UTF-8 with a space at both ends."""
    norm = normalise(text)
    return f" {norm} ".encode("utf-8") if norm else b""


def word_starts(frame: bytes) -> np.ndarray:
    """Byte offsets of the space before each word of a framed text (where word-aligned matches start)."""
    spaces = np.flatnonzero(np.frombuffer(frame, dtype=np.uint8) == 0x20)
    return spaces[:-1]


def char_starts(frame: bytes) -> np.ndarray:
    """Byte offsets of every character of a framed text (UTF-8 continuation bytes excluded)."""
    raw = np.frombuffer(frame, dtype=np.uint8)
    return np.flatnonzero((raw & 0xC0) != 0x80)
