"""Route: a private same-period held-out set -> set-level dataset inference.

The rules (``set_membership``) decide how far the evidence goes; this route maps where they
stopped to a verdict, never stronger than the evidence:
- too few documents, declared years that differ, a shift the blind classifier detects, or a
  flagged member-free control -> REJECTED-METHOD;
- exchangeability not established at this size, a significant test without the validated control
  a strict policy requires, or no significant difference -> INCONCLUSIVE (with the set size the
  observed effect would need). Absence of evidence never supports "not trained on";
- significant -> SUPPORTED for a "trained_on" claim, CONTRADICTED for "not_trained_on" /
  "decontaminated", worded as what the test shows: the sets are not exchangeable under the model.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import Any

from pydantic import Field, ValidationError, field_validator

from verifier.claims import ClaimKind, DocumentRef
from verifier.errors import VerifierError, first_validation_error
from verifier.policy.schema import Verdict
from verifier.routes.base import Route, RouteContext, RouteOutcome, register
from verifier.routes.comparison import best_signal, blind_row, compare_sets
from verifier.set_membership import DocumentSet, SetStatus, SetTestParams, run_set_membership
from verifier.signals import REGISTRY
from verifier.stats.set_power import power_curve, size_needed

LIMITATIONS = [
    "Dataset inference is a set-level test: it says nothing about any single document.",
    "Its power is low on small models and small sets (the seed study: 0.02-0.12 at 200 documents); "
    "a non-significant result is not evidence that the set was not trained on.",
    "A significant result shows that suspect and held-out are not exchangeable under the model. It means training only if "
    "the held-out set is a valid non-member sample of the suspect's population and period; the blind classifier, the "
    "overlap check, the declared years and the member-free control test what they can of that, and a shift smaller than "
    "the smallest detectable one, or one only the model can see, would go unnoticed.",
    "The test is only as sound as the split: if whoever assembled the suspect and held-out sets could see the model's "
    "scores, documents can be chosen so the suspect set scores higher with no training at all. The tool refuses splits "
    "that look matched (more alike than random halves); it cannot detect every chosen split, so the assignment should be "
    "random and made before the model was queried, or made by the auditor.",
    "The required-size estimate assumes the observed effect is real; it is for planning, not a guarantee.",
]

VERDICTS = {
    SetStatus.TOO_SMALL: Verdict.REJECTED_METHOD,
    SetStatus.DATES_DIFFER: Verdict.REJECTED_METHOD,
    SetStatus.SHIFT_DETECTED: Verdict.REJECTED_METHOD,
    SetStatus.MIRRORED: Verdict.REJECTED_METHOD,
    SetStatus.CONTROL_FLAGGED: Verdict.REJECTED_METHOD,
    SetStatus.NOT_ESTABLISHED: Verdict.INCONCLUSIVE,
    SetStatus.CONTROL_REQUIRED: Verdict.INCONCLUSIVE,
    SetStatus.NOT_SIGNIFICANT: Verdict.INCONCLUSIVE,
}


class DatasetInferenceParams(SetTestParams):
    """The route's params: the set test's knobs plus the signals used and the planning power."""

    signals: list[str] = Field(min_length=1)
    target_power: float = Field(0.8, gt=0, lt=1)

    @field_validator("signals")
    @classmethod
    def registered(cls, names: list[str]) -> list[str]:
        unknown = sorted(set(names) - set(REGISTRY))
        if unknown:
            raise ValueError(f"unknown signal(s) {unknown}; registered: {sorted(REGISTRY)}")
        return names


def set_test_params(params: dict[str, Any]) -> DatasetInferenceParams:
    """The route's params from a policy, validated; an error names the key."""
    try:
        return DatasetInferenceParams.model_validate(params)
    except ValidationError as exc:
        raise VerifierError(f"dataset_inference params.{first_validation_error(exc, top='(params)')}") from None


def origin(ref: DocumentRef) -> str:
    """Which population a set is drawn from: its file, text field and filter (not offset or limit)."""
    return f"{ref.path.as_posix()}:{ref.text_field}:{json.dumps(ref.where, sort_keys=True, default=str)}"


@register
class DatasetInferenceRoute(Route):
    name = "dataset_inference"

    def run(self, ctx: RouteContext, params: dict[str, Any]) -> RouteOutcome:
        evidence = ctx.claim.evidence
        test_params = set_test_params(params)
        signals = list(test_params.signals)
        suspect, s_feat = ctx.scored("suspect", evidence.suspect, signals)
        heldout, h_feat = ctx.scored("heldout", evidence.heldout, signals)
        control_set = None
        if evidence.control:
            control, c_feat = ctx.scored("control", evidence.control, signals)
            control_set = DocumentSet(control.texts, c_feat, evidence.control.year, origin(evidence.control))
        finding = run_set_membership(
            DocumentSet(suspect.texts, s_feat, evidence.suspect.year, origin(evidence.suspect)),
            DocumentSet(heldout.texts, h_feat, evidence.heldout.year, origin(evidence.heldout)),
            signals, control=control_set, params=test_params,
        )
        rows, figures = compare_sets(signals, s_feat, h_feat, suspect.texts, heldout.texts, ctx.claim.seed)
        metrics: dict[str, Any] = {
            "n_suspect": len(suspect),
            "n_heldout": len(heldout),
            "n_control": len(control_set.texts) if control_set else 0,
            "set_test": finding.as_finding(),
            "best_signal": best_signal(rows)["name"],
        }
        if finding.shift is not None:
            metrics["shift_check"] = finding.shift.as_finding()
        blind = blind_row(rows)
        tail = [f"bag-of-words AUC {blind['auc']:.3f} [{blind['auc_ci_low']:.3f}, {blind['auc_ci_high']:.3f}]"] + finding.notes
        if finding.shift is not None and finding.shift.exchangeable:
            tail.insert(0, f"suspect vs held-out: {finding.shift.describe()}")
        if finding.control is None:
            tail.append("no member-free control was run")
        elif not finding.control.validated:
            tail.append(f"the member-free control cannot validate the held-out set ({'; '.join(finding.control.problems)})")
        else:
            tail.append(f"validated member-free control p = {finding.control.result.p_value:.3g}")
        result = finding.result
        verdict = VERDICTS.get(finding.status)
        if finding.status == SetStatus.SIGNIFICANT:
            verdict = Verdict.SUPPORTED if ctx.claim.claim.kind == ClaimKind.TRAINED_ON else Verdict.CONTRADICTED
        if result is not None:
            metrics["test"] = asdict(result)
            figures["power"] = power_curve(result.effect_size, result.alpha, result.method)
            needed = size_needed(result.effect_size, result.alpha, test_params.target_power, result.method)
            metrics["n_needed_for_target_power"] = needed
            metrics["target_power"] = test_params.target_power
            tail.insert(0, f"effect size d = {result.effect_size:.3f}, {result.n_suspect} suspect vs {result.n_validation} held-out documents")
            if finding.status == SetStatus.NOT_SIGNIFICANT:
                tail.insert(1, f"about {needed} documents per set would give power {test_params.target_power:.0%} if the observed effect is real"
                            if needed else "the observed effect is not in the member-like direction, so no set size would detect it")
        if finding.control is not None:
            control = finding.control
            metrics["control"] = (asdict(control.result) if control.result else {"p_value": None, "significant": False}) | {
                "validated": control.validated, "problems": control.problems, "overlap_removed": control.overlap_removed,
                "duplicates_removed": control.duplicates_removed,
                "shift_check": control.shift.as_finding() if control.shift else None,
            }
        summary = f"{finding.reason[0].upper()}{finding.reason[1:]}; {'; '.join(tail)}."
        return RouteOutcome(verdict=verdict, summary=summary, metrics=metrics, membership_rows=rows, figures=figures,
                            limitations=list(LIMITATIONS))
