"""The main job, as one library call: claim -> findings -> HTML and PDF reports -> signed bundle.

The CLI's ``audit`` command is a thin wrapper over ``audit_to_bundle``; scripts and notebooks call
it directly and get the same bundle.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from verifier.audit import run_audit
from verifier.digests import findings_digest
from verifier.peers import PeerAccess
from verifier.scoring import Progress
from verifier.ray_scoring import RayOptions, prescore_claim
from verifier.targets import ScoreCache


def default_key_path() -> Path:
    return Path.home() / ".config" / "verifier" / "signing.key"


def signing_key(path: Path | None):  # noqa: ANN201 - an Ed25519PrivateKey
    """The key at ``path``, else the default key, created (mode 0600) if it does not exist yet;
    returns it with the path of a key this call created (None if none was)."""
    from verifier.evidence import generate_key, load_private_key

    key_path = path or default_key_path()
    created = None
    if path is None and not key_path.exists():
        generate_key(key_path)
        created = key_path
    return load_private_key(key_path), created


@dataclass(frozen=True)
class BundleResult:
    folder: Path
    findings: dict[str, Any]
    signed: bool
    created_key: Path | None  # the default key, when this run created it
    html_seconds: float
    pdf_seconds: float


def audit_to_bundle(
    claim: str | Path,
    out_dir: Path = Path("evidence"),
    sign_key: Path | None = None,
    sign: bool = True,
    cache_dir: Path | None = None,
    progress: Progress | None = None,
    force: bool = False,
    ray: RayOptions | None = None,
    access: PeerAccess | None = None,
) -> BundleResult:
    """Audit ``claim`` and write its evidence bundle under ``out_dir``.

    Signing uses ``sign_key``, else the default key (created, mode 0600, if it does not exist yet).
    The key is loaded before the audit runs, so a bad key fails in a second, not after scoring.
    An existing bundle of the same claim and findings is replaced only with ``force``.
    """
    from verifier.evidence import write_bundle
    from verifier.evidence.signing import key_id, public_pem
    from verifier.report import render_html, render_pdf

    key, created = signing_key(sign_key) if sign else (None, None)
    prescored = prescore_claim(claim, cache_dir, ray) if ray is not None else None
    cache = ScoreCache(cache_dir)
    result = run_audit(claim, cache=cache, progress=progress, access=access)
    # How this run got its numbers: signed in the manifest and shown in the report, but outside the
    # findings, whose digest must not depend on what the cache held before.
    run = {"cache": asdict(cache.counts), "api_cache": asdict(cache.responses), "api": result.usage,
           **({"prescored": prescored} if prescored else {})}
    digest = findings_digest(result.findings)
    started = time.perf_counter()
    signer = key_id(public_pem(key.public_key())) if key is not None else None
    html = render_html(result.findings, digest, signer, run)
    html_s = time.perf_counter() - started
    started = time.perf_counter()
    pdf = render_pdf(html)
    pdf_s = time.perf_counter() - started
    folder = write_bundle(result, html, pdf, out_dir, key, force=force, run=run)
    return BundleResult(folder, result.findings, key is not None, created, html_s, pdf_s)
