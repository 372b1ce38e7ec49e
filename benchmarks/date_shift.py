"""The date-shift route's refusal: how often it calls a comparison "a measure of the date", rightly and wrongly.

The route refuses a suspect-versus-dated comparison (REJECTED-METHOD) when the declared years
differ, or when the blind classifier, which never sees the model, tells the sets apart. The years
are the claimant's to declare, so what is measured here is the second rule alone, years left
undeclared, on real text (the testbed pool: WikiMIA and WikiMIA-24 event summaries):

- pre-2017 suspect sets against post-2023 dated sets: the share refused (it should be high);
- suspect and dated sets both pre-2017: the share refused anyway (the check's false refusals,
  at most its alpha, 0.05).

Each cell is ``--draws`` independent draws of the sets per seed, over ``--seeds`` seeds (the spread
across seeds is printed), at n = 50, 100, 200 per set; ``--record`` writes the rows to the
method-validation table.

Usage: python benchmarks/date_shift.py [--seeds 4] [--draws 25] [--record]
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

from verifier.baselines.exchangeability import check_exchangeable
from verifier.dataset_inference.power import wilson
from verifier.routes.date_shift import DateShiftParams
from verifier.testbed.pool import NEW, OLD, bundled_pool
from verifier.validation import record

SIZES = (50, 100, 200)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=4)
    parser.add_argument("--draws", type=int, default=25, help="draws per seed and cell")
    parser.add_argument("--record", action="store_true")
    args = parser.parse_args()
    params = DateShiftParams(signals=["loss"])
    pool = bundled_pool()
    old = [p.text for p in pool if p.period == OLD]
    new = [p.text for p in pool if p.period == NEW]
    print(
        f"{len(old)} pre-2017 and {len(new)} post-2023 texts; blind check alpha {params.shift_alpha}, "
        f"{params.shift_permutations} relabellings; {args.seeds} seeds x {args.draws} draws a cell"
    )
    print("| n | scenario | refused [95% CI] | across seeds |\n|---|---|---|---|")
    rows = []
    for n in SIZES:
        for scenario, dated_pool, same in (
            ("post-2023 dated set", new, False),
            ("same-period (pre-2017) dated set", old, True),
        ):
            refused = []
            for seed in range(args.seeds):
                rng = np.random.default_rng(100 * seed + n + same)
                hits = 0
                for draw in range(args.draws):
                    order = rng.permutation(len(old))
                    suspect = [old[i] for i in order[:n]]
                    dated = (
                        [old[i] for i in order[n : 2 * n]]
                        if same
                        else [dated_pool[i] for i in rng.permutation(len(dated_pool))[:n]]
                    )
                    shift = check_exchangeable(
                        suspect, dated, alpha=params.shift_alpha, n_permutations=params.shift_permutations, seed=draw
                    )
                    hits += shift.detected
                refused.append(hits)
            total = wilson(sum(refused), args.seeds * args.draws)
            spread = (min(refused) / args.draws, max(refused) / args.draws)
            print(
                f"| {n} | {scenario} | {total.value:.3f} [{total.ci_low:.3f}, {total.ci_high:.3f}] | "
                f"{spread[0]:.3f}-{spread[1]:.3f} |",
                flush=True,
            )
            quantity = (
                "false refusal rate (REJECTED-METHOD, years undeclared)"
                if same
                else "refusal rate (REJECTED-METHOD, years undeclared)"
            )
            rows.append(
                {
                    "route": "date_shift",
                    "quantity": quantity,
                    "scenario": f"pre-2017 suspect vs {scenario}",
                    "n": n,
                    "value": round(total.value, 4),
                    "ci": (round(total.ci_low, 4), round(total.ci_high, 4)),
                    "spread": spread,
                    "trials": total.trials,
                    "builds": args.seeds,
                }
            )
    if args.record:
        record(
            "date_shift",
            rows,
            ["testbed pool (WikiMIA, WikiMIA-24)"],
            "python benchmarks/date_shift.py " + " ".join(sys.argv[1:]),
        )
        print("recorded in verifier/validation/table.json", file=sys.stderr)


if __name__ == "__main__":
    main()
