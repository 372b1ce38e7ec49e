"""Conformance kits: what every route, signal and target kind must satisfy, as public checks.

As scikit-learn publishes ``check_estimator``, verifier publishes ``check_route``, ``check_signal``
and ``check_target``: its own test suite runs them over every registered part, and the author of a
plugin runs them over theirs. Each returns nothing and raises ``NonConformance`` listing every
broken rule, so one run shows all that is wrong. ``check_discovery`` checks that every module of
the part folders registered something: a file dropped in a part folder is never silently ignored.

The checks use synthetic inputs only (no model, no network): a gray-box signal is fed token
scores that are made more member-like step by step and must never score them less member-like.
"""

from __future__ import annotations

import json
import sys
from dataclasses import MISSING, fields, is_dataclass
from pathlib import Path

import numpy as np
from pydantic import BaseModel

from verifier import plugins
from verifier.claims import ClaimKind, Evidence
from verifier.errors import VerifierError
from verifier.plugins import Registry
from verifier.report import render_html
from verifier.routes.base import ROUTES, Route, RouteParams
from verifier.signals import (
    LOWER,
    MEMBER_PREFIX,
    NONMEMBER_PREFIX,
    REFERENCE,
    REGISTRY,
    TOKEN_FREQUENCIES,
    ScoredDocument,
    Signal,
    computable,
)
from verifier.signals.base import QueryingSignal
from verifier.targets import CAPABILITIES, KINDS, TargetKind, kind_of
from verifier.targets.token_scores import TokenScores
from verifier.verdicts import Verdict

WEAKER = {
    "higher",
    "lower",
    "false",
    "true",
    "either",
}  # the directions a route parameter may declare (see RouteParams)
VIEWS = frozenset(
    {LOWER, REFERENCE, NONMEMBER_PREFIX, MEMBER_PREFIX, TOKEN_FREQUENCIES}
)  # what a signal may need besides target capabilities


class NonConformance(AssertionError):
    """A part breaks its contract; the message lists every broken rule, one per line."""


def _report(part: str, problems: list[str]) -> None:
    if problems:
        raise NonConformance(f"{part} breaks its contract:\n" + "\n".join(f"- {p}" for p in problems))


def _json(value: object) -> bool:
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError):
        return False
    return True


def _registered(cls: type, name: object, registry: Registry, decorator: str) -> list[str]:
    """Problems with a part's name: not an identifier, or not the name it is registered under."""
    if not isinstance(name, str) or not name.isidentifier():
        return [f"name must be an identifier, got {name!r}"]
    if registry.get(name) is not cls:
        return [f"not registered as {name!r} (decorate it with {decorator})"]
    return []


def check_route(cls: type[Route]) -> None:
    """A route: named and registered under its name, evidence it needs that claims can give,
    parameters that are a frozen, strict pydantic model with a JSON schema, and a verdict table
    giving a verdict for exactly its claim kinds."""
    name = getattr(cls, "name", None)
    problems = _registered(cls, name, ROUTES, "verifier.routes.base.register")
    if not issubclass(cls, Route):
        problems.append("must subclass verifier.routes.base.Route")
    if unknown := set(getattr(cls, "requires", set())) - set(Evidence.model_fields):
        problems.append(
            f"requires evidence no claim can give: {sorted(unknown)} (claims give {sorted(Evidence.model_fields)})"
        )
    kinds = set(getattr(cls, "claim_kinds", set()))
    if not kinds or not kinds <= set(ClaimKind):
        problems.append(f"claim_kinds must be a non-empty set of ClaimKind, got {sorted(map(str, kinds))}")
    params = getattr(cls, "Params", None)
    if not (isinstance(params, type) and issubclass(params, RouteParams)):
        problems.append("Params must subclass verifier.routes.base.RouteParams (unknown keys refused, values frozen)")
    else:
        if not _json(params.model_json_schema()):
            problems.append("Params has no JSON schema (the documentation and the policy checks read it)")
        for field_name, info in params.model_fields.items():
            extra = info.json_schema_extra if isinstance(info.json_schema_extra, dict) else {}
            if "weaker" in extra and extra["weaker"] not in WEAKER:
                problems.append(f"Params.{field_name}: weaker must be one of {sorted(WEAKER)}, got {extra['weaker']!r}")
    for status, row in getattr(cls, "verdicts", {}).items():
        if not isinstance(status, str):
            problems.append(f"verdict table key {status!r} is not a status name")
        elif row is not None and (set(row) != kinds or not all(isinstance(v, Verdict) for v in row.values())):
            problems.append(f"verdicts[{status!r}] must give a Verdict for exactly {sorted(map(str, kinds))}")
    if not getattr(cls, "verdicts", None):
        problems.append("verdicts is empty: the route could never decide or pass the decision on")
    _report(f"route {name!r}", problems)


def synthetic_document(seed: int, shift: float = 0.0, n: int = 60) -> ScoredDocument:
    """A document with plausible token scores of the target, its lowercased text and a reference
    model; ``shift`` raises the target's log p of the actual tokens (more member-like)."""

    def arrays(rng: np.random.Generator, raise_by: float = 0.0) -> TokenScores:
        top1 = -rng.uniform(0.1, 1.0, n)
        logprob = np.minimum(top1, top1 - rng.exponential(2.0, n) + raise_by)
        return TokenScores(
            token_ids=rng.integers(0, 500, n + 1),
            logprob=logprob,
            mu=top1 - rng.uniform(3, 6, n),
            sigma=rng.uniform(0.5, 2.0, n),
            top1=top1,
            char_start=0,
            char_end=4 * n,
        )

    rng = np.random.default_rng(seed)
    return ScoredDocument(
        text="An ordinary sentence about an event in 2016. " * 5,
        target=arrays(rng, shift),
        lower=arrays(np.random.default_rng(seed + 1000)),
        reference=arrays(np.random.default_rng(seed + 2000)),
    )


def check_signal(cls: type[Signal]) -> None:
    """A signal: registered under its name, needing only capabilities or views, parameters that
    are annotated dataclass fields with defaults (JSON-serialisable, with a schema), computable
    exactly when what it needs is offered; a gray-box signal also keeps the orientation
    "higher = more member-like" on synthetic token scores."""
    name = getattr(cls, "name", None)
    problems = _registered(cls, name, REGISTRY, "verifier.signals.base.register")
    if not (isinstance(cls, type) and issubclass(cls, Signal) and is_dataclass(cls)):
        _report(f"signal {name!r}", problems + ["must be a frozen dataclass subclassing verifier.signals.base.Signal"])
    if unknown := set(cls.needs) - CAPABILITIES - VIEWS:
        problems.append(f"needs names neither a capability nor a view: {sorted(unknown)}")
    if missing := [f.name for f in fields(cls) if f.default is MISSING and f.default_factory is MISSING]:
        problems.append(f"parameters without a default: {missing} (a policy may name the signal alone)")
    try:
        signal = cls()
    except (VerifierError, TypeError) as exc:
        _report(f"signal {name!r}", problems + [f"cannot be made with its defaults: {exc}"])
    if not _json(signal.params()):
        problems.append("params() is not JSON-serialisable (it is recorded with every result)")
    if not _json(cls.params_schema()):
        problems.append("params_schema() is not a JSON schema")
    if REGISTRY.get(name) is cls and not set(cls.needs) - CAPABILITIES - VIEWS:
        usable, _ = computable([name], CAPABILITIES | VIEWS)
        unusable, why = computable([name], frozenset())
        if usable != [name] or (cls.needs and (unusable or "not computable" not in why.get(name, ""))):
            problems.append("computable() must offer it exactly when what it needs is offered")
    # Orientation is tested on one document's token scores alone: signals that read other passes
    # (prefixed, perturbed) or a run's data are tested against their papers' formulas instead.
    single_pass = cls.views is Signal.views and not cls.needs & {NONMEMBER_PREFIX, MEMBER_PREFIX, TOKEN_FREQUENCIES}
    if (
        not issubclass(cls, QueryingSignal)
        and single_pass
        and cls.needs <= CAPABILITIES | VIEWS
        and cls.score is not Signal.score
    ):
        scores = np.array([signal.score(synthetic_document(seed)) for seed in range(20)])
        raised = np.array([signal.score(synthetic_document(seed, shift=1.0)) for seed in range(20)])
        if not np.isfinite(scores).all():
            problems.append("gives no finite score on a document of 60 scored tokens")
        elif not ((raised >= scores - 1e-12).all() and raised.mean() > scores.mean()):
            problems.append(
                "raising the log p of the actual tokens made documents less member-like: scores must be "
                "oriented higher = more member-like"
            )
    _report(f"signal {name!r}", problems)


def check_target(kind: TargetKind) -> None:
    """A target kind: named, with capabilities the contract knows, limitations as sentences, a
    prefix that names it (or it is the default kind), options that are a pydantic model, and the
    classmethods the registry calls."""
    problems = []
    cls = kind.cls
    if not isinstance(getattr(cls, "kind", None), str) or not cls.kind.isidentifier():
        problems.append(f"kind must be an identifier, got {getattr(cls, 'kind', None)!r}")
    elif KINDS.get(cls.kind) is not kind:
        problems.append(f"not registered as {cls.kind!r} (decorate it with verifier.targets.registry.register)")
    if not kind.capabilities or not set(kind.capabilities) <= CAPABILITIES:
        problems.append(
            f"capabilities must be a non-empty subset of {sorted(CAPABILITIES)}, got {sorted(kind.capabilities)}"
        )
    if not isinstance(kind.limitations, tuple) or not all(isinstance(s, str) and s.strip() for s in kind.limitations):
        problems.append("limitations must be a tuple of sentences")
    if not isinstance(kind.remote, bool):
        problems.append("remote must be True or False")
    if kind.remote and not kind.limitations:
        problems.append("a remote kind must state what its answers attest to (limitations)")
    for method in ("load", "check_spec", "unloaded_identity"):
        if not callable(getattr(cls, method, None)):
            problems.append(f"{method} must be a classmethod")
    if kind.prefix is not None:
        if not (kind.prefix.endswith(":") and len(kind.prefix) > 1):
            problems.append(f"prefix must end with ':', got {kind.prefix!r}")
        elif kind_of(kind.prefix + "x") is not kind:
            problems.append(f"specs starting with {kind.prefix!r} resolve to another kind")
    if kind.options is not None and not (isinstance(kind.options, type) and issubclass(kind.options, BaseModel)):
        problems.append("options must be a pydantic model (a claim's model.api)")
    _report(f"target kind {getattr(cls, 'kind', cls.__name__)!r}", problems)


def check_loaded_target(target: object, texts: list[str]) -> None:
    """A loaded target: an identity and fingerprint that are plain data, and, where it offers
    ``prompt_logprobs``, finite log-probabilities (at most 0) for each text, one array per text."""
    problems = []
    identity = target.identity.as_finding()
    if not _json(identity) or not _json(target.fingerprint):
        problems.append("identity and fingerprint must be JSON-serialisable (findings and cache keys hold them)")
    elif (why := _renders(identity)) is not None:
        problems.append(f"the report cannot render this identity: {why}")
    if not isinstance(target.max_chars, int) or target.max_chars < 1:
        problems.append("max_chars must be a positive int")
    if "prompt_logprobs" in target.capabilities:
        scored = target.score(texts)
        if len(scored) != len(texts):
            problems.append(f"score returned {len(scored)} results for {len(texts)} texts")
        for text, scores in zip(texts, scored):
            logprob = np.asarray(scores.logprob)
            if not (np.isfinite(logprob).all() and (logprob <= 1e-6).all()):
                problems.append(f"log p of {text[:20]!r} must be finite and at most 0")
            if not 0 <= scores.char_start <= scores.char_end <= len(text):
                problems.append(f"the scored span of {text[:20]!r} lies outside the text")
    _report(f"target {identity.get('kind')!r}", problems)


def _renders(identity: dict) -> str | None:
    """Why the report template fails on findings holding ``identity`` as the audited target (None
    when it renders): every kind's identity reaches the report, whatever fields it has."""

    findings = {
        "claim": {
            "claim": {"id": "c", "statement": "s", "kind": "trained_on", "made_by": "m", "regulation_fields": []}
        },
        "model": {"target": identity, "training_cutoff": None, "released": None},
        "policy": {
            "name": "default",
            "version": 2,
            "file": "default.yaml",
            "sha256": "0",
            "weaker_than_default": [],
            "other_departures": [],
            "regulation_map_sha256": "0",
        },
        "verdict": "UNVERIFIABLE",
        "decided_by": "disclosure",
        "lead": "l",
        "verdict_sentence": "s",
        "failed_items": {},
        "failure_reasons": {},
        "signal_runs": {},
        "path": [],
        "regulation": [],
        "inputs": [],
        "environment": {"verifier": "0", "python": "3", "packages": {}},
        "seed": 0,
    }
    try:
        render_html(findings, "0" * 64)
    except Exception as exc:  # noqa: BLE001 - any failure of the template is the finding
        return f"{type(exc).__name__}: {exc}"
    return None


def check_discovery() -> None:
    """Every module the registries discover registered at least one part, every plugin added one,
    and nothing in a part folder escapes discovery: a subpackage no part imports, or a folder of
    Python files without ``__init__.py`` (which discovery cannot see)."""

    problems = []
    plugins.discover()
    for registry in plugins.REGISTRIES:
        found = {registry.module_of(part) for part in registry.values()}
        modules = registry.modules()
        if silent := sorted(set(modules) - found):
            problems.append(
                f"{registry.kind}: {', '.join(silent)} registered nothing (a part folder holds parts only; "
                "shared code goes in base.py or beside the folder)"
            )
        for folder in sorted({m.rsplit(".", 1)[0] for m in modules}):
            root = Path(sys.modules[folder].__file__).parent
            for child in sorted(p for p in root.iterdir() if p.is_dir() and p.name != "__pycache__"):
                name = f"{folder}.{child.name}"
                if not (child / "__init__.py").exists() and any(child.glob("*.py")):
                    problems.append(
                        f"{registry.kind}: {name} holds Python files but no __init__.py: discovery cannot see them"
                    )
                elif (child / "__init__.py").exists() and name not in sys.modules:
                    problems.append(f"{registry.kind}: {name} is imported by no part: its modules escape discovery")
    if plugins.silent:
        problems.append("plugins that registered nothing: " + ", ".join(p.entry_point for p in plugins.silent))
    _report("discovery", problems)


__all__ = [
    "NonConformance",
    "check_discovery",
    "check_loaded_target",
    "check_route",
    "check_signal",
    "check_target",
    "synthetic_document",
]
