"""Candidate exchangeability criteria against the kept counterexamples: is a sensitivity bound sound?

The default rules grant a set-level verdict only where the blind classifier's AUC interval lies below
the margin min(0.70, 0.5 + 2/sqrt(n)). A candidate with a stated basis - a *sensitivity bound* - is
measured here on the cases that broke earlier rules, with synthetic signals on real WikiMIA texts (no
model, so it runs in a minute):

- tilt the held-out set along the blind classifier's out-of-fold score by as much as the blind
  interval's upper end allows: for a normal score, a mean shift of sqrt(2) probit(upper end) standard
  deviations moves the AUC to that upper end;
- the largest effect such a tilt induces on each signal: its slope on the score within the held-out set
  (one-sided 95% upper bound, never negative) times that shift;
- SUPPORTED only if the permutation test stays significant with the suspect's signals reduced by it.

Cases: the vocabulary-shift counterexample (held-out with fewer of twenty common words, signals that
follow that share, n = 40, 8 draws), the digits counterexample (n = 30, 12 draws): any SUPPORTED there
is false; and random halves with and without a real effect (power and the test's own false rate).

    python benchmarks/exchangeability_criteria.py
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
from scipy.stats import norm

from verifier.baselines.exchangeability import check_exchangeable
from verifier.dataset_inference.rules import DocumentSet, SetStatus, SetTestParams, run_set_membership
from verifier.dataset_inference.statistic import dataset_inference
from verifier.testbed.pool import OLD, bundled_pool

SIGNALS = ["loss", "zlib", "min_k", "min_k_pp"]
FAST = SetTestParams(n_permutations=199, shift_permutations=199)
COMMON = "the of and in a to was on by for with at as from is that were which an his".split()


def sensitivity(suspect: tuple[list[str], np.ndarray], heldout: tuple[list[str], np.ndarray], seed: int) -> str:
    """The candidate's outcome: "refused" (the blind check detects a shift or a matched split), "SUPPORTED" or
    "not significant"."""
    (s_texts, s_x), (h_texts, h_x) = suspect, heldout
    shift = check_exchangeable(s_texts, h_texts, n_permutations=199, seed=seed)
    if shift.detected or shift.mirrored:
        return "refused"
    score = shift.scores[shift.labels == 0]
    z = (score - score.mean()) / (score.std() + 1e-12)
    moved = max(0.0, float(np.sqrt(2) * norm.ppf(min(shift.ci_high, 0.999))))
    induced = []
    for column in h_x.T:
        slope = float(np.cov(column, z)[0, 1])
        spread = float((column - column.mean() - slope * z).std(ddof=2) / np.sqrt(len(z)))
        induced.append(max(0.0, slope + 1.645 * spread) * moved)
    result = dataset_inference(s_x - np.array(induced), h_x, SIGNALS, n_permutations=199, seed=seed)
    return "SUPPORTED" if result.significant else "not significant"


def default_rules(suspect: tuple[list[str], np.ndarray], heldout: tuple[list[str], np.ndarray], seed: int) -> str:
    finding = run_set_membership(
        DocumentSet(suspect[0], suspect[1], 2016), DocumentSet(heldout[0], heldout[1], 2016), SIGNALS, params=FAST
    )
    return "SUPPORTED" if finding.status == SetStatus.SIGNIFICANT else finding.status.value


def shifted_by(texts: list[str], share: np.ndarray, n: int, scale: float, noise: float, draws: int):
    """Counterexample draws: suspect from the upper half of ``share``, held-out from the lower, signals following
    ``share``."""
    order = np.argsort(share)
    for seed in range(draws):
        rng = np.random.default_rng(seed)
        low, high = rng.permutation(order[: len(order) // 2])[:n], rng.permutation(order[len(order) // 2 :])[:n]

        def signals(rows: np.ndarray, rng: np.random.Generator = rng) -> np.ndarray:
            return (scale * share[rows])[:, None] + noise * rng.normal(size=(len(rows), len(SIGNALS)))

        yield seed, ([texts[i] for i in high], signals(high)), ([texts[i] for i in low], signals(low))


def halves(texts: list[str], n: int, effect: float, draws: int):
    for seed in range(draws):
        rng = np.random.default_rng(100 + seed)
        order = rng.permutation(len(texts))
        s = rng.normal(size=(n, 1)) + effect + 0.6 * rng.normal(size=(n, len(SIGNALS)))
        h = rng.normal(size=(n, 1)) + 0.6 * rng.normal(size=(n, len(SIGNALS)))
        yield seed, ([texts[i] for i in order[:n]], s), ([texts[i] for i in order[n : 2 * n]], h)


def main() -> None:
    texts = sorted({p.text for p in bundled_pool() if p.period == OLD})
    words = np.array([sum(w in COMMON for w in t.lower().split()) / max(1, len(t.split())) for t in texts])
    digits = np.array([sum(c.isdigit() for c in t) / max(1, len(t)) for t in texts])
    cases: list[tuple[str, bool, Callable]] = [
        (
            "vocabulary shift (held-out with fewer common words), n = 40",
            True,
            lambda: shifted_by(texts, words, 40, 30, 0.5, 8),
        ),
        ("digits shift (held-out with fewer digits), n = 30", True, lambda: shifted_by(texts, digits, 30, 40, 0.3, 12)),
        ("random halves, real effect 1.2 SD, n = 40", False, lambda: halves(texts, 40, 1.2, 10)),
        ("random halves, real effect 0.4 SD, n = 100", False, lambda: halves(texts, 100, 0.4, 10)),
        ("random halves, no effect, n = 100", True, lambda: halves(texts, 100, 0.0, 10)),
    ]
    print(f"{len(texts)} pre-2017 WikiMIA texts ({Path(__file__).name}); SUPPORTED counts, alpha 0.05\n")
    print("| case | SUPPORTED is | default rules (margin) | sensitivity bound |\n|---|---|---|---|")
    for name, false, make in cases:
        counts = {"margin": 0, "bound": 0}
        draws = 0
        for seed, suspect, heldout in make():
            draws += 1
            counts["margin"] += default_rules(suspect, heldout, seed) == "SUPPORTED"
            counts["bound"] += sensitivity(suspect, heldout, seed) == "SUPPORTED"
        print(
            f"| {name} | {'false' if false else 'true'} | {counts['margin']} of {draws} | "
            f"{counts['bound']} of {draws} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
