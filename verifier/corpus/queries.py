"""The query surface over a corpus backend: count, find, longest spans, n-gram overlap and
near-duplicates, all in the compared form of ``normalise``.

One pass of matching statistics per document (the longest corpus match starting at each word)
answers most questions at once: a word n-gram is in the corpus exactly when the match starting at
its first word covers its last; the document is present verbatim when the match at its first word
covers all of it; maximal spans are the matches not contained in an earlier one (OLMoTrace's
attribution, at word granularity). The 50-character rule needs the match at every character.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace

import numpy as np

from verifier.corpus.build import MARKED
from verifier.corpus.forms import Reading, read_form, script_of, suspect_readings
from verifier.corpus.index import CorpusIndex, Found, Hit
from verifier.corpus.normalise import char_starts, framed, normalise, word_starts
from verifier.errors import VerifierError

DOC_SEPARATOR = 0xFE  # between the documents of one batch: in neither UTF-8 nor the index
FIFTY = 50
UNIT_WORDS = 6  # the shortest line or sentence looked up as a unit
MIN_SCRIPT_WORDS = 5  # the fewest words in a script for the share found in another script to count
_SENTENCE_END = re.compile(r"(?<=[.!?;:])\s+")
CHUNK_WORDS, CHUNK_OVERLAP = 1500, 200  # pieces of long texts; the overlap exceeds any n-gram the policy allows (64)


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
    near_duplicates: (
        list[tuple[Hit, float, float]] | None
    )  # (document, containment, closeness): CorpusIndex.near_duplicates
    form: str = "plain"
    unread: tuple[str, ...] = ()
    # Source-wide shared text (boilerplate): words inside verbatim spans that many corpus
    # documents hold; the document's own content is what lies outside them.
    shared_words: int = 0
    shared_spans: list[Span] = field(default_factory=list)
    content_ngrams: int | None = None  # n-grams touching no shared word (None: nothing was set aside)
    content_found: int | None = None
    covered_words: int = 0  # own words inside a word n-gram found in the corpus
    longest_shared: int = 0  # words of the longest shared span set aside
    # The document's lines and sentences of at least UNIT_WORDS words, looked up whole (not held by
    # shared_documents corpus documents or more): found in any order, they are its content present.
    units: int = 0
    units_found: int = 0
    # The lookups of the document's other readings (its raw text, a table's columns, its romanised
    # form, ...): the document is found when any reading is, clean only when every reading is.
    alternatives: list[Lookup] = field(default_factory=list)
    other_script_share: float = 0.0  # its words the corpus holds in another script (``_other_script_share``)

    @property
    def ngram_share(self) -> float:
        return self.ngrams_found / self.ngrams if self.ngrams else 0.0

    @property
    def word_coverage(self) -> float:
        """The share of the document's own words lying inside a word n-gram found in the corpus:
        a copy with a few words changed covers all but those words; a template filled with other
        names and numbers, or a prefix, covers far less."""
        own = self.words - self.shared_words
        return self.covered_words / own if own else 0.0

    @property
    def content_share(self) -> float:
        """The share of the document's own word n-grams (those touching no shared text) found in
        the corpus. N-grams, not words: two documents sharing one templated sentence share most
        of their words but few of their n-grams."""
        ngrams = self.ngrams if self.content_ngrams is None else self.content_ngrams
        found = self.ngrams_found if self.content_found is None else self.content_found
        return found / ngrams if ngrams else 0.0


def count(index: CorpusIndex, text: str) -> int:
    """Whole-word occurrences of ``text`` (read in its form, compared form) in the corpus."""
    frame = framed(read_form(text).text)
    return int(index.count_frames([frame])[0]) if frame else 0


def find(index: CorpusIndex, text: str, limit: int = 10) -> Found:
    """Occurrences of ``text`` (read in its form) and the documents that contain it, with their metadata."""
    frame = framed(read_form(text).text)
    return index.find_frame(frame, limit) if frame else Found(0)


def lookup(
    index: CorpusIndex,
    texts: list[str],
    *,
    ngram: int = 13,
    min_span_words: int = 8,
    spans: int = 10,
    span_documents: int = 3,
    characters: bool = False,
    near_duplicates: float | None = None,
    shared_documents: int | None = None,
) -> list[Lookup]:
    """Matching statistics of each text against the corpus, summarised (see the module doc), for
    its main reading, with the lookups of its other readings (``forms.readings``: the raw text, a
    table's columns, its romanised form, ...) as ``alternatives`` and its lines and sentences
    looked up as units.

    ``characters`` adds the longest match in characters and the 50-character rule (a search at
    every character: use it for suspect sets, not for millions of documents); ``near_duplicates``
    is the similarity threshold of the edited-copy check (``CorpusIndex.near_duplicates``; None:
    not run); ``shared_documents`` sets aside, as source-wide shared text, verbatim spans of at
    least ``min(ngram, min_span_words)`` words that at least that many corpus documents hold
    (None: nothing set aside); the 50-character rule and the edited-copy check then look at the
    document's own content only."""
    # Romanised readings of other scripts are compared only where the corpus holds some.
    marked = any(label.endswith(MARKED) for label in index.manifest.readings)
    every = [[r for r in suspect_readings(t) if marked or not r.marked] for t in texts]
    flat = [r for rs in every for r in rs]
    found = _lookup_readings(
        index,
        flat,
        ngram=ngram,
        min_span_words=min_span_words,
        spans=spans,
        span_documents=span_documents,
        characters=characters,
        near_duplicates=near_duplicates,
        shared_documents=shared_documents,
    )
    out, at = [], 0
    for rs in every:
        main, others = found[at], found[at + 1 : at + len(rs)]
        at += len(rs)
        units, units_found = _units(index, rs[0].text, shared_documents)
        out.append(
            replace(
                main,
                alternatives=others,
                units=units,
                units_found=units_found,
                other_script_share=_other_script_share(index, rs[0].text),
            )
        )
    return out


def _other_script_share(index: CorpusIndex, text: str) -> float:
    """The share of a text's distinct words (of four letters or more, romanised) that the corpus
    holds written in another script: its words in other scripts against the corpus's Latin text,
    its Latin words against the romanised pages of other scripts (the larger share, each of at
    least MIN_SCRIPT_WORDS words). Where it is high the corpus holds the text's language in
    another script, and a copy romanised another way is not compared."""
    from anyascii import anyascii

    sides: dict[bool, set[str]] = {True: set(), False: set()}  # keyed by "written in another script"
    for word in text.split():
        foreign = any(ch.isalpha() and not ch.isascii() and script_of(ch) != "LATIN" for ch in word)
        sides[foreign].update(w for w in normalise(anyascii(word)).split() if len(w) >= 4 and not w.isdigit())
    shares = [0.0]
    for foreign, words in sides.items():
        if len(words) >= MIN_SCRIPT_WORDS:
            counts = index.count_frames([f" {w if foreign else w.upper()} ".encode() for w in sorted(words)])
            shares.append(float(np.count_nonzero(counts)) / len(words))
    return max(shares)


def _units(index: CorpusIndex, text: str, shared_documents: int | None) -> tuple[int, int]:
    """(units, units found) of a text: its distinct lines and sentences of at least UNIT_WORDS
    words, whole words in compared form, less those held by ``shared_documents`` corpus documents
    or more (a line a whole source repeats is no evidence about this document)."""
    units = sorted(
        {
            norm
            for line in text.splitlines()
            for sentence in _SENTENCE_END.split(line)
            if len((norm := normalise(sentence)).split()) >= UNIT_WORDS
        }
    )
    if not units:
        return 0, 0
    frames = [f" {u} ".encode() for u in units]
    counts = index.count_frames(frames)
    found = [f for f, c in zip(frames, counts.tolist()) if c > 0]
    common = (
        sum(index.find_frame(f, 0).documents_total >= shared_documents for f in found)
        if shared_documents is not None
        else 0
    )
    return len(units) - common, len(found) - common


def _lookup_readings(
    index: CorpusIndex,
    read: list[Reading],
    *,
    ngram: int,
    min_span_words: int,
    spans: int,
    span_documents: int,
    characters: bool,
    near_duplicates: float | None,
    shared_documents: int | None,
) -> list[Lookup]:
    """``lookup`` of each reading on its own (a romanised reading of another script compared in
    its own namespace, in upper case, as the index stores it)."""
    if not (1 <= ngram <= 1000 and 1 <= min_span_words <= 1000 and spans >= 0 and span_documents >= 0):
        raise VerifierError("ngram and min_span_words must be 1-1000 words; spans and span_documents at least 0")
    if near_duplicates is not None and not 0 < near_duplicates <= 1:
        raise VerifierError(f"near_duplicates {near_duplicates}: a share in (0, 1]")
    # Long texts are looked up in overlapping pieces: matching statistics cost grows with the square
    # of a long near-match, and a piece bounds it. Pieces overlap by more than any n-gram, so n-gram
    # counts and the 50-character rule are exact; a verbatim span longer than the overlap may be
    # reported in two parts; whole-text presence is one count of the whole text.
    norms = [normalise(r.text).upper().split() if r.marked else normalise(r.text).split() for r in read]
    pieces = [
        (i, first, f" {' '.join(words[first : first + CHUNK_WORDS])} ".encode() if words else b"")
        for i, words in enumerate(norms)
        for first in _piece_starts(len(words))
    ]
    frames = [frame for _, _, frame in pieces]
    offsets = np.cumsum([0] + [len(f) + 1 for f in frames])[:-1]
    buffer = np.frombuffer(bytes([DOC_SEPARATOR]).join(frames) + bytes([DOC_SEPARATOR]), dtype=np.uint8)

    def longest_matches(starts_of: Callable[[bytes], np.ndarray]) -> tuple[list[np.ndarray], list[np.ndarray]]:
        """Per piece, its start positions and the longest corpus match from each."""
        starts = [starts_of(f) for f in frames]
        positions = np.concatenate([s + o for s, o in zip(starts, offsets)] or [np.zeros(0, np.int64)])
        ends = np.concatenate(
            [np.full(s.size, o + len(f)) for s, f, o in zip(starts, frames, offsets)] or [np.zeros(0, np.int64)]
        )
        lengths = index.matching(buffer, positions, ends)
        cut = np.cumsum([0] + [s.size for s in starts])
        return starts, [lengths[cut[i] : cut[i + 1]] for i in range(len(frames))]

    word_pos, word_len = longest_matches(word_starts)
    covered = [np.zeros(len(words), dtype=np.int64) for words in norms]
    for (i, first, frame), pos, length in zip(pieces, word_pos, word_len):
        part = _words_covered(frame, pos, length)
        covered[i][first : first + part.size] = np.maximum(covered[i][first : first + part.size], part)
    shared = [np.zeros(len(words), dtype=bool) for words in norms]
    shared_spans: list[list[Span]] = [[] for _ in norms]
    if shared_documents is not None:
        for i, words in enumerate(norms):
            for first, k in maximal_spans(covered[i], min(ngram, min_span_words)):
                found = index.find_frame(f" {' '.join(words[first : first + k])} ".encode(), span_documents)
                if found.documents_total >= shared_documents:
                    shared[i][first : first + k] = True
                    shared_spans[i].append(Span(0, 0, k, found.count, found.documents, first))
    char_best: list[int | None] = [None] * len(read)
    if characters:
        char_pos, char_len = longest_matches(char_starts)
        char_best = [0] * len(read)
        for (i, first, frame), pos, length in zip(pieces, char_pos, char_len):
            if frame:
                if shared[i].any():  # only the part of a match before the next shared text counts
                    pos, length = _outside_shared(
                        frame, shared[i][first : first + len(word_starts(frame))], pos, length
                    )
                char_best[i] = max(char_best[i] or 0, _longest_chars(frame, pos, length))
    whole = [
        bool(words)
        and bool(
            covered[i][0] == len(words)
            if len(words) <= CHUNK_WORDS
            else index.count_frames([f" {' '.join(words)} ".encode()])[0] > 0
        )
        for i, words in enumerate(norms)
    ]
    own_words = [[w for w, s_ in zip(words, mask) if not s_] for words, mask in zip(norms, shared)]
    near = [
        None if near_duplicates is None else index.near_duplicates(" ".join(own), near_duplicates) if own else []
        for own in own_words
    ]
    results = [
        summarise(" ".join(words), c, ngram, min_span_words, spans, cb, nd, w, mask)
        for words, c, cb, nd, w, mask in zip(norms, covered, char_best, near, whole, shared)
    ]
    results = [
        replace(r, form=reading.form, unread=reading.unread, shared_spans=_placed(r.text, found))
        for r, reading, found in zip(results, read, shared_spans)
    ]
    wanted = [(i, span) for i, r in enumerate(results) for span in r.spans]
    if wanted:
        frames_of = [
            f" {' '.join(results[i].text.split()[span.start_word : span.start_word + span.words])} ".encode()
            for i, span in wanted
        ]
        for (i, span), found in zip(wanted, (index.find_frame(f, span_documents) for f in frames_of)):
            results[i].spans[results[i].spans.index(span)] = replace(span, count=found.count, documents=found.documents)
    return results


def _outside_shared(
    frame: bytes, shared_words: np.ndarray, positions: np.ndarray, lengths: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Matches starting outside shared text, each cut where the next shared word begins: a match
    that runs from a document's own last letters into a credit line counts only for its own part."""
    starts = word_starts(frame)
    ends = np.append(starts[1:], len(frame) - 1)
    shared_byte = np.zeros(len(frame) + 1, dtype=bool)
    for lo, hi in zip(starts[shared_words], ends[shared_words]):
        shared_byte[lo : hi + 1] = True
    shared_byte[-1] = True
    next_shared = np.minimum.accumulate(np.where(shared_byte, np.arange(len(frame) + 1), len(frame))[::-1])[::-1]
    own = ~shared_byte[positions]
    positions, lengths = positions[own], lengths[own]
    return positions, np.minimum(lengths, next_shared[positions] - positions)


def _placed(norm: str, spans: list[Span]) -> list[Span]:
    """Spans with their character offsets in the compared text filled in from their words."""
    char_at = np.cumsum([0] + [len(w) + 1 for w in norm.split()])
    return [replace(s, start=int(char_at[s.start_word]), end=int(char_at[s.start_word + s.words] - 1)) for s in spans]


def _piece_starts(words: int) -> list[int]:
    """First words of the overlapping pieces a text of ``words`` words is looked up in."""
    if words <= CHUNK_WORDS:
        return [0]
    stride = CHUNK_WORDS - CHUNK_OVERLAP
    return list(range(0, words - CHUNK_OVERLAP, stride))


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


def summarise(
    norm: str,
    covered: np.ndarray,
    ngram: int,
    min_span_words: int,
    spans: int,
    longest_chars: int | None,
    near: list[tuple[Hit, float]] | None,
    verbatim: bool | None = None,
    shared: np.ndarray | None = None,
) -> Lookup:
    """A document's lookup, from its compared form and the longest match at each word: n-grams
    found, verbatim (unless given), spans (their counts and documents are filled by the caller),
    and, with ``shared`` (per word: inside source-wide shared text), the document's own n-grams
    (those touching no shared word) and how many of them were found."""
    words = norm.split()
    n_words = len(words)
    n = min(ngram, n_words)
    ngrams = n_words - n + 1 if n_words else 0
    found = int(np.count_nonzero(covered[:ngrams] >= n)) if ngrams else 0
    char_at = np.cumsum([0] + [len(w) + 1 for w in words])
    kept = sorted(maximal_spans(covered, min_span_words), key=lambda s: (-s[1], s[0]))[:spans]
    span_list = [Span(int(char_at[w]), int(char_at[w + k] - 1), k, 0, [], w) for w, k in kept]
    whole = bool(n_words and covered[0] == n_words) if verbatim is None else bool(verbatim)
    content_ngrams = content_found = None
    if shared is not None and ngrams:
        touched = np.convolve(shared.astype(np.int64), np.ones(n, dtype=np.int64), mode="valid") > 0  # per n-gram start
        content_ngrams = int(np.count_nonzero(~touched))
        content_found = int(np.count_nonzero(~touched & (covered[:ngrams] >= n)))
    inside = np.zeros(n_words, dtype=bool)
    if ngrams:
        marks = np.zeros(n_words + 1, dtype=np.int64)
        starts = np.flatnonzero(covered[:ngrams] >= n)
        np.add.at(marks, starts, 1)
        np.add.at(marks, starts + n, -1)
        inside = np.cumsum(marks[:-1]) > 0
    own = np.ones(n_words, dtype=bool) if shared is None else ~shared
    runs = (
        np.diff(np.flatnonzero(np.diff(np.concatenate([[0], (~own).astype(np.int8), [0]]))))[::2]
        if not own.all()
        else np.zeros(0)
    )
    return Lookup(
        norm,
        n_words,
        n,
        ngrams,
        found,
        whole,
        int(covered.max(initial=0)),
        longest_chars,
        None if longest_chars is None else longest_chars >= FIFTY,
        span_list,
        near,
        shared_words=int(n_words - own.sum()),
        content_ngrams=content_ngrams,
        content_found=content_found,
        covered_words=int(np.count_nonzero(inside & own)),
        longest_shared=int(runs.max(initial=0)),
    )


def _words_covered(frame: bytes, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Per word start, how many whole words (with the space after the last) the match covers."""
    if not starts.size:
        return np.zeros(0, dtype=np.int64)
    after = np.append(starts[1:], len(frame) - 1) + 1  # end (exclusive) of each word's trailing space
    return np.searchsorted(after, starts + lengths, side="right") - np.arange(starts.size)


def _longest_chars(frame: bytes, positions: np.ndarray, lengths: np.ndarray) -> int:
    """The longest match in whole characters (frame spaces at both ends not counted): a byte
    match that stops inside a multi-byte character does not count that character."""
    raw = np.frombuffer(frame, dtype=np.uint8)
    is_start = np.append((raw & 0xC0) != 0x80, True)  # a character starts at each index (and the end counts as one)
    before = np.concatenate([[0], np.cumsum(is_start[:-1])])
    lo = np.maximum(positions, 1)
    hi = np.minimum(positions + lengths, len(frame) - 1)
    hi = np.maximum(hi, lo)
    # back the end off to a character boundary: the match must cover the whole last character
    while True:
        inside = ~is_start[hi] & (hi > lo)
        if not inside.any():
            break
        hi = np.where(inside, hi - 1, hi)
    return int((before[hi] - before[lo]).max(initial=0))
