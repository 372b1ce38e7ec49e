"""Suffix-array search over one shard, vectorised over many queries at once.

Every query runs the same binary search, so instead of one Python loop per query the search
advances all of them a step at a time: each step gathers the corpus bytes at every query's
midpoint into one matrix and compares it with the query matrix in numpy. Corpus bytes past the
end of the text read as -1 (an ended suffix sorts before its extensions, as the suffix array
orders them).
"""

from __future__ import annotations

import numpy as np

ROWS_PER_BLOCK = 4096


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


def count_range(text: np.ndarray, sa: np.ndarray, queries: list[bytes]) -> tuple[np.ndarray, np.ndarray]:
    """Suffix-array ranges [lo, hi) of each query's occurrences."""
    lo = np.empty(len(queries), dtype=np.int64)
    hi = np.empty(len(queries), dtype=np.int64)
    for start in range(0, len(queries), ROWS_PER_BLOCK):
        matrix, lengths = pack(queries[start:start + ROWS_PER_BLOCK])
        lo[start:start + len(lengths)] = bound(text, sa, matrix, lengths, upper=False)
        hi[start:start + len(lengths)] = bound(text, sa, matrix, lengths, upper=True)
    return lo, hi


def matching_lengths(text: np.ndarray, sa: np.ndarray, query: np.ndarray, positions: np.ndarray,
                     ends: np.ndarray) -> np.ndarray:
    """Per position p: the length of the longest prefix of ``query[p:end]`` that occurs in the
    shard (the matching statistics of the query).

    The longest match of a string is shared with one of the two suffixes next to the string's
    place in the suffix array, so one lower-bound search and two comparisons give it. Searches
    start on the first 64 bytes; rows whose match fills the window are searched again wider."""
    n = sa.shape[0]
    best_len = np.zeros(positions.size, dtype=np.int64)
    remaining = (ends - positions).astype(np.int64)
    width = 64
    todo = np.arange(positions.size)
    while todo.size and n:
        for start in range(0, todo.size, ROWS_PER_BLOCK):
            rows = todo[start:start + ROWS_PER_BLOCK]
            lengths = np.minimum(remaining[rows], width)
            w = max(int(lengths.max()), 1)
            q = windows(query, positions[rows], w)
            insert = bound(text, sa, q, lengths, upper=False)
            for neighbour in (insert - 1, insert):
                valid = (neighbour >= 0) & (neighbour < n)
                where = np.asarray(sa[np.clip(neighbour, 0, n - 1)]).astype(np.int64)
                has, first = _first_difference(windows(text, where, w), q, lengths)
                common = np.where(has, first, lengths) * valid
                better = common > best_len[rows]
                best_len[rows[better]] = common[better]
        todo = todo[(best_len[todo] == np.minimum(remaining[todo], width)) & (remaining[todo] > width)]
        width *= 8
    return best_len
