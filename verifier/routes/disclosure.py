"""Route: nothing testable -> the claim rests on disclosure (UNVERIFIABLE from the weights)."""

from __future__ import annotations

from typing import Any

from verifier.policy.schema import Verdict
from verifier.routes.base import Route, RouteContext, RouteOutcome, register


@register
class DisclosureRoute(Route):
    name = "disclosure"

    def run(self, ctx: RouteContext, params: dict[str, Any]) -> RouteOutcome:
        return RouteOutcome(
            Verdict.UNVERIFIABLE,
            "None of the evidence supports a sound test of this claim: no published corpus, no content marked "
            "before training and no usable same-period held-out set. The claim rests on the developer's disclosure.",
            limitations=["Membership-inference scores alone are near chance on same-distribution data and cannot verify a claim."],
        )
