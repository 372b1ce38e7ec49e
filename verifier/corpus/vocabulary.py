"""How much of a text was read as words of a language: the measure behind "compared".

A corpus can hold a copy in a form no reading restores - ROT13, mojibake, RTF or mail escapes,
karaoke syllables, letters as symbols, a script written backwards - and a list of forms is walked
around. So the build measures, for every document, the share of its text that some reading
turned into words of one language: each reading's compared words, in windows of WINDOW_WORDS,
are looked up in wordfreq's word lists (the TOP_WORDS most frequent words of each of its 42
languages, in compared form, and romanised for the languages of other alphabets); a window is read
as language when, for one language, at least KNOWN_SHARE of the bytes of its words (numbers left
out) lie in that language's words of three bytes or more. One language, not any: fragments of
words (syllables, letter pairs) are each a word somewhere, rarely all in one language. A reading
that kept less than MIN_KEPT of its characters as letters and digits (symbols, Braille, emoji
letters) is read as none. The document's share is its best reading's, and the rest of its bytes
are counted as not compared. Text in a language none of the lists covers is counted too: what the
lookup cannot read as language, it does not claim to have compared; how much of that a policy
tolerates is its ``max_uncompared_share``.
"""

from __future__ import annotations

import functools

import numpy as np

from verifier.corpus.forms import Reading
from verifier.corpus.normalise import normalise

WINDOW_WORDS = 64
KNOWN_SHARE = 0.4
MIN_KEPT = 0.5
MIN_JUDGED_WORDS = 8  # a text with fewer words of three bytes or more is not judged (too little to tell)
TOP_WORDS = 30_000
NOT_LANGUAGE = "text not read as words of a known language"
# wordfreq's languages written in alphabets and abjads other than Latin: their words romanised too.
ROMANISED = frozenset("ar bg bn el fa he hi mk ru ta uk ur".split())


@functools.cache
def known_words() -> dict[bytes, int]:
    """Each word of wordfreq's lists (compared form, UTF-8; romanised too for languages not
    written in Latin letters) with a bit for each language that has it."""
    import wordfreq
    from anyascii import anyascii

    languages: dict[bytes, int] = {}
    for bit, lang in enumerate(sorted(wordfreq.available_languages(wordlist="small"))):
        words: list[str] = []
        for bucket in wordfreq.get_frequency_list(lang, wordlist="small"):  # most frequent first
            words += bucket
            if len(words) >= TOP_WORDS:
                break
        plain = " ".join(w for w in words[:TOP_WORDS] if w.isascii())
        other = " ".join(w for w in words[:TOP_WORDS] if not w.isascii())
        # One normalise call a part (compared words never merge across spaces); ASCII takes the fast path.
        tokens = set(normalise(plain).encode("ascii").split()) | set(normalise(other).encode("utf-8").split())
        if lang in ROMANISED:
            tokens |= set(normalise(anyascii(other)).encode("utf-8").split())
        for token in tokens:
            languages[token] = languages.get(token, 0) | 1 << bit
    return languages


def language_share(read: list[Reading], frames: list[bytes]) -> float:
    """The share of a document read as words of one language: its best reading's share of
    windows that are (see the module doc); 1.0 for a text too short to judge."""
    known = known_words()
    bits = np.arange(64, dtype=np.uint64)
    best, judged = 0.0, False
    for reading, frame in zip(read, frames):
        chars = len("".join(reading.text.split()).encode("utf-8", errors="surrogatepass"))
        if chars >= 2 * MIN_JUDGED_WORDS and len(frame) - frame.count(b" ") < MIN_KEPT * chars:
            judged = True  # mostly symbols (Braille, letters drawn as emoji): nothing read as words
            continue
        words = [w for w in frame.lower().split() if not w.isdigit()]
        if sum(len(w) >= 3 for w in words) < MIN_JUDGED_WORDS:
            continue
        judged = True
        sizes = np.fromiter(map(len, words), dtype=np.int64, count=len(words))
        masks = np.fromiter((known.get(w, 0) if len(w) >= 3 else 0 for w in words), dtype=np.uint64, count=len(words))
        starts = np.arange(0, len(words), WINDOW_WORDS)
        if starts.size > 1 and len(words) - starts[-1] < WINDOW_WORDS // 2:
            starts = starts[:-1]  # a short last window joins the one before
        in_language = ((masks[:, None] >> bits) & np.uint64(1)).astype(bool)  # word x language
        known_bytes = np.add.reduceat(in_language * sizes[:, None], starts, axis=0).max(axis=1)
        window_bytes = np.add.reduceat(sizes, starts)
        best = max(best, float(window_bytes[known_bytes >= KNOWN_SHARE * window_bytes].sum() / window_bytes.sum()))
        if best == 1.0:
            break
    return best if judged else 1.0
