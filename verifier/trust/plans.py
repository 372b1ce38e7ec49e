"""A pre-registration plan as a reader checks it: its signature, its timestamps, its record.

Writing a plan (``verifier.plan``: what it commits to and its design) needs the claim, the policy
and the document sets; reading one (an audit's ``--plan``, ``verify`` of a pre-registered bundle)
needs only the plan's bytes, so it lives here, on the trust floor, and imports no ML stack.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import Any

from verifier.boundary.files import read_plain
from verifier.errors import VerifierError
from verifier.trust.envelopes import (
    is_predicate,
    key_id,
    load_public_key,
    predicate_type,
    public_pem,
    read_envelope,
    read_statement,
    verify_envelope,
)
from verifier.trust.timestamps import check_token, read_tokens_beside

PLAN_PREDICATE = predicate_type("plan")
MAX_PLAN_BYTES = 1 << 20
CLOCK = "the planner's system clock (no trusted timestamp)"


@dataclass(frozen=True)
class Plan:
    subjects: dict[str, str]
    predicate: dict[str, Any]
    signer: str  # SHA-256 fingerprint of the key it is signed with
    sha256: str  # of the plan file
    raw: bytes
    signature: bytes = b""  # the raw signature that verified: what a timestamp of the plan must date
    tokens: tuple[tuple[str, bytes], ...] = ()  # (file name, DER) of its timestamps: plan.timestamp-<n>.tsr
    name: str = "plan.dsse.json"  # the file it was read from, as errors name it


def read_plan(path: Path) -> Plan:
    """The plan at ``path``, its signature checked under the key it names; else one line naming the file."""
    raw = read_plain(path, MAX_PLAN_BYTES, "--plan", follow_links=True)
    plan = parse_plan(raw, f"--plan {path.name}")
    tokens = tuple((f"plan.{name.rsplit('.', 2)[-2]}.tsr", data) for name, data in read_tokens_beside(path))
    return replace(plan, tokens=tokens, name=path.name)


def parse_plan(raw: bytes, where: str, tokens: tuple[tuple[str, bytes], ...] = ()) -> Plan:
    """A plan's bytes, its signature checked under the key it names (``where`` names it in errors)."""
    if len(raw) > MAX_PLAN_BYTES:
        raise VerifierError(f"{where}: larger than a plan can be")
    try:
        envelope = read_envelope(raw)
        claimed = read_statement(envelope.body())
        pem = claimed.predicate["public_key"].encode()
    except (ValueError, KeyError, AttributeError, TypeError):
        raise VerifierError(f"{where}: not a signed plan (make one with 'verifier plan CLAIM')") from None
    if not is_predicate(claimed.predicateType, "plan"):
        raise VerifierError(f"{where}: not a plan (its statement is a {claimed.predicateType[:80]!r})")
    public = load_public_key(pem, f"{where}: public_key")
    body, signature = verify_envelope(envelope, public, where)
    verified = read_statement(body)  # what the signature covers
    try:
        subjects = verified.subjects()
    except ValueError as exc:
        raise VerifierError(f"{where}: {exc}") from None
    return Plan(
        subjects,
        verified.predicate,
        key_id(public_pem(public)),
        hashlib.sha256(raw).hexdigest(),
        raw,
        signature,
        tokens,
    )


def plan_record(plan: Plan, where: str, pinned: list[Any] | None = None) -> dict[str, Any]:
    """What the findings say of the plan: its digest and signer, and its time - by the planner's clock,
    whatever the plan calls its clock (it is the planner's word) - and design. With timestamps of the
    plan, each must date its signature; the earliest a ``pinned`` TSA certificate vouches for puts
    the plan's time on that authority's clock (``timestamped``)."""
    created = plan.predicate.get("created")
    try:
        datetime.fromisoformat(created)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise VerifierError(f"{where}: its creation time is not a date and time") from None
    design = plan.predicate.get("design")
    if not isinstance(design, dict):
        raise VerifierError(f"{where}: its design is not a record")
    record = {
        "registered": True,
        "plan_sha256": plan.sha256,
        "signer": plan.signer,
        "created": created,
        "clock": CLOCK,
        "design": design,
    }
    stamps = [(name, check_token(data, plan.signature, pinned or [], name)) for name, data in plan.tokens]
    if stamps:
        record["timestamps"] = [{"token": name, "time": t.time.isoformat(), "tsa": t.tsa} for name, t in stamps]
    trusted = sorted((t for _, t in stamps if t.pinned), key=lambda t: t.time)
    if trusted:
        record |= {"clock": tsa_clock(trusted[0].tsa), "timestamped": trusted[0].time.isoformat()}
    return record


def tsa_clock(tsa: str) -> str:
    return f"the clock of the time-stamping authority {tsa} (a timestamp token the auditor pins)"


NOT_REGISTERED = {"registered": False}
