"""The query surface over a corpus backend: count, find, longest spans, n-gram overlap and
near-duplicates, all in the compared form of ``normalise``.

One pass of matching statistics per document (the longest corpus match starting at each word)
answers most questions at once: a word n-gram is in the corpus exactly when the match starting at
its first word covers its last; the document is present verbatim when the match at its first word
covers all of it; maximal spans are the matches not contained in an earlier one (OLMoTrace's
attribution, at word granularity). The 50-character rule needs the match at every character.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace

import numpy as np

from verifier.errors import VerifierError
from verifier.overlap.index import CorpusIndex, Found, Hit
from verifier.overlap.normalise import char_starts, framed, normalise, word_starts

DOC_SEPARATOR = 0xFE  # between the documents of one batch: in neither UTF-8 nor the index
FIFTY = 50


@dataclass(frozen=True)
class Span:
    """A maximal run of whole words of the query found verbatim in the corpus: character offsets
    in the compared text, its length in words, its corpus count and documents holding it."""

    start: int
    end: int
    words: int
    count: int
    documents: list[Hit] = field(default_factory=list)
    start_word: int = 0


@dataclass(frozen=True)
class Lookup:
    """What the corpus holds of one document (compared form)."""

    text: str
    words: int
    ngram: int
    ngrams: int
    ngrams_found: int
    verbatim: bool
    longest_words: int
    longest_chars: int | None
    fifty_char: bool | None
    spans: list[Span]
    near_duplicates: list[tuple[Hit, float]] | None

    @property
    def ngram_share(self) -> float:
        return self.ngrams_found / self.ngrams if self.ngrams else 0.0


def count(index: CorpusIndex, text: str) -> int:
    """Whole-word occurrences of ``text`` (compared form) in the corpus."""
    frame = framed(text)
    return int(index.count_frames([frame])[0]) if frame else 0


def find(index: CorpusIndex, text: str, limit: int = 10) -> Found:
    """Occurrences of ``text`` and the documents that contain it, with their metadata."""
    frame = framed(text)
    return index.find_frame(frame, limit) if frame else Found(0)


def lookup(index: CorpusIndex, texts: list[str], *, ngram: int = 13, min_span_words: int = 8, spans: int = 10,
           span_documents: int = 3, characters: bool = False, near_duplicates: float | None = None) -> list[Lookup]:
    """Matching statistics of each text against the corpus, summarised (see the module doc).

    ``characters`` adds the longest match in characters and the 50-character rule (a search at
    every character: use it for suspect sets, not for millions of documents); ``near_duplicates``
    is the similarity threshold of the edited-copy check (``CorpusIndex.near_duplicates``; None: not run)."""
    if not (1 <= ngram <= 1000 and 1 <= min_span_words <= 1000 and spans >= 0 and span_documents >= 0):
        raise VerifierError("ngram and min_span_words must be 1-1000 words; spans and span_documents at least 0")
    if near_duplicates is not None and not 0 < near_duplicates <= 1:
        raise VerifierError(f"near_duplicates {near_duplicates}: a share in (0, 1]")
    frames = [framed(t) for t in texts]
    offsets = np.cumsum([0] + [len(f) + 1 for f in frames])[:-1]
    buffer = np.frombuffer(bytes([DOC_SEPARATOR]).join(frames) + bytes([DOC_SEPARATOR]), dtype=np.uint8)

    def longest_matches(starts_of: Callable[[bytes], np.ndarray]) -> tuple[list[np.ndarray], list[np.ndarray]]:
        """Per text, its start positions and the longest corpus match from each."""
        starts = [starts_of(f) for f in frames]
        positions = np.concatenate([s + o for s, o in zip(starts, offsets)] or [np.zeros(0, np.int64)])
        ends = np.concatenate([np.full(s.size, o + len(f)) for s, f, o in zip(starts, frames, offsets)] or [np.zeros(0, np.int64)])
        lengths = index.matching(buffer, positions, ends)
        cut = np.cumsum([0] + [s.size for s in starts])
        return starts, [lengths[cut[i]:cut[i + 1]] for i in range(len(frames))]

    word_pos, word_len = longest_matches(word_starts)
    char_best: list[int | None] = [None] * len(frames)
    if characters:
        char_pos, char_len = longest_matches(char_starts)
        char_best = [_longest_chars(f, p, l) if f else 0 for f, p, l in zip(frames, char_pos, char_len)]
    covered = [_words_covered(f, p, l) for f, p, l in zip(frames, word_pos, word_len)]
    near = [None if near_duplicates is None else index.near_duplicates(normalise(t), near_duplicates) if f else []
            for t, f in zip(texts, frames)]
    results = [summarise(t, c, ngram, min_span_words, spans, cb, nd) for t, c, cb, nd in zip(texts, covered, char_best, near)]
    wanted = [(i, span) for i, r in enumerate(results) for span in r.spans]
    if wanted:
        frames_of = [f" {' '.join(results[i].text.split()[span.start_word:span.start_word + span.words])} ".encode("utf-8") for i, span in wanted]
        for (i, span), found in zip(wanted, (index.find_frame(f, span_documents) for f in frames_of)):
            results[i].spans[results[i].spans.index(span)] = replace(span, count=found.count, documents=found.documents)
    return results


def maximal_spans(covered: np.ndarray, min_words: int) -> list[tuple[int, int]]:
    """(first word, words) of every maximal verbatim span of at least ``min_words`` words: the
    match at each word start that reaches past every earlier one."""
    found: list[tuple[int, int]] = []
    reach = 0
    for w, k in enumerate(covered.tolist()):
        if k >= min_words and w + k > reach:
            found.append((w, k))
            reach = w + k
    return found


def covered_from_spans(words: int, spans: list[tuple[int, int]]) -> np.ndarray:
    """Per word, the longest match starting there, as far as maximal spans tell (spans shorter
    than the shortest one asked for are unknown and read as 0)."""
    covered = np.zeros(words, dtype=np.int64)
    for first, k in spans:
        for w in range(first, first + k):
            covered[w] = max(covered[w], first + k - w)
    return covered


def summarise(text: str, covered: np.ndarray, ngram: int, min_span_words: int, spans: int,
              longest_chars: int | None, near: list[tuple[Hit, float]] | None) -> Lookup:
    """A document's lookup from the longest match at each word: n-grams found, verbatim, spans
    (their counts and documents are filled by the caller)."""
    norm = normalise(text)
    words = norm.split()
    n_words = len(words)
    n = min(ngram, n_words)
    ngrams = n_words - n + 1 if n_words else 0
    found = int(np.count_nonzero(covered[:ngrams] >= n)) if ngrams else 0
    char_at = np.cumsum([0] + [len(w) + 1 for w in words])
    kept = sorted(maximal_spans(covered, min_span_words), key=lambda s: (-s[1], s[0]))[:spans]
    span_list = [Span(int(char_at[w]), int(char_at[w + k] - 1), k, 0, [], w) for w, k in kept]
    return Lookup(norm, n_words, n, ngrams, found, bool(n_words and covered[0] == n_words), int(covered.max(initial=0)),
                  longest_chars, None if longest_chars is None else longest_chars >= FIFTY, span_list, near)


def _words_covered(frame: bytes, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Per word start, how many whole words (with the space after the last) the match covers."""
    if not starts.size:
        return np.zeros(0, dtype=np.int64)
    after = np.append(starts[1:], len(frame) - 1) + 1  # end (exclusive) of each word's trailing space
    return np.searchsorted(after, starts + lengths, side="right") - np.arange(starts.size)


def _longest_chars(frame: bytes, positions: np.ndarray, lengths: np.ndarray) -> int:
    """The longest match in characters (frame spaces at both ends not counted)."""
    is_start = (np.frombuffer(frame, dtype=np.uint8) & 0xC0) != 0x80
    before = np.concatenate([[0], np.cumsum(is_start)])
    inner_lo = np.maximum(positions, 1)
    inner_hi = np.minimum(positions + lengths, len(frame) - 1)
    chars = before[np.maximum(inner_hi, inner_lo)] - before[inner_lo]
    return int(chars.max(initial=0))
