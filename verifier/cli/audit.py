"""``verifier audit``: the main job, a claim walked to a signed evidence bundle."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from verifier.cli.options import ALLOW_HTTP, API_KEY_ENV, DEVICE, DTYPE, JUDGE_API_KEY_ENV, CacheDir
from verifier.cli.output import err, out, progress_bars, say
from verifier.errors import VerifierError
from verifier.verdicts import exit_status


def audit(
    claim: Annotated[str, typer.Argument(help="Claim manifest (YAML), or example:NAME.")],
    out_dir: Annotated[Path, typer.Option("--out", help="Folder the bundle is written under.")] = Path("evidence"),
    sign_key: Annotated[
        Path | None,
        typer.Option(help="Ed25519 private key (default ~/.config/verifier/signing.key, created if missing)."),
    ] = None,
    no_sign: Annotated[
        bool, typer.Option("--no-sign", help="Write an unsigned bundle ('verify' will refuse it).")
    ] = False,
    cache_dir: CacheDir = None,
    device: Annotated[str | None, DEVICE] = None,
    dtype: Annotated[str | None, DTYPE] = None,
    force: Annotated[
        bool, typer.Option("--force", help="Replace an existing bundle of the same claim and findings.")
    ] = False,
    engine: Annotated[
        str,
        typer.Option(
            help="inprocess, or ray: score the claim's document sets with its target on a Ray Data "
            "actor pool into the cache first (pip install 'verifier\\[ray]')."
        ),
    ] = "inprocess",
    address: Annotated[
        str | None, typer.Option(help="--engine ray: a cluster's address; default: a local Ray.")
    ] = None,
    actors: Annotated[int, typer.Option(help="--engine ray: scoring actors.")] = 1,
    actor_cpus: Annotated[float, typer.Option(help="--engine ray: CPUs per actor.")] = 0.5,
    api_key_env: Annotated[str | None, API_KEY_ENV] = None,
    judge_api_key_env: Annotated[str | None, JUDGE_API_KEY_ENV] = None,
    allow_http: Annotated[bool, ALLOW_HTTP] = False,
    plan: Annotated[
        Path | None,
        typer.Option(
            help="A signed plan from 'verifier plan': the audit refuses a claim, policy or "
            "document set that differs from it, and the report says it was pre-registered."
        ),
    ] = None,
    tsa: Annotated[
        list[str] | None,
        typer.Option(
            "--tsa",
            help="A time-stamping authority (RFC 3161) to date the bundle's "
            "signature (the first also dates the PDF's); repeatable. A TSA that fails "
            "writes no bundle.",
        ),
    ] = None,
    pdf_cert: Annotated[
        Path | None,
        typer.Option(
            help="Sign report.pdf with this X.509 certificate (PEM; a chain may follow) "
            "instead of the signing key's self-signed one."
        ),
    ] = None,
    pdf_key: Annotated[Path | None, typer.Option(help="The private key of --pdf-cert (PEM, mode 0600).")] = None,
    pdf_p12: Annotated[
        Path | None,
        typer.Option(help="Sign report.pdf with the certificate and key of this PKCS#12 file (mode 0600)."),
    ] = None,
    pdf_p12_password_env: Annotated[
        str | None, typer.Option(help="The environment variable holding --pdf-p12's password.")
    ] = None,
) -> None:
    """Walk the claim's policy, write HTML and PDF reports and a signed evidence bundle.

    CLAIM is a claim file, or example:NAME for a bundled example (example:wikimia-smollm2), or a
    batch manifest listing claims: each gets its bundle, adjusted across the batch by the policy's
    error control, and the batch a signed index (an interrupted batch resumes where it stopped).

    Exit status: 0 VERIFIED or SUPPORTED, 3 CONTRADICTED, 4 INCONCLUSIVE, REJECTED-METHOD or
    UNVERIFIABLE (a batch exits with its worst claim), 2 bad input, 1 a bug in verifier."""
    from verifier.audit import audit_to_bundle
    from verifier.batch import is_batch
    from verifier.boundary.peers import PeerAccess
    from verifier.scoring.ray import RayOptions
    from verifier.trust.certificates import PdfSigning

    if engine not in ("inprocess", "ray"):
        raise VerifierError(f"--engine {engine!r}: use inprocess or ray")
    access = PeerAccess(api_key_env, judge_api_key_env, allow_http)
    pdf_signing = PdfSigning(pdf_cert, pdf_key, pdf_p12, pdf_p12_password_env)
    if is_batch(claim):
        if plan is not None or engine != "inprocess":
            raise VerifierError(
                f"{claim}: a batch manifest: --plan (one claim's) and --engine ray apply to single claims only"
            )
        if device is not None or dtype is not None:
            raise VerifierError(f"{claim}: a batch manifest: --device and --dtype apply to single claims only")
        return _batch(claim, out_dir, sign_key, not no_sign, cache_dir, force, access, tsa, pdf_signing)
    ray = RayOptions(address=address, actors=actors, actor_cpus=actor_cpus) if engine == "ray" else None
    with progress_bars() as progress:
        result = audit_to_bundle(
            claim,
            out_dir,
            sign_key=sign_key,
            sign=not no_sign,
            cache_dir=cache_dir,
            progress=progress,
            force=force,
            ray=ray,
            access=access,
            plan=plan,
            tsa=tsa,
            pdf_signing=pdf_signing,
            model_options={k: v for k, v in {"device": device, "dtype": dtype}.items() if v is not None},
        )
    if result.created_key:
        say(err, f"created signing key {result.created_key} (public key {result.created_key}.pub)")
    if result.created_certificate:
        say(err, f"issued a self-signed report-signing certificate {result.created_certificate}")
    if not result.existed:
        err.print(f"rendered HTML in {result.html_seconds:.2f} s, PDF in {result.pdf_seconds:.2f} s")
    say(out, result.findings["lead"])
    say(out, result.findings["verdict_sentence"])
    if result.existed:
        say(
            out,
            f"bundle: {result.folder} already holds these very findings (same claim and findings SHA-256): not "
            "rewritten ('verifier verify' checks it; --force rewrites it)",
        )
    else:
        say(out, f"bundle: {result.folder}{'' if result.signed else ' (unsigned)'}")
    raise typer.Exit(exit_status([result.findings["verdict"]]))


def _batch(
    manifest: str,
    out_dir: Path,
    sign_key: Path | None,
    sign: bool,
    cache_dir: Path | None,
    force: bool,
    access: object,
    tsa: list[str] | None,
    pdf_signing: object,
) -> None:
    from collections import Counter

    from verifier.batch import run_batch
    from verifier.trust.keys import default_key_path, signing_key

    key, created = signing_key(sign_key) if sign else (None, None)
    document, issued = pdf_signing.signer(sign_key or default_key_path(), key) if key is not None else (None, None)  # type: ignore[attr-defined]
    if issued:
        say(err, f"issued a self-signed report-signing certificate {issued}")
    with progress_bars() as progress:
        result = run_batch(manifest, out_dir, key, cache_dir, progress, force, access, tsa=tsa, pdf_signer=document)
    if created:
        say(err, f"created signing key {created} (public key {created}.pub)")
    counts = Counter(f["verdict"] for f in result.findings)
    weakened = sum(f["verdict"] != f["batch"]["unadjusted_verdict"] for f in result.findings)
    first = result.findings[0]["batch"]
    say(
        out,
        f"batch {first['id']}: {len(result.findings)} claims ({result.resumed} read back from an interrupted run); "
        + ", ".join(f"{v} {n}" for v, n in sorted(counts.items()))
        + f"; {first['tested']} decided by a test, adjusted with {first['error_control']}: {weakened} weakened to "
        "INCONCLUSIVE",
    )
    say(out, f"bundles and {'signed index' if result.signed else 'no index (unsigned)'}: {result.folder}")
    raise typer.Exit(exit_status(counts))


def reproduce(
    bundle: Annotated[Path, typer.Argument(help="An audit's evidence bundle folder.")],
    inputs: Annotated[
        Path, typer.Option(help="The folder the claim's relative paths start from (where its documents lie).")
    ] = Path("."),
    model: Annotated[
        str | None,
        typer.Option(help="The model, when the bundle names a local one by its folder or file name only."),
    ] = None,
    cache_dir: CacheDir = None,
) -> None:
    """Re-run the audit from what BUNDLE holds and compare every number: exit 0 when all agree within
    their tolerances (digests, counts and verdicts exactly; floats within 1e-6 + 1e-3 relative),
    3 listing each that differs."""
    from verifier.reproduce import ABSOLUTE, RELATIVE, reproduce_bundle

    with progress_bars() as progress:
        found = reproduce_bundle(bundle, inputs, model, cache_dir, progress)
    for note in found.notes:
        say(err, f"note: {note}")
    before, after = found.environment
    if before != after:
        say(err, f"environment differs (not compared): the bundle's {before}; this run's {after}")
    for d in found.differences[:50]:
        say(out, f"differs: {d.path}: bundle {str(d.bundle)[:120]!r}, re-run {str(d.rerun)[:120]!r}")
    if found.differences:
        more = len(found.differences) - 50
        say(
            out,
            f"{len(found.differences)} of {found.compared} values differ"
            + (f" ({more} not shown)" if more > 0 else ""),
        )
        raise typer.Exit(3)
    say(
        out,
        f"reproduced: all {found.compared} values agree (digests, counts and verdicts exactly; floats within "
        f"{ABSOLUTE:g} + {RELATIVE:g} relative)",
    )
