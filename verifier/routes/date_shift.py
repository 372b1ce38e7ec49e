"""Route: a dated set -> refuse tests that would measure the date, not training.

Text published after the training cutoff is certainly unseen, which makes it tempting as a
"non-member" set; but it differs from older text in topic, names and years, and every membership
signal picks that up (the seed study: Min-K%++ AUC 0.6675 with members, 0.6669 with none). This
route scores both sets so the report can show the membership AUCs, puts the blind classifier
beside them, and refuses (REJECTED-METHOD) when the declared years differ or straddle the cutoff,
or the blind classifier tells the sets apart. A dated set that passes both checks still has
unknown membership, so this route then grants nothing and hands on to the next route. The
model-free checks run first; the model then scores both sets for the comparison table only.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from verifier.baselines.exchangeability import DEFAULT_ALPHA, DEFAULT_PERMUTATIONS, check_exchangeable
from verifier.claims import Role
from verifier.dataset_inference.comparison import best_signal, compare_sets, shift_rows
from verifier.dataset_inference.rules import dates_reason
from verifier.findings import RouteOutcome, Table
from verifier.routes.base import ALL_KINDS, Route, SignalChoice, register, same_for
from verifier.scoring.session import RouteContext
from verifier.verdicts import Verdict

LIMITATIONS = [
    "A dated set of later text is a different population, not a set of non-members of the same one.",
    "Membership AUCs on shifted sets are shown for comparison only; they are not evidence of training.",
]


class DateShiftParams(SignalChoice):
    shift_alpha: float = Field(
        DEFAULT_ALPHA,
        gt=0,
        le=0.2,
        json_schema_extra={"weaker": "lower"},
        description="the blind classifier's permutation test refuses the method below this p-value",
    )
    shift_permutations: int = Field(
        DEFAULT_PERMUTATIONS,
        ge=19,
        le=100_000,
        json_schema_extra={"weaker": "lower"},
        description="relabellings of the blind classifier's permutation test",
    )


@register
class DateShiftRoute(Route[DateShiftParams]):
    name = "date_shift"
    Params = DateShiftParams
    requires = frozenset({Role.SUSPECT, Role.DATED})
    verdicts = {"measures_the_date": same_for(ALL_KINDS, Verdict.REJECTED_METHOD), "dated_membership_unknown": None}
    plain = {
        "measures_the_date": "the comparison offered sets texts of one date against texts of another, which "
        "measures the date, not training",
    }
    needs_target = True

    def run(self, ctx: RouteContext, params: DateShiftParams) -> RouteOutcome:
        evidence, model = ctx.claim.evidence, ctx.claim.model
        suspect, dated_set = ctx.load(evidence.suspect).texts, ctx.load(evidence.dated).texts
        dated = dates_reason(evidence.suspect.year, evidence.dated.year, model.training_cutoff)
        shift = check_exchangeable(
            suspect, dated_set, alpha=params.shift_alpha, n_permutations=params.shift_permutations, seed=ctx.claim.seed
        )
        signals, not_computable = ctx.usable_signals(list(params.signals))
        ctx.prefetch({Role.SUSPECT: suspect, Role.DATED: dated_set}, signals, params.signal_params)
        s_feat = ctx.features(Role.SUSPECT, suspect, signals, signal_params=params.signal_params)
        d_feat = ctx.features(Role.DATED, dated_set, signals, signal_params=params.signal_params)
        rows, sections = compare_sets(signals, s_feat, d_feat, suspect, dated_set, shift, ctx.claim.seed)
        best = best_signal(rows)
        checks = [
            ["declared years", dated or "no difference declared"],
            *shift_rows(shift),
            *([f"signal {name}", why] for name, why in not_computable.items()),
        ]
        metrics: dict[str, Any] = {
            "n_suspect": len(suspect),
            "n_dated": len(dated_set),
            "shift_check": shift.as_finding(),
            "dates": dated,
            "signals": signals,
            "not_computable": not_computable,
            "best_signal": best["name"],
            "best_signal_auc": best["auc"],
            "membership_rows": rows,
        }
        sections.insert(0, Table("Checks: could the comparison be about training at all?", ["check", "result"], checks))
        compared = (
            f"best membership signal ({best['name']}) AUC {best['auc']:.3f} against a blind classifier AUC "
            f"{shift.auc_corrected:.3f} that never looks at the model"
        )
        if dated or shift.detected:
            why = "; ".join(filter(None, [dated, shift.describe() if shift.detected else None]))
            summary = f"The suspect-vs-dated comparison measures distribution shift: {why}; {compared}."
            return RouteOutcome("measures_the_date", summary, metrics, sections, list(LIMITATIONS), size=len(suspect))
        summary = (
            f"On the suspect-vs-dated comparison, {shift.describe()}; but the dated set's membership is unknown, "
            f"so it cannot serve as held-out data; {compared}."
        )
        return RouteOutcome(
            "dated_membership_unknown", summary, metrics, sections, list(LIMITATIONS), size=len(suspect)
        )
