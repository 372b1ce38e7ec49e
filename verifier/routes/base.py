"""The route interface: what a route gets (context) and what it returns (plain-data outcome).

A route runs only when the policy engine reaches it and its precondition holds. It may return
no verdict (``verdict=None``), which hands the decision on to the next route in the tree.
Routes read models only through the context, which loads the target once, scores through the
shared cache, and keeps every scored row for the evidence bundle (digests, never texts).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from verifier.claims import ClaimManifest, DocumentRef
from verifier.data import Documents, load_documents
from verifier.policy.schema import Verdict
from verifier.scoring import Progress, score_documents
from verifier.targets import CausalLMTarget, ScoreCache, ScoringOptions
from verifier.targets.cache import text_digest


@dataclass
class RouteOutcome:
    """What a route found. ``figures`` holds the numbers behind each figure; rendering draws them."""

    verdict: Verdict | None
    summary: str
    metrics: dict[str, Any] = field(default_factory=dict)
    membership_rows: list[dict[str, Any]] = field(default_factory=list)
    figures: dict[str, Any] = field(default_factory=dict)
    limitations: list[str] = field(default_factory=list)


@dataclass
class RouteContext:
    claim: ClaimManifest
    base_dir: Path
    cache: ScoreCache
    progress: Progress | None = None
    scored_rows: list[pd.DataFrame] = field(default_factory=list)
    target_factory: Callable[[], CausalLMTarget] | None = None  # e.g. a model already loaded
    loaded_target: CausalLMTarget | None = None  # set on first use: routes that need no model never load one

    @property
    def target(self) -> CausalLMTarget:
        if self.loaded_target is None:
            model = self.claim.model
            # A relative model path is relative to the claim file, like every other path in it.
            local = self.base_dir / model.target
            spec = str(local) if local.exists() else model.target
            factory = self.target_factory or (
                lambda: CausalLMTarget(spec, ScoringOptions(dtype=model.dtype, max_tokens=model.max_tokens))  # type: ignore[arg-type]
            )
            self.loaded_target = factory()
        return self.loaded_target

    def load(self, ref: DocumentRef) -> Documents:
        return load_documents(self.base_dir / ref.path, text_field=ref.text_field, where=ref.where, offset=ref.offset, limit=ref.limit)

    def scored(self, role: str, ref: DocumentRef, signals: list[str]) -> tuple[Documents, np.ndarray]:
        """Load the set ``ref`` points to and score it: its documents and their features."""
        docs = self.load(ref)
        return docs, self.features(role, docs, signals)

    def features(self, role: str, docs: Documents, signals: list[str]) -> np.ndarray:
        """[n, signals] membership features of ``docs``, recorded under ``role`` for the bundle."""
        table = score_documents(docs, self.target, signal_names=signals, cache=self.cache, progress=self.progress)
        values = np.column_stack([table.signal(name) for name in signals])
        frame = pd.DataFrame({"role": role, "text_sha256": [text_digest(t) for t in docs.texts]})
        self.scored_rows.append(pd.concat([frame, pd.DataFrame(values, columns=signals)], axis=1))
        return values


class Route(ABC):
    """One branch of the decision tree."""

    name: ClassVar[str]

    @abstractmethod
    def run(self, ctx: RouteContext, params: dict[str, Any]) -> RouteOutcome:
        """Test what this route can test; never return a verdict the evidence does not carry."""


ROUTES: dict[str, type[Route]] = {}


def register(cls: type[Route]) -> type[Route]:
    ROUTES[cls.name] = cls
    return cls
