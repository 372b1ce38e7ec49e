"""The scoring session every model-reading route uses: the claim's models loaded once, scored
through the shared cache, with every scored row kept for the evidence bundle (digests, never texts).

A route gets one ``RouteContext`` per audit (``run(ctx, params)``): it loads the target and the
reference model on first use (a route that needs no model never loads one), interleaves the sets'
queries so that an endpoint drifting during a run cannot separate them, records why each unscored
document has no score, and answers which signals the claim's target can compute.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from verifier.boundary.peers import PeerAccess
from verifier.claims import ClaimFiles, ClaimManifest, DocumentRef
from verifier.data import Documents
from verifier.errors import VerifierError
from verifier.scoring.capabilities import offered_capabilities
from verifier.scoring.parity import Parity, check_parity
from verifier.scoring.table import (
    AUXILIARY_NEEDS,
    FAILURE_PREFIX,
    Progress,
    score_documents,
    signal_queries,
    signal_tools,
)
from verifier.signals import LOWER, REGISTRY, Auxiliary, ScoredDocument, computable, make_signals
from verifier.signals.base import QueryingSignal
from verifier.signals.traces.base import TraceSignal
from verifier.targets import ScoreCache, Target, kind_of
from verifier.targets.base import PROMPT_LOGPROBS
from verifier.targets.cache import text_digest


class TooFewScored(VerifierError):
    """More than half of a set has no score for a signal (failed queries, no usable traces)."""


@dataclass
class RouteContext:
    claim: ClaimManifest
    base_dir: Path
    cache: ScoreCache
    target_factory: Callable[[str], Target]  # role ("target" or "reference") -> loaded target
    progress: Progress | None = None
    scored_rows: list[pd.DataFrame] = field(default_factory=list)
    loaded: dict[str, Target] = field(
        default_factory=dict
    )  # filled on first use: routes that need no model never load one
    failed_items: dict[str, int] = field(
        default_factory=dict
    )  # "role signal" -> documents left without a score (failed queries)
    failure_reasons: dict[str, dict[str, int]] = field(default_factory=dict)  # "role signal" -> {why: documents}
    signal_runs: dict[str, dict[str, object]] = field(
        default_factory=dict
    )  # what trace attacks read and ran, per "role signal" / model
    access: PeerAccess = field(
        default_factory=PeerAccess
    )  # the auditor's keys and http allowance for the claim's servers
    family_size: int = 1  # claims tested together (a batch): a test's p-value must be able to reach alpha / family_size
    files: ClaimFiles | None = (
        None  # the claim's input files, read once per audit (one is made from base_dir if none is given)
    )

    parity: Parity | None = None  # the API target's comparison with the declared weights (after the routes)
    sent_texts: list[str] = field(default_factory=list)  # every text the target scored for a route

    def __post_init__(self) -> None:
        self.claim_files = self.files or ClaimFiles(self.base_dir)

    def model(self, role: str = "target") -> Target:
        if role not in self.loaded:
            # A step of its own: loading takes tens of seconds before the first document is scored.
            done = self.progress(f"loading the {role} model", 1) if self.progress else None
            self.loaded[role] = self.target_factory(role)
            if done:
                done(1)
        return self.loaded[role]

    def check_served_weights(self) -> None:
        """After the routes ran: an API target declared to serve weights the auditor holds
        (``model.weights``) is compared with them on a seeded sample of the texts the routes
        sent it (``scoring.parity``); nothing to do where no target was loaded."""
        if self.claim.model.weights is not None and "target" in self.loaded:
            served = self.loaded["target"]
            # Routes that read only answers sent no text to score: the claim's documents then.
            texts = self.sent_texts or self._claim_texts()
            # The draw's seed is fixed by every answer the server gave (the answers digest), so even a
            # server that knows the claim and its seed cannot know which answers will be compared
            # until it has given them all: changing one changes the draw (the same answers, the same draw).
            answers = served.identity.digests.get("answers", "")
            seed = int(hashlib.sha256(f"{self.claim.seed}:{answers}".encode()).hexdigest()[:15], 16)
            self.parity = check_parity(served, self.model("weights"), texts, seed, self.cache)

    def _claim_texts(self) -> list[str]:
        """Every text of the claim's document sets."""
        evidence = self.claim.evidence
        refs = [evidence.suspect, evidence.heldout, evidence.dated, evidence.control]
        return [text for ref in refs if ref is not None for text in self.load(ref).texts]

    def file_sha256(self, ref: DocumentRef) -> str:
        """SHA-256 of the file a set is read from (what the findings' input digests name)."""
        return self.claim_files.sha256(ref.path)

    def load(self, ref: DocumentRef) -> Documents:
        """The documents ``ref`` selects, parsed from the bytes the input digests name."""
        return self.claim_files.documents(ref)

    def features(
        self,
        role: str,
        texts: list[str],
        signals: list[str],
        digest: Callable[[str], str] = text_digest,
        signal_params: dict[str, dict[str, Any]] | None = None,
        aux: Auxiliary | None = None,
    ) -> np.ndarray:
        """[n, signals] membership features of ``texts``, recorded under ``role`` for the bundle by
        ``digest`` of each text (a keyed digest for texts that must stay secret, such as a mark's
        siblings), with the reason each unscored document has no score. ``aux``: what prefixed and
        calibrated signals read (the same for every set of a test, so the sets stay exchangeable)."""
        reference = self.model("reference") if any("reference" in REGISTRY[s].needs for s in signals) else None
        self.sent_texts.extend(texts)
        table = score_documents(
            Documents(texts, None, role),
            self.model(),
            reference=reference,
            signal_names=signals,
            cache=self.cache,
            progress=_labelled(self.progress, f"{role} set") if self.progress else None,
            signal_params=signal_params,
            aux=aux,
        )
        values = np.column_stack([table.signal(name) for name in signals])
        for name, counts in table.metadata["signal_counts"].items():
            self.signal_runs[f"{role} {name}"] = counts
            anchors = {
                c.get("anchor answers sha256") for k, c in self.signal_runs.items() if k.endswith(f" {name}")
            } - {None}
            if len(anchors) > 1:
                raise VerifierError(
                    f"signal {name}: its anchors were read differently for the {role} set than for another set "
                    "(answers changed between passes): the sets would be scored on different axes"
                )
        for model, weights in table.metadata["signal_models"].items():
            self.signal_runs[model] = {"sha256": weights}
        frame = pd.DataFrame({"role": role, "text_sha256": [digest(t) for t in texts]})
        reasons = {name: table.frame[FAILURE_PREFIX + name] for name in signals if FAILURE_PREFIX + name in table.frame}
        for name, failed in zip(signals, (~np.isfinite(values)).sum(axis=0)):
            if failed:  # two routes scoring one set read the same answers: the larger count, never a sum
                self.failed_items[f"{role} {name}"] = max(int(failed), self.failed_items.get(f"{role} {name}", 0))
                if name in reasons:
                    self.failure_reasons[f"{role} {name}"] = dict(
                        reasons[name].dropna().value_counts().sort_index().items()
                    )
            if failed * 2 > len(texts):
                why = "; ".join(f"{k}: {v}" for k, v in self.failure_reasons.get(f"{role} {name}", {}).items())
                raise TooFewScored(
                    f"signal {name}: {failed} of {len(texts)} {role} documents have no score "
                    f"({why or 'their queries failed'}; "
                    "see the run's API counters): too few to test"
                )
        self.scored_rows.append(
            pd.concat(
                [
                    frame,
                    pd.DataFrame(values, columns=signals),
                    pd.DataFrame({FAILURE_PREFIX + k: v.to_numpy() for k, v in reasons.items()}),
                ],
                axis=1,
            )
        )
        return values

    def prefetch(
        self,
        sets: Mapping[str, list[str]],
        signals: list[str],
        signal_params: Mapping[str, Mapping[str, Any]],
        aux: Auxiliary | None = None,
    ) -> None:
        """Ask every query of every set in one shuffled batch before any set is scored (answers
        are cached, so the scoring passes read them back). Scored set after set, the suspect set's
        queries would all go before the held-out set's, and an endpoint whose answers drift during
        the run - an update, load, a routing change - would separate the sets with no training
        (an outside attack got SUPPORTED that way). Queries made from the traces (the judge's)
        are asked the same way, for every set together; so are another party's server's prompt
        log-probs (every text, then every prefixed or perturbed view, each pass over all sets in
        one shuffled order)."""

        rng = np.random.default_rng(self.claim.seed)
        scoring = [n for n in signals if PROMPT_LOGPROBS in REGISTRY[n].needs]
        if scoring and kind_of(self.claim.model.target).remote:
            self._prefetch_scores(sets, scoring, signal_params, aux or Auxiliary(), rng)
        names = [n for n in signals if issubclass(REGISTRY[n], QueryingSignal)]
        if not names:
            return
        target = self.model()
        querying = make_signals(names, target.capabilities, signal_params)
        texts = [t[: target.max_chars] for role_texts in sets.values() for t in role_texts]
        queries = list(signal_queries(querying, texts).values())
        asked = [queries[i] for i in rng.permutation(len(queries))]
        answers = dict(
            zip(
                (q.key for q in asked),
                target.answer(
                    asked, cache=self.cache, on_progress=self._progress("querying, sets interleaved", len(asked))
                ),
            )
        )
        docs = [ScoredDocument(text=t, answers=answers) for t in texts]
        tools = signal_tools(target, self.cache)
        for signal in querying:
            if isinstance(signal, TraceSignal) and (followup := signal.followup(docs)) is not None:
                who, followups = followup
                tools.ask(who, [followups[i] for i in rng.permutation(len(followups))])

    def _prefetch_scores(
        self,
        sets: Mapping[str, list[str]],
        names: list[str],
        signal_params: Mapping[str, Mapping[str, Any]],
        aux: Auxiliary,
        rng: np.random.Generator,
    ) -> None:
        """A remote target's prompt log-probs for every set in one shuffled order, pass by pass
        (cached: the per-set scoring reads them back)."""

        target = self.model()
        scoring = make_signals(names, target.capabilities | aux.offers | {LOWER}, signal_params)
        texts = [t[: target.max_chars] for role_texts in sets.values() for t in role_texts]
        shuffled = [texts[i] for i in rng.permutation(len(texts))]
        passes: dict[str | None, list[str]] = {None: shuffled}
        if any(LOWER in s.needs for s in scoring):
            passes["lower"] = [t.lower() for t in shuffled]
        for signal in scoring:
            for text in shuffled:
                for view in signal.views(text, aux):
                    passes.setdefault(f"context:{view.context}" if view.context is not None else "copies", []).append(
                        view.text
                    )
        for key, batch in passes.items():
            batch = list(dict.fromkeys(batch))
            context = key.removeprefix("context:") if key and key.startswith("context:") else None
            target.score(
                batch,
                cache=self.cache,
                on_progress=self._progress("scoring, sets interleaved", len(batch)),
                context=context,
            )

    def _progress(self, what: str, total: int) -> Callable[[int], None] | None:
        return self.progress(what, total) if self.progress else None

    def usable_signals(self, signals: list[str], aux: Auxiliary | None = None) -> tuple[list[str], dict[str, str]]:
        """The signals this audit's target (with ``aux``, what the route supplies) can compute,
        and why each other one cannot be."""
        offered = (self.offered() - AUXILIARY_NEEDS) | (aux.offers if aux else frozenset())
        return computable(signals, offered)

    def offered(self) -> frozenset[str]:
        """What the claim's target (and reference model, if named) can supply: for a local kind
        without loading it; another party's server is asked (its probe, when it is loaded), since
        what it offers is the server's, not the kind's."""

        if not kind_of(self.claim.model.target).remote:
            return offered_capabilities(self.claim)
        return frozenset(self.model().capabilities) | ({"reference"} if self.claim.model.reference else frozenset())


def _labelled(progress: Progress, label: str) -> Progress:
    """``progress`` with each bar's description naming ``label`` (e.g. "scoring: suspect set")."""

    def start(what: str, total: int) -> Callable[[int], None]:
        return progress(f"{what}: {label}", total)

    return start
