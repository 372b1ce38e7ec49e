"""Gray-box membership signals, one module each, found through a decorator registry.

Orientation: every score is "higher = more member-like". How that maps to the sign conventions
of the reference implementations (mimir, the Min-K% and Min-K%++ repositories):

| name       | score here                                         | reference convention                      |
|------------|----------------------------------------------------|-------------------------------------------|
| loss       | mean log p(token)                                  | mimir returns mean NLL (lower = member): negated |
| zlib       | mean log p / zlib bytes                            | Min-K% repo: same sign; mimir: NLL / zlib, negated |
| min_k      | mean of lowest 20% log p                           | Min-K%++ repo: same; mimir: negated mean  |
| min_k_pp   | mean of lowest 20% (log p - mu) / sigma            | Min-K%++ repo: same sign                  |
| gap_k      | mean of lowest 20% (log p - log p_top1)            | gaps are <= 0; closer to 0 = member       |
| lowercase  | NLL(lowercased) / NLL(original)                    | Carlini et al. ratio: same sign           |
| reference  | target - reference log p per character             | mimir: target loss - ref loss, negated    |
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from verifier.signals import gap_k, loss, lowercase, min_k, min_k_plus_plus, reference, zlib_ratio  # noqa: F401
from verifier.errors import VerifierError
from verifier.signals.base import LOWER, REFERENCE, REGISTRY, ScoredDocument, Signal, register

__all__ = ["LOWER", "REFERENCE", "REGISTRY", "ScoredDocument", "Signal", "compute_signals", "make_signals", "register"]


def make_signals(names: Iterable[str] | None = None, views: Iterable[str] = ()) -> list[Signal]:
    """Instantiate signals by name (default: every registered signal the ``views`` allow)."""
    views = frozenset(views)
    if names is None:
        return [cls() for cls in REGISTRY.values() if cls.needs <= views]
    signals = []
    for name in names:
        if name not in REGISTRY:
            raise VerifierError(f"unknown signal {name!r}; known: {', '.join(sorted(REGISTRY))}")
        if missing := REGISTRY[name].needs - views:
            raise VerifierError(f"signal {name!r} needs the {', '.join(sorted(missing))} view (e.g. --reference)")
        signals.append(REGISTRY[name]())
    return signals


def compute_signals(docs: Sequence[ScoredDocument], signals: Sequence[Signal]) -> dict[str, np.ndarray]:
    """One float64 column per signal, in document order."""
    return {s.name: np.fromiter((s.score(doc) for doc in docs), dtype=np.float64, count=len(docs)) for s in signals}
