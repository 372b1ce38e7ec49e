"""Power and false-positive rate of dataset inference, by simulation on known membership.

Given per-document signal features of known members and known non-members (a testbed, or a
user's labelled data), each trial draws, without replacement:
- power: a suspect set of n members and a held-out set of n non-members;
- FPR: a suspect set of n non-members and a disjoint held-out set of n non-members
  (a member-free suspect: any "detection" is a false positive).
Power and FPR are the shares of trials with p < alpha, each with a Wilson 95% CI. Set sizes
the pools cannot fill are skipped and listed. All trials of a size run as one batched test.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from scipy.stats import binomtest

from verifier.dataset_inference.statistic import DEFAULT_PERMUTATIONS, DEFAULT_SPLITS, METHODS, trial_p_values
from verifier.errors import VerifierError
from verifier.scoring.table import ScoreTable

DEFAULT_SIZES = (25, 50, 100, 200, 500, 1000)


@dataclass(frozen=True)
class Rate:
    """A share of trials with its Wilson 95% CI."""

    value: float
    ci_low: float
    ci_high: float
    hits: int
    trials: int


@dataclass(frozen=True)
class PowerRow:
    n: int
    power: Rate | None  # None when the member pool cannot fill a suspect set of n
    fpr: Rate | None  # None when the non-member pool cannot fill 2n


@dataclass(frozen=True)
class PowerTable:
    rows: list[PowerRow]
    skipped_sizes: list[int]
    alpha: float
    trials: int
    method: str
    n_permutations: int
    n_splits: int
    seed: int
    features: list[str] = field(default_factory=list)
    n_members: int = 0
    n_nonmembers: int = 0


def wilson(hits: int, trials: int) -> Rate:
    ci = binomtest(hits, trials).proportion_ci(confidence_level=0.95, method="wilson")
    return Rate(value=hits / trials, ci_low=float(ci.low), ci_high=float(ci.high), hits=hits, trials=trials)


def draw(pool: np.ndarray, trials: int, size: int, rng: np.random.Generator) -> np.ndarray:
    """[trials, size, features]: each trial a sample without replacement from ``pool``."""
    index = rng.random((trials, len(pool))).argsort(axis=1)[:, :size]
    return pool[index]


def simulate_power(
    members: np.ndarray,
    nonmembers: np.ndarray,
    features: list[str],
    sizes: Sequence[int] = DEFAULT_SIZES,
    trials: int = 500,
    alpha: float = 0.05,
    method: str = "permutation",
    n_permutations: int = DEFAULT_PERMUTATIONS,
    n_splits: int = DEFAULT_SPLITS,
    seed: int = 0,
) -> PowerTable:
    """Power (member suspects) and FPR (member-free suspects) at each set size the pools allow."""
    rng = np.random.default_rng(seed)
    test = {"method": method, "n_permutations": n_permutations, "n_splits": n_splits}
    rows, skipped = [], []
    for n in sizes:
        power = fpr = None
        if n <= len(members) and n <= len(nonmembers):
            p = trial_p_values(draw(members, trials, n, rng), draw(nonmembers, trials, n, rng), rng, **test)
            power = wilson(int((p < alpha).sum()), trials)
        if 2 * n <= len(nonmembers):
            both = draw(nonmembers, trials, 2 * n, rng)
            p = trial_p_values(both[:, :n], both[:, n:], rng, **test)
            fpr = wilson(int((p < alpha).sum()), trials)
        if power is None and fpr is None:
            skipped.append(n)
        else:
            rows.append(PowerRow(n=n, power=power, fpr=fpr))
    return PowerTable(
        rows=rows,
        skipped_sizes=skipped,
        alpha=alpha,
        trials=trials,
        method=method,
        n_permutations=n_permutations if method == "permutation" else 0,
        n_splits=n_splits if method == "split_median" else 0,
        seed=seed,
        features=list(features),
        n_members=len(members),
        n_nonmembers=len(nonmembers),
    )


def power_from_table(
    path: str | Path,
    signals: Sequence[str] | None = None,
    sizes: Sequence[int] = (25, 50, 100, 200, 500, 1000),
    trials: int = 500,
    alpha: float = 0.05,
    method: str = "permutation",
    n_permutations: int = 199,
    seed: int = 0,
) -> tuple[PowerTable, list[str]]:
    """``simulate_power`` on a labelled score table (e.g. of a testbed); returns it with the features used."""

    if method not in METHODS:
        raise VerifierError(f"method {method!r}: use one of {', '.join(METHODS)}")
    if not 0 < alpha < 1 or trials < 1 or n_permutations < 1 or not sizes or min(sizes) < 2:
        raise VerifierError("alpha must be in (0, 1), trials and permutations >= 1, and every set size >= 2")
    table = ScoreTable.read(path)
    labels = table.labels
    if labels is None:
        raise VerifierError(f"{path}: no labels; power needs known members (1) and non-members (0)")
    names = list(signals or table.signal_names)
    if unknown := sorted(set(names) - set(table.signal_names)):
        raise VerifierError(f"{path}: no signal column {', '.join(unknown)}")
    features = np.column_stack([table.signal(n) for n in names])
    result = simulate_power(
        features[labels == 1],
        features[labels == 0],
        names,
        sizes=list(sizes),
        trials=trials,
        alpha=alpha,
        method=method,
        n_permutations=n_permutations,
        seed=seed,
    )
    return result, names
