"""Many claims at once: the family-wise error and the power of a batch's error control.

On independently built testbeds (known membership), batches of 20 dataset-inference claims,
n = 100 documents per set against disjoint same-pool non-member held-out sets. Each claim's
set-test p-value uses the relabellings a batch gives its claims (``SetTestParams.for_family``:
3,999 for 20 claims at alpha 0.05; with the policy's 999 no claim could pass Holm's first step,
0.05 / 20 = 0.0025, so the adjustment would hold the error at zero by never granting anything).

1. Member-free batches (20 false claims): the family-wise error - any claim of the batch
   significant at 0.05 - unadjusted, with Holm and with Benjamini-Hochberg (Wilson 95% CI over
   batches, spread across builds).
2. Mixed batches (10 claims on members, 10 on non-members): the share of true claims kept (power,
   with its spread across builds) and the family-wise error among the false ones, per control.

The set test alone is simulated (the rule set's checks only remove verdicts, lowering both
rates). Rows are written to the method-validation table with ``--record``.

Usage: python benchmarks/batch.py [--builds 4] [--batches 25] [--mixed-batches 10] [--preset light|books] [--record]
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np
from fraction import draw
from soundness import testbed_pools

from verifier.dataset_inference.power import wilson
from verifier.dataset_inference.rules import SetTestParams
from verifier.dataset_inference.statistic import trial_p_values
from verifier.targets import ScoreCache
from verifier.trust.error_control import adjusted_p_values
from verifier.validation import record

CLAIMS = 20
N = 100
ALPHA = 0.05
CONTROLS = ("none", "holm", "bh")


def kept(p: np.ndarray, control: str) -> np.ndarray:
    """[batches, claims] -> which claims keep a significant verdict under ``control``."""
    if control == "none":
        return p < ALPHA
    return np.stack([adjusted_p_values(batch, control) < ALPHA for batch in p])


def batch_p_values(pool, shares: list[float], batches: int, permutations: int, rng: np.random.Generator) -> np.ndarray:
    """[batches, claims] set-test p-values, claim j drawn with true member share ``shares[j]``."""
    columns = []
    for share in shares:
        suspect, heldout = draw(pool, N, share, batches, rng)
        columns.append(trial_p_values(suspect, heldout, rng, n_permutations=permutations))
    return np.stack(columns, axis=1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--builds", type=int, default=4)
    parser.add_argument("--batches", type=int, default=25, help="member-free batches per build")
    parser.add_argument(
        "--mixed-batches", type=int, default=10, help="batches of 10 true and 10 false claims per build"
    )
    parser.add_argument("--preset", default="light", choices=["light", "books"])
    parser.add_argument("--record", action="store_true", help="write the rows to the method-validation table")
    args = parser.parse_args()
    permutations = SetTestParams(alpha=ALPHA).for_family(CLAIMS).n_permutations
    where = "" if args.preset == "light" else f", {args.preset} testbeds"
    cache = ScoreCache()
    pools, digests = testbed_pools(args.preset, args.builds, cache)
    common = {"route": "dataset_inference", "n": N, "builds": len(pools)}
    rows = []

    started = time.perf_counter()
    print(
        f"\n== 1. {args.batches} member-free batches of {CLAIMS} claims per build, n = {N}, {permutations} "
        "relabellings a claim, "
        f"alpha {ALPHA}: family-wise error"
    )
    print("| error control | family-wise error [95% CI] | across builds |")
    print("|---|---|---|")
    errors: dict[str, list[int]] = {c: [] for c in CONTROLS}
    for b, pool in enumerate(pools):
        p = batch_p_values(pool, [0.0] * CLAIMS, args.batches, permutations, np.random.default_rng(77_000 + b))
        for control in CONTROLS:
            errors[control].append(int(kept(p, control).any(axis=1).sum()))
    for control, hits in errors.items():
        total = wilson(sum(hits), args.batches * len(pools))
        per_build = [h / args.batches for h in hits]
        print(
            f"| {control} | {total.value:.3f} [{total.ci_low:.3f}, {total.ci_high:.3f}] | "
            f"{min(per_build):.3f}-{max(per_build):.3f} |",
            flush=True,
        )
        rows.append(
            common
            | {
                "trials": args.batches * len(pools),
                "scenario": f"error control {control}{where}",
                "quantity": f"batch family-wise error ({CLAIMS} member-free claims, alpha {ALPHA})",
                "value": round(total.value, 4),
                "ci": (round(total.ci_low, 4), round(total.ci_high, 4)),
                "spread": (min(per_build), max(per_build)),
            }
        )
    print(f"   ({time.perf_counter() - started:.0f} s)", file=sys.stderr, flush=True)

    started = time.perf_counter()
    half = CLAIMS // 2
    print(
        f"\n== 2. {args.mixed_batches} batches per build of {half} claims on members and {half} on non-members: "
        "true claims kept (power) and false claims kept (family-wise error)"
    )
    print("| error control | power [95% CI] | power across builds | family-wise error [95% CI] |")
    print("|---|---|---|---|")
    found: dict[str, list[int]] = {c: [] for c in CONTROLS}
    wrong: dict[str, list[int]] = {c: [] for c in CONTROLS}
    for b, pool in enumerate(pools):
        p = batch_p_values(
            pool, [1.0] * half + [0.0] * half, args.mixed_batches, permutations, np.random.default_rng(88_000 + b)
        )
        for control in CONTROLS:
            granted = kept(p, control)
            found[control].append(int(granted[:, :half].sum()))
            wrong[control].append(int(granted[:, half:].any(axis=1).sum()))
    for control in CONTROLS:
        power = wilson(sum(found[control]), args.mixed_batches * half * len(pools))
        fwer = wilson(sum(wrong[control]), args.mixed_batches * len(pools))
        per_build = [f / (args.mixed_batches * half) for f in found[control]]
        print(
            f"| {control} | {power.value:.3f} [{power.ci_low:.3f}, {power.ci_high:.3f}] | "
            f"{min(per_build):.3f}-{max(per_build):.3f} | "
            f"{fwer.value:.3f} [{fwer.ci_low:.3f}, {fwer.ci_high:.3f}] |",
            flush=True,
        )
        rows.append(
            common
            | {
                "trials": args.mixed_batches * half * len(pools),
                "scenario": f"error control {control}{where}",
                "quantity": f"batch power ({half} true and {half} false claims, alpha {ALPHA})",
                "value": round(power.value, 4),
                "ci": (round(power.ci_low, 4), round(power.ci_high, 4)),
                "spread": (round(min(per_build), 4), round(max(per_build), 4)),
            }
        )
    print(f"   ({time.perf_counter() - started:.0f} s)", file=sys.stderr, flush=True)
    if args.record:
        record(
            "batch" if args.preset == "light" else f"batch-{args.preset}",
            rows,
            digests,
            "python benchmarks/batch.py " + " ".join(sys.argv[1:]),
        )
        print("\nrecorded in verifier/validation/table.json", file=sys.stderr)


if __name__ == "__main__":
    main()
