"""Route: nothing testable -> the claim rests on disclosure (UNVERIFIABLE from the weights)."""

from __future__ import annotations

from verifier.findings import RouteOutcome
from verifier.routes.base import ALL_KINDS, Route, RouteParams, register, same_for
from verifier.scoring.session import RouteContext
from verifier.verdicts import Verdict


@register
class DisclosureRoute(Route[RouteParams]):
    name = "disclosure"
    verdicts = {"rests_on_disclosure": same_for(ALL_KINDS, Verdict.UNVERIFIABLE)}
    plain = {"rests_on_disclosure": "no testable evidence was offered, so the claim rests on its maker's word"}

    def run(self, ctx: RouteContext, params: RouteParams) -> RouteOutcome:
        return RouteOutcome(
            "rests_on_disclosure",
            "None of the evidence supports a sound test of this claim: no published corpus, no content marked "
            "before training and no usable same-period held-out set. The claim rests on the developer's disclosure.",
            limitations=[
                "Membership-inference scores alone are near chance on same-distribution data and cannot verify a claim."
            ],
        )
