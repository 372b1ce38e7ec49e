"""The main job: claim manifest -> policy walk -> findings -> report -> signed evidence bundle.

Findings are plain JSON-serialisable data and deterministic: the same inputs, policy and seed give
the same findings digest. They name input files by file name and SHA-256 only, and a local
model by its file or folder name and weight digest, so no private path enters a bundle.
"""

from __future__ import annotations

import hashlib
import platform
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from verifier import __version__
from verifier.claims import ClaimManifest, load_claim

from verifier.errors import VerifierError
from verifier.peers import PeerAccess
from verifier.policy import departures_from_default, load_policy, resolve_policy_path
from verifier.policy.engine import check_against_claim, decision, record_to_dict, walk
from verifier.resources import resource
from verifier.routes import RouteContext
from verifier.scoring import Progress
from verifier.targets import API_PREFIX, OpenAICompatibleTarget, ScoreCache, ScoringOptions, Target, load_target, resolve_model, target_class
from verifier.targets.openai_compatible import parse_spec
from verifier.targets.model_source import BUNDLED

PACKAGES = ("torch", "transformers", "numpy", "scipy", "scikit-learn", "pandas", "tokenizers", "weasyprint", "cryptography")


@dataclass
class AuditResult:
    findings: dict[str, Any]
    scores: pd.DataFrame  # one row per scored document: role, text digest, signals (no text)
    claim_bytes: bytes  # the validated claim as YAML, local model paths reduced to names
    policy_bytes: bytes  # the policy file as read and validated
    usage: dict[str, Any] = field(default_factory=dict)  # API targets' request counters by role (run record, not findings)


def run_audit(
    claim_path: str | Path,
    cache: ScoreCache | None = None,
    progress: Progress | None = None,
    target_factory: Callable[[str], Target] | None = None,
    access: PeerAccess | None = None,
) -> AuditResult:
    """Validate the claim and its policy (against each other), walk the tree, and return the
    findings (nothing is written here).

    ``target_factory(role)`` supplies the model for "target" or "reference" (e.g. one already
    loaded); by default the claim's specs are loaded on first use, so routes that need no model
    never load one. ``access`` is the auditor's: which key goes to the claim's endpoint, and
    whether plain http may leave this machine (never the claim's to choose).
    """
    claim, base = load_claim(claim_path)
    policy = load_policy(resolve_policy_path(claim.policy, base))
    check_against_claim(policy, claim)
    inputs = _input_digests(claim, base)  # before anything runs: the digests of what the routes then read
    access = access or PeerAccess()
    ctx = RouteContext(claim=claim, base_dir=base, cache=cache or ScoreCache(), progress=progress,
                       target_factory=target_factory or _claim_targets(claim, base, access), access=access)
    records = walk(policy, ctx)
    decided = decision(records)
    summary = decided.outcome.summary if decided.outcome else decided.reason
    looser, other = departures_from_default(policy)
    findings = {
        "format": "verifier-findings/3",
        "claim": public_claim(claim, base),
        "model": _model_identity(claim, ctx, base),
        "policy": {"name": policy.name, "version": policy.version, "file": policy.file, "sha256": policy.sha256,
                   "weaker_than_default": looser, "other_departures": other,
                   "regulation_map_sha256": hashlib.sha256(resource("policies", "regulation.yaml").read_bytes()).hexdigest()},
        "verdict": decided.verdict,
        "decided_by": decided.route,
        "verdict_sentence": _sentence(claim, decided.verdict, summary),
        "failed_items": dict(ctx.failed_items),
        "failure_reasons": dict(ctx.failure_reasons),
        "signal_runs": dict(ctx.signal_runs),
        "path": [record_to_dict(r) for r in records],
        "inputs": inputs,
        "environment": _environment(),
        "seed": claim.seed,
    }
    scores = pd.concat(ctx.scored_rows, ignore_index=True) if ctx.scored_rows else pd.DataFrame({"role": [], "text_sha256": []})
    claim_yaml = "# The validated claim (local model paths reduced to their names).\n" + yaml.safe_dump(findings["claim"], sort_keys=False)
    usage = {role: target.usage for role, target in ctx.loaded.items() if isinstance(target, OpenAICompatibleTarget)}
    return AuditResult(findings=findings, scores=scores, claim_bytes=claim_yaml.encode("utf-8"), policy_bytes=policy.raw, usage=usage)


def public_claim(claim: ClaimManifest, base: Path) -> dict[str, Any]:
    """The claim as the findings and the bundle carry it: a local model named by its folder or
    file name, never by where it lies on the auditor's disk (evidence paths are relative already)."""
    data = claim.model_dump(mode="json")
    for role in ("target", "reference"):
        spec = data["model"].get(role)
        if spec and spec not in BUNDLED and (Path(spec).is_absolute() or (base / spec).exists() or spec.startswith(("~", "."))):
            data["model"][role] = Path(spec).name
    # A policy may live anywhere (shared by many claims): named, and digested elsewhere. (Corpus
    # evidence is inside the claim folder, or an API URL without credentials or query.)
    if "/" in data["policy"]:
        data["policy"] = Path(data["policy"]).name
    return data


def _claim_targets(claim: ClaimManifest, base: Path, access: PeerAccess) -> Callable[[str], Target]:
    """Load the claim's target or reference model by role; a relative path is relative to the claim."""

    def load(role: str) -> Target:
        spec = claim_model_spec(claim, base, role)
        if spec.startswith(API_PREFIX):
            return load_target(spec, api=claim.model.api, access=access)
        return load_target(spec, claim_scoring_options(claim))

    return load


def claim_model_spec(claim: ClaimManifest, base: Path, role: str = "target") -> str:
    """The SPEC of the claim's target or reference; a relative path is relative to the claim."""
    spec = claim.model.target if role == "target" else claim.model.reference
    if spec is None:
        raise VerifierError("a route asked for a reference model, but the claim's model.reference names none")
    local = base / spec
    return str(local) if not spec.startswith(API_PREFIX) and local.exists() else spec


def claim_scoring_options(claim: ClaimManifest) -> ScoringOptions:
    """How an audit runs the claim's open-weight models (and so the cache keys its scores are under)."""
    return ScoringOptions(dtype=claim.model.dtype, max_tokens=claim.model.max_tokens, max_chars=claim.model.max_chars,
                          stride=claim.model.stride)


def _sentence(claim: ClaimManifest, verdict: str, summary: str) -> str:
    return f"{verdict}: the claim \u201c{claim.claim.statement}\u201d ({claim.claim.made_by}). {summary}"


def _model_identity(claim: ClaimManifest, ctx: RouteContext, base: Path) -> dict[str, Any]:
    """The loaded models' identities; a model never loaded is named by its spec (and weight digest
    where it is a local file), so no private path enters a bundle."""
    identity: dict[str, Any] = {"training_cutoff": claim.model.training_cutoff,
                                "released": claim.model.released.isoformat() if claim.model.released else None, "dtype": claim.model.dtype,
                                "max_tokens": claim.model.max_tokens, "max_chars": claim.model.max_chars, "stride": claim.model.stride}
    for role in ("target", "reference"):
        spec = getattr(claim.model, role)
        if spec is None:
            continue
        if role in ctx.loaded:
            identity[role] = ctx.loaded[role].identity.as_finding()
            continue
        if spec.startswith(API_PREFIX):
            endpoint, model = parse_spec(spec)
            identity[role] = {"kind": OpenAICompatibleTarget.kind, "spec": model, "endpoint": endpoint, "digests": {}, "loaded": False}
            continue
        local = base / spec
        source = resolve_model(str(local) if local.exists() else spec)
        identity[role] = {"kind": target_class(spec).kind, "spec": source.public_name,
                          "digests": {"weights": source.digest()} if source.is_local else {}, "loaded": False}
    return identity


def _input_digests(claim: ClaimManifest, base: Path) -> list[dict[str, Any]]:
    entries = []
    for role, ref in claim.evidence.documents().items():
        path = base / ref.path
        entries.append({"role": role, "file": path.name, "sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
                        "where": ref.where, "offset": ref.offset, "limit": ref.limit})
    if claim.evidence.marks is not None:
        for role in ("registration", "siblings"):
            path = base / getattr(claim.evidence.marks, role)
            entries.append({"role": f"marks {role}", "file": path.name, "sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
                            "where": {}, "offset": 0, "limit": None})
    return entries


def _environment() -> dict[str, Any]:
    packages = {}
    for name in PACKAGES:
        try:
            packages[name] = version(name)
        except PackageNotFoundError:
            packages[name] = None
    return {"verifier": __version__, "python": platform.python_version(), "packages": packages}
