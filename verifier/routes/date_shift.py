"""Route: a reference set with dates -> refuse tests that would measure the date, not training.

Text published after the training cutoff is certainly unseen, which makes it tempting as a
"non-member" set; but it differs from older text in topic, names and years, and every membership
signal picks that up (the seed study: Min-K%++ AUC 0.6675 with members, 0.6669 with none). This
route scores both sets so the report can show the membership AUCs, puts the blind classifier
beside them, and refuses (REJECTED-METHOD) when the declared years differ or straddle the cutoff,
or the blind classifier tells the sets apart. A reference set that passes both checks still has
unknown membership, so this route then grants nothing and hands on to the next route.
"""

from __future__ import annotations

from typing import Any

from verifier.baselines.exchangeability import check_exchangeable
from verifier.errors import VerifierError
from verifier.policy.schema import Verdict
from verifier.routes.base import Route, RouteContext, RouteOutcome, register
from verifier.routes.comparison import best_signal, compare_sets
from verifier.set_membership import dates_reason

LIMITATIONS = [
    "A reference set of later text is a different population, not a set of non-members of the same one.",
    "Membership AUCs on shifted sets are shown for comparison only; they are not evidence of training.",
]
ROUTE_KEYS = {"signals", "shift_alpha", "shift_permutations"}


@register
class DateShiftRoute(Route):
    name = "date_shift"

    def run(self, ctx: RouteContext, params: dict[str, Any]) -> RouteOutcome:
        unknown = sorted(set(params) - ROUTE_KEYS)
        if unknown:
            raise VerifierError(f"date_shift params: unknown key(s) {unknown}; known: {sorted(ROUTE_KEYS)}")
        evidence, model = ctx.claim.evidence, ctx.claim.model
        signals = list(params["signals"])
        suspect, s_feat = ctx.scored("suspect", evidence.suspect, signals)
        reference, r_feat = ctx.scored("reference", evidence.reference, signals)
        rows, figures = compare_sets(signals, s_feat, r_feat, suspect.texts, reference.texts, ctx.claim.seed)
        shift = check_exchangeable(suspect.texts, reference.texts, alpha=params.get("shift_alpha", 0.05),
                                   n_permutations=params.get("shift_permutations", 999), seed=ctx.claim.seed)
        dated = dates_reason(evidence.suspect.year, evidence.reference.year, model.training_cutoff)
        best = best_signal(rows)
        metrics = {
            "n_suspect": len(suspect),
            "n_reference": len(reference),
            "shift_check": shift.as_finding(),
            "dates": dated,
            "best_signal": best["name"],
            "best_signal_auc": best["auc"],
        }
        compared = (f"best membership signal ({best['name']}) AUC {best['auc']:.3f} against a blind classifier AUC "
                    f"{shift.auc_corrected:.3f} that never looks at the model")
        if dated or shift.detected:
            why = "; ".join(filter(None, [dated, shift.describe() if shift.detected else None]))
            summary = f"The suspect-vs-reference comparison measures distribution shift: {why}; {compared}."
            return RouteOutcome(Verdict.REJECTED_METHOD, summary, metrics, rows, figures, list(LIMITATIONS))
        summary = (f"On the suspect-vs-reference comparison, {shift.describe()}; but the reference set's membership is unknown, "
                   f"so it cannot serve as held-out data; {compared}.")
        return RouteOutcome(None, summary, metrics, rows, figures, list(LIMITATIONS))
