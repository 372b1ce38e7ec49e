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

from verifier.corpus.forms import FORMS_VERSION

# Texts are read in their stored form first (verifier.corpus.forms), then normalised.
NORMALISATION = f"nfkc-casefold-alnum-noignorable-cjkchar/3+{FORMS_VERSION}"

# Combining marks that decorate letters (accents left over after NFKC, Arabic vowel points, Hebrew
# points): deleted, since inside a word they would otherwise split it. Marks that are letters of
# their script (Thai and Indic vowel signs: ไม่ "not" and ไม้ "wood" differ only by one) are kept
# as part of their word.
_DECORATIVE = (
    (0x0300, 0x036F),
    (0x0483, 0x0489),
    (0x0591, 0x05C7),
    (0x0610, 0x061A),
    (0x064B, 0x065F),
    (0x0670, 0x0670),
    (0x06D6, 0x06ED),
    (0x1AB0, 0x1AFF),
    (0x1DC0, 0x1DFF),
    (0x20D0, 0x20FF),
    (0xFE20, 0xFE2F),
)
# Default-ignorable code points besides the format characters: invisible in running text.
_IGNORABLE = (
    (0x034F, 0x034F),
    (0x115F, 0x1160),
    (0x17B4, 0x17B5),
    (0x180B, 0x180F),
    (0x3164, 0x3164),
    (0xFE00, 0xFE0F),
    (0xFFA0, 0xFFA0),
    (0xFFF0, 0xFFF8),
    (0x1BCA0, 0x1BCA3),
    (0x1D173, 0x1D17A),
    (0xE0000, 0xE0FFF),
)
_PLANES = [*range(0x20000), *range(0xE0000, 0xE1000)]  # every mark and format character lies in these
_SIMPLE_NOT_WORD = re.compile(r"[\W_]+")


@functools.cache
def _invisible() -> dict[int, None]:
    """Characters deleted before comparison: format characters (Cf), the default-ignorables, and
    decorative combining marks."""
    table = {cp: None for cp in _PLANES if unicodedata.category(chr(cp)) == "Cf"}
    for lo, hi in _IGNORABLE + _DECORATIVE:
        table.update(dict.fromkeys(range(lo, hi + 1)))
    return table


def _class(codepoints: list[int]) -> str:
    """A regex character class body of the code points, as ranges."""
    parts, start = [], None
    for cp, following in zip(codepoints, codepoints[1:] + [None]):
        start = cp if start is None else start
        if following != cp + 1:
            parts.append(re.escape(chr(start)) + ("" if cp == start else "-" + re.escape(chr(cp))))
            start = None
    return "".join(parts)


@functools.cache
def _patterns() -> tuple[re.Pattern[str], re.Pattern[str], re.Pattern[str], re.Pattern[str]]:
    """(deleted characters, kept marks, non-word runs, unspaced-script units): a word is letters,
    digits and the marks kept; in scripts written without spaces each character with its marks is
    a word of its own, so an item copied into the middle of a clause is found (word n-grams there
    are character n-grams). Regex classes rather than ``str.translate``: they scan 4x faster."""
    deleted = _invisible()
    marks = _class([cp for cp in _PLANES if unicodedata.category(chr(cp)) in ("Mn", "Mc", "Me") and cp not in deleted])
    unspaced = (
        "\u0e00-\u0eff\u1000-\u109f\u1780-\u17ff\u3040-\u30ff\u3100-\u312f\u3400-\u4dbf"
        "\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003134f"
    )
    return (
        re.compile(f"[{_class(sorted(deleted))}]+"),
        re.compile(f"[{marks}]"),
        re.compile(f"(?:[^\\w{marks}]|_)+"),
        re.compile(f"([{unspaced}][{marks}]*)"),
    )


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
    """The general path of ``normalise`` (any text). Each regex pass runs only where one of the
    text's distinct non-ASCII characters needs it (most non-ASCII text holds a few accents or
    quotes only): the result is that of running them all."""
    deleted, kept_mark, not_word, unit = _patterns()
    folded = unicodedata.normalize("NFKC", text).casefold()
    odd = {ch for ch in set(folded) if ord(ch) > 0x7F}
    invisible = _invisible()
    if any(ord(ch) in invisible for ch in odd):
        folded = deleted.sub("", folded)
    if any(unit.match(ch) for ch in odd):
        folded = unit.sub(r" \1 ", folded)
    # Without a kept mark the plain word pattern finds the same words, several times faster.
    marked = any(kept_mark.match(ch) for ch in odd)
    return (not_word if marked else _SIMPLE_NOT_WORD).sub(" ", folded).strip()


def framed(text: str) -> bytes:
    """``normalise(text)`` as the index stores a document: UTF-8 with a space at both ends."""
    norm = normalise(text)
    return f" {norm} ".encode() if norm else b""


def word_starts(frame: bytes) -> np.ndarray:
    """Byte offsets of the space before each word of a framed text (where word-aligned matches start)."""
    spaces = np.flatnonzero(np.frombuffer(frame, dtype=np.uint8) == 0x20)
    return spaces[:-1]


def char_starts(frame: bytes) -> np.ndarray:
    """Byte offsets of every character of a framed text (UTF-8 continuation bytes excluded)."""
    raw = np.frombuffer(frame, dtype=np.uint8)
    return np.flatnonzero((raw & 0xC0) != 0x80)
