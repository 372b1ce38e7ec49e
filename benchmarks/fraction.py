"""How much and which: the fraction bound and the false discovery rate of identified documents.

On independently built light testbeds (known membership; GPT-2-style model, two epochs), or with ``--preset`` the
book-openings or pretraining-like ones (SmolLM2-135M, each member seen once among background text); every row
carries the regime it was measured on:

1. Fraction trained on: suspect sets with a true member fraction of 0, 0.1, 0.25, 0.5 and 1.0
   (the rest same-pool non-members) against disjoint non-member held-out sets, n = 100 and 200
   per set. Coverage - the share of audits whose lower bound is at most the true fraction - with
   its Wilson 95% CI and its spread (min-max) across builds, and the bound's mean value.
2. Which documents: the realised false discovery proportion of the documents identified at
   q = 0.1 (mean, with a normal 95% CI over audits and its spread across builds), measured
   without the route's gate on a significant set test (the gate only lowers it).
(Many claims at once - a batch's error control - is ``benchmarks/batch.py``.)

Rows are written to the method-validation table (``verifier/validation/table.json``) with
``--record``.

Usage: python benchmarks/fraction.py [--builds 4] [--audits 200] [--preset light|books|pretrain-like]
       [--sizes 100,200] [--record]
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np
from soundness import row, testbed_pools

from verifier.dataset_inference.fraction import conformal_p_values, fold_scores, fraction_trained, identified
from verifier.dataset_inference.power import wilson
from verifier.targets import ScoreCache
from verifier.validation import record

SHARES = (0.0, 0.1, 0.25, 0.5, 1.0)
Q = 0.1


def draw(pool, n: int, share: float, audits: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Suspect [audits, n, F] with round(share n) members and a disjoint non-member held-out set."""
    members, others = np.flatnonzero(pool.member), np.flatnonzero(~pool.member)
    k = round(share * n)
    s_rows, h_rows = [], []
    for _ in range(audits):
        nm = rng.permutation(others)[: 2 * n - k]
        s_rows.append(np.r_[rng.permutation(members)[:k], nm[: n - k]])
        h_rows.append(nm[n - k :])
    return pool.features[np.array(s_rows)], pool.features[np.array(h_rows)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--builds", type=int, default=4)
    parser.add_argument("--audits", type=int, default=200, help="audits per cell and build")
    parser.add_argument(
        "--preset",
        default="light",
        choices=["light", "books", "pretrain-like"],
        help="light testbeds, the book-openings ones, or the pretraining-like ones",
    )
    parser.add_argument("--sizes", default="100,200", help="documents per set")
    parser.add_argument("--record", action="store_true", help="write the rows to the method-validation table")
    args = parser.parse_args()
    sizes = [int(n) for n in args.sizes.split(",")]
    where = (
        "" if args.preset == "light" else f", {args.preset} testbeds"
    )  # the light rows were the first recorded: their names stay
    cache = ScoreCache()
    pools, digests = testbed_pools(args.preset, args.builds, cache)
    rows = []
    print(
        f"\n== 1-2. fraction bound (95% confidence) and documents identified at q = {Q}; {args.builds} builds x "
        f"{args.audits} audits a cell"
    )
    print(
        "| n | true fraction | coverage [95% CI] | coverage across builds | mean bound | mean estimate | mean FDP "
        "[95% CI] | FDP across builds | mean identified |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for n in sizes:
        for share in SHARES:
            started = time.perf_counter()
            covered, bound, estimate, fdp, found = [], [], [], [], []
            for b, pool in enumerate(pools):
                rng = np.random.default_rng(10_000 * b + 100 * n + round(100 * share))
                suspect, heldout = draw(pool, n, share, args.audits, rng)
                folds = fold_scores(suspect, heldout, rng)
                fractions = fraction_trained(folds)
                lb = np.array([f.lower_bound for f in fractions])
                covered.append(int((lb <= share + 1e-9).sum()))
                bound.append(lb.mean())
                estimate.append(np.mean([f.estimate for f in fractions]))
                k = round(share * n)
                props, sizes = [], []
                for t in range(args.audits):
                    ids = identified(*conformal_p_values(folds, t), Q)
                    props.append(float((ids >= k).sum()) / max(1, len(ids)))  # rows k.. are the non-members
                    sizes.append(len(ids))
                fdp.append(np.array(props))
                found.append(np.mean(sizes))
            total = wilson(sum(covered), args.audits * len(pools))
            per_build = [c / args.audits for c in covered]
            all_fdp = np.concatenate(fdp)
            half = 1.96 * all_fdp.std(ddof=1) / np.sqrt(len(all_fdp))
            fdp_means = [f.mean() for f in fdp]
            print(
                f"| {n} | {share} | {total.value:.3f} [{total.ci_low:.3f}, {total.ci_high:.3f}] | "
                f"{min(per_build):.3f}-{max(per_build):.3f} | "
                f"{np.mean(bound):.3f} | {np.mean(estimate):.3f} | {all_fdp.mean():.3f} "
                f"[{max(0, all_fdp.mean() - half):.3f}, "
                f"{all_fdp.mean() + half:.3f}] | {min(fdp_means):.3f}-{max(fdp_means):.3f} | {np.mean(found):.1f} |",
                flush=True,
            )
            common = row("", "", n, pools) | {"trials": args.audits * len(pools), "builds": len(pools)}
            rows.append(
                common
                | {
                    "quantity": "fraction bound coverage (95% confidence)",
                    "scenario": f"true fraction {share}{where}",
                    "value": round(total.value, 4),
                    "ci": (round(total.ci_low, 4), round(total.ci_high, 4)),
                    "spread": (min(per_build), max(per_build)),
                }
            )
            rows.append(
                common
                | {
                    "quantity": "mean fraction bound",
                    "scenario": f"true fraction {share}{where}",
                    "value": round(float(np.mean(bound)), 4),
                    "spread": (round(float(min(bound)), 4), round(float(max(bound)), 4)),
                }
            )
            if share > 0:
                rows.append(
                    common
                    | {
                        "quantity": f"false discovery proportion of identified documents (q {Q})",
                        "scenario": f"true fraction {share}{where}",
                        "value": round(float(all_fdp.mean()), 4),
                        "ci": (round(max(0.0, all_fdp.mean() - half), 4), round(all_fdp.mean() + half, 4)),
                        "spread": (round(min(fdp_means), 4), round(max(fdp_means), 4)),
                    }
                )
            print(f"   ({time.perf_counter() - started:.0f} s)", file=sys.stderr, flush=True)
    if args.record:
        record(
            "fraction" if args.preset == "light" else f"fraction-{args.preset}",
            rows,
            digests,
            "python benchmarks/fraction.py " + " ".join(sys.argv[1:]),
        )
        print("\nrecorded in verifier/validation/table.json", file=sys.stderr)


if __name__ == "__main__":
    main()
