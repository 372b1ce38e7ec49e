"""The set-level membership test as an auditor must run it: shift check, test, member-free control.

1. Before the held-out (or reference) set is used, the blind baseline compares it with the
   suspect set (``baselines.shift``). If the sets differ in ways a model-free classifier sees,
   or their declared dates straddle the training cutoff, the test is refused: it would measure
   the distribution shift, not training.
2. Otherwise dataset inference tests "suspect scores higher than held-out" (``stats.dataset_inference``).
3. Where known non-members from the suspect's period exist, the same test runs with them in
   place of the suspect: a member-free control. A "detection" there means the test is picking
   up something other than training, and the real result is reported beside it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from verifier.baselines.shift import DEFAULT_THRESHOLD, ShiftCheck, check_shift
from verifier.stats.dataset_inference import DEFAULT_SPLITS, MIN_SET_SIZE, DatasetInferenceResult, dataset_inference


@dataclass(frozen=True)
class DocumentSet:
    """Texts with their signal features [n, features] and, optionally, declared years."""

    texts: Sequence[str]
    features: np.ndarray
    years: Sequence[int] | None = None


@dataclass(frozen=True)
class SetMembershipFinding:
    refused: bool
    shift: ShiftCheck
    result: DatasetInferenceResult | None  # None when refused
    control: DatasetInferenceResult | None  # None when no member-free control set was given


def run_set_membership(
    suspect: DocumentSet,
    heldout: DocumentSet,
    features: list[str],
    control: DocumentSet | None = None,
    alpha: float = 0.05,
    shift_threshold: float = DEFAULT_THRESHOLD,
    cutoff_year: int | None = None,
    n_splits: int = DEFAULT_SPLITS,
    seed: int = 0,
    min_set_size: int = MIN_SET_SIZE,
) -> SetMembershipFinding:
    """Shift check, then dataset inference, then the member-free control (if given)."""
    shift = check_shift(
        suspect.texts, heldout.texts, threshold=shift_threshold, seed=seed,
        suspect_years=suspect.years, reference_years=heldout.years, cutoff_year=cutoff_year,
    )
    if shift.refused:
        return SetMembershipFinding(refused=True, shift=shift, result=None, control=None)
    common = {"alpha": alpha, "n_splits": n_splits, "seed": seed, "min_set_size": min_set_size}
    result = dataset_inference(suspect.features, heldout.features, features, **common)
    control_result = None
    if control is not None:
        control_result = dataset_inference(control.features, heldout.features, features, **common)
    return SetMembershipFinding(refused=False, shift=shift, result=result, control=control_result)
