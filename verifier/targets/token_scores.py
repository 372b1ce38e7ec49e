"""Per-document arrays from one forward pass: everything a gray-box signal may read.

A causal LM predicts token t+1 from tokens 0..t, so a document of n tokens yields n-1 scored
positions; the first token is context only (as in the published implementations, which score
``input_ids[1:]``). For each scored position we keep:

- ``logprob``: log p(actual token),
- ``mu`` / ``sigma``: mean and standard deviation of log p over the whole vocabulary under the
  model's own distribution (mu = sum p log p; sigma^2 = sum p (log p - mu)^2), for Min-K%++,
- ``top1``: log p of the most likely token, for Gap-K%.

Only ``token_ids`` and ``logprob`` are always present: ``mu``, ``sigma`` and ``top1`` exist for
targets offering the ``vocab_stats`` capability (open weights) and are ``None`` otherwise.

``char_start``/``char_end`` delimit the characters of the text the scored tokens cover, so signals
that normalise by text length (zlib, reference-model difference) use exactly the scored span.
"""

from __future__ import annotations

import io
from dataclasses import dataclass

import numpy as np

ARRAYS = ("token_ids", "logprob", "mu", "sigma", "top1")


@dataclass(frozen=True)
class TokenScores:
    """One document's scored positions (arrays are float64 views of float32 storage)."""

    token_ids: np.ndarray
    logprob: np.ndarray
    mu: np.ndarray | None
    sigma: np.ndarray | None
    top1: np.ndarray | None
    char_start: int
    char_end: int

    @property
    def n_scored(self) -> int:
        return int(self.logprob.shape[0])

    def to_bytes(self) -> bytes:
        buffer = io.BytesIO()
        np.savez(
            buffer,
            token_ids=self.token_ids.astype(np.int32),
            **{name: getattr(self, name).astype(np.float32) for name in ARRAYS[1:] if getattr(self, name) is not None},
            span=np.asarray([self.char_start, self.char_end], dtype=np.int64),
        )
        return buffer.getvalue()

    @classmethod
    def from_bytes(cls, blob: bytes) -> TokenScores:
        with np.load(io.BytesIO(blob)) as data:
            span = data["span"]
            return cls(
                token_ids=data["token_ids"],
                **{name: data[name].astype(np.float64) if name in data else None for name in ARRAYS[1:]},
                char_start=int(span[0]),
                char_end=int(span[1]),
            )
