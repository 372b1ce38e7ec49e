"""The one text form the corpus index stores and every query is compared in.

Decontamination checks are evaded by trivial edits if they compare raw bytes: a benchmark item
re-cased, re-punctuated, re-spaced or sprinkled with invisible characters in a crawl is still
the item. Both the corpus and every query therefore pass through ``normalise`` (NFKC, case
folding, invisible and combining characters deleted, every run of characters that are not
letters or digits made one space, each character of scripts written without spaces a word of its
own). Look-alike letters from other scripts are not folded. Matches are whole words: the index stores each document as
`` word word ... word `` (a space at both ends) and queries are framed the same way, so "cat"
never matches inside "concatenate".
"""

from __future__ import annotations

import functools
import html
import re
import unicodedata

import numpy as np

NORMALISATION = "nfkc-casefold-alnum-noignorable-cjkchar/2"
_NOT_WORD = re.compile(r"[\W_]+")


@functools.cache
def _invisible() -> dict[int, None]:
    """Characters deleted before comparison: format characters (Cf), combining and enclosing
    marks (Mn, Me: what NFKC leaves of them; an accent or a variation selector inside a word
    would otherwise split it), and the other default-ignorable code points (Hangul fillers,
    Mongolian selectors, the tag block), all invisible or nearly so in running text."""
    table: dict[int, None] = {}
    for cp in [*range(0x20000), *range(0xE0000, 0xE1000)]:  # every Mn, Me and Cf code point lies in these planes
        if unicodedata.category(chr(cp)) in ("Mn", "Me", "Cf"):
            table[cp] = None
    for lo, hi in ((0x115F, 0x1160), (0x17B4, 0x17B5), (0x180B, 0x180F), (0x3164, 0x3164), (0xFFA0, 0xFFA0),
                   (0xFFF0, 0xFFF8), (0x1BCA0, 0x1BCA3), (0x1D173, 0x1D17A), (0xE0000, 0xE0FFF)):
        table.update(dict.fromkeys(range(lo, hi + 1)))
    return table


# Scripts written without spaces between words: each character is compared as a word, so an item
# copied into the middle of a clause is found (word n-grams there are character n-grams).
_UNSPACED = re.compile("([\u0e00-\u0eff\u1000-\u109f\u1780-\u17ff\u3040-\u30ff\u3100-\u312f\u3400-\u4dbf"
                       "\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003134f])")
# ASCII text (most of any English corpus) takes a byte-table path with the same result: NFKC
# and case folding of ASCII are lower-casing, and the non-word characters are the non-alphanumerics.
_ASCII = bytes(ord(chr(c).lower()) if chr(c).isalnum() else 0x20 for c in range(128)) + b" " * 128


def normalise(text: str) -> str:
    """Words of ``text`` in compared form, separated by single spaces, no leading or trailing space.
    HTML character references are decoded first (``&#101;`` is an e)."""
    if "&" in text:
        text = html.unescape(text)
    if text.isascii():
        return b" ".join(text.encode("ascii").translate(_ASCII).split()).decode("ascii")
    return normalise_unicode(text)


def normalise_unicode(text: str) -> str:
    """The general path of ``normalise`` (any text)."""
    folded = unicodedata.normalize("NFKC", text).casefold().translate(_invisible())
    return _NOT_WORD.sub(" ", _UNSPACED.sub(r" \1 ", folded)).strip()


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
