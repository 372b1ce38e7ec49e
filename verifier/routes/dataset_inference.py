"""Route: a private same-period held-out set -> set-level dataset inference.

Verdict logic, never stronger than the evidence:
- the blind baseline or declared dates show a shift between suspect and held-out -> REJECTED-METHOD;
- the member-free control is flagged too -> REJECTED-METHOD (the held-out set is not exchangeable
  with the suspect's population, so a detection would not be about training);
- significant -> the suspect set was trained on: SUPPORTED for a "trained_on" claim, CONTRADICTED
  for "not_trained_on" / "decontaminated";
- not significant -> INCONCLUSIVE, with the set size the observed effect would need. Absence of
  evidence never supports "not trained on": single-document and small-set inference is weak.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from verifier.claims import ClaimKind
from verifier.policy.schema import Verdict
from verifier.routes.base import Route, RouteContext, RouteOutcome, register
from verifier.routes.comparison import best_signal, blind_row, compare_sets
from verifier.set_membership import DocumentSet, run_set_membership
from verifier.stats.set_power import power_curve, size_needed

LIMITATIONS = [
    "Dataset inference is a set-level test: it says nothing about any single document.",
    "Its power is low on small models and small sets (the seed study: 0.02-0.12 at 200 documents); "
    "a non-significant result is not evidence that the set was not trained on.",
    "The held-out set must be certainly unseen by the model and drawn from the same population and "
    "period as the suspect set; the blind baseline and member-free control check what they can of that.",
    "The required-size estimate assumes the observed effect is real; it is for planning, not a guarantee.",
]


@register
class DatasetInferenceRoute(Route):
    name = "dataset_inference"

    def run(self, ctx: RouteContext, params: dict[str, Any]) -> RouteOutcome:
        evidence, model = ctx.claim.evidence, ctx.claim.model
        signals = list(params["signals"])
        suspect, s_feat = ctx.scored("suspect", evidence.suspect, signals)
        heldout, h_feat = ctx.scored("heldout", evidence.heldout, signals)
        control, c_feat = ctx.scored("control", evidence.control, signals) if evidence.control else (None, None)
        years = lambda ref, docs: [ref.year] * len(docs) if ref and ref.year else None  # noqa: E731
        finding = run_set_membership(
            DocumentSet(suspect.texts, s_feat, years(evidence.suspect, suspect)),
            DocumentSet(heldout.texts, h_feat, years(evidence.heldout, heldout)),
            signals,
            control=DocumentSet(control.texts, c_feat) if control else None,
            alpha=params["alpha"],
            shift_threshold=params["blind_threshold"],
            cutoff_year=model.training_cutoff,
            n_splits=params["n_splits"],
            seed=ctx.claim.seed,
            min_set_size=params["min_set_size"],
        )
        rows, figures = compare_sets(signals, s_feat, h_feat, suspect.texts, heldout.texts, ctx.claim.seed)
        metrics: dict[str, Any] = {
            "n_suspect": len(suspect),
            "n_heldout": len(heldout),
            "n_control": len(control) if control else 0,
            "shift_check": finding.shift.as_finding(),
            "best_signal": best_signal(rows)["name"],
        }
        outcome = RouteOutcome(verdict=None, summary="", metrics=metrics, membership_rows=rows, figures=figures, limitations=list(LIMITATIONS))
        if finding.refused:
            outcome.verdict = Verdict.REJECTED_METHOD
            outcome.summary = f"The held-out set cannot serve as a same-period comparison: {finding.shift.reason}."
            return outcome
        result = finding.result
        metrics["test"] = asdict(result)
        if finding.control is not None:
            metrics["control"] = asdict(finding.control)
        figures["power"] = power_curve(result.effect_size, result.alpha)
        needed = size_needed(result.effect_size, result.alpha, params["target_power"])
        metrics["n_needed_for_target_power"] = needed
        metrics["target_power"] = params["target_power"]
        test_text = (f"dataset inference p = {result.p_value:.3g} (alpha {result.alpha}), effect size d = {result.effect_size:.3f}, "
                     f"{result.n_suspect} suspect vs {result.n_validation} held-out documents")
        blind = blind_row(rows)
        blind_text = f"blind bag-of-words AUC {blind['auc']:.3f} [{blind['auc_ci_low']:.3f}, {blind['auc_ci_high']:.3f}]"
        if finding.control is not None and finding.control.significant:
            outcome.verdict = Verdict.REJECTED_METHOD
            outcome.summary = (f"The member-free control was flagged as well (p = {finding.control.p_value:.3g}), so a detection "
                               f"would not be about training; {test_text}; {blind_text}.")
        elif result.significant:
            trained = ctx.claim.claim.kind == ClaimKind.TRAINED_ON
            outcome.verdict = Verdict.SUPPORTED if trained else Verdict.CONTRADICTED
            control_text = f"; member-free control p = {finding.control.p_value:.3g}" if finding.control else ""
            outcome.summary = f"The suspect set scores as trained on: {test_text}{control_text}; {blind_text}."
        else:
            outcome.verdict = Verdict.INCONCLUSIVE
            need = (f"about {needed} documents per set would give power {params['target_power']:.0%} if the observed effect is real"
                    if needed else "the observed effect is not positive, so no set size would detect it")
            outcome.summary = f"No significant difference: {test_text}; {need}; {blind_text}."
        return outcome
