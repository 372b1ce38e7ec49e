"""Pre-registration: commit to the claim, the policy, the documents and the design before looking.

"Did you choose the test after seeing the numbers?" is answered by a plan signed before any
document is scored (``verifier plan CLAIM``): the digest of the validated claim (its seed
included), of the policy, of every document set's contents (sorted text digests, so a reordered
file is the same set and one changed document is another) and of every other input file, with the
power the design has, read from the method-validation table at the claim's set size (and, for a
stated effect size, computed for the set-level test). ``verifier audit CLAIM --plan PLAN`` checks
the plan's signature and refuses a claim, policy or set that differs from it, naming what
differs; the findings record the plan's digest, signer and time, and the bundle carries the plan.

A plan counts only when it is signed by the key that signs the audit's bundle (``audit_to_bundle``
and ``verify`` check it): another party's plan is that party's word, not the auditor's commitment.

What a plan cannot show: that nobody scored the documents before it was made. Its time is the
planner's own clock unless a time-stamping authority the auditor pins dated it (``verifier plan
--tsa URL``: ``plan.timestamp-<n>.tsr`` beside the plan, carried into the bundle and signed with
it); then the findings put the plan's time on that authority's clock. The report does say when this audit read scores from the auditor's cache, which were
computed before the audit ran and possibly before the plan.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from verifier import __version__
from verifier.errors import VerifierError
from verifier.trust.digests import canonical_json
from verifier.trust.envelopes import (
    key_id,
    load_public_key,
    public_pem,
    read_envelope,
    read_statement,
    sign_envelope,
    statement,
    verify_envelope,
)

if TYPE_CHECKING:  # the audit's side of a plan needs the ML stack; reading one (verify) does not
    from verifier.claims import ClaimManifest
    from verifier.policy.schema import Policy

PLAN_PREDICATE = "https://github.com/verifier/verifier/plan/v1"
MAX_PLAN_BYTES = 1 << 20
CLOCK = "the planner's system clock (no trusted timestamp)"


def commitments(claim: ClaimManifest, base: Path, policy: Policy) -> tuple[dict[str, str], dict[str, dict[str, Any]]]:
    """What a plan commits to: subject name -> SHA-256 (the claim, the policy, each set's
    documents, every other input file), and per set its file name and document count."""
    from verifier.audit import claim_model_spec, input_digests, public_claim
    from verifier.data import load_documents
    from verifier.targets import kind_of
    from verifier.targets.cache import text_digest

    subjects = {"claim": hashlib.sha256(canonical_json(public_claim(claim, base))).hexdigest(), "policy": policy.sha256}
    sets: dict[str, dict[str, Any]] = {}
    for role, ref in claim.evidence.documents().items():
        texts = load_documents(base / ref.path, text_field=ref.text_field, where=ref.where, offset=ref.offset, limit=ref.limit).texts
        digest = hashlib.sha256("\n".join(sorted(text_digest(t) for t in texts)).encode()).hexdigest()
        subjects[f"documents:{role}"] = digest
        sets[str(role)] = {"file": ref.path.name, "documents": len(texts), "sha256": digest}
    for entry in input_digests(claim, base):
        if entry["role"].startswith("marks "):
            subjects[f"file:{entry['role']}"] = entry["sha256"]
    for role in ("target", "reference"):  # the model as an audit names it unloaded: for local weights, their digest
        if getattr(claim.model, role):
            spec = claim_model_spec(claim, base, role)
            subjects[f"model:{role}"] = hashlib.sha256(canonical_json(kind_of(spec).cls.unloaded_identity(spec, base))).hexdigest()
    return subjects, sets


def design(claim: ClaimManifest, policy: Policy, sets: dict[str, dict[str, Any]], effect: float | None) -> dict[str, Any]:
    """The route the claim's evidence reaches first, its validation rows at the suspect set's size,
    and (for the set-level test, given an effect size) its power."""
    from verifier.policy.engine import missing_evidence
    from verifier.validation import for_audit

    route = next((step for step in policy.routes if step.route is not None and not missing_evidence(step, claim)
                  and claim.claim.kind in step.route.claim_kinds), None)
    n = sets.get("suspect", {}).get("documents")
    planned: dict[str, Any] = {"route": route.name if route else None, "n": n,
                               "validation": for_audit(route.name if route else None, n)}
    if effect is not None:
        if route is None or route.name != "dataset_inference" or n is None:
            raise VerifierError("--effect: a stated effect size plans the set-level test, which this claim's evidence does not reach first")
        from verifier.dataset_inference.planning import set_test_power

        alpha, method = route.params.alpha, route.params.method
        planned |= {"stated_effect": effect, "alpha": alpha,
                    "power_at_stated_effect": round(float(set_test_power(effect, n, alpha, method)), 4)}
    return planned


def make_plan(claim_path: str | Path, key: Any, effect: float | None = None) -> tuple[bytes, dict[str, Any]]:  # noqa: ANN401 - an Ed25519PrivateKey
    """The signed plan (a DSSE envelope) for ``claim_path``, and its predicate."""
    from verifier.claims import load_claim
    from verifier.policy import load_policy, resolve_policy_path
    from verifier.policy.engine import check_against_claim

    claim, base = load_claim(claim_path)
    policy = load_policy(resolve_policy_path(claim.policy, base))
    check_against_claim(policy, claim)
    subjects, sets = commitments(claim, base, policy)
    pem = public_pem(key.public_key())
    predicate = {"format": "verifier-plan/1", "claim_id": claim.claim.id, "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                 "clock": CLOCK, "seed": claim.seed, "sets": sets, "design": design(claim, policy, sets, effect), "verifier": __version__,
                 "public_key": pem.decode()}
    envelope = sign_envelope(canonical_json(statement(subjects, predicate, PLAN_PREDICATE)), key)
    return canonical_json(envelope), predicate


@dataclass(frozen=True)
class Plan:
    subjects: dict[str, str]
    predicate: dict[str, Any]
    signer: str  # SHA-256 fingerprint of the key it is signed with
    sha256: str  # of the plan file
    raw: bytes
    signature: bytes = b""  # the raw signature that verified: what a timestamp of the plan must date
    tokens: tuple[tuple[str, bytes], ...] = ()  # (file name, DER) of its timestamps: plan.timestamp-<n>.tsr


def read_plan(path: Path) -> Plan:
    """The plan at ``path``, its signature checked under the key it names; else one line naming the file."""
    try:
        with open(path, "rb") as handle:
            raw = handle.read(MAX_PLAN_BYTES + 1)
    except OSError as exc:
        raise VerifierError(f"--plan {path}: cannot read it ({exc.strerror})") from None
    from verifier.trust.timestamps import read_tokens_beside

    plan = parse_plan(raw, f"--plan {path.name}")
    tokens = tuple((f"plan.{name.rsplit('.', 2)[-2]}.tsr", data) for name, data in read_tokens_beside(path))
    return replace(plan, tokens=tokens)


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
    if claimed.predicateType != PLAN_PREDICATE:
        raise VerifierError(f"{where}: not a plan (its statement is a {claimed.predicateType[:80]!r})")
    public = load_public_key(pem, f"{where}: public_key")
    body, signature = verify_envelope(envelope, public, where)
    verified = read_statement(body)  # what the signature covers
    try:
        subjects = verified.subjects()
    except ValueError as exc:
        raise VerifierError(f"{where}: {exc}") from None
    return Plan(subjects, verified.predicate, key_id(public_pem(public)), hashlib.sha256(raw).hexdigest(), raw,
                signature, tokens)


def check_plan(plan: Plan, claim: ClaimManifest, base: Path, policy: Policy, where: str, pinned: list[Any] | None = None) -> dict[str, Any]:
    """The findings' pre-registration record, if the audit is the plan's; else one line naming
    the first thing that differs."""
    subjects, _ = commitments(claim, base, policy)
    names = {"claim": "the claim", "policy": "the policy"}
    for name in sorted(set(plan.subjects) | set(subjects), key=lambda k: (k not in names, k)):
        planned, now = plan.subjects.get(name), subjects.get(name)
        if planned == now:
            continue
        kind, _, role = name.partition(":")
        what = names.get(name) or {"documents": f"the {role.replace('heldout', 'held-out')} set", "model": f"the {role} model"}.get(
            kind, f"the {role} file")
        if planned is None:
            raise VerifierError(f"{where}: {what} is not in the plan (the plan was made for other evidence)")
        if now is None:
            raise VerifierError(f"{where}: {what} is in the plan but not in the claim")
        raise VerifierError(f"{where}: {what} differs from the plan (SHA-256 {now[:16]}..., planned {planned[:16]}...)")
    return plan_record(plan, where, pinned)


def plan_record(plan: Plan, where: str, pinned: list[Any] | None = None) -> dict[str, Any]:
    """What the findings say of the plan: its digest and signer, and its time - by the planner's clock,
    whatever the plan calls its clock (it is the planner's word) - and design. With timestamps of the
    plan, each must date its signature; the earliest a ``pinned`` TSA certificate vouches for puts
    the plan's time on that authority's clock (``timestamped``)."""
    from verifier.trust.timestamps import check_token

    created = plan.predicate.get("created")
    try:
        datetime.fromisoformat(created)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise VerifierError(f"{where}: its creation time is not a date and time") from None
    design = plan.predicate.get("design")
    if not isinstance(design, dict):
        raise VerifierError(f"{where}: its design is not a record")
    record = {"registered": True, "plan_sha256": plan.sha256, "signer": plan.signer, "created": created, "clock": CLOCK, "design": design}
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
