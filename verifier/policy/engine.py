"""The policy engine: check the policy against the claim, walk the tree, record the path.

Before anything runs, every route the claim's evidence would reach is checked against the
target: a route that queries the model needs at least one signal the target can compute.
Then the first route that reaches a verdict decides; that verdict is looked up in the route's
table for the claim's kind and capped by what the policy grants it. Every other route is
recorded with the reason it did not decide: its evidence was absent or it does not bear on this
kind of claim (skipped), it is not implemented in this version (not available), it ran without
reaching a verdict, or the tree was already decided (not reached).

A route that fails - its model, server or files could not be reached or read, its evidence was
refused, or a bug - stops the walk: ``AuditIncomplete``, before anything is written or signed.
The walk must not go on to a later route (the developer's disclosure, say) and hand the claim a
verdict about evidence that was never examined.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from verifier import __version__
from verifier.claims import ClaimManifest, LoadedClaim
from verifier.errors import VerifierError, redact_paths
from verifier.findings import RouteOutcome
from verifier.policy.schema import Policy, PolicyRoute, load_regulation_map
from verifier.routes.base import ROUTES
from verifier.scoring.capabilities import offered_capabilities
from verifier.signals import computable
from verifier.targets import kind_of_target
from verifier.verdicts import Verdict, cap_verdict

if TYPE_CHECKING:  # the session holds scored tables (pandas); the engine only passes it to the routes
    from verifier.scoring.session import RouteContext


class AuditIncomplete(VerifierError):
    """A route could not examine its evidence: the audit stops without a verdict or a bundle."""


@dataclass
class RouteRecord:
    route: str
    needs: list[str]
    status: str  # decided | ran | skipped | not_available | not_reached
    reason: str
    grants: list[str]
    verdict: str | None = None
    uncapped_verdict: str | None = None
    outcome: RouteOutcome | None = None
    regulation: list[dict[str, str]] | None = None
    because: str | None = None  # the route's plain words for the status it decided on (the report's lead)


def missing_evidence(step: PolicyRoute, claim: ClaimManifest) -> list[str]:
    return sorted(key for key in step.requires if getattr(claim.evidence, key) is None)


def statistic_not_computable(step: PolicyRoute, claim: ClaimManifest) -> str | None:
    """Why the target cannot compute a route's fixed statistic (e.g. the log-likelihood of the
    marks routes, which an output-only API target cannot give), or None. Such a route is skipped
    and says why; a route whose signals the policy chooses is checked by ``check_against_claim``."""
    if step.route is None or not step.route.needs_target or hasattr(step.params, "signals"):
        return None
    why = step.route.not_computable(step.params, offered_capabilities(claim))
    return None if why is None else f"the target cannot compute this route's statistic ({why})"


def check_against_claim(policy: Policy, claim: ClaimManifest) -> None:
    """Refuse, before anything runs, a route the claim would reach but its target cannot serve
    with the signals the policy lists (a policy mistake, not a property of the target)."""
    offered = offered_capabilities(claim)
    for i, step in enumerate(policy.routes):
        if step.route is None or missing_evidence(step, claim) or not step.route.needs_target:
            continue
        if claim.claim.kind not in step.route.claim_kinds or not hasattr(step.params, "signals"):
            continue  # a fixed statistic the target cannot compute skips its route (statistic_not_computable)
        signals = step.route.signals_of(step.params)
        usable, why = computable(signals, offered)
        if not usable:
            key = "params.signals" if hasattr(step.params, "signals") else f"route ({step.name})"
            raise VerifierError(
                f"{policy.file}: routes.{i}.{key}: target {claim.model.target!r} can compute none of "
                f"{signals} ({'; '.join(f'{k}: {v}' for k, v in why.items())})"
            )


def walk(policy: Policy, ctx: RouteContext) -> list[RouteRecord]:
    """Run the tree; returns one record per route, in policy order."""
    mapping = load_regulation_map()
    # Each field carries its label, so the report renders what this audit mapped, whatever map a
    # later version of verifier ships.
    kind = ctx.claim.claim.kind.value
    regulation = {
        route: [
            {"field": item["field"], "label": mapping["fields"][item["field"]], "why": item["why"]}
            for item in items
            if kind in item.get("kinds", [kind])
        ]
        for route, items in mapping["routes"].items()
    }
    kind = ctx.claim.claim.kind
    records: list[RouteRecord] = []
    decided_by: str | None = None
    for step in policy.routes:
        record = RouteRecord(
            step.name,
            sorted(step.requires),
            "",
            "",
            sorted(v.value for v in step.grants),
            regulation=regulation.get(step.name, []),
        )
        records.append(record)
        if decided_by is not None:
            record.status, record.reason = "not_reached", f"the tree was decided by {decided_by}"
            continue
        if missing := missing_evidence(step, ctx.claim):
            record.status, record.reason = (
                "skipped",
                f"precondition not met: the claim gives no evidence.{', evidence.'.join(missing)}",
            )
            continue
        if step.route is None:
            record.status = "not_available"
            record.reason = (
                f"route {step.name!r} is not available in verifier {__version__}: its evidence was not tested"
            )
            continue
        if kind not in step.route.claim_kinds:
            record.status, record.reason = "skipped", f"{step.name} does not bear on a {kind.value} claim"
            continue
        if why := statistic_not_computable(step, ctx.claim):
            record.status, record.reason = "skipped", why
            continue
        try:
            outcome = step.route().run(ctx, step.params)
            verdict = step.route.verdict(outcome.status, kind)
        except VerifierError as exc:
            raise AuditIncomplete(
                redact_paths(f"the audit did not complete: route {step.name} failed: {exc}", ctx.base_dir)
            ) from None
        except Exception as exc:  # noqa: BLE001 - a route's bug: named in one line, never a verdict
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
            raise AuditIncomplete(
                redact_paths(
                    f"the audit did not complete: route {step.name} failed with an internal error "
                    f"({type(exc).__name__}: {first}; a bug in verifier)",
                    ctx.base_dir,
                )
            ) from None
        if step.route.needs_target and (target_kind := kind_of_target(ctx.loaded.get("target"))):
            outcome.limitations.extend(target_kind.limitations)
        record.outcome = outcome
        if verdict is None:
            record.status, record.reason = "ran", "ran without reaching a verdict; the decision passes on"
            continue
        final = cap_verdict(verdict, step.grants)
        record.status, record.verdict, record.reason = "decided", final.value, "decided the claim"
        record.because = step.route.plain.get(outcome.status or "")
        if final != verdict:
            record.uncapped_verdict = verdict.value
            record.reason = (
                f"decided the claim; the policy does not let this route grant {verdict.value}, so it is {final.value}"
            )
        decided_by = step.name
    return records


def precheck(policy: Policy, claim: ClaimManifest, sizes: dict[str, int], where: str) -> None:
    """Refuse, before any model loads, inputs the first route the walk will surely run cannot test
    (``Route.precheck``): one line naming the claim (``where``) and what is short, never a signed
    REJECTED-METHOD about a set too small to test. Later routes may never run, so they are not asked."""
    for step in policy.routes:
        if missing_evidence(step, claim) or step.route is None or claim.claim.kind not in step.route.claim_kinds:
            continue
        if statistic_not_computable(step, claim):
            continue
        if why := step.route.precheck(claim, step.params, sizes):
            raise VerifierError(f"{where}: {why}")
        return


ASSERTED = {Verdict.VERIFIED.value, Verdict.SUPPORTED.value, Verdict.CONTRADICTED.value}


def regulation_of_audit(records: list[RouteRecord], claim: ClaimManifest) -> list[dict[str, str]]:
    """This audit against the EU summary template and OSAID, field by field, in the template's order:
    what the finding shows, does not establish, or did not examine. A field the claim names is never
    left out; any other field appears only where a route that bears on it ran, and is never "shown":
    whether the claim's documents are what that field covers is the claim's to say."""
    mapping = load_regulation_map()
    named = set(claim.claim.regulation_fields)
    bearing: dict[str, list[tuple[RouteRecord, str]]] = {}
    for record in records:
        for item in record.regulation or []:
            bearing.setdefault(item["field"], []).append((record, item["why"]))
    rows = []
    for field, label in mapping["fields"].items():
        ran = [(r, why) for r, why in bearing.get(field, []) if r.status in ("decided", "ran")]
        if field not in named and not ran:
            continue
        section = mapping["sections"]["osaid" if field.startswith("osaid") else field.split(".")[0]]
        decided = next(((r, why) for r, why in ran if r.status == "decided"), None)
        if decided is not None:
            record, why = decided
            said = (
                f"{record.verdict} by {record.route}: {record.because or record.reason}; it bears on the field as {why}"
            )
            if record.verdict not in ASSERTED:
                status = "not established"
            elif field in named:
                status = "shown"
            else:  # the route bears on the field in general; the claim does not say its documents are of this kind
                status = "bears on it if claimed"
                said += " - if the claim's documents are what the field covers (the claim does not name the field)"
        elif ran:
            status = "not established"
            said = "; ".join(f"{r.route} ran without a verdict ({why})" for r, why in ran)
        else:
            could = [r for r, _ in bearing.get(field, [])]
            status = "not examined"
            said = (
                "no route of this audit bears on it"
                if not could
                else "; ".join(f"{r.route} {r.status.replace('_', ' ')}: {r.reason}" for r in could)
            )
        rows.append({"field": field, "section": section, "label": label, "status": status, "finding": said})
    return rows


def decision(records: list[RouteRecord]) -> RouteRecord:
    """The deciding record; a policy without a catch-all route decides nothing, which is UNVERIFIABLE."""
    for record in records:
        if record.status == "decided":
            return record
    return RouteRecord(
        "none",
        [],
        "decided",
        "no route reached a verdict",
        [Verdict.UNVERIFIABLE.value],
        Verdict.UNVERIFIABLE.value,
        outcome=RouteOutcome(None, "No route of the policy reached a verdict."),
        because="no route of the policy reached a verdict",
    )


def record_to_dict(record: RouteRecord) -> dict[str, Any]:
    return asdict(record)


def input_digests(claim: LoadedClaim) -> list[dict[str, Any]]:
    """Every input file of the claim with its SHA-256, as the findings name them: the document sets,
    then each file a route declares it reads (``Route.input_files``), all read once (``ClaimFiles``)."""
    entries = [
        {
            "role": role,
            "file": ref.path.name,
            "sha256": claim.files.sha256(ref.path),
            "where": ref.where,
            "offset": ref.offset,
            "limit": ref.limit,
        }
        for role, ref in claim.manifest.evidence.documents().items()
    ]
    declared: dict[str, Path] = {}
    for route in ROUTES.values():
        declared |= route.input_files(claim.manifest)
    entries += [
        {"role": role, "file": ref.name, "sha256": claim.files.sha256(ref), "where": {}, "offset": 0, "limit": None}
        for role, ref in declared.items()
    ]
    return entries
