"""What every signal shares: the scored document it reads, the base class, the registry.

A signal only *reads* the cached forward-pass arrays (``TokenScores``); it never runs a model.
Every score is oriented "higher = more member-like", whatever the sign convention of the
reference implementation it follows (see the table in ``verifier.signals``).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import asdict, dataclass
from typing import ClassVar

import numpy as np

from verifier.errors import VerifierError
from verifier.targets.base import PROMPT_LOGPROBS
from verifier.targets.token_scores import TokenScores

# What a signal may need beyond target capabilities (``targets.base``): extra views of a text.
LOWER = "lower"  # the target's scores of the lowercased text (any target that scores prompts has it)
REFERENCE = "reference"  # a reference model's scores of the original text (the claim names one)


@dataclass(frozen=True)
class ScoredDocument:
    """A text and the forward-pass arrays of each view that was computed for it."""

    text: str  # as given to the model: cut to the target's max_chars, before the token cut
    target: TokenScores
    lower: TokenScores | None = None
    reference: TokenScores | None = None


@dataclass(frozen=True)
class Signal(ABC):
    """A membership score of one document; parameters are dataclass fields, recorded with results."""

    name: ClassVar[str]
    needs: ClassVar[frozenset[str]] = frozenset({PROMPT_LOGPROBS})  # target capabilities and views
    by_default: ClassVar[bool] = True  # computed when no signals are named (a statistic for one use only is not)

    @abstractmethod
    def score(self, doc: ScoredDocument) -> float:
        """Higher = more member-like."""

    def params(self) -> dict[str, object]:
        return asdict(self)


@dataclass(frozen=True)
class LowestKSignal(Signal):
    """A signal over the lowest ``k`` fraction of per-token values (Min-K% and its kin).

    ``k`` is checked here, once for all of them, so a bad value fails when the signal is made,
    not in the middle of scoring.
    """

    k: float = 0.2

    def __post_init__(self) -> None:
        if not 0 < self.k <= 1:  # also refuses NaN, for which every comparison is false
            raise VerifierError(f"signal {self.name}: k must be in (0, 1], got {self.k}")


REGISTRY: dict[str, type[Signal]] = {}


def register(cls: type[Signal]) -> type[Signal]:
    """Class decorator: make a signal available by its ``name``."""
    if cls.name in REGISTRY:
        raise ValueError(f"signal {cls.name!r} registered twice")
    REGISTRY[cls.name] = cls
    return cls


def lowest_k_mean(values: np.ndarray, k: float) -> float:
    """Mean of the lowest ``k`` fraction of ``values``, never fewer than one value."""
    count = max(1, int(len(values) * k))
    return float(np.mean(np.partition(values, count - 1)[:count]))

