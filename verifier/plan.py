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
it); then the findings put the plan's time on that authority's clock. The report does say when this audit read scores
from the auditor's cache, which were
computed before the audit ran and possibly before the plan.
"""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from verifier import __version__
from verifier.claims import ClaimManifest, LoadedClaim, claim_model_spec, load_claim, public_claim
from verifier.dataset_inference.planning import set_test_power
from verifier.errors import VerifierError
from verifier.policy import load_policy, resolve_policy_path
from verifier.policy.engine import check_against_claim, input_digests, missing_evidence
from verifier.targets import kind_of
from verifier.targets.cache import text_digest
from verifier.trust.digests import canonical_json
from verifier.trust.envelopes import (
    public_pem,
    sign_envelope,
    statement,
)
from verifier.trust.plans import CLOCK, PLAN_PREDICATE, Plan, plan_record
from verifier.validation import for_audit

if TYPE_CHECKING:
    from verifier.policy.schema import Policy


def commitments(loaded: LoadedClaim, policy: Policy) -> tuple[dict[str, str], dict[str, dict[str, Any]]]:
    """What a plan commits to: subject name -> SHA-256 (the claim, the policy, each set's
    documents, every other input file a route declares), and per set its file name and document count."""
    claim, base = loaded.manifest, loaded.base
    subjects = {"claim": hashlib.sha256(canonical_json(public_claim(claim, base))).hexdigest(), "policy": policy.sha256}
    sets: dict[str, dict[str, Any]] = {}
    documents = claim.evidence.documents()
    for role, ref in documents.items():
        texts = loaded.files.documents(ref).texts
        digest = hashlib.sha256("\n".join(sorted(text_digest(t) for t in texts)).encode()).hexdigest()
        subjects[f"documents:{role}"] = digest
        sets[str(role)] = {"file": ref.path.name, "documents": len(texts), "sha256": digest}
    for entry in input_digests(loaded):
        if (
            entry["role"] not in documents
        ):  # a file a route reads besides the sets (a marks registration, a frequency table)
            subjects[f"file:{entry['role']}"] = entry["sha256"]
    for role in ("target", "reference"):  # the model as an audit names it unloaded: for local weights, their digest
        if getattr(claim.model, role):
            spec = claim_model_spec(claim, base, role)
            subjects[f"model:{role}"] = hashlib.sha256(
                canonical_json(kind_of(spec).cls.unloaded_identity(spec, base))
            ).hexdigest()
    return subjects, sets


def design(
    claim: ClaimManifest, policy: Policy, sets: dict[str, dict[str, Any]], effect: float | None
) -> dict[str, Any]:
    """The route the claim's evidence reaches first, its validation rows at the suspect set's size,
    and (for the set-level test, given an effect size) its power."""

    route = next(
        (
            step
            for step in policy.routes
            if step.route is not None
            and not missing_evidence(step, claim)
            and claim.claim.kind in step.route.claim_kinds
        ),
        None,
    )
    n = sets.get("suspect", {}).get("documents")
    planned: dict[str, Any] = {
        "route": route.name if route else None,
        "n": n,
        "validation": for_audit(route.name if route else None, n),
    }
    if effect is not None:
        if route is None or route.name != "dataset_inference" or n is None:
            raise VerifierError(
                "--effect: a stated effect size plans the set-level test, which this claim's evidence does not reach "
                "first"
            )

        alpha, method = route.params.alpha, route.params.method
        planned |= {
            "stated_effect": effect,
            "alpha": alpha,
            "power_at_stated_effect": round(float(set_test_power(effect, n, alpha, method)), 4),
        }
    return planned


def make_plan(
    claim_path: str | Path, key: Any, effect: float | None = None
) -> tuple[bytes, dict[str, Any]]:  # an Ed25519PrivateKey
    """The signed plan (a DSSE envelope) for ``claim_path``, and its predicate."""

    loaded = load_claim(claim_path)
    claim = loaded.manifest
    policy = load_policy(resolve_policy_path(claim.policy, loaded.base))
    check_against_claim(policy, claim)
    subjects, sets = commitments(loaded, policy)
    pem = public_pem(key.public_key())
    predicate = {
        "format": "verifier-plan/1",
        "claim_id": claim.claim.id,
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "clock": CLOCK,
        "seed": claim.seed,
        "sets": sets,
        "design": design(claim, policy, sets, effect),
        "verifier": __version__,
        "public_key": pem.decode(),
    }
    envelope = sign_envelope(canonical_json(statement(subjects, predicate, PLAN_PREDICATE)), key)
    return canonical_json(envelope), predicate


def check_plan(
    plan: Plan, loaded: LoadedClaim, policy: Policy, where: str, pinned: list[Any] | None = None
) -> dict[str, Any]:
    """The findings' pre-registration record, if the audit is the plan's; else one line naming
    the first thing that differs."""
    subjects, _ = commitments(loaded, policy)
    names = {"claim": "the claim", "policy": "the policy"}
    for name in sorted(set(plan.subjects) | set(subjects), key=lambda k: (k not in names, k)):
        planned, now = plan.subjects.get(name), subjects.get(name)
        if planned == now:
            continue
        kind, _, role = name.partition(":")
        what = names.get(name) or {
            "documents": f"the {role.replace('heldout', 'held-out')} set",
            "model": f"the {role} model",
        }.get(kind, f"the {role} file")
        if planned is None:
            raise VerifierError(f"{where}: {what} is not in the plan (the plan was made for other evidence)")
        if now is None:
            raise VerifierError(f"{where}: {what} is in the plan but not in the claim")
        raise VerifierError(f"{where}: {what} differs from the plan (SHA-256 {now[:16]}..., planned {planned[:16]}...)")
    return plan_record(plan, where, pinned)
