"""``verifier plan``: pre-register an audit before any document is scored."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from verifier.boundary.atomic import atomic_output
from verifier.cli.options import ALLOW_HTTP
from verifier.cli.output import err, out, say
from verifier.errors import VerifierError


def plan(
    claim: Annotated[str, typer.Argument(help="Claim manifest (YAML), or example:NAME.")],
    out_path: Annotated[Path, typer.Option("--out", help="Where the signed plan is written.")] = Path("plan.dsse.json"),
    sign_key: Annotated[
        Path | None,
        typer.Option(help="Ed25519 private key (default ~/.config/verifier/signing.key, created if missing)."),
    ] = None,
    effect: Annotated[
        float | None,
        typer.Option(
            help="A Cohen's d the design should detect: the plan states the set-level "
            "test's power for it at the claim's set size."
        ),
    ] = None,
    force: Annotated[bool, typer.Option("--force", help="Replace an existing plan file.")] = False,
    tsa: Annotated[
        list[str] | None,
        typer.Option(
            "--tsa",
            help="A time-stamping authority (RFC 3161) that dates the plan "
            "(PLAN's name with .timestamp-<n>.tsr, beside it; an audit carries them "
            "into its bundle); repeatable. A TSA that fails writes nothing.",
        ),
    ] = None,
    allow_http: Annotated[bool, ALLOW_HTTP] = False,
) -> None:
    """Commit to the claim, its policy, the digests of every document set, the seed and the design's
    power, in a signed plan, before any document is scored; 'verifier audit CLAIM --plan PLAN' then
    refuses anything that differs from it."""
    from verifier.batch import is_batch
    from verifier.plan import make_plan
    from verifier.trust.keys import signing_key

    if is_batch(claim):
        raise VerifierError(f"{claim}: a batch manifest; a plan covers one claim (plan each claim of the batch)")

    if effect is not None and not 0 < effect <= 10:
        raise VerifierError(f"--effect {effect}: a Cohen's d above 0 and at most 10")
    if out_path.exists() and not force:
        raise VerifierError(f"{out_path}: exists; refusing to replace it (--force replaces it)")
    from verifier.boundary.peers import PeerAccess
    from verifier.trust.timestamps import check_tsa, names_beside, stamp_envelope, tokens_beside

    access = PeerAccess(allow_http=allow_http)
    check_tsa(tsa, access=access)
    key, created = signing_key(sign_key)
    raw, predicate = make_plan(claim, key, effect)
    tokens = stamp_envelope(raw, tsa, access) if tsa else []  # before anything is written
    for stale in tokens_beside(out_path):  # a replaced plan's tokens date another signature
        stale.unlink()
    with atomic_output(out_path) as tmp:
        tmp.write_bytes(raw)
    for name, token in zip(names_beside(out_path, len(tokens)), tokens):
        with atomic_output(out_path.with_name(name)) as tmp:
            tmp.write_bytes(token)
        say(out, f"timestamp: {out_path.with_name(name)}")
    if created:
        say(err, f"created signing key {created} (public key {created}.pub)")
    planned = predicate["design"]
    power = (
        f"; power {planned['power_at_stated_effect']:.0%} at d = {planned['stated_effect']}"
        if "stated_effect" in planned
        else ""
    )
    say(
        out,
        f"plan for claim {predicate['claim_id']}: {len(predicate['sets'])} document sets, first route "
        f"{planned['route']}, "
        f"n = {planned['n']}{power}; made {predicate['created']} by the planner's clock",
    )
    say(out, f"plan: {out_path}")
