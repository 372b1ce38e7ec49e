"""Soundness of set-level membership testing, on a testbed whose training data is known.

Prints:
1. the testbed (size, build time) and per-document AUCs of each signal, members vs non-members;
2. matched held-out: power (member suspects) and FPR (member-free suspects) of dataset inference
   at n = 25, 50, 100, 200 over T trials, with Wilson CIs;
3. a date-shifted setup: suspect = pre-2017 texts the testbed never saw, reference = post-2023
   texts it never saw. Plain dataset inference "detects" at the rate shown (every detection is
   false); verifier's shift check refuses the test at the rate shown;
4. WikiMIA-64 and -128 with SmolLM2-135M: per-signal AUCs beside the blind baselines.

Usage: python benchmarks/soundness.py [--preset standard] [--trials 500] [--shift-trials 500] [--skip-smollm2]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from verifier.baselines.shift import check_shift
from verifier.data import load_documents
from verifier.evaluation import evaluate_table
from verifier.scoring import score_documents
from verifier.stats import evaluate_scores
from verifier.stats.dataset_inference import DEFAULT_SPLITS
from verifier.stats.power import draw, simulate_power, trial_p_values, wilson
from verifier.targets import CausalLMTarget, ScoreCache, ScoringOptions
from verifier.testbed import NEW, OLD, PRESETS, Testbed, build_testbed

ROOT = Path(__file__).resolve().parent.parent
SIZES = (25, 50, 100, 200)


def rate(r) -> str:  # noqa: ANN001
    return "-" if r is None else f"{r.value:.3f} [{r.ci_low:.3f}, {r.ci_high:.3f}]"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", default="standard", choices=sorted(PRESETS))
    parser.add_argument("--trials", type=int, default=500)
    parser.add_argument("--shift-trials", type=int, default=500)
    parser.add_argument("--shift-n", type=int, default=200)
    parser.add_argument("--skip-smollm2", action="store_true")
    parser.add_argument("--testbed", type=Path, help="use an already built testbed folder instead of building the preset")
    args = parser.parse_args()
    cache = ScoreCache()

    rng = np.random.default_rng(0)
    members, nonmembers = rng.normal(0.1, 1, (2000, 4)), rng.normal(0, 1, (2000, 4))
    t0 = time.perf_counter()
    simulate_power(members, nonmembers, ["a", "b", "c", "d"], sizes=(25, 50, 100, 200, 500, 1000), trials=500)
    print(f"== 0. power simulation speed: 500 trials x 6 sizes (25-1000) x 4 signals, power and FPR: {time.perf_counter() - t0:.1f} s")

    started = time.perf_counter()
    if args.testbed:
        testbed = Testbed(folder=args.testbed, manifest=json.loads((args.testbed / "manifest.json").read_text()))
    else:
        testbed = build_testbed(PRESETS[args.preset], on_epoch=lambda e, loss: print(f"  epoch {e}: train loss {loss:.3f}", flush=True))
    m = testbed.manifest
    print(f"\n== 1. testbed {m['digest']} ({m['config']['n_layer']} layers x {m['config']['n_embd']}): {m['parameters'] / 1e6:.2f}M parameters, "
          f"{sum(d['member'] for d in m['documents'])} members of {len(m['documents'])} texts, "
          f"{m['config']['epochs']} epochs, built in {m['build_seconds']} s (this run: {time.perf_counter() - started:.0f} s)")
    docs = load_documents(testbed.documents, label_field="member")
    rows = [json.loads(line) for line in testbed.documents.read_text().splitlines()]
    period = np.array([r["period"] for r in rows])
    target = CausalLMTarget(str(testbed.model_dir), ScoringOptions(max_tokens=m["config"]["seq_len"], batch_size=32))
    table = score_documents(docs, target, cache=cache)
    names = table.signal_names
    features = np.column_stack([table.signal(n) for n in names])
    member = docs.labels == 1
    for name in names:
        e = evaluate_scores(name, table.signal(name), docs.labels)
        print(f"  {name:<9} member vs non-member AUC {e.auc:.4f} [{e.auc_ci_low:.4f}, {e.auc_ci_high:.4f}]  TPR@1%FPR {e.tpr_at_1_fpr:.3f}")

    print(f"\n== 2. matched held-out (same pool, same periods), dataset inference over {names}, {args.trials} trials, alpha 0.05")
    power = simulate_power(features[member], features[~member], names, sizes=SIZES, trials=args.trials, seed=1)
    print(f"  {'n':>5}  {'power [95% CI]':<26}{'FPR, member-free suspect [95% CI]'}")
    for row in power.rows:
        print(f"  {row.n:>5}  {rate(row.power):<26}{rate(row.fpr)}")
    old_nm, new_nm = (~member) & (period == OLD), (~member) & (period == NEW)
    old_m = member & (period == OLD)
    within = simulate_power(features[old_m], features[old_nm], names, sizes=SIZES, trials=args.trials, seed=2)
    print(f"  within {OLD} only:")
    for row in within.rows:
        print(f"  {row.n:>5}  {rate(row.power):<26}{rate(row.fpr)}")

    n, trials = args.shift_n, args.shift_trials
    print(f"\n== 3. date-shifted: suspect = {OLD} non-members ({old_nm.sum()}), reference = {NEW} non-members ({new_nm.sum()}), n = {n}, {trials} trials")
    rng = np.random.default_rng(3)
    texts = np.array(docs.texts, dtype=object)
    old_idx, new_idx = np.flatnonzero(old_nm), np.flatnonzero(new_nm)
    s_idx, r_idx = draw(old_idx, trials, n, rng), draw(new_idx, trials, n, rng)
    for splits, label in ((1, "one split, as the reference code"), (DEFAULT_SPLITS, f"{DEFAULT_SPLITS} splits, 2 x median")):
        p = trial_p_values(features[s_idx], features[r_idx], n_splits=splits, rng=rng)
        plain = wilson(int((p < 0.05).sum()), trials)
        print(f"  plain dataset inference ({label}) 'detects' training (all false positives): {rate(plain)}")
    t0 = time.perf_counter()
    checks = [check_shift(texts[s].tolist(), texts[r].tolist(), seed=i) for i, (s, r) in enumerate(zip(s_idx, r_idx))]
    refused = wilson(sum(c.refused for c in checks), trials)
    blind = np.array([c.blind.auc for c in checks])
    print(f"  verifier refuses (blind bag-of-words CI above 0.60): {rate(refused)}; blind AUC median {np.median(blind):.3f} "
          f"(min {blind.min():.3f}); {time.perf_counter() - t0:.0f} s for {trials} checks")
    matched = [check_shift(texts[s].tolist(), texts[r].tolist(), seed=i)
               for i, (s, r) in enumerate(zip(draw(old_idx, 50, n // 2, rng), draw(old_idx, 50, n // 2, rng)))]
    print(f"  for contrast, same-period sets ({OLD} vs {OLD}, n = {n // 2}, 50 trials): refused {sum(c.refused for c in matched)} of 50")

    if args.skip_smollm2:
        return
    print("\n== 4. WikiMIA with SmolLM2-135M (fp32, 256 tokens): per-signal AUC beside blind baselines")
    smol = CausalLMTarget("smollm2-135m")
    for split in ("length64", "length128"):
        wiki = load_documents(ROOT / "examples" / "data" / "wikimia" / f"{split}.jsonl", label_field="label")
        evaluated = evaluate_table(score_documents(wiki, smol, cache=cache))
        best = max((r.metrics for r in evaluated if r.kind == "signal"), key=lambda x: x.auc)
        print(f"  WikiMIA {split} ({int(wiki.labels.sum())} of {len(wiki)} members); best MIA: {best.name} {best.auc:.4f}")
        for r in evaluated:
            e = r.metrics
            print(f"    {e.name:<13}{'(blind)' if r.kind == 'blind' else '':<8}AUC {e.auc:.4f} [{e.auc_ci_low:.4f}, {e.auc_ci_high:.4f}]  TPR@1%FPR {e.tpr_at_1_fpr:.3f}")


if __name__ == "__main__":
    main()
