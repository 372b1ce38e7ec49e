"""``verifier plan``: pre-register an audit before any document is scored."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from verifier.boundary.atomic import atomic_output
from verifier.cli.output import err, out, say
from verifier.errors import VerifierError


def plan(
    claim: Annotated[str, typer.Argument(help="Claim manifest (YAML), or example:NAME.")],
    out_path: Annotated[Path, typer.Option("--out", help="Where the signed plan is written.")] = Path("plan.dsse.json"),
    sign_key: Annotated[Optional[Path], typer.Option(help="Ed25519 private key (default ~/.config/verifier/signing.key, created if missing).")] = None,
    effect: Annotated[Optional[float], typer.Option(help="A Cohen's d the design should detect: the plan states the set-level "
                                                    "test's power for it at the claim's set size.")] = None,
    force: Annotated[bool, typer.Option("--force", help="Replace an existing plan file.")] = False,
) -> None:
    """Commit to the claim, its policy, the digests of every document set, the seed and the design's
    power, in a signed plan, before any document is scored; 'verifier audit CLAIM --plan PLAN' then
    refuses anything that differs from it."""
    from verifier.audit import signing_key
    from verifier.batch import is_batch
    from verifier.plan import make_plan

    if is_batch(claim):
        raise VerifierError(f"{claim}: a batch manifest; a plan covers one claim (plan each claim of the batch)")

    if effect is not None and not 0 < effect <= 10:
        raise VerifierError(f"--effect {effect}: a Cohen's d above 0 and at most 10")
    if out_path.exists() and not force:
        raise VerifierError(f"{out_path}: exists; refusing to replace it (--force replaces it)")
    key, created = signing_key(sign_key)
    raw, predicate = make_plan(claim, key, effect)
    with atomic_output(out_path) as tmp:
        tmp.write_bytes(raw)
    if created:
        say(err, f"created signing key {created} (public key {created}.pub)")
    planned = predicate["design"]
    power = f"; power {planned['power_at_stated_effect']:.0%} at d = {planned['stated_effect']}" if "stated_effect" in planned else ""
    say(out, f"plan for claim {predicate['claim_id']}: {len(predicate['sets'])} document sets, first route {planned['route']}, "
             f"n = {planned['n']}{power}; made {predicate['created']} by the planner's clock")
    say(out, f"plan: {out_path}")
