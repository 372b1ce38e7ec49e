"""``verifier audit``: the main job, a claim walked to a signed evidence bundle."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from verifier.cli.options import ALLOW_HTTP, API_KEY_ENV, JUDGE_API_KEY_ENV, CacheDir
from verifier.cli.output import err, out, progress_bars, say
from verifier.errors import VerifierError


def audit(
    claim: Annotated[str, typer.Argument(help="Claim manifest (YAML), or example:NAME.")],
    out_dir: Annotated[Path, typer.Option("--out", help="Folder the bundle is written under.")] = Path("evidence"),
    sign_key: Annotated[Optional[Path], typer.Option(help="Ed25519 private key (default ~/.config/verifier/signing.key, created if missing).")] = None,
    no_sign: Annotated[bool, typer.Option("--no-sign", help="Write an unsigned bundle ('verify' will refuse it).")] = False,
    cache_dir: CacheDir = None,
    force: Annotated[bool, typer.Option("--force", help="Replace an existing bundle of the same claim and findings.")] = False,
    engine: Annotated[str, typer.Option(help="inprocess, or ray: score the claim's document sets with its target on a Ray Data "
                                        "actor pool into the cache first (pip install 'verifier\\[ray]').")] = "inprocess",
    address: Annotated[Optional[str], typer.Option(help="--engine ray: a cluster's address; default: a local Ray.")] = None,
    actors: Annotated[int, typer.Option(help="--engine ray: scoring actors.")] = 1,
    actor_cpus: Annotated[float, typer.Option(help="--engine ray: CPUs per actor.")] = 0.5,
    api_key_env: Annotated[Optional[str], API_KEY_ENV] = None,
    judge_api_key_env: Annotated[Optional[str], JUDGE_API_KEY_ENV] = None,
    allow_http: Annotated[bool, ALLOW_HTTP] = False,
    plan: Annotated[Optional[Path], typer.Option(help="A signed plan from 'verifier plan': the audit refuses a claim, policy or "
                                                 "document set that differs from it, and the report says it was pre-registered.")] = None,
) -> None:
    """Walk the claim's policy, write HTML and PDF reports and a signed evidence bundle.

    CLAIM is a claim file, or example:NAME for a bundled example (example:wikimia-smollm2)."""
    from verifier.audit import audit_to_bundle
    from verifier.boundary.peers import PeerAccess
    from verifier.scoring.ray import RayOptions

    if engine not in ("inprocess", "ray"):
        raise VerifierError(f"--engine {engine!r}: use inprocess or ray")
    ray = RayOptions(address=address, actors=actors, actor_cpus=actor_cpus) if engine == "ray" else None
    with progress_bars() as progress:
        result = audit_to_bundle(claim, out_dir, sign_key=sign_key, sign=not no_sign, cache_dir=cache_dir, progress=progress, force=force,
                                 ray=ray, access=PeerAccess(api_key_env, judge_api_key_env, allow_http), plan=plan)
    if result.created_key:
        say(err, f"created signing key {result.created_key} (public key {result.created_key}.pub)")
    err.print(f"rendered HTML in {result.html_seconds:.2f} s, PDF in {result.pdf_seconds:.2f} s")
    say(out, result.findings["verdict_sentence"])
    say(out, f"bundle: {result.folder}{'' if result.signed else ' (unsigned)'}")
