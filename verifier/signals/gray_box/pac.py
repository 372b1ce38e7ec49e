"""PAC, Polarized Augment Calibration (Ye et al. 2024, "Data Contamination Calibration for Black-box LLMs").

The polarized distance of a text, PD = mean of its ``far`` share of highest token log-probs
minus the mean of its ``local`` share of lowest, is compared with the mean PD of ``augmentations``
copies whose words were randomly swapped (``swap_share`` of the word count, in swaps).
PAC = PD(x) - mean PD(copies) is lower for members in the published code (it ranks by -PAC), so
the score here is mean PD(copies) - PD(x): higher = member-like.

Departures: the copies are drawn from a generator seeded by ``seed`` and the text's SHA-256, so a
document gets the same copies whatever documents are scored with it and in whatever order (the
published code draws from one global generator, seeded once per run); ``seed`` is recorded with
the signal's parameters.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Annotated

import numpy as np
from pydantic import Field

from verifier.signals.base import Auxiliary, ScoredDocument, Signal, View, register


def polarized_distance(logprob: np.ndarray, far: float, local: float) -> float:
    """Mean of the highest ``far`` share minus the mean of the lowest ``local`` share (each >= 1 value)."""
    ordered = np.sort(logprob)
    n_far, n_local = max(int(len(ordered) * far), 1), max(int(len(ordered) * local), 1)
    return float(np.mean(ordered[::-1][:n_far]) - np.mean(ordered[:n_local]))


def swapped_copies(text: str, copies: int, swap_share: float, seed: int) -> list[str]:
    """``copies`` texts with words (split on spaces) swapped pairwise ``max(1, swap_share * words)`` times."""
    rng = np.random.default_rng([seed, int(hashlib.sha256(text.encode()).hexdigest()[:16], 16)])
    words = text.split(" ")
    out = []
    for _ in range(copies):
        copy = list(words)
        for _ in range(max(1, int(swap_share * len(words)))):
            if len(copy) > 1:
                i, j = rng.choice(len(copy), size=2, replace=False)
                copy[i], copy[j] = copy[j], copy[i]
        out.append(" ".join(copy))
    return out


@register
@dataclass(frozen=True)
class PAC(Signal):
    name = "pac"
    by_default = False  # one forward pass per copy: run when named
    augmentations: Annotated[int, Field(ge=1, le=50)] = 5
    swap_share: Annotated[float, Field(gt=0, le=1)] = 0.3
    far: Annotated[float, Field(gt=0, le=1)] = 0.05
    local: Annotated[float, Field(gt=0, le=1)] = 0.3
    seed: Annotated[int, Field(ge=0, le=2**32 - 1)] = 0

    def views(self, text: str, aux: Auxiliary) -> list[View]:
        return [View(copy) for copy in swapped_copies(text, self.augmentations, self.swap_share, self.seed)]

    def score(self, doc: ScoredDocument) -> float:
        views = self.views(doc.text, doc.aux)
        copies = [c for view in views if (c := doc.views.get(view)) is not None and c.n_scored > 0]
        if doc.scores.n_scored == 0 or len(copies) < len(views):
            return float("nan")
        return float(
            np.mean([polarized_distance(c.logprob, self.far, self.local) for c in copies])
        ) - polarized_distance(doc.scores.logprob, self.far, self.local)
