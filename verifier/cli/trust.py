"""``verifier keys`` and ``verifier verify``: signing keys, pinned signers and the check of a bundle."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from verifier.cli.output import err, out, say
from verifier.errors import VerifierError

keys = typer.Typer(no_args_is_help=True, help="Signing keys for evidence bundles.")


@keys.command("generate")
def generate(
    out_path: Annotated[
        Path | None,
        typer.Option("--out", help="Private key file to create (mode 0600); the public key goes to OUT.pub."),
    ] = None,
    force: Annotated[bool, typer.Option("--force", help="Replace an existing private or public key.")] = False,
    certificate: Annotated[
        bool,
        typer.Option(
            help="Also issue a self-signed X.509 certificate (ECDSA P-256, naming the key) that "
            "signs report PDFs: OUT without .key, plus .pdf.crt and .pdf.key."
        ),
    ] = True,
    name: Annotated[str | None, typer.Option(help="The certificate's common name (who signs the reports).")] = None,
) -> None:
    """Create an Ed25519 signing key pair, and a self-signed certificate for signing report PDFs."""
    from verifier.trust.certificates import issue_self_signed
    from verifier.trust.keys import default_key_path, generate_key, load_private_key

    path = out_path or default_key_path()
    public = generate_key(path, force=force)
    say(err, f"private key: {path} (mode 0600)")
    say(err, f"public key:  {public}")
    if certificate:
        issued = issue_self_signed(path, load_private_key(path), name, force=force)
        say(
            err,
            f"report-signing certificate: {issued} (self-signed; its key {issued.with_suffix('.key').name}, mode 0600)",
        )


@keys.command("trust")
def trust(
    public_key: Annotated[
        Path, typer.Argument(help="A signer's public key (PEM), obtained from the signer by a channel you trust.")
    ],
    trust_dir: Annotated[Path | None, typer.Option(help="Trust store (default ~/.config/verifier/trusted).")] = None,
) -> None:
    """Pin a signer's public key: 'verify' then accepts bundles it signed without --key."""
    from verifier.trust.keys import trust_key

    path, fingerprint = trust_key(public_key, trust_dir)
    say(err, f"pinned {fingerprint} as {path}")


@keys.command("trust-tsa")
def trust_tsa(
    certificate: Annotated[
        Path, typer.Argument(help="A time-stamping authority's CA certificate (PEM), obtained by a channel you trust.")
    ],
    trust_dir: Annotated[Path | None, typer.Option(help="Trust store (default ~/.config/verifier/trusted).")] = None,
) -> None:
    """Pin a time-stamping authority: its tokens then date bundles ('verify') and marks registrations (audits)."""
    from verifier.trust.timestamps import trust_tsa_certificate

    path, subject = trust_tsa_certificate(certificate, trust_dir)
    say(err, f"pinned the time-stamping authority {subject} as {path}")


def verify(
    bundle: Annotated[Path, typer.Argument(help="Evidence bundle folder.")],
    key: Annotated[Path | None, typer.Option(help="The signer's public key, pinned for this check.")] = None,
    trust_dir: Annotated[
        Path | None, typer.Option(help="Trust store of pinned public keys (default ~/.config/verifier/trusted).")
    ] = None,
    tsa_cert: Annotated[
        list[Path] | None,
        typer.Option(
            "--tsa-cert",
            help="A time-stamping authority's CA certificate (PEM) "
            "whose tokens are trusted; repeatable (also: TRUST_DIR/tsa/*.pem).",
        ),
    ] = None,
) -> None:
    """Exit 0 only if every entry, digest and the signature hold and the signer is pinned (--key or the
    trust store); 3 if all holds but the signer is not pinned; 2 naming the first entry that differs
    (a timestamp token that does not date the signature included). Prints each timestamp's time and
    TSA, and whether a pinned TSA certificate vouches for it."""
    from verifier.trust import verify_bundle
    from verifier.trust.timestamps import load_tsa_certificates

    pinned = None
    if key is not None and key.resolve().is_relative_to(bundle.resolve()):
        raise VerifierError(
            f"--key {key}: inside the bundle; a bundle cannot pin its own signer (use the signer's published key)"
        )
    if key is not None:
        try:
            pinned = key.read_bytes()
        except OSError as exc:
            raise VerifierError(f"{key}: cannot read ({exc.strerror})") from None
    from verifier.summary.bundle import ENVELOPE as SUMMARY_ENVELOPE
    from verifier.summary.bundle import FINDINGS as SUMMARY_FINDINGS
    from verifier.summary.bundle import verify_summary
    from verifier.trust.bundle import BATCH_INDEX, verify_batch
    from verifier.trust.keys import trusted_keys

    if (bundle / SUMMARY_ENVELOPE).exists() or (bundle / SUMMARY_FINDINGS).exists():
        findings, signer = verify_summary(bundle, pinned, trust_dir)
        verdicts = ", ".join(f"{r['field']}: {r['verdict']}" for r in findings["rows"])
        facts = (
            f"summary check {findings['summary']['id']}: files, claims' bundles and index intact; signer {signer[:16]}"
        )
        if pinned is None and signer not in trusted_keys(trust_dir):
            say(
                out,
                f"signature valid but the signer is not pinned: {facts}. Pin the signer's published key with --key.",
            )
            raise typer.Exit(3)
        say(out, f"OK: {facts}; {verdicts}")
        return
    if (bundle / BATCH_INDEX).exists():
        batch = verify_batch(bundle, pinned, trust_dir)
        facts = (
            f"batch {batch.predicate.get('batch_id')}: index and {batch.bundles} bundles intact; signer "
            f"{batch.signer[:16]}; "
            f"error control {batch.predicate.get('error_control')}"
        )
        if batch.pinned_by is None:
            say(
                out,
                f"signature valid but the signer is not pinned: {facts}. Pin the signer's published key with --key or "
                "'verifier keys trust'.",
            )
            raise typer.Exit(3)
        say(out, f"OK: {facts}; signer pinned by {batch.pinned_by}")
        return
    result = verify_bundle(bundle, pinned, trust_dir, load_tsa_certificates(tsa_cert or [], trust_dir))
    for i, stamp in enumerate(result.timestamps, 1):
        say(out, f"timestamp {i}: {stamp.describe()}")
    p = result.predicate
    facts = (
        f"{result.files} files intact; signer {result.signer[:16]}; predicate {result.statement.get('predicateType')}; "
        f"claim {p.get('claim_id')}: {p.get('verdict')}; verifier {p.get('verifier')}"
    )
    if result.pinned_by is None:
        say(
            out,
            f"signature valid but the signer is not pinned: {facts}. Pin the signer's published key with "
            f"--key or 'verifier keys trust'.",
        )
        raise typer.Exit(3)
    say(out, f"OK: {facts}; signer pinned by {result.pinned_by}")
    if result.lead:
        say(out, result.lead)
