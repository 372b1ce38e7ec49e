"""Suffix-array search over one shard, vectorised over many queries at once.

Every query runs the same binary search, so instead of one Python loop per query the search
advances all of them a step at a time: each step gathers the corpus bytes at every query's
midpoint into one matrix and compares it with the query matrix in numpy. Corpus bytes past the
end of the text read as -1 (an ended suffix sorts before its extensions, as the suffix array
orders them).
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Sequence

import numpy as np

ROWS_PER_BLOCK = 4096
SCALAR_QUERIES = 32  # up to this many queries, one C-level bisect each beats a vectorised step's overhead


class Prefixes(Sequence[bytes]):
    """The suffix array seen as the sorted sequence of each suffix's first ``width`` bytes, for
    ``bisect`` (truncating keeps the order, and equal prefixes are exactly the occurrences)."""

    def __init__(self, text: bytes | memoryview, sa: memoryview, width: int) -> None:
        self.text, self.sa, self.width = text, sa, width

    def __len__(self) -> int:
        return len(self.sa)

    def __getitem__(self, i):  # noqa: ANN001, ANN204 - a sequence of the suffix array, read by bisect
        start = self.sa[i]
        return self.text[start : start + self.width]


def windows(text: np.ndarray, positions: np.ndarray, width: int) -> np.ndarray:
    """``width`` bytes of ``text`` from each position, as int16 with -1 past the end."""
    idx = positions.astype(np.int64)[:, None] + np.arange(width, dtype=np.int64)
    inside = idx < text.shape[0]
    out = np.full(idx.shape, -1, dtype=np.int16)
    out[inside] = text[idx[inside]]
    return out


def pack(queries: list[bytes]) -> tuple[np.ndarray, np.ndarray]:
    """Queries as one int16 matrix padded with -1, and their lengths."""
    lengths = np.fromiter((len(q) for q in queries), dtype=np.int64, count=len(queries))
    matrix = np.full((len(queries), max(int(lengths.max(initial=0)), 1)), -1, dtype=np.int16)
    flat = np.frombuffer(b"".join(queries), dtype=np.uint8)
    rows = np.repeat(np.arange(len(queries)), lengths)
    cols = np.arange(flat.size) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    matrix[rows, cols] = flat
    return matrix, lengths


def _first_difference(corpus: np.ndarray, queries: np.ndarray, lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per row: whether the corpus window differs from the query within the query's length, and where."""
    differ = (corpus != queries) & (np.arange(queries.shape[1]) < lengths[:, None])
    return differ.any(axis=1), differ.argmax(axis=1)


def bound(text: np.ndarray, sa: np.ndarray, queries: np.ndarray, lengths: np.ndarray, upper: bool) -> np.ndarray:
    """Per query, the first suffix-array rank whose first ``length`` bytes are >= the query
    (``upper``: > the query). ``upper - lower`` counts the occurrences."""
    k = queries.shape[0]
    lo = np.zeros(k, dtype=np.int64)
    hi = np.full(k, sa.shape[0], dtype=np.int64)
    rows = np.arange(k)
    while rows.size:
        mid = (lo[rows] + hi[rows]) // 2
        q = queries[rows]
        corpus = windows(text, np.asarray(sa[mid]), q.shape[1])
        has, first = _first_difference(corpus, q, lengths[rows])
        r = np.arange(rows.size)
        right = has & (corpus[r, first] < q[r, first])
        if upper:
            right |= ~has
        lo[rows[right]] = mid[right] + 1
        hi[rows[~right]] = mid[~right]
        rows = rows[lo[rows] < hi[rows]]
    return lo


def count_range(
    text: np.ndarray, sa: np.ndarray, queries: list[bytes], scalar: tuple[bytes | memoryview, memoryview] | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Suffix-array ranges [lo, hi) of each query's occurrences. Given ``scalar`` (the text as a
    buffer and the suffix array as an int memoryview), a few queries are bisected one by one."""
    lo = np.empty(len(queries), dtype=np.int64)
    hi = np.empty(len(queries), dtype=np.int64)
    if scalar is not None and len(queries) <= SCALAR_QUERIES:
        for i, query in enumerate(queries):
            prefixes = Prefixes(scalar[0], scalar[1], len(query))
            lo[i], hi[i] = bisect_left(prefixes, query), bisect_right(prefixes, query)
        return lo, hi
    for start in range(0, len(queries), ROWS_PER_BLOCK):
        matrix, lengths = pack(queries[start : start + ROWS_PER_BLOCK])
        lo[start : start + len(lengths)] = bound(text, sa, matrix, lengths, upper=False)
        hi[start : start + len(lengths)] = bound(text, sa, matrix, lengths, upper=True)
    return lo, hi


def matching_lengths(
    text: np.ndarray, sa: np.ndarray, query: np.ndarray, positions: np.ndarray, ends: np.ndarray
) -> np.ndarray:
    """Per position p: the length of the longest prefix of ``query[p:end]`` that occurs in the
    shard (the matching statistics of the query).

    The longest match of a string is shared with one of the two suffixes next to the string's
    place in the suffix array, so one lower-bound search and two comparisons give it. Every
    position is searched on its first 64 bytes; positions whose match fills that window are
    searched again in position order, 64 at a time, on all that remains of their text (growing
    the window until the match ends). A match that runs to the end of its text settles every
    later position of the same text at once (a suffix of a match is a match), so a document found
    whole costs one wide search, not one per word."""
    n = sa.shape[0]
    best = np.zeros(positions.size, dtype=np.int64)
    remaining = (ends - positions).astype(np.int64)
    if not n or not positions.size:
        return best
    _search_rows(text, sa, query, positions, remaining, best, np.arange(positions.size), 64)
    todo = np.flatnonzero((best == np.minimum(remaining, 64)) & (remaining > 64))
    while todo.size:
        chunk, todo = todo[:64], todo[64:]
        rows, width = chunk, 64
        while rows.size:  # all that remains (up to 64 KiB), then 4x wider while matches still fill the window
            width = min(int(remaining[rows].max()), 1 << 16 if width < 1 << 16 else width * 4)
            _search_rows(text, sa, query, positions, remaining, best, rows, width)
            rows = rows[(best[rows] == np.minimum(remaining[rows], width)) & (remaining[rows] > width)]
        whole = chunk[best[chunk] == remaining[chunk]]
        if whole.size and todo.size:
            # per text end, the first position whose match runs to it: every later one of that text is settled
            order = np.argsort(ends[whole], kind="stable")
            ended, first = np.unique(ends[whole][order], return_index=True)
            first_at = np.minimum.reduceat(positions[whole][order], first)
            at = np.minimum(np.searchsorted(ended, ends[todo]), ended.size - 1)
            settled = (ended[at] == ends[todo]) & (positions[todo] > first_at[at])
            best[todo[settled]] = remaining[todo[settled]]
            todo = todo[~settled]
    return best


def _search_rows(
    text: np.ndarray,
    sa: np.ndarray,
    query: np.ndarray,
    positions: np.ndarray,
    remaining: np.ndarray,
    best: np.ndarray,
    rows_all: np.ndarray,
    width: int,
) -> None:
    """Longest match of the first ``width`` bytes from each row's position; raises ``best``."""
    n = sa.shape[0]
    block = max(1, min(ROWS_PER_BLOCK, (1 << 22) // max(width, 1)))  # at most ~4M window bytes in memory at once
    for start in range(0, rows_all.size, block):
        rows = rows_all[start : start + block]
        lengths = np.minimum(remaining[rows], width)
        w = max(int(lengths.max()), 1)
        q = windows(query, positions[rows], w)
        insert = bound(text, sa, q, lengths, upper=False)
        for neighbour in (insert - 1, insert):
            valid = (neighbour >= 0) & (neighbour < n)
            where = np.asarray(sa[np.clip(neighbour, 0, n - 1)]).astype(np.int64)
            has, first = _first_difference(windows(text, where, w), q, lengths)
            common = np.where(has, first, lengths) * valid
            best[rows] = np.maximum(best[rows], common)
