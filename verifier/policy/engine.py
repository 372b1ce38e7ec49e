"""The policy engine: walk the decision tree, run only what the evidence allows, record the path.

The first route whose precondition holds and that reaches a verdict decides; its verdict is
capped at the route's ``strongest_verdict``. Every other route is recorded with the reason it
did not decide: its evidence was absent (skipped), it is not implemented in this version (not
available), it ran without reaching a verdict, or the tree was already decided (not reached).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from verifier import __version__
from verifier.policy.schema import Policy, Verdict, cap_verdict, load_regulation_map
from verifier.routes import ROUTES, RouteContext, RouteOutcome


@dataclass
class RouteRecord:
    route: str
    when: str
    status: str  # decided | ran | skipped | not_available | not_reached
    reason: str
    strongest_verdict: str
    verdict: str | None = None
    uncapped_verdict: str | None = None
    outcome: RouteOutcome | None = None
    regulation: list[dict[str, str]] | None = None


def walk(policy: Policy, ctx: RouteContext) -> list[RouteRecord]:
    """Run the tree; returns one record per route, in policy order."""
    regulation = load_regulation_map()["routes"]
    evidence = ctx.claim.evidence
    records: list[RouteRecord] = []
    decided_by: str | None = None
    for spec in policy.routes:
        record = RouteRecord(spec.route, spec.when, "", "", spec.strongest_verdict.value, regulation=regulation.get(spec.route, []))
        records.append(record)
        if decided_by is not None:
            record.status, record.reason = "not_reached", f"the tree was decided by {decided_by}"
            continue
        if spec.when != "always" and getattr(evidence, spec.when, None) is None:
            record.status, record.reason = "skipped", f"precondition not met: the claim gives no evidence.{spec.when}"
            continue
        if spec.route not in ROUTES:
            record.status = "not_available"
            record.reason = f"route {spec.route!r} is not available in verifier {__version__}: evidence.{spec.when} was not tested"
            continue
        outcome = ROUTES[spec.route]().run(ctx, spec.params)
        record.outcome = outcome
        if outcome.verdict is None:
            record.status, record.reason = "ran", "ran without reaching a verdict; the decision passes on"
            continue
        final = cap_verdict(outcome.verdict, spec.strongest_verdict)
        record.status, record.verdict = "decided", final.value
        record.reason = "decided the claim"
        if final != outcome.verdict:
            record.uncapped_verdict = outcome.verdict.value
            record.reason = f"decided the claim; {outcome.verdict.value} capped at {final.value} by the policy"
        decided_by = spec.route
    return records


def decision(records: list[RouteRecord]) -> RouteRecord:
    """The deciding record; a policy without a catch-all route decides nothing, which is UNVERIFIABLE."""
    for record in records:
        if record.status == "decided":
            return record
    return RouteRecord("none", "always", "decided", "no route reached a verdict", Verdict.UNVERIFIABLE.value, Verdict.UNVERIFIABLE.value,
                       outcome=RouteOutcome(Verdict.UNVERIFIABLE, "No route of the policy reached a verdict."))


def record_to_dict(record: RouteRecord) -> dict[str, Any]:
    data = asdict(record)
    if record.outcome is not None and record.outcome.verdict is not None:
        data["outcome"]["verdict"] = record.outcome.verdict.value
    return data
