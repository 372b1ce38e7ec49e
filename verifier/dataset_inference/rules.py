"""The set-level membership test as an auditor must run it, and the verdict rules it follows.

The test can only say "suspect and held-out are not exchangeable under the model". That reads as
"trained on" only if everything else that could make them differ was ruled out, so the burden of
proof lies on the comparison, in this order:

1. Distinct, disjoint sets: documents repeating another of their own set, and both documents of
   every suspect/held-out pair that duplicate or nearly duplicate each other, are removed and
   counted (``dataset_inference.hygiene``); so are control documents overlapping either set. Too few left
   refuses the test. Rows are put in a canonical order, and the test's seed is derived from the
   tested documents, so neither row order nor a chosen seed can change the outcome.
2. Declared dates agree: a suspect and held-out set declared from different years are not a
   same-period comparison, with or without a training cutoff.
3. Exchangeability the tool could have refuted and did not (``baselines.exchangeability``): a
   shift the blind classifier detects refuses the method; one it could not rule out at this size
   leaves the result inconclusive.
4. Only now is the model queried, for the documents left to test: none of the checks above
   needs it, so a refused comparison costs no forward pass.
5. Dataset inference with non-negative weights and an exact permutation p-value
   (``dataset_inference.statistic``); optionally on signals residualised on the surface features, so
   what text form alone explains cannot count as membership.
6. The member-free control, if given: known non-members of the *suspect's* population tested
   against the held-out set. It validates the held-out set only if it is disjoint from both
   sets, not drawn with the held-out set's own file and filter, declared from the suspect's
   year and exchangeable with the suspect for the blind check. A flagged control refuses the
   method; a policy may require a validated control for any SUPPORTED or CONTRADICTED.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from enum import Enum
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, StrictBool, model_validator

from verifier.baselines.exchangeability import (
    DEFAULT_ALPHA,
    DEFAULT_MARGIN_CAP,
    DEFAULT_MARGIN_SCALE,
    DEFAULT_MIRROR_ALPHA,
    DEFAULT_PERMUTATIONS,
    MAX_PER_SET,
    RIDGE,
    ExchangeabilityCheck,
    blind_kernel,
    check_exchangeable,
    size_to_establish,
)
from verifier.baselines.surface import surface_features
from verifier.claims import Role
from verifier.dataset_inference.fraction import (
    FDR_METHOD,
    FractionTrained,
    conformal_p_values,
    fold_scores,
    fraction_trained,
    identified,
)
from verifier.dataset_inference.hygiene import DEFAULT_THRESHOLD, Overlap, find_duplicates, find_overlap
from verifier.dataset_inference.statistic import MIN_SET_SIZE, DatasetInferenceResult, dataset_inference
from verifier.stats.metrics import fill_failed
from verifier.targets.cache import text_digest

PROSE = {Role.HELDOUT.value: "held-out"}  # how a role is written in a sentence (as a key it is heldout)


class SetStatus(str, Enum):
    """Where the walk through the rules stopped; the route maps each to a verdict."""

    TOO_SMALL = "too_small"  # REJECTED-METHOD
    DATES_DIFFER = "dates_differ"  # REJECTED-METHOD
    SHIFT_DETECTED = "shift_detected"  # REJECTED-METHOD
    MIRRORED = "sets_look_matched"  # REJECTED-METHOD: more alike than random halves, so chosen, not drawn
    NOT_ESTABLISHED = "exchangeability_not_established"  # INCONCLUSIVE
    CONTROL_FLAGGED = "control_flagged"  # REJECTED-METHOD
    CONTROL_REQUIRED = "control_required"  # INCONCLUSIVE: significant, but the policy needs a validated control
    SIGNIFICANT = "significant"  # SUPPORTED / CONTRADICTED, by claim kind
    NOT_SIGNIFICANT = "not_significant"  # INCONCLUSIVE


# role ("suspect", "heldout", "control") and texts -> their [n, features] signal values
Scorer = Callable[[str, list[str]], np.ndarray]


@dataclass(frozen=True)
class DocumentSet:
    """Texts with their signal features [n, features] (None until scored), a declared year and
    where they came from."""

    texts: Sequence[str]
    features: np.ndarray | None = None
    year: int | None = None
    origin: str | None = None  # e.g. "file.jsonl where {...}": equal origins mean one population split in two

    def without(self, removed: list[int]) -> DocumentSet:
        keep = np.setdiff1d(np.arange(len(self.texts)), removed)
        return DocumentSet(
            [self.texts[i] for i in keep],
            None if self.features is None else self.features[keep],
            self.year,
            self.origin,
        )

    def scored(self, role: str, scorer: Scorer | None) -> DocumentSet:
        if self.features is not None:
            return self
        if scorer is None:
            raise ValueError(f"the {role} set has no features and no scorer was given")
        return replace(self, features=scorer(role, list(self.texts)))

    def distinct(self, threshold: float) -> tuple[DocumentSet, int]:
        """Rows in canonical order (by text digest: the outcome cannot depend on the order a claimant
        listed them in), without documents repeating an earlier one; and how many were removed."""
        order = sorted(range(len(self.texts)), key=lambda i: text_digest(self.texts[i]))
        ordered = DocumentSet(
            [self.texts[i] for i in order],
            None if self.features is None else self.features[order],
            self.year,
            self.origin,
        )
        repeated = find_duplicates(ordered.texts, threshold)
        return ordered.without(repeated), len(repeated)


class SetTestParams(BaseModel):
    """The policy's knobs for the set-level route, validated with bounds when the policy is read.

    A bound keeps a policy from switching a safeguard off: alpha at most 0.2, enough relabellings
    for a p-value below each level to be reachable, a margin no wider than 0.75, sets of at least
    ``MIN_SET_SIZE``, real booleans (the YAML string "false" is not false).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)
    # json_schema_extra "weaker": the direction in which a value loosens the test (policy comparison)
    alpha: float = Field(
        0.05,
        gt=0,
        le=0.2,
        json_schema_extra={"weaker": "higher"},
        description="the level the set-level test's p-value must reach",
    )
    min_set_size: int = Field(
        MIN_SET_SIZE,
        ge=MIN_SET_SIZE,
        le=100_000,
        json_schema_extra={"weaker": "lower"},
        description="fewest documents per set after duplicates are removed",
    )
    method: Literal["permutation", "split_median"] = "permutation"
    n_permutations: int = Field(
        999,
        ge=19,
        le=100_000,
        json_schema_extra={"weaker": "lower"},
        description="relabellings of the permutation method (its p-value is exact for any count)",
    )
    n_splits: int = Field(5, ge=1, le=101, description="split_median method: random splits whose p-values are combined")
    condition_on_text: StrictBool = Field(
        False,
        json_schema_extra={"weaker": "false"},
        description="residualise the signals on surface features of the text before the test",
    )
    shift_alpha: float = Field(
        DEFAULT_ALPHA,
        gt=0,
        le=0.2,
        json_schema_extra={"weaker": "lower"},
        description="the blind classifier's permutation test refuses the method below this p-value",
    )
    mirror_alpha: float = Field(
        DEFAULT_MIRROR_ALPHA,
        gt=0,
        le=0.2,
        json_schema_extra={"weaker": "lower"},
        description="its lower tail: sets more alike than random halves (matched, not drawn) are refused",
    )
    shift_permutations: int = Field(
        DEFAULT_PERMUTATIONS,
        ge=19,
        le=100_000,
        json_schema_extra={"weaker": "lower"},
        description="relabellings of the blind classifier's permutation test",
    )
    margin_scale: float = Field(
        DEFAULT_MARGIN_SCALE,
        gt=0,
        le=3.0,
        json_schema_extra={"weaker": "higher"},
        description="exchangeability needs the blind AUC interval's upper end below min(margin_cap, 0.5 + "
        "margin_scale / sqrt(n))",
    )
    margin_cap: float = Field(
        DEFAULT_MARGIN_CAP,
        ge=0.55,
        le=0.75,
        json_schema_extra={"weaker": "higher"},
        description="the cap of that margin",
    )
    near_duplicate_threshold: float = Field(
        DEFAULT_THRESHOLD,
        ge=50,
        le=100,
        json_schema_extra={"weaker": "higher"},
        description="rapidfuzz ratio at which a held-out or control document counts as a suspect duplicate",
    )
    blind_residual_test: StrictBool = Field(
        False,
        json_schema_extra={"weaker": "true"},
        description="where the blind check finds no shift but cannot establish exchangeability at "
        "this size, test the signals residualised on its text features instead of "
        "stopping (INCONCLUSIVE unless that test is significant). Off by default: a "
        "subtle shift the model is more sensitive to than the blind classifier survives "
        "the residualisation",
    )
    require_control: StrictBool = Field(
        False,
        json_schema_extra={"weaker": "false"},
        description="SUPPORTED or CONTRADICTED only beside a validated member-free control",
    )
    fraction_confidence: float = Field(
        0.95,
        ge=0.8,
        lt=1,
        json_schema_extra={"weaker": "lower"},
        description="confidence of the lower bound on the fraction of suspect documents trained on",
    )
    document_fdr: float = Field(
        0.1,
        gt=0,
        le=0.2,
        json_schema_extra={"weaker": "higher"},
        description="false discovery rate at which single suspect documents are identified",
    )

    def for_family(self, claims: int) -> SetTestParams:
        """These params for one of ``claims`` claims tested together (a batch): enough relabellings
        that the permutation p-value can fall ten times below alpha / claims, the strictest level
        Holm's and Benjamini-Hochberg's adjustments hold a claim to. With the policy's 999 a batch of
        50 claims at alpha 0.05 could never keep a verdict (0.001 > 0.05 / 50), whatever the model
        did. More relabellings only make the p-value finer, never the test looser."""
        needed = math.ceil(10 * claims / self.alpha) - 1
        if self.method != "permutation" or claims <= 1 or needed <= self.n_permutations:
            return self
        return self.model_copy(update={"n_permutations": needed})

    @model_validator(mode="after")
    def reachable_levels(self) -> SetTestParams:
        for level, count, names in (
            (self.alpha, self.n_permutations, "alpha / n_permutations"),
            (self.shift_alpha, self.shift_permutations, "shift_alpha / shift_permutations"),
            (self.mirror_alpha, self.shift_permutations, "mirror_alpha / shift_permutations"),
        ):
            if 1 / (count + 1) >= level:
                raise ValueError(f"{names}: with {count} relabellings no p-value can fall below {level}")
        return self


@dataclass(frozen=True)
class ControlFinding:
    """The member-free control: its own test, and whether it can validate the held-out set at all."""

    result: DatasetInferenceResult | None
    shift: ExchangeabilityCheck | None  # control vs suspect
    duplicates_removed: int  # control documents repeating another control document, removed
    overlap_removed: int  # control documents that overlapped the suspect or held-out set, removed
    validated: bool
    problems: list[str]  # why it cannot validate the held-out set (empty when validated)


@dataclass(frozen=True)
class DocumentsFinding:
    """How much of the suspect set, and which documents (``dataset_inference.fraction``): computed
    only once the exchangeability rules passed, and stated only under a significant set test (a
    bound is otherwise reported as 0 and no document listed, which only lowers both error rates)."""

    fraction: FractionTrained
    p_values: dict[str, float]  # suspect text digest -> conformal p-value
    identified: list[str]  # suspect text digests identified at the false discovery rate
    fdr: float
    stated: bool  # False: the set test was not significant, so the bound is 0 and the list empty

    def as_finding(self) -> dict[str, Any]:
        return {
            "fraction_trained": asdict(self.fraction),
            "stated": self.stated,
            "documents": {
                "method": FDR_METHOD,
                "fdr": self.fdr,
                "identified_sha256": list(self.identified),
                "p_values": dict(self.p_values),
            },
        }


@dataclass(frozen=True)
class SetMembershipFinding:
    status: SetStatus
    reason: str
    heldout_overlap: Overlap
    n_suspect: int  # after removing duplicates and overlap
    n_heldout: int  # after removing duplicates and overlap
    duplicates_removed: dict[str, int]
    overlap_removed_sha256: dict[str, list[str]]  # which documents left each set for overlap, by text digest
    seed: int
    shift: ExchangeabilityCheck | None = None
    result: DatasetInferenceResult | None = None
    control: ControlFinding | None = None
    documents: DocumentsFinding | None = None
    on_blind: bool = False  # the test ran on signals residualised on the blind classifier's text features
    least_favourable: DatasetInferenceResult | None = (
        None  # the test with failed items filled against a detection, when any failed
    )
    notes: list[str] = field(default_factory=list)
    tested: dict[str, DocumentSet] = field(
        default_factory=dict
    )  # the sets as tested (after removals; scored if the test ran)

    def as_finding(self) -> dict[str, Any]:
        """Where the rules stopped and why; the shift check, test and control are recorded by the route."""
        return {
            "status": self.status.value,
            "reason": self.reason,
            "heldout_overlap": asdict(self.heldout_overlap),
            "duplicates_removed": dict(self.duplicates_removed),
            "overlap_removed_sha256": self.overlap_removed_sha256,
            "n_suspect_tested": self.n_suspect,
            "n_heldout_tested": self.n_heldout,
            "seed": self.seed,
            "notes": list(self.notes),
            "signals_residualised_on_blind_features": self.on_blind,
        }


def residualise_on_text(features: np.ndarray, texts: Sequence[str], ridge: float = 1.0) -> np.ndarray:
    """Signals minus their ridge fit on the surface features, over the pooled rows (label-blind).

    What casing, punctuation, length or format explain about a signal is removed for every
    document alike, so it cannot count as membership; the permutation test stays exact because
    the labels are never used.
    """
    design = surface_features(texts)
    design = (design - design.mean(axis=0)) / np.where(design.std(axis=0) > 0, design.std(axis=0), 1.0)
    centred = features - features.mean(axis=0)
    coef = np.linalg.solve(design.T @ design + ridge * np.eye(design.shape[1]), design.T @ centred)
    return centred - design @ coef


def residualise_on_blind(features: np.ndarray, texts: Sequence[str], ridge: float = RIDGE) -> np.ndarray:
    """Signals minus their kernel ridge fit on the blind classifier's representation of the texts
    (word and character n-grams and surface form: ``blind_kernel``), over the pooled rows, label-blind.

    Why: when the blind check cannot establish that the sets are exchangeable, a shift it cannot
    exclude might be what the signals see. Whatever part of the signals those text features
    explain is removed for every document alike, so a shift visible to them moves nothing; the
    labels are never used, so the permutation test stays exact. A shift the classifier's features
    cannot represent is not removed, as it is not detected by the check either.
    """
    kernel = blind_kernel(texts)
    centred = features - features.mean(axis=0)
    return ridge * np.linalg.solve(kernel + ridge * np.eye(len(kernel)), centred)


def dates_reason(suspect_year: int | None, other_year: int | None, cutoff: int | None = None) -> str | None:
    """Why declared years alone refuse the comparison, or None."""
    if suspect_year is None or other_year is None or suspect_year == other_year:
        return None
    if cutoff is not None and min(suspect_year, other_year) <= cutoff < max(suspect_year, other_year):
        return (
            f"the sets are declared from {suspect_year} and {other_year}, on both sides of the training cutoff "
            f"({cutoff}): "
            f"a difference measures the date, not training"
        )
    return (
        f"the sets are declared from different years ({suspect_year} and {other_year}): a difference may be the "
        "date, not training"
    )


def documents_seed(*sets: Sequence[str]) -> int:
    """A seed fixed by the documents themselves: the SHA-256 of each set's sorted text digests.

    A seed the claimant chooses could be shopped for (the best of 20 seeds roughly doubles the
    false-positive rate). Derived from the documents actually tested - after duplicates and
    overlap are removed, control excluded - it cannot be changed without changing the evidence.
    """
    digest = hashlib.sha256()
    for texts in sets:
        for item in sorted(text_digest(t) for t in texts):
            digest.update(item.encode())
        digest.update(b"|")
    return int.from_bytes(digest.digest()[:4], "big")


def run_set_membership(
    suspect: DocumentSet,
    heldout: DocumentSet,
    features: list[str],
    control: DocumentSet | None = None,
    params: SetTestParams = SetTestParams(),
    seed: int | None = None,
    scorer: Scorer | None = None,
) -> SetMembershipFinding:
    """Walk the rules of the module docstring; stop at the first that fails.

    Sets without features are scored with ``scorer`` once the model-free checks have passed, and
    only the documents left to test. ``seed`` (of halves, relabellings and folds) defaults to
    ``documents_seed`` of the tested sets.
    """
    submitted = suspect, heldout
    threshold = params.near_duplicate_threshold
    (suspect, s_repeated), (heldout, h_repeated) = suspect.distinct(threshold), heldout.distinct(threshold)
    repeated = {Role.SUSPECT.value: s_repeated, Role.HELDOUT.value: h_repeated}
    overlap = find_overlap(suspect.texts, heldout.texts, threshold)
    removed_sha256 = {
        "suspect": [text_digest(suspect.texts[i]) for i in overlap.removed_suspect],
        "held-out": [text_digest(heldout.texts[i]) for i in overlap.removed],
    }
    suspect, heldout = suspect.without(overlap.removed_suspect), heldout.without(overlap.removed)
    seed = documents_seed(suspect.texts, heldout.texts) if seed is None else seed
    common: dict[str, Any] = {
        "tested": {"suspect": suspect, "heldout": heldout},
        "heldout_overlap": overlap,
        "n_suspect": len(suspect.texts),
        "n_heldout": len(heldout.texts),
        "duplicates_removed": repeated,
        "overlap_removed_sha256": removed_sha256,
        "seed": seed,
    }
    notes = [
        f"{count} {PROSE.get(role, role)} documents repeat (or nearly repeat) an earlier one of the same set and were "
        "removed"
        for role, count in repeated.items()
        if count
    ]
    if overlap.count:
        notes.append(
            f"{overlap.count} held-out and {len(overlap.removed_suspect)} suspect documents duplicate or nearly "
            "duplicate "
            f"each other ({overlap.exact} exact, {overlap.prefix} prefix, {overlap.near} near) and were removed from "
            "both sets"
        )
    small = [
        f"{name} ({len(s.texts)})"
        for name, s in (("suspect", suspect), ("held-out", heldout))
        if len(s.texts) < params.min_set_size
    ]
    if small:
        return SetMembershipFinding(
            SetStatus.TOO_SMALL,
            f"too few documents for a set-level test: {', '.join(small)}, "
            f"at least {params.min_set_size} needed per set",
            notes=notes,
            **common,
        )
    dated = dates_reason(suspect.year, heldout.year)
    if dated:
        return SetMembershipFinding(
            SetStatus.DATES_DIFFER, f"not a same-period comparison: {dated}", notes=notes, **common
        )
    if suspect.year is None or heldout.year is None:
        notes.append("the claim does not declare the year of both sets, so their periods could not be compared")
    shift_args: dict[str, Any] = {
        "alpha": params.shift_alpha,
        "mirror_alpha": params.mirror_alpha,
        "n_permutations": params.shift_permutations,
        "margin_scale": params.margin_scale,
        "margin_cap": params.margin_cap,
        "seed": seed,
    }
    shift = check_exchangeable(suspect.texts, heldout.texts, **shift_args)
    if shift.detected:
        return SetMembershipFinding(
            SetStatus.SHIFT_DETECTED,
            f"measures distribution shift: {shift.describe()}",
            shift=shift,
            notes=notes,
            **common,
        )
    if shift.mirrored:
        return SetMembershipFinding(SetStatus.MIRRORED, shift.describe(), shift=shift, notes=notes, **common)
    # Exchangeability established, or not excluded: then only what the blind classifier's text features
    # cannot explain may count (the signals residualised on them), and the test must still be significant.
    on_blind = not shift.exchangeable
    if on_blind and (not params.blind_residual_test or max(len(suspect.texts), len(heldout.texts)) > MAX_PER_SET):
        return SetMembershipFinding(
            SetStatus.NOT_ESTABLISHED, _not_established(shift), shift=shift, notes=notes, **common
        )
    suspect, heldout = suspect.scored("suspect", scorer), heldout.scored("heldout", scorer)
    test_args: dict[str, Any] = {
        "alpha": params.alpha,
        "method": params.method,
        "n_permutations": params.n_permutations,
        "n_splits": params.n_splits,
        "seed": seed,
        "min_set_size": params.min_set_size,
    }
    if uneven := uneven_failures(suspect.features, heldout.features, features):
        return SetMembershipFinding(
            SetStatus.NOT_ESTABLISHED,
            f"queries fail unevenly between the sets ({uneven}): a test would "
            f"measure which documents the model refuses or fails on, not training",
            shift=shift,
            notes=notes,
            **common | {"tested": {"suspect": suspect, "heldout": heldout}},
        )
    result = dataset_inference(
        *_features_of(suspect, heldout, params.condition_on_text, on_blind=on_blind), features, **test_args
    )
    if on_blind and not result.significant:
        return SetMembershipFinding(
            SetStatus.NOT_ESTABLISHED,
            _not_established(shift)
            + (
                "; and the test on the signals residualised on the blind classifier's text features, which no shift "
                "that classifier "
                f"can see survives, is not significant either (p = {result.p_value:.3g})"
            ),
            shift=shift,
            result=result,
            notes=notes,
            on_blind=True,
            **common | {"tested": {"suspect": suspect, "heldout": heldout}},
        )
    worst = None
    if failed := {
        name: int((~np.isfinite(s.features)).any(axis=1).sum())
        for name, s in (("suspect", suspect), ("held-out", heldout))
        if not np.isfinite(s.features).all()
    }:
        notes.append(
            "documents with a failed query (their signal filled with the pooled median, label-blind): "
            + ", ".join(f"{n} {name}" for name, n in failed.items())
        )
        if result.significant:
            worst = dataset_inference(
                *_features_of(suspect, heldout, params.condition_on_text, least_favourable=True, on_blind=on_blind),
                features,
                **test_args,
            )
    control_finding = None
    if control is not None:
        control_finding = _run_control(
            submitted, suspect, control, heldout, features, params, test_args, shift_args, scorer, on_blind
        )
    if control_finding is not None and control_finding.result is not None and control_finding.result.significant:
        status, reason = (
            SetStatus.CONTROL_FLAGGED,
            (
                f"the member-free control was flagged too (p = {control_finding.result.p_value:.3g}): the test "
                "separates documents "
                f"that were certainly not trained on from the held-out set, so a detection would not be about training"
            ),
        )
    elif result.significant and params.require_control and not (control_finding and control_finding.validated):
        why = "no member-free control was given" if control_finding is None else "; ".join(control_finding.problems)
        status, reason = (
            SetStatus.CONTROL_REQUIRED,
            (
                f"the test is significant (p = {result.p_value:.3g}) but the policy requires a validated member-free "
                f"control: {why}"
            ),
        )
    elif result.significant and worst is not None and not worst.significant:
        status, reason = (
            SetStatus.NOT_SIGNIFICANT,
            (
                f"significant with failed items filled at the median (p = {result.p_value:.3g}) but not when they are "
                "filled least "
                f"favourably - suspect at the lowest score, held-out at the highest (p = {worst.p_value:.3g}): the "
                "failures could carry it"
            ),
        )
    elif result.significant:
        basis = (
            "beyond everything the blind classifier's text features explain (its interval could not establish "
            "exchangeability "
            f"at this size: {shift.describe()})"
            if on_blind
            else ""
        )
        status, reason = (
            SetStatus.SIGNIFICANT,
            (
                f"suspect and held-out are not exchangeable under the model{' ' + basis if basis else ''} (p = "
                f"{result.p_value:.3g}); if "
                "the held-out set is a valid same-population non-member sample, this indicates training on at least "
                "part of the suspect set"
            ),
        )
    else:
        status, reason = (
            SetStatus.NOT_SIGNIFICANT,
            f"no significant difference under the model (p = {result.p_value:.3g})",
        )
    common["tested"] = {"suspect": suspect, "heldout": heldout}
    documents = _documents(
        suspect,
        heldout,
        params,
        seed,
        least_favourable=bool(failed),
        stated=status == SetStatus.SIGNIFICANT,
        on_blind=on_blind,
    )
    return SetMembershipFinding(
        status,
        reason,
        shift=shift,
        result=result,
        control=control_finding,
        documents=documents,
        notes=notes,
        on_blind=on_blind,
        least_favourable=worst,
        **common,
    )


def _not_established(shift: ExchangeabilityCheck) -> str:
    """Why exchangeability is not established, and at what size it could be."""
    needed = size_to_establish(shift)
    size = (
        f"; about {needed} documents per set would let the check establish it if the blind AUC stayed at "
        f"{shift.auc_corrected:.3f}"
        if needed
        else "; at the observed blind AUC no set size would let the check establish it"
    )
    return f"the held-out set is not shown to be exchangeable with the suspect set: {shift.describe()}{size}"


def _documents(
    suspect: DocumentSet,
    heldout: DocumentSet,
    params: SetTestParams,
    seed: int,
    least_favourable: bool,
    stated: bool,
    on_blind: bool,
) -> DocumentsFinding:
    """The fraction bound and the identified documents, on the features as the test saw them
    (failed items filled least favourably to a detection, if any failed)."""
    s, v = _features_of(
        suspect, heldout, params.condition_on_text, least_favourable=least_favourable, on_blind=on_blind
    )
    folds = fold_scores(s[None], v[None], np.random.default_rng(seed))
    computed = fraction_trained(folds, params.fraction_confidence)[0]
    p, fold_of = conformal_p_values(folds)
    digests = [text_digest(t) for t in suspect.texts]
    found = [digests[i] for i in identified(p, fold_of, params.document_fdr)] if stated else []
    fraction = computed if stated else replace(computed, lower_bound=0.0)
    return DocumentsFinding(
        fraction, {d: round(float(x), 6) for d, x in zip(digests, p)}, found, params.document_fdr, stated
    )


def _features_of(
    first: DocumentSet,
    second: DocumentSet,
    condition_on_text: bool,
    least_favourable: bool = False,
    on_blind: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """The two sets' features as tested: failed items filled label-blind with the pooled median
    (counted in the notes by the caller) - or, for the sensitivity check, least favourably to a
    detection: the first set's at the column's lowest score, the second's at its highest - then
    residualised on surface features if asked, and on the blind classifier's whole text
    representation where exchangeability was not established (``on_blind``)."""
    pooled = np.r_[first.features, second.features]
    if least_favourable:  # (np.r_ made a new array: filling it in place touches no set)
        low, high = np.nanmin(pooled, axis=0), np.nanmax(pooled, axis=0)
        n = len(first.texts)
        for block, value in ((pooled[:n], low), (pooled[n:], high)):
            rows, cols = np.nonzero(~np.isfinite(block))
            block[rows, cols] = value[cols]
    pooled, _ = fill_failed(pooled)
    texts = list(first.texts) + list(second.texts)
    if condition_on_text:
        pooled = residualise_on_text(pooled, texts)
    if on_blind:
        pooled = residualise_on_blind(pooled, texts)
    return pooled[: len(first.texts)], pooled[len(first.texts) :]


def uneven_failures(first: np.ndarray, second: np.ndarray, features: list[str], level: float = 0.1) -> str:
    """Signals whose failure rate differs between two sets (Fisher's exact test, two-sided, p <
    ``level``: lenient on purpose, as an uneven share of failures is what a fill cannot repair),
    described in one line; empty when none does."""
    from scipy.stats import fisher_exact

    found = []
    for i, name in enumerate(features):
        a, b = int((~np.isfinite(first[:, i])).sum()), int((~np.isfinite(second[:, i])).sum())
        if a or b:
            p = fisher_exact([[a, len(first) - a], [b, len(second) - b]]).pvalue
            if p < level:
                found.append(f"{name}: {a}/{len(first)} suspect vs {b}/{len(second)} held-out, Fisher p = {p:.2g}")
    return "; ".join(found)


def _run_control(
    submitted: tuple[DocumentSet, DocumentSet],
    suspect: DocumentSet,
    control: DocumentSet,
    heldout: DocumentSet,
    features: list[str],
    params: SetTestParams,
    test_args: dict[str, Any],
    shift_args: dict[str, Any],
    scorer: Scorer | None,
    on_blind: bool = False,
) -> ControlFinding:
    """Test the control against the held-out set, and check whether it can validate anything.

    Control documents that overlap the suspect or held-out set are removed from the control only:
    that can only make the control look less like the suspect set (fewer validations) or more
    unlike the held-out set (more flags), never the reverse. What the tool cannot check is where
    the control really came from; the origin test catches only the plain case of one file and
    filter shared with the held-out set.
    """
    control, repeated = control.distinct(params.near_duplicate_threshold)
    # Against the sets as submitted: a control copy of a suspect text removed for overlap still counts.
    overlap = find_overlap([t for s in submitted for t in s.texts], control.texts, params.near_duplicate_threshold)
    control = control.without(overlap.removed)
    problems = []
    if control.origin is not None and control.origin == heldout.origin:
        problems.append(
            "the control is drawn with the held-out set's own file and filter, so it is a split of the held-out "
            "population and cannot show that the held-out set differs from the suspect's population"
        )
    if control.year is not None and suspect.year is not None and control.year != suspect.year:
        problems.append(f"the control is declared from {control.year}, the suspect set from {suspect.year}")
    elif params.require_control and (control.year is None or suspect.year is None):
        problems.append(
            "the years of the suspect set and of the control must both be declared for the control to count"
        )
    if len(control.texts) < params.min_set_size:
        problems.append(f"too few control documents ({len(control.texts)}, at least {params.min_set_size} needed)")
        return ControlFinding(None, None, repeated, overlap.count, False, problems)
    shift = check_exchangeable(suspect.texts, control.texts, **shift_args)
    if not shift.exchangeable:
        problems.append(f"the control is not shown to come from the suspect's population: {shift.describe()}")
    control = control.scored("control", scorer)
    result = dataset_inference(
        *_features_of(control, heldout, params.condition_on_text, on_blind=on_blind), features, **test_args
    )
    return ControlFinding(result, shift, repeated, overlap.count, not problems, problems)
