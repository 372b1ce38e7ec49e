"""What a language model sees that a bag of lowercased words does not: casing, punctuation,
typography, whitespace, length and format, as a few dense numbers per text.

A held-out set scraped by another pipeline differs from the suspect set exactly here (lowercased
text, typographic quotes, doubled spaces, boilerplate, another truncation length), and every
token-probability signal moves with it. These features feed the blind exchangeability check
beside word and character n-grams, so such shifts are seen without looking at the model.
"""

from __future__ import annotations

import re
import string
from collections.abc import Sequence

import numpy as np

from verifier.baselines.latest_year import latest_year

TYPOGRAPHIC = set("\u201c\u201d\u2018\u2019\u00ab\u00bb\u2013\u2014\u2026\u00a0\u2009\u202f")
ASCII_PUNCTUATION = set(string.punctuation)
DOUBLE_SPACE = re.compile(r"(?<=\S) {2,}(?=\S)")
WORD = re.compile(r"\w+")

SURFACE_FEATURES = (
    "log_chars",
    "log_words",
    "log_lines",
    "mean_word_length",
    "upper_share",
    "capitalised_word_share",
    "all_caps_word_share",
    "digit_share",
    "punctuation_share",
    "non_ascii_share",
    "typographic_share",
    "ascii_quote_share",
    "double_spaces_per_word",
    "tabs_and_newlines_per_word",
    "edge_whitespace",
    "ends_with_stop",
    "mentions_a_year",
    "latest_year",
)


def surface_features(texts: Sequence[str]) -> np.ndarray:
    """[n, len(SURFACE_FEATURES)] features of each text (finite for any text, the empty one included)."""
    return np.array([_features(text) for text in texts], dtype=np.float64).reshape(len(texts), len(SURFACE_FEATURES))


def _features(text: str) -> list[float]:
    chars = max(1, len(text))
    words = WORD.findall(text)
    n_words = max(1, len(words))
    letters = [c for c in text if c.isalpha()]
    n_letters = max(1, len(letters))
    stripped = text.rstrip()
    year = latest_year(text)
    return [
        np.log1p(len(text)),
        np.log1p(len(words)),
        np.log1p(text.count("\n")),
        sum(map(len, words)) / n_words,
        sum(c.isupper() for c in letters) / n_letters,
        sum(w[0].isupper() for w in words) / n_words,
        sum(w.isupper() and len(w) > 1 for w in words) / n_words,
        sum(c.isdigit() for c in text) / chars,
        sum(c in ASCII_PUNCTUATION for c in text) / chars,
        sum(ord(c) > 127 for c in text) / chars,
        sum(c in TYPOGRAPHIC for c in text) / chars,
        (text.count('"') + text.count("'")) / chars,
        len(DOUBLE_SPACE.findall(text)) / n_words,
        (text.count("\t") + text.count("\n")) / n_words,
        float(text != text.strip()),
        float(stripped[-1:] in (".", "!", "?", '"', "\u201d")),
        float(year is not None),
        (year - 2000) / 10 if year is not None else 0.0,  # dates are what post-cutoff text differs in first
    ]
