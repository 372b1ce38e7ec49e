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
A "summary_field" claim is not tested here: a set-level result says nothing about a summary field.
The model is queried only after the model-free checks pass, and only for the documents tested.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import Field

from verifier.claims import ClaimKind, ClaimManifest, DocumentRef, Role
from verifier.data import normalised_value
from verifier.dataset_inference.comparison import best_signal, compare_sets, shift_rows
from verifier.dataset_inference.fraction import FDR_METHOD
from verifier.dataset_inference.hygiene import find_overlap
from verifier.dataset_inference.planning import power_curve, size_needed
from verifier.dataset_inference.prefix_relation import prefix_relation
from verifier.dataset_inference.rules import (
    DocumentSet,
    DocumentsFinding,
    SetMembershipFinding,
    SetStatus,
    SetTestParams,
    documents_seed,
    run_set_membership,
)
from verifier.findings import Cell, Figure, Notes, RouteOutcome, Section, Table
from verifier.routes.base import Route, SignalChoice, register, same_for
from verifier.scoring.session import RouteContext, TooFewScored
from verifier.signals import NONMEMBER_PREFIX, TOKEN_FREQUENCIES, Auxiliary, make_signal
from verifier.signals.frequencies import table_for
from verifier.stats.formats import num, pval
from verifier.targets.cache import text_digest
from verifier.verdicts import Verdict

LIMITATIONS = [
    "Dataset inference is a set-level test: it says nothing about any single document.",
    "Its power is low on small models and small sets (the seed study: 0.02-0.12 at 200 documents); "
    "a non-significant result is not evidence that the set was not trained on.",
    "A significant result shows that suspect and held-out are not exchangeable under the model. It means training "
    "only if "
    "the held-out set is a valid non-member sample of the suspect's population and period; the blind classifier, the "
    "overlap check, the declared years and the member-free control test what they can of that, and a shift smaller "
    "than "
    "the smallest detectable one, or one only the model can see, would go unnoticed.",
    "The test is only as sound as the split: if whoever assembled the suspect and held-out sets could see the model's "
    "scores, documents can be chosen so the suspect set scores higher with no training at all. The tool refuses splits "
    "that look matched (more alike than random halves); it cannot detect every chosen split, so the assignment should "
    "be "
    "random and made before the model was queried, or made by the auditor.",
    "The required-size estimate assumes the observed effect is real; it is for planning, not a guarantee.",
    "The criterion for a fair comparison, in one sentence: a text classifier that never sees the model must fail to "
    "tell the two sets apart and, with 95% confidence, be unable to tell them apart better than an AUC of 0.5 + "
    "2/sqrt(n) (at most 0.70, n documents per set); a difference in the texts smaller than that is accepted as too "
    "small to be read as training, and a difference only the model can see is not excluded.",
]

KINDS = frozenset({ClaimKind.TRAINED_ON, ClaimKind.NOT_TRAINED_ON, ClaimKind.DECONTAMINATED})
REFUSED = same_for(KINDS, Verdict.REJECTED_METHOD)
NO_RESULT = same_for(KINDS, Verdict.INCONCLUSIVE)
TOO_FEW_SCORED = (
    "too_few_scored"  # more than half of a set unscored (failed queries, no usable traces): nothing to test
)
# The prefix documents bear on one set more than the other, and only prefixed signals were asked for.
PREFIX_UNBALANCED = "prefix_unbalanced"
MODEL_CHANGED = (
    "served_model_changed"  # an API answered as more than one model during the run: the sets may differ in weights
)
# The route's whole verdict table: where the rules stopped -> verdict, per claim kind.
VERDICTS = {
    SetStatus.TOO_SMALL.value: REFUSED,
    SetStatus.DATES_DIFFER.value: REFUSED,
    SetStatus.SHIFT_DETECTED.value: REFUSED,
    SetStatus.MIRRORED.value: REFUSED,
    SetStatus.CONTROL_FLAGGED.value: REFUSED,
    SetStatus.NOT_ESTABLISHED.value: NO_RESULT,
    SetStatus.CONTROL_REQUIRED.value: NO_RESULT,
    SetStatus.NOT_SIGNIFICANT.value: NO_RESULT,
    TOO_FEW_SCORED: NO_RESULT,
    MODEL_CHANGED: NO_RESULT,
    PREFIX_UNBALANCED: REFUSED,
    SetStatus.SIGNIFICANT.value: {
        ClaimKind.TRAINED_ON: Verdict.SUPPORTED,
        ClaimKind.NOT_TRAINED_ON: Verdict.CONTRADICTED,
        ClaimKind.DECONTAMINATED: Verdict.CONTRADICTED,
    },
}


DOCUMENTS_TITLE = "How much of the suspect set, and which documents"


class DatasetInferenceParams(SignalChoice, SetTestParams):
    """The route's params: the set test's knobs plus the signals used and the planning power."""

    target_power: float = Field(
        0.8, gt=0, lt=1, description="the power at which the report plans the set size the observed effect would need"
    )
    claim_prefix: bool = Field(
        False,
        json_schema_extra={"weaker": "true"},
        description="prefixed signals (recall): use the claim's evidence.prefix set (its composition is the "
        "claimant's) instead of documents drawn from the held-out set",
    )
    claim_frequencies: bool = Field(
        False,
        json_schema_extra={"weaker": "true"},
        description="dc_pdd: use the claim's evidence.token_frequencies (its counts are the claimant's) "
        "instead of the bundled table of the target's tokenizer",
    )


def auxiliary(
    ctx: RouteContext, params: DatasetInferenceParams, sets: dict[str, DocumentSet]
) -> tuple[Auxiliary, dict[str, Any], dict[str, DocumentSet]]:
    """What the prefixed and calibrated signals asked for read besides the model, and the sets left to test.

    Prefix documents (ReCaLL's known non-members) are drawn from the held-out set's distinct
    documents, by a seed the documents fix (``documents_seed``: no seed to shop for), and every
    document of any set that duplicates, prefix-matches or nearly matches one of them is removed
    from every set, so no tested document is scored after a prefix holding itself or its twin.
    Every suspect and held-out document is then scored after the same prefix: the sets stay
    exchangeable when the model was trained on neither. A set the claim names (``evidence.prefix``)
    is used only where the policy allows it (``claim_prefix``): its composition is the claimant's,
    who could pick documents resembling one set's topics. Con-ReCall's known members exist in no
    audit: it stays not computable. The token frequency table is the bundled one of the target's
    tokenizer, or the claim's where the policy allows it (``claim_frequencies``): counts are the
    claimant's to inflate for one set's tokens, which the blind check cannot see."""
    wanted = [make_signal(name, params.signal_params.get(name)) for name in params.signals]
    needs = frozenset().union(*(s.needs for s in wanted))
    finding: dict[str, Any] = {}
    frequencies = None
    if TOKEN_FREQUENCIES in needs:
        named = ctx.claim.evidence.token_frequencies if params.claim_frequencies else None
        if ctx.claim.evidence.token_frequencies is not None and not params.claim_frequencies:
            finding["token_frequencies_ignored"] = (
                "evidence.token_frequencies: not used (the policy's claim_frequencies is false)"
            )
        # The table's bytes as the input digests read them: what the plan committed to is what is used.
        frequencies = (
            table_for(ctx.model(), ctx.base_dir / named, ctx.claim_files.read(named))
            if named is not None
            else table_for(ctx.model())
        )
    usable, _ = ctx.usable_signals(list(params.signals), Auxiliary(("possible",), (), frequencies))
    shots = max((getattr(s, "shots", 0) for s in wanted if NONMEMBER_PREFIX in s.needs and s.name in usable), default=0)
    nonmembers: tuple[str, ...] = ()
    if shots:
        threshold = params.near_duplicate_threshold
        if ctx.claim.evidence.prefix is not None and params.claim_prefix:
            nonmembers = tuple(ctx.load(ctx.claim.evidence.prefix).texts[:shots])
            finding["prefix_source"] = "evidence.prefix (the policy's claim_prefix allows it)"
        else:
            if ctx.claim.evidence.prefix is not None:
                finding["prefix_ignored"] = "evidence.prefix: not used (the policy's claim_prefix is false)"
            distinct, _ = sets["heldout"].distinct(threshold)
            if len(distinct.texts) > 2 * shots:
                seed = documents_seed(sets["suspect"].texts, distinct.texts)
                drawn = np.random.default_rng(seed).choice(len(distinct.texts), shots, replace=False)
                nonmembers = tuple(distinct.texts[int(i)] for i in sorted(drawn))
                finding["prefix_source"] = (
                    f"{shots} distinct documents drawn from the held-out set (seed {seed} from the documents), not "
                    "tested"
                )
        if nonmembers:
            removed = {}
            for role, documents in sets.items():
                overlap = find_overlap(list(nonmembers), list(documents.texts), threshold)
                sets[role] = documents.without(overlap.removed)
                removed[role] = len(overlap.removed)
            finding["prefix_overlap_removed"] = (
                removed  # the prefix documents themselves and their twins, from every set
            )
            relation = prefix_relation(nonmembers, {role: list(documents.texts) for role, documents in sets.items()})
            sets = {role: documents.without(relation.derived[role]) for role, documents in sets.items()}
            finding["prefix_relation"] = relation.as_finding()
            if not relation.balanced:
                finding["prefix_refused"] = relation.reason()
                nonmembers = ()
    aux = Auxiliary(nonmembers, (), frequencies)
    return aux, {**finding, **aux.as_finding()}, sets


def origin(ref: DocumentRef, file_sha256: str) -> str:
    """Which population a set is drawn from: its file's contents, text field and filter (not offset
    or limit), in one form however it is spelled (a copy of the file, ``x/../docs.jsonl`` or a link
    is the same file; ``{label: "0"}`` is ``{label: 0}``), so a split of the held-out set cannot pass
    for another population."""
    where = {key: normalised_value(value) for key, value in ref.where.items()}
    return f"{file_sha256}:{ref.text_field}:{json.dumps(where, sort_keys=True)}"


@register
class DatasetInferenceRoute(Route[DatasetInferenceParams]):
    name = "dataset_inference"
    Params = DatasetInferenceParams
    requires = frozenset({Role.SUSPECT, Role.HELDOUT})
    claim_kinds = KINDS
    verdicts = VERDICTS
    plain = {
        SetStatus.TOO_SMALL.value: "the document sets are too small for the set-level test to mean anything",
        SetStatus.DATES_DIFFER.value: "the suspect and held-out texts are of different dates, so a difference would "
        "measure the date, not training",
        SetStatus.SHIFT_DETECTED.value: "a classifier that never looks at the model tells the suspect and held-out "
        "texts apart, so a difference would not be about training",
        SetStatus.MIRRORED.value: "the suspect and held-out sets are more alike than random halves of one set: they "
        "were chosen, not drawn",
        SetStatus.CONTROL_FLAGGED.value: "a set known to be unseen also scored as trained on, so the held-out set "
        "cannot be trusted",
        SetStatus.NOT_ESTABLISHED.value: "it could not be shown that the suspect and held-out texts come from the "
        "same population",
        SetStatus.CONTROL_REQUIRED.value: "the test found a difference, but the policy requires a validated "
        "member-free control and none passed",
        SetStatus.NOT_SIGNIFICANT.value: "the model does not score the suspect texts measurably higher than held-out "
        "texts of the same kind",
        TOO_FEW_SCORED: "too few documents could be scored by the model for the test to run",
        MODEL_CHANGED: "the API answered as more than one model during the run",
        PREFIX_UNBALANCED: "the prefix texts the method needs differ between the sets, which would bias the test",
        SetStatus.SIGNIFICANT.value: "the model scores the suspect texts significantly higher than held-out texts of "
        "the same kind and period",
    }
    needs_target = True

    @classmethod
    def withdraw(cls, outcome: dict[str, Any]) -> None:
        """The fraction bound and the identified documents are stated only beside a significant test:
        a batch that weakens the verdict withdraws them (bound 0, no document, the table replaced)."""
        metrics = outcome.get("metrics", {})
        if "fraction_trained" not in metrics:
            return
        metrics["fraction_trained"]["lower_bound"] = 0.0
        metrics["stated"] = False
        metrics["documents"]["identified_sha256"] = []
        metrics["documents"]["identified_at"] = []
        outcome["sections"] = [s for s in outcome.get("sections", []) if s.get("title") != DOCUMENTS_TITLE] + [
            asdict(
                Notes(
                    DOCUMENTS_TITLE,
                    [
                        "Withdrawn: adjusted across the batch, the set test is no longer significant, so no fraction "
                        "trained "
                        "on is stated and no document is identified."
                    ],
                )
            )
        ]

    @classmethod
    def precheck(cls, claim: ClaimManifest, params: DatasetInferenceParams, sizes: Mapping[str, int]) -> str | None:
        small = [
            f"evidence.{role} has {sizes[role]}"
            for role in ("suspect", "heldout")
            if role in sizes and sizes[role] < params.min_set_size
        ]
        if not small:
            return None
        return (
            f"{' and '.join(small)} documents; the dataset_inference route needs at least {params.min_set_size} "
            "per set (the policy's min_set_size): a set-level test on fewer cannot mean anything"
        )

    @classmethod
    def input_files(cls, claim: ClaimManifest) -> dict[str, Path]:
        table = claim.evidence.token_frequencies
        return {} if table is None else {"token frequencies": table}

    def run(self, ctx: RouteContext, params: DatasetInferenceParams) -> RouteOutcome:
        evidence = ctx.claim.evidence
        params = params.for_family(ctx.family_size)
        sets = {}
        for role in ("suspect", "heldout", "control"):
            ref = getattr(evidence, role)
            if ref is not None:
                sets[role] = DocumentSet(ctx.load(ref).texts, None, ref.year, origin(ref, ctx.file_sha256(ref)))
        aux, aux_finding, sets = auxiliary(ctx, params, sets)
        signals, not_computable = ctx.usable_signals(list(params.signals), aux)
        if refused := aux_finding.get("prefix_refused"):
            prefixed = [
                name
                for name in not_computable
                if NONMEMBER_PREFIX in make_signal(name, params.signal_params.get(name)).needs
            ]
            not_computable |= {name: refused for name in prefixed}
            if not signals:
                return RouteOutcome(
                    PREFIX_UNBALANCED,
                    f"The method is refused: {refused}; no other signal was asked for.",
                    {"signals": [], "not_computable": not_computable, "auxiliary": aux_finding},
                    [],
                    list(LIMITATIONS),
                )
        prefetched: list[bool] = []

        def scorer(role: str, texts: list[str]) -> np.ndarray:
            if not prefetched:  # every set's queries in one shuffled batch, asked only once the sets pass the checks
                ctx.prefetch({r: list(ds.texts) for r, ds in sets.items()}, signals, params.signal_params, aux)
                prefetched.append(True)
            return ctx.features(role, texts, signals, signal_params=params.signal_params, aux=aux)

        try:
            finding = run_set_membership(
                sets["suspect"], sets["heldout"], signals, control=sets.get("control"), params=params, scorer=scorer
            )
        except TooFewScored as exc:
            return RouteOutcome(
                TOO_FEW_SCORED,
                f"Nothing is concluded: {exc}.",
                {
                    "signals": signals,
                    "not_computable": not_computable,
                    "failed_items": dict(ctx.failed_items),
                    "failure_reasons": dict(ctx.failure_reasons),
                },
                [],
                list(LIMITATIONS),
            )
        queried = ctx.loaded.get("target")  # None when the sets were refused before any scoring
        served = [
            name
            for name in (queried.identity.details.get("served_as", []) if queried else [])
            if name.startswith("model=")
        ]
        if finding.status == SetStatus.SIGNIFICANT and len(served) > 1:
            return RouteOutcome(
                MODEL_CHANGED,
                f"Nothing is concluded: the endpoint answered as more than one model during the run "
                f"({', '.join(served)}), so the sets may have been answered by different weights (the test alone "
                f"gave p = {finding.result.p_value:.3g}).",
                {"served_as": served, "set_test": finding.as_finding()},
                [],
                list(LIMITATIONS),
            )
        metrics: dict[str, Any] = {
            "n_suspect": len(sets["suspect"].texts),
            "n_heldout": len(sets["heldout"].texts),
            "n_control": len(sets["control"].texts) if "control" in sets else 0,
            "signals": signals,
            "not_computable": not_computable,
            "set_test": finding.as_finding(),
        }
        if aux_finding:
            metrics["auxiliary"] = aux_finding  # prefix documents and frequency table, by digest
        if ctx.family_size > 1:
            metrics["family_size"] = ctx.family_size  # the batch's size, which set the relabellings the test ran
        sections: list[Section] = [
            Table(
                "Checks, in the order the rules apply them", ["check", "result"], _check_rows(finding, not_computable)
            )
        ]
        tail = list(finding.notes)
        if finding.shift is not None:
            metrics["shift_check"] = finding.shift.as_finding()
            if finding.shift.exchangeable:
                tail.insert(0, f"suspect vs held-out: {finding.shift.describe()}")
        if finding.result is not None:
            result = finding.result
            metrics["test"] = asdict(result)
            needed = size_needed(result.effect_size, result.alpha, params.target_power, result.method)
            metrics |= {"n_needed_for_target_power": needed, "target_power": params.target_power}
            tail.insert(
                0,
                f"effect size d = {result.effect_size:.3f}, {result.n_suspect} suspect vs {result.n_heldout} held-out "
                "documents",
            )
            if finding.status == SetStatus.NOT_SIGNIFICANT:
                tail.insert(
                    1,
                    f"about {needed} documents per set would give power {params.target_power:.0%} if the observed "
                    "effect is real"
                    if needed
                    else "the observed effect is not in the member-like direction, so no set size would detect it",
                )
            suspect, heldout = finding.tested["suspect"], finding.tested["heldout"]
            rows, compared = compare_sets(
                signals, suspect.features, heldout.features, suspect.texts, heldout.texts, finding.shift, ctx.claim.seed
            )
            sections[0].rows.append(
                [
                    f"documents per set for power {params.target_power} at the observed effect",
                    needed if needed is not None else "none: no member-like effect",
                ]
            )
            metrics["best_signal"] = best_signal(rows)["name"]
            metrics["membership_rows"] = rows
            sections += compared
            if finding.documents is not None:
                metrics |= finding.documents.as_finding()
                suspect_docs = ctx.load(evidence.suspect)
                where_is: dict[str, str] = {}
                for text, at in zip(suspect_docs.texts, suspect_docs.at):
                    where_is.setdefault(text_digest(text), f"{evidence.suspect.path.name} {at}")
                located = [where_is.get(d, d[:12]) for d in finding.documents.identified]
                metrics["documents"]["identified_at"] = located  # file and line, as the user's editor shows them
                sections.append(_documents_table(finding.documents, located))
            sections.append(
                Figure(
                    "power",
                    {
                        "curve": power_curve(result.effect_size, result.alpha, result.method),
                        "target_power": params.target_power,
                    },
                    "Estimated power against set size at the observed effect (an estimate that assumes the effect is "
                    "real).",
                )
            )
        else:
            tail.append("the model was not queried: the comparison was refused before any scoring")
        if finding.control is None:
            tail.append("no member-free control was run")
        elif not finding.control.validated:
            tail.append(
                f"the member-free control cannot validate the held-out set ({'; '.join(finding.control.problems)})"
            )
        else:
            tail.append(f"validated member-free control p = {finding.control.result.p_value:.3g}")
        if finding.control is not None:
            control = finding.control
            metrics["control"] = (
                asdict(control.result) if control.result else {"p_value": None, "significant": False}
            ) | {
                "validated": control.validated,
                "problems": control.problems,
                "overlap_removed": control.overlap_removed,
                "duplicates_removed": control.duplicates_removed,
                "shift_check": control.shift.as_finding() if control.shift else None,
            }
        if finding.notes:
            sections.append(Notes("Notes on the sets", list(finding.notes)))
        summary = f"{finding.reason[0].upper()}{finding.reason[1:]}; {'; '.join(tail)}."
        test, worst = finding.result, finding.least_favourable
        # The p-value the status rests on: with failed items, a detection must also hold filled least favourably.
        p_value = None if test is None else max(test.p_value, worst.p_value) if worst is not None else test.p_value
        return RouteOutcome(
            finding.status.value,
            summary,
            metrics,
            sections,
            list(LIMITATIONS),
            p_value=p_value,
            alpha=test.alpha if test else None,
            size=finding.n_suspect,
        )


def _documents_table(documents: DocumentsFinding, located: list[str]) -> Table:
    fraction = documents.fraction
    found = len(documents.identified)
    stated = (
        f"{fraction.sentence()} are member-like beyond the held-out set's distribution"
        if documents.stated
        else "none stated: the set test is not significant (the bound is reported as 0)"
    )
    rows: list[list[Cell]] = [
        [f"fraction trained on: lower bound, {fraction.confidence:.0%} confidence, any member distribution", stated],
        ["point estimate (the same ratio without confidence margins)", f"{fraction.estimate:.1%}"],
        ["method", fraction.method],
        [
            f"documents identified at false discovery rate {documents.fdr:.0%} ({FDR_METHOD})",
            ", ".join(located)
            if found
            else "none: no single document can be identified at this rate, as is usual at today's per-document accuracy"
            if documents.stated
            else "none listed: the set test is not significant",
        ],
        [
            "smallest per-document conformal p-value",
            pval(min(documents.p_values.values())) if documents.p_values else "-",
        ],
    ]
    return Table(
        DOCUMENTS_TITLE,
        ["quantity", "value"],
        rows,
        note=(
            "Documents are named by file and line (or row) of the suspect set as the claim selects it; the findings "
            "also give each one's text SHA-256 and every document's p-value."
        ),
    )


def _check_rows(finding: SetMembershipFinding, not_computable: dict[str, str]) -> list[list[Cell]]:
    """The checks table: every rule the set test applied, with its numbers, in order."""
    overlap = finding.heldout_overlap
    rows: list[list[Cell]] = [
        ["where the verdict rules stopped", finding.status.value.replace("_", " ")],
        [
            "documents repeating another of the same set, removed: suspect / held-out",
            f"{finding.duplicates_removed['suspect']} / {finding.duplicates_removed['heldout']}",
        ],
        [
            "held-out / suspect documents removed as duplicates or near duplicates of each other "
            "(held-out documents matched exactly / by prefix / nearly)",
            f"{len(overlap.removed)} / {len(overlap.removed_suspect)} ({overlap.exact} / {overlap.prefix} / "
            f"{overlap.near})",
        ],
        ["documents tested: suspect / held-out", f"{finding.n_suspect} / {finding.n_heldout}"],
        [
            "seed of halves, relabellings and folds (derived from the SHA-256 of the tested documents' sorted text "
            "digests)",
            finding.seed,
        ],
    ]
    if finding.shift is not None:
        rows += shift_rows(finding.shift)
        if finding.on_blind:
            rows.append(
                [
                    "exchangeability not established at this size, so the test ran on the signals residualised on the "
                    "blind "
                    "classifier's text features (what they explain cannot count)",
                    "yes",
                ]
            )
    rows += [[f"signal {name}", why] for name, why in not_computable.items()]
    result = finding.result
    if result is not None:
        how = (
            f"{result.n_permutations} relabellings, exact"
            if result.method == "permutation"
            else f"{result.n_splits} splits combined as 2 × median"
        )
        rows.append(
            [
                f"dataset inference p-value (H0: {result.null_hypothesis}; {result.method.replace('_', ' ')}, {how})",
                f"{pval(result.p_value)} (alpha {result.alpha})",
            ]
        )
        if result.split_p_values:
            rows.append(["per-split p-values", ", ".join(pval(p) for p in result.split_p_values)])
        unit = "fold" if result.method == "permutation" else "split"
        rows.append(
            [
                f"learned weights, non-negative (standardised signals; one row per {unit})",
                "; ".join(", ".join(f"{k} {num(v, 3)}" for k, v in sorted(w.items())) for w in result.weights),
            ]
        )
        rows.append(["effect size (Cohen's d of held-out scores)", num(result.effect_size, 3)])
    control = finding.control
    if control is None:
        rows.append(["member-free control", "none was run"])
    else:
        p = control.result.p_value if control.result else None
        rows.append(
            [
                "member-free control p-value (control in place of the suspect)",
                pval(p) + (" (flagged)" if control.result is not None and control.result.significant else ""),
            ]
        )
        rows.append(
            [
                "control documents removed: repeating another control document / overlapping the suspect or held-out "
                "set",
                f"{control.duplicates_removed} / {control.overlap_removed}",
            ]
        )
        rows.append(
            [
                "control validated (disjoint, from the suspect's population and year, not a split of the held-out set)",
                "yes" if control.validated else "no: " + "; ".join(control.problems),
            ]
        )
    return rows
