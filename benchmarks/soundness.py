"""Soundness of the set-level verdict rules: false verdicts where nothing differs, power where it does.

Every row is a batch of simulated audits run through the real rules (``run_set_membership``:
overlap removal, declared years, the blind exchangeability check, dataset inference, verdict
status), on ground-truth testbeds whose training membership is known and on real data:

1. False verdict rates: the share of audits granted SUPPORTED or CONTRADICTED (status
   "significant") where no membership difference exists - member-free suspect sets against
   matched held-out sets (n = 20, 50, 100, 200); held-out sets with surface-form shifts
   (lowercased, typographic quotes, doubled spaces, boilerplate prepended, cut shorter); partial
   date shifts (10%, 20%, 50% post-2023 texts); suspect sets *less* member-like than the
   held-out set. Each rate has a Wilson 95% CI over all audits and its spread (min-max) across
   independently built testbeds.
2. Power at n = 20, 50, 100, 200 (suspect = members, held-out = same-period non-members) across the
   builds: the test alone (the 2 x median split design and the permutation test), and the whole
   rule set, by default (the fixed exchangeability margin) and with the opt-in blind-residual test
   (where the margin is not met, the test on the signals residualised on the blind classifier's
   text features); section 1 also gives the opt-in test's false verdicts where a shift can go
   undetected (matched sets, partial date shifts).
3. The same on heterogeneous real text (``--books``): testbeds trained six epochs on half of 500
   PG-19 book openings (many authors and styles), power and member-free false verdicts at n = 50,
   100, 200, the default rules against the opt-in blind-residual test.
4. Real data: SmolLM2-135M on WikiMIA-64 pre-2017 texts against a lowercased or partly post-2023
   held-out set (membership status of both halves the same: any verdict is false).

``--record`` writes the rows to the method-validation table (``verifier/validation/table.json``).

5. The pretraining-like testbeds (``--presets pretrain-like``): SmolLM2-135M continued-pretrained one pass over
   the members among real background text; power and member-free false verdicts at n = 100, 200, 500.

Every recorded row carries the regime of the testbeds it was measured on (model, size, passes, member share).

Usage: python benchmarks/soundness.py [--builds 4] [--trials-per-build 50] [--presets light,faint] [--books]
       [--skip-smollm2] [--skip-light] [--record]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from verifier.data import Documents, load_documents
from verifier.dataset_inference.power import draw, wilson
from verifier.dataset_inference.rules import DocumentSet, SetStatus, SetTestParams, run_set_membership
from verifier.dataset_inference.statistic import trial_p_values
from verifier.scoring.table import score_documents
from verifier.stats.metrics import evaluate_scores
from verifier.targets import ScoreCache, ScoringOptions
from verifier.targets.kinds.causal_lm import CausalLMTarget
from verifier.testbed.build import PRESETS, TestbedConfig, build_testbed, regime
from verifier.testbed.pool import NEW, OLD, books_pool
from verifier.validation import record

ROOT = Path(__file__).resolve().parent.parent
SIGNALS = ["loss", "zlib", "min_k", "min_k_pp", "gap_k"]
PARAMS = SetTestParams(n_permutations=199, shift_permutations=199)  # the default rules (the margin alone)
RESIDUAL = SetTestParams(
    n_permutations=199, shift_permutations=199, blind_residual_test=True
)  # the opt-in blind-residual test
BOOKS = TestbedConfig(epochs=6, marks=None)  # GPT-2-style, six epochs on the members of 500 book openings
ROWS: list[dict] = []  # what --record writes
TRANSFORMS: dict[str, Callable[[str], str]] = {
    "lowercased": str.lower,
    "typographic quotes": lambda t: t.replace('"', "\u201c").replace("'", "\u2019").replace(" - ", " \u2013 "),
    "doubled spaces": lambda t: t.replace(". ", ".  "),
    "boilerplate prepended": lambda t: "From Wikipedia, the free encyclopedia. " + t,
    "cut at 40 words": lambda t: " ".join(t.split()[:40]),
}


@dataclass
class Pool:
    """Texts and signal features of one testbed (or data set), with views of transformed texts."""

    texts: np.ndarray
    features: np.ndarray
    member: np.ndarray
    period: np.ndarray
    variants: dict[str, tuple[np.ndarray, np.ndarray]]  # name -> (texts, features), same rows
    regime: dict | None = None  # the trained model's regime (validation.Regime fields); None: no testbed

    def take(self, idx: np.ndarray, variant: str | None = None, year: int = 2016) -> DocumentSet:
        texts, features = self.variants[variant] if variant else (self.texts, self.features)
        return DocumentSet(texts[idx].tolist(), features[idx], year, None)


def score_pool(target: CausalLMTarget, texts: list[str], cache: ScoreCache) -> np.ndarray:
    table = score_documents(
        Documents(texts=texts, labels=None, source="pool"), target, signal_names=SIGNALS, cache=cache
    )
    return np.column_stack([table.signal(n) for n in SIGNALS])


def testbed_pool(preset: str, seed: int, cache: ScoreCache, with_variants: bool) -> tuple[Pool, dict]:
    base, pool = (BOOKS, books_pool()) if preset == "books" else (PRESETS[preset], None)
    config = base.model_copy(update={"seed": seed})
    testbed = build_testbed(config, pool=pool)
    docs = load_documents(testbed.documents, label_field="member")
    period = np.array([json.loads(line)["period"] for line in testbed.documents.read_text().splitlines()])
    target = CausalLMTarget(
        str(testbed.model_dir), ScoringOptions(max_tokens=config.seq_len, batch_tokens=32 * config.seq_len)
    )
    texts = np.array(docs.texts, dtype=object)
    variants = {}
    for name, transform in TRANSFORMS.items() if with_variants else ():
        v_texts = np.array([transform(t) for t in texts], dtype=object)
        variants[name] = (v_texts, score_pool(target, v_texts.tolist(), cache))
    where = testbed.manifest.get("regime") or regime(config, pool)  # manifests before the field: computed
    pool = Pool(texts, score_pool(target, docs.texts, cache), docs.labels == 1, period, variants, where)
    return pool, testbed.manifest


def testbed_pools(preset: str, builds: int, cache: ScoreCache) -> tuple[list[Pool], list[str]]:
    """``builds`` independently built testbeds of ``preset`` (seeds 0..builds-1) and their digests, each announced."""
    pools, digests = [], []
    for seed in range(builds):
        pool, manifest = testbed_pool(preset, seed, cache, with_variants=False)
        pools.append(pool)
        digests.append(manifest["digest"])
        print(
            f"{preset} testbed seed {seed}: {manifest['digest']}, {pool.member.sum()} members of {len(pool.texts)}",
            flush=True,
        )
    return pools, digests


def audits(
    pool: Pool, trials: int, rng: np.random.Generator, make: Callable, params: SetTestParams = PARAMS
) -> Counter:
    """Run ``trials`` audits; ``make(rng)`` returns (suspect, heldout) DocumentSets."""
    counts: Counter = Counter()
    for trial in range(trials):
        suspect, heldout = make(rng)
        counts[run_set_membership(suspect, heldout, SIGNALS, params=params, seed=trial).status] += 1
    return counts


def false_verdict_rows(pool: Pool) -> dict[str, Callable]:
    """Scenario name -> audit maker; in every one the suspect set holds no member the held-out set lacks."""
    old_nm = np.flatnonzero(~pool.member & (pool.period == OLD))
    new_nm = np.flatnonzero(~pool.member & (pool.period == NEW))
    old_m = np.flatnonzero(pool.member & (pool.period == OLD))

    def matched(n: int, variant: str | None = None) -> Callable:
        def make(rng):
            idx = rng.permutation(old_nm)[: 2 * n]
            return pool.take(idx[:n]), pool.take(idx[n:], variant)

        return make

    def partial(n: int, share: float) -> Callable:
        def make(rng):
            idx, later = rng.permutation(old_nm)[: 2 * n], rng.permutation(new_nm)[: round(share * n)]
            held = np.r_[idx[n : 2 * n - len(later)], later]
            return pool.take(idx[:n]), pool.take(held)

        return make

    def reversed_(n: int) -> Callable:
        def make(rng):
            return pool.take(rng.permutation(old_nm)[:n]), pool.take(rng.permutation(old_m)[:n])

        return make

    rows = {f"matched member-free, n = {n}": matched(n) for n in (20, 50, 100, 200) if 2 * n <= len(old_nm)}
    rows |= {f"held-out {name}, n = 100": matched(100, name) for name in TRANSFORMS}
    rows |= {
        f"held-out {share:.0%} post-2023, n = 200": partial(200, share)
        for share in (0.1, 0.2, 0.5)
        if 400 <= len(old_nm)
    }
    rows |= {f"suspect less member-like (held-out = members), n = {n}": reversed_(n) for n in (100, 200)}
    return rows


def rate_text(hits: list[int], trials: list[int], keep: dict | None = None) -> str:
    """The rate with its CI and spread; ``keep`` (route, quantity, scenario, n) also records it."""
    total = wilson(sum(hits), sum(trials))
    per_build = [h / t for h, t in zip(hits, trials)]
    if keep is not None:
        ROWS.append(
            keep
            | {
                "value": round(total.value, 4),
                "ci": (round(total.ci_low, 4), round(total.ci_high, 4)),
                "spread": (round(min(per_build), 4), round(max(per_build), 4)),
                "trials": sum(trials),
                "builds": len(trials),
            }
        )
    return (
        f"{total.value:.3f} [{total.ci_low:.3f}, {total.ci_high:.3f}]  builds {min(per_build):.3f}-{max(per_build):.3f}"
    )


def row(quantity: str, scenario: str, n: int, pools: list[Pool] | None = None) -> dict:
    """A row of the validation table, with the regime of the testbeds it was measured on (their mean member share:
    builds differ by the member draw)."""
    regimes = [p.regime for p in pools or [] if p.regime]
    where = (
        {
            "regime": regimes[0]
            | {"member_token_share": round(float(np.mean([r["member_token_share"] for r in regimes])), 3)}
        }
        if regimes
        else {}
    )
    return {"route": "dataset_inference", "quantity": quantity, "scenario": scenario, "n": n} | where


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--builds", type=int, default=4, help="independently built testbeds per preset (seeds 0..B-1)")
    parser.add_argument("--trials-per-build", type=int, default=50)
    parser.add_argument(
        "--presets",
        default="light,faint",
        help="testbed presets for the power tables (light always runs the false-verdict rows)",
    )
    parser.add_argument("--books", action="store_true", help="also the heterogeneous book-openings testbeds")
    parser.add_argument("--skip-smollm2", action="store_true")
    parser.add_argument(
        "--skip-light", action="store_true", help="leave out the light testbeds' false-verdict rows (section 1)"
    )
    parser.add_argument("--record", action="store_true", help="write the rows to the method-validation table")
    args = parser.parse_args()
    cache = ScoreCache()
    presets = list(
        dict.fromkeys(
            [*([] if args.skip_light else ["light"]), *args.presets.split(","), *(["books"] if args.books else [])]
        )
    )
    testbeds: dict[str, list[Pool]] = {preset: [] for preset in presets}
    digests = []
    for preset, pools in testbeds.items():
        for seed in range(args.builds):
            started = time.perf_counter()
            pool, manifest = testbed_pool(preset, seed, cache, with_variants=preset == "light")
            pools.append(pool)
            digests.append(f"{preset}:{manifest['digest']}")
            aucs = [
                evaluate_scores(name, pool.features[:, i], pool.member.astype(int)).auc
                for i, name in enumerate(SIGNALS)
            ]
            print(
                f"{preset} testbed seed {seed}: {manifest['digest']}, {pool.member.sum()} members of "
                f"{len(pool.texts)}, "
                f"{manifest['parameters'] / 1e6:.2f}M parameters, {manifest['config']['epochs']} epochs, built in "
                f"{manifest['build_seconds']} s "
                f"(this run {time.perf_counter() - started:.0f} s); member AUC "
                + ", ".join(f"{n} {a:.3f}" for n, a in zip(SIGNALS, aucs)),
                flush=True,
            )
    t = args.trials_per_build
    pools = testbeds.get("light", [])
    print(
        f"\n== 1. false verdicts (SUPPORTED or CONTRADICTED granted, no membership difference): {args.builds} builds "
        f"x {t} audits per row, alpha 0.05"
    )
    print(f"  {'scenario':<52}{'rate [95% CI]  spread across builds':<48}statuses")
    for name in false_verdict_rows(pools[0]) if pools else ():
        started = time.perf_counter()
        per_build = [
            audits(pool, t, np.random.default_rng(1000 * b + 7), false_verdict_rows(pool)[name])
            for b, pool in enumerate(pools)
        ]
        hits = [c[SetStatus.SIGNIFICANT] for c in per_build]
        total = sum(per_build, Counter())
        statuses = ", ".join(f"{s.value} {k}" for s, k in total.most_common())
        scenario, n = name.rsplit(", n = ", 1)
        text = rate_text(
            hits, [t] * len(pools), row("false verdict rate (whole rule set, light testbeds)", scenario, int(n), pools)
        )
        print(f"  {name:<52}{text:<48}{statuses}  ({time.perf_counter() - started:.0f} s)", flush=True)
        if name.startswith(
            ("matched", "held-out 10%", "held-out 20%")
        ):  # where a shift can go undetected: the opt-in test too
            opt_in = [
                audits(pool, t, np.random.default_rng(1000 * b + 7), false_verdict_rows(pool)[name], RESIDUAL)
                for b, pool in enumerate(pools)
            ]
            text = rate_text(
                [c[SetStatus.SIGNIFICANT] for c in opt_in],
                [t] * len(pools),
                row("false verdict rate (rule set + blind-residual test, light testbeds)", scenario, int(n), pools),
            )
            print(f"  {'  + blind-residual test':<52}{text:<48}", flush=True)

    for preset, preset_pools in testbeds.items():
        if preset == "books":
            books_table(preset_pools, t)
        elif preset.startswith("pretrain-like"):
            pretrain_table(preset, preset_pools, t)
        else:
            power_table(preset, preset_pools, t)
    if not args.skip_smollm2:
        real_data(args.builds * t, cache)
    if args.record:
        name = "soundness" if "light" in presets else "soundness-" + "-".join(presets)  # other runs' rows kept
        record(name, ROWS, digests, "python benchmarks/soundness.py " + " ".join(sys.argv[1:]))
        print("\nrecorded in verifier/validation/table.json", file=sys.stderr)


def power_table(preset: str, pools: list[Pool], t: int) -> None:
    print(
        f"\n== 2. {preset} testbeds: power (suspect = pre-2017 members, held-out = pre-2017 non-members) and the "
        "test's own FPR "
        f"(member-free suspect); {len(pools)} builds x {t} trials, alpha 0.05"
    )
    columns = ("split design, 2 x median", "permutation test", "rule set (default)", "rule set + blind-residual test")
    print(f"  {'':<6}{'n':>4}  " + "".join(f"{c:<44}" for c in columns))
    for n in (20, 50, 100, 200):
        hits: dict[str, list[int]] = {c: [] for c in columns}
        false: dict[str, list[int]] = {c: [] for c in columns[:2]}
        for b, pool in enumerate(pools):
            rng = np.random.default_rng(2000 * b + n)
            old_m = np.flatnonzero(pool.member & (pool.period == OLD))
            old_nm = np.flatnonzero(~pool.member & (pool.period == OLD))
            s_idx, h_idx = draw(old_m, t, n, rng), draw(old_nm, t, n, rng)
            free = draw(old_nm, t, 2 * n, rng)
            for (suspect, heldout), counts in (((s_idx, h_idx), hits), ((free[:, :n], free[:, n:]), false)):
                p_split = trial_p_values(pool.features[suspect], pool.features[heldout], rng, method="split_median")
                p_perm = trial_p_values(pool.features[suspect], pool.features[heldout], rng, n_permutations=199)
                counts[columns[0]].append(int((p_split < 0.05).sum()))
                counts[columns[1]].append(int((p_perm < 0.05).sum()))
            for column, params in ((columns[2], PARAMS), (columns[3], RESIDUAL)):
                statuses = [
                    run_set_membership(pool.take(s), pool.take(h), SIGNALS, params=params, seed=i).status
                    for i, (s, h) in enumerate(zip(s_idx, h_idx))
                ]
                hits[column].append(sum(s == SetStatus.SIGNIFICANT for s in statuses))
        trials = [t] * len(pools)
        print(
            f"  {'power':<6}{n:>4}  "
            + "".join(
                f"{rate_text(hits[c], trials, row(f'power ({c})', f'{preset} testbeds', n, pools)):<44}"
                for c in columns
            ),
            flush=True,
        )
        print(f"  {'FPR':<6}{n:>4}  " + "".join(f"{rate_text(false[c], trials):<44}" for c in columns[:2]), flush=True)


def pretrain_table(preset: str, pools: list[Pool], t: int) -> None:
    """Power and member-free false verdicts at n = 100, 200, 500 on the pretraining-like testbeds: members of both
    periods against non-members of both (membership is drawn independently of the period), the permutation test
    alone and the whole rule set."""
    print(
        f"\n== 2b. {preset} testbeds (SmolLM2-135M continued-pretrained, each member seen once among background text): "
        f"power (suspect = members, held-out = non-members) and member-free false verdicts; {len(pools)} builds x {t} "
        "audits, alpha 0.05"
    )
    columns = ("permutation test", "rule set (default)")
    print(f"  {'':<6}{'n':>4}  " + "".join(f"{c:<44}" for c in columns) + "statuses (rule set, power audits)")
    for n in (100, 200, 500):
        hits: dict[str, list[int]] = {c: [] for c in columns}
        false: dict[str, list[int]] = {c: [] for c in columns}
        statuses: Counter = Counter()
        free_n = n
        for b, pool in enumerate(pools):
            rng = np.random.default_rng(7000 * b + n)
            members, others = np.flatnonzero(pool.member), np.flatnonzero(~pool.member)
            s_idx, h_idx = draw(members, t, n, rng), draw(others, t, n, rng)
            free_n = min(n, len(others) // 2)  # two disjoint member-free sets of the largest size the pool allows
            free = draw(others, t, 2 * free_n, rng)
            for (suspect, heldout), counts in (((s_idx, h_idx), hits), ((free[:, :free_n], free[:, free_n:]), false)):
                p_perm = trial_p_values(pool.features[suspect], pool.features[heldout], rng, n_permutations=199)
                counts[columns[0]].append(int((p_perm < 0.05).sum()))
                found = [
                    run_set_membership(pool.take(s), pool.take(h), SIGNALS, params=PARAMS, seed=i).status
                    for i, (s, h) in enumerate(zip(suspect, heldout))
                ]
                counts[columns[1]].append(sum(s == SetStatus.SIGNIFICANT for s in found))
                if counts is hits:
                    statuses.update(s.value for s in found)
        trials = [t] * len(pools)
        print(
            f"  {'power':<6}{n:>4}  "
            + "".join(
                f"{rate_text(hits[c], trials, row(f'power ({c})', f'{preset} testbeds', n, pools)):<44}"
                for c in columns
            )
            + ", ".join(f"{k} {v}" for k, v in statuses.most_common()),
            flush=True,
        )
        print(
            f"  {'false':<6}{free_n:>4}  "
            + "".join(
                f"{rate_text(false[c], trials, row(f'false verdict rate ({c})', f'member-free {preset} testbeds', free_n, pools)):<44}"  # noqa: E501
                for c in columns
            ),
            flush=True,
        )


def books_table(pools: list[Pool], t: int) -> None:
    print(
        f"\n== 3. heterogeneous real text: PG-19 book openings (six epochs on the members); {len(pools)} builds x {t} "
        "audits, alpha 0.05"
    )
    columns = ("permutation test", "rule set (default)", "rule set + blind-residual test")
    print(f"  {'':<6}{'n':>4}  " + "".join(f"{c:<44}" for c in columns) + "statuses (with the blind-residual test)")
    for n in (50, 100, 120, 200):
        hits: dict[str, list[int]] = {c: [] for c in columns}
        false: dict[str, list[int]] = {c: [] for c in columns}
        statuses: Counter = Counter()
        for b, pool in enumerate(pools):
            rng = np.random.default_rng(5000 * b + n)
            members, others = np.flatnonzero(pool.member), np.flatnonzero(~pool.member)
            if n > len(members) or n > len(others):
                continue
            s_idx, h_idx = draw(members, t, n, rng), draw(others, t, n, rng)
            pairs = [((s_idx, h_idx), hits)]
            if 2 * n <= len(others):  # member-free pairs need 2n non-members
                free = draw(others, t, 2 * n, rng)
                pairs.append(((free[:, :n], free[:, n:]), false))
            for (suspect, heldout), counts in pairs:
                counts[columns[0]].append(
                    int(
                        (
                            trial_p_values(pool.features[suspect], pool.features[heldout], rng, n_permutations=199)
                            < 0.05
                        ).sum()
                    )
                )
                for column, params in ((columns[1], PARAMS), (columns[2], RESIDUAL)):
                    found = [
                        run_set_membership(pool.take(s), pool.take(h), SIGNALS, params=params, seed=i).status
                        for i, (s, h) in enumerate(zip(suspect, heldout))
                    ]
                    counts[column].append(sum(s == SetStatus.SIGNIFICANT for s in found))
                    if column == columns[2] and counts is hits:
                        statuses.update(s.value for s in found)
        if not hits[columns[0]]:
            print(f"  n = {n}: the pool cannot fill the sets")
            continue
        trials = [t] * len(hits[columns[0]])
        print(
            f"  {'power':<6}{n:>4}  "
            + "".join(
                f"{rate_text(hits[c], trials, row(f'power ({c})', 'book openings testbeds', n, pools)):<44}"
                for c in columns
            )
            + ", ".join(f"{k} {v}" for k, v in statuses.most_common()),
            flush=True,
        )
        if false[columns[0]]:
            print(
                f"  {'false':<6}{n:>4}  "
                + "".join(
                    f"{rate_text(false[c], trials, row(f'false verdict rate ({c})', 'member-free book openings', n, pools)):<44}"  # noqa: E501
                    for c in columns
                ),
                flush=True,
            )
        else:
            print(f"  {'false':<6}{n:>4}  the pool's non-members cannot fill two disjoint sets of {n}")


def real_data(trials: int, cache: ScoreCache) -> None:
    print(
        "\n== 3. real data: SmolLM2-135M (fp32, 256 tokens), WikiMIA-64 pre-2017 texts, suspect and held-out random "
        "halves"
    )
    wiki = load_documents(ROOT / "verifier" / "examples" / "data" / "wikimia" / "length64.jsonl", label_field="label")
    smol = CausalLMTarget("smollm2-135m")
    texts = np.array(wiki.texts, dtype=object)
    old = wiki.labels == 1
    lower = np.array([t.lower() for t in texts], dtype=object)
    pool = Pool(
        texts,
        score_pool(smol, wiki.texts, cache),
        np.zeros(len(texts), bool),
        np.where(old, OLD, NEW),
        {"lowercased": (lower, score_pool(smol, lower.tolist(), cache))},
    )
    old_idx, new_idx = np.flatnonzero(old), np.flatnonzero(~old)

    def real(variant: str | None = None, share: float = 0.0) -> Callable:
        def make(rng):
            idx, later = rng.permutation(old_idx)[:200], rng.permutation(new_idx)[: round(share * 100)]
            held = np.r_[idx[100 : 200 - len(later)], later]
            return pool.take(idx[:100]), pool.take(held, variant)

        return make

    for name, make in {
        "lowercased held-out, n = 100": real("lowercased"),
        "held-out 20% post-2023, n = 100": real(share=0.2),
        "held-out 50% post-2023, n = 100": real(share=0.5),
        "matched, n = 100": real(),
    }.items():
        counts = audits(pool, trials, np.random.default_rng(3), make)
        print(
            f"  {name:<40}{rate_text([counts[SetStatus.SIGNIFICANT]], [trials]):<48}"
            f"{', '.join(f'{s.value} {k}' for s, k in counts.most_common())}",
            flush=True,
        )


if __name__ == "__main__":
    main()
