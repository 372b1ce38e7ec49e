"""Dataset inference with the signals peers have (ReCaLL, Con-ReCall, DC-PDD, PAC) on ground-truth testbeds.

For each independently built light testbed (trained on a seeded half of its pre-2017 texts):
- prefix documents are drawn once per build - 5 pre-2017 non-members for ReCaLL, and 5 members for
  Con-ReCall (which needs known members: a testbed has them, an audit does not) - and removed
  from the pool, so no audited document is ever a prefix document;
- DC-PDD reads a frequency table counted with the testbed's tokenizer over the bundled PG-19 book
  openings (public text the testbed never saw);
- every pool document is scored once with every signal, then audits draw sets from the pool and
  run the whole rule set (``run_set_membership``: overlap removal, the blind exchangeability
  check, the permutation test) with each feature family.

Rows: the member-free false verdict rate (suspect and held-out both pre-2017 non-members, n = 100;
any SUPPORTED or CONTRADICTED is false) and the power (suspect = members, held-out = non-members,
n = 100), per feature family, with Wilson 95% CIs over all audits and the spread across builds.
And the member AUC of each signal per build (per-document separation on the testbed).

Scoring cuts every document to 64 tokens (the testbed model reads 128: half is left for the
prefix), so the gray-box row here is not the soundness benchmark's (128 tokens).

Usage: ``python benchmarks/recall_family.py [--builds 4] [--trials-per-build 50] [--families "recall;con_recall"]
[--skip-power] [--seed 0]``
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

from verifier.data import Documents, load_documents
from verifier.dataset_inference.power import wilson
from verifier.dataset_inference.rules import DocumentSet, SetStatus, SetTestParams, run_set_membership
from verifier.scoring.table import score_documents
from verifier.signals import Auxiliary
from verifier.signals.frequencies import BUNDLED, build_table
from verifier.stats.metrics import evaluate_scores
from verifier.targets import ScoreCache, ScoringOptions
from verifier.targets.kinds.causal_lm import CausalLMTarget
from verifier.testbed.build import PRESETS, build_testbed
from verifier.testbed.pool import OLD

GRAY = ["loss", "zlib", "min_k", "min_k_pp", "gap_k"]
NEW = ["recall", "con_recall", "dc_pdd", "pac"]
FAMILIES = {
    "gray-box (loss, zlib, min_k, min_k_pp, gap_k)": GRAY,
    "recall": ["recall"],
    "con_recall": ["con_recall"],
    "recall + con_recall": ["recall", "con_recall"],
    "dc_pdd": ["dc_pdd"],
    "pac": ["pac"],
    "all nine": GRAY + NEW,
}
PARAMS = SetTestParams(n_permutations=199, shift_permutations=199)
SHOTS = 5


def book_texts() -> list[str]:
    path = BUNDLED.parent / "corpus" / "demo-v1" / "pg19-openings.jsonl"
    return [json.loads(line)["text"] for line in path.read_text().splitlines() if line.strip()]


def pool_of(seed: int, cache: ScoreCache) -> dict:
    config = PRESETS["light"].model_copy(update={"seed": seed})
    testbed = build_testbed(config)
    docs = load_documents(testbed.documents, label_field="member")
    period = np.array([json.loads(line)["period"] for line in testbed.documents.read_text().splitlines()])
    member = docs.labels == 1
    target = CausalLMTarget(
        str(testbed.model_dir), ScoringOptions(max_tokens=config.seq_len // 2, batch_tokens=32 * config.seq_len)
    )
    rng = np.random.default_rng(seed + 77)
    old_nm, old_m = np.flatnonzero(~member & (period == OLD)), np.flatnonzero(member & (period == OLD))
    prefix_nm, prefix_m = rng.choice(old_nm, SHOTS, replace=False), rng.choice(old_m, SHOTS, replace=False)
    keep = np.setdiff1d(np.arange(len(docs.texts)), np.r_[prefix_nm, prefix_m])
    table = build_table(
        lambda xs: target.tokenizer(xs, add_special_tokens=False).input_ids,
        len(target.tokenizer),
        book_texts(),
        target.tokenizer_fingerprint,
        "PG-19 book openings (bundled)",
    )
    aux = Auxiliary(tuple(docs.texts[i] for i in prefix_nm), tuple(docs.texts[i] for i in prefix_m), table)
    texts = [docs.texts[i] for i in keep]
    scored = score_documents(
        Documents(texts, None, "pool"),
        target,
        signal_names=GRAY + NEW,
        cache=cache,
        aux=aux,
        signal_params={"recall": {"shots": SHOTS}, "con_recall": {"shots": SHOTS}},
    )
    features = {name: scored.signal(name) for name in GRAY + NEW}
    return {
        "texts": np.array(texts, dtype=object),
        "features": features,
        "member": member[keep],
        "period": period[keep],
        "digest": testbed.manifest["digest"],
    }


def take(pool: dict, idx: np.ndarray, names: list[str]) -> DocumentSet:
    return DocumentSet(
        pool["texts"][idx].tolist(), np.column_stack([pool["features"][n][idx] for n in names]), 2016, None
    )


def rate(hits: list[int], trials: int) -> str:
    total = wilson(sum(hits), trials * len(hits))
    spread = [h / trials for h in hits]
    return f"{total.value:.3f} [{total.ci_low:.3f}, {total.ci_high:.3f}] builds {min(spread):.2f}-{max(spread):.2f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--builds", type=int, default=4)
    parser.add_argument("--trials-per-build", type=int, default=50)
    parser.add_argument(
        "--families", default=";".join(FAMILIES), help="feature families to audit (names of the table, separated by ;)"
    )
    parser.add_argument("--skip-power", action="store_true", help="only the member-free false verdict rate")
    parser.add_argument(
        "--seed", type=int, default=0, help="seed of the audits' draws (another seed: independent audits)"
    )
    args = parser.parse_args()
    families = {name: FAMILIES[name] for name in args.families.split(";")}
    cache, t = ScoreCache(), args.trials_per_build
    pools = []
    for seed in range(args.builds):
        started = time.perf_counter()
        pools.append(pool := pool_of(seed, cache))
        old = pool["period"] == OLD
        aucs = ", ".join(
            f"{n} {evaluate_scores(n, pool['features'][n][old], pool['member'][old].astype(int)).auc:.3f}"
            for n in GRAY + NEW
        )
        print(
            f"light testbed seed {seed}: {pool['digest']}, {time.perf_counter() - started:.0f} s; member AUC "
            f"(pre-2017): {aucs}",
            flush=True,
        )
    print(
        f"\n{args.builds} builds x {t} audits per cell, whole rule set, alpha 0.05, {PARAMS.n_permutations} "
        "relabellings"
    )
    print(f"  {'features':<48}{'member-free FPR, n = 100':<44}{'power, n = 100':<44}")
    for family, names in families.items():
        started = time.perf_counter()
        false, power = [], {} if args.skip_power else {100: []}
        for b, pool in enumerate(pools):
            rng = np.random.default_rng(3000 * b + 11 + 100_000 * args.seed)
            old = pool["period"] == OLD
            old_nm, old_m = np.flatnonzero(~pool["member"] & old), np.flatnonzero(pool["member"] & old)
            statuses = []
            for trial in range(t):
                idx = rng.permutation(old_nm)[:200]
                statuses.append(
                    run_set_membership(
                        take(pool, idx[:100], names), take(pool, idx[100:], names), names, params=PARAMS, seed=trial
                    ).status
                )
            false.append(sum(s == SetStatus.SIGNIFICANT for s in statuses))
            for n in power:
                hits = 0
                for trial in range(t):
                    s, h = rng.permutation(old_m)[:n], rng.permutation(old_nm)[:n]
                    hits += (
                        run_set_membership(
                            take(pool, s, names), take(pool, h, names), names, params=PARAMS, seed=trial
                        ).status
                        == SetStatus.SIGNIFICANT
                    )
                power[n].append(hits)
        shown = rate(power[100], t) if power else "-"
        print(f"  {family:<48}{rate(false, t):<44}{shown:<44}({time.perf_counter() - started:.0f} s)", flush=True)


if __name__ == "__main__":
    main()
