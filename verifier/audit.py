"""The main job: claim manifest -> policy walk -> findings -> report -> signed evidence bundle.

Findings are plain JSON-serialisable data and deterministic: the same inputs, policy and seed give
the same findings digest. They name input files by file name and SHA-256 only, and a local
model by its file or folder name and weight digest, so no private path enters a bundle.
"""

from __future__ import annotations

import hashlib
import json
import platform
from collections.abc import Callable
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import pandas as pd

from verifier import __version__
from verifier.claims import ClaimManifest, load_claim
from verifier.resources import resolve_claim_path
from verifier.policy import load_policy, resolve_policy_path
from verifier.policy.engine import decision, record_to_dict, walk
from verifier.routes import RouteContext
from verifier.scoring import Progress
from verifier.targets import CausalLMTarget, ScoreCache, resolve_model
from verifier.targets.model_source import BUNDLED

PACKAGES = ("torch", "transformers", "numpy", "scipy", "scikit-learn", "pandas", "tokenizers", "weasyprint", "cryptography")


@dataclass
class AuditResult:
    findings: dict[str, Any]
    scores: pd.DataFrame  # one row per scored document: role, text digest, signals (no text)
    claim_path: Path
    policy_path: Path


def canonical_json(data: Any) -> bytes:
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def findings_digest(findings: dict[str, Any]) -> str:
    return hashlib.sha256(canonical_json(findings)).hexdigest()


def run_audit(
    claim_path: str | Path,
    cache: ScoreCache | None = None,
    progress: Progress | None = None,
    target_factory: Callable[[], CausalLMTarget] | None = None,
) -> AuditResult:
    """Validate the claim, walk its policy, and return the findings (nothing is written here).

    ``target_factory`` supplies the model (e.g. one already loaded); by default the claim's
    target is loaded on first use, so routes that need no model never load one.
    """
    claim, base = load_claim(claim_path)
    policy_path = resolve_policy_path(claim.policy, base)
    policy, policy_sha = load_policy(policy_path)
    ctx = RouteContext(claim=claim, base_dir=base, cache=cache or ScoreCache(), progress=progress, target_factory=target_factory)
    records = walk(policy, ctx)
    decided = decision(records)
    findings = {
        "format": "verifier-findings/1",
        "claim": claim.model_dump(mode="json"),
        "model": _model_identity(claim, ctx),
        "policy": {"name": policy.name, "version": policy.version, "file": policy_path.name, "sha256": policy_sha},
        "verdict": decided.verdict,
        "decided_by": decided.route,
        "verdict_sentence": _sentence(claim, decided.verdict, decided.outcome.summary if decided.outcome else decided.reason),
        "path": [record_to_dict(r) for r in records],
        "inputs": _input_digests(claim, base),
        "environment": _environment(),
        "seed": claim.seed,
    }
    scores = pd.concat(ctx.scored_rows, ignore_index=True) if ctx.scored_rows else pd.DataFrame({"role": [], "text_sha256": []})
    return AuditResult(findings=findings, scores=scores, claim_path=resolve_claim_path(claim_path), policy_path=policy_path)


def _sentence(claim: ClaimManifest, verdict: str, summary: str) -> str:
    return f"{verdict}: the claim \u201c{claim.claim.statement}\u201d ({claim.claim.made_by}). {summary}"


def _model_identity(claim: ClaimManifest, ctx: RouteContext) -> dict[str, Any]:
    spec = claim.model.target
    local = ctx.base_dir / spec
    source = resolve_model(str(local) if local.exists() else spec)
    identity: dict[str, Any] = {
        "spec": Path(spec).name if source.is_local and spec not in BUNDLED else spec,  # never a private path
        "training_cutoff": claim.model.training_cutoff,
        "dtype": claim.model.dtype,
        "max_tokens": claim.model.max_tokens,
    }
    if ctx.loaded_target is not None:
        identity |= {"weights_sha256": ctx.loaded_target.model_digest, "tokenizer_sha256": ctx.loaded_target.tokenizer_digest}
    elif source.is_local:
        identity["weights_sha256"] = source.digest()
    return identity


def _input_digests(claim: ClaimManifest, base: Path) -> list[dict[str, Any]]:
    entries = []
    for role, ref in claim.evidence:
        if ref is None:
            continue
        path = base / ref.path
        entries.append({
            "role": role,
            "file": path.name,
            "sha256": hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else None,
            "where": ref.where,
            "offset": ref.offset,
            "limit": ref.limit,
        })
    return entries


def _environment() -> dict[str, Any]:
    packages = {}
    for name in PACKAGES:
        try:
            packages[name] = version(name)
        except PackageNotFoundError:
            packages[name] = None
    return {"verifier": __version__, "python": platform.python_version(), "packages": packages}
