"""Output-only (black-box) attacks through the OpenAI-compatible target: AUCs, costs, set-level power.

Prints, per attack:
1. AUC [95% bootstrap CI] and TPR@5%FPR on the fine-tuned testbed (SmolLM2-135M-Instruct fine-tuned
   one epoch on a seeded half of same-period post-2023 texts: members vs same-period non-members),
   beside the blind bag-of-words baseline on the same texts;
2. the same on WikiMIA-64 against the base SmolLM2 (pre-2017 "members" vs post-2023 "non-members":
   the date-shifted setup the published evaluations use), beside the blind baseline;
3. requests sent, answers read from the cache, failures and wall time per setup;
4. set-level dataset inference on the testbed with the black-box signals as features: power at the
   given set sizes (members vs non-members) and the member-free FPR (non-members vs non-members),
   each as the rate over independent draws of the sets with its spread across five batches.

Both models are served by ``transformers serve`` on 127.0.0.1 (``verifier.targets.serving``), queried with
the real client and its response cache: a second run pays nothing.

    python benchmarks/blackbox.py       # the finetune preset: cheap attacks on 400 documents (200 on WikiMIA), sampled
    ones on 20, DE-COP on 24
    python benchmarks/blackbox.py --preset finetune-small --run prefix_lcs_word,name_cloze:64 --sizes 20 --draws 100

Each ``--run SIGNALS:DOCS`` scores the first DOCS documents of each setup with those signals (the
sampled attacks cost ten or more queries a document, so they run on fewer); the power table uses
the first run's signals as features.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from verifier.baselines.bag_of_words import bag_of_words_scores
from verifier.boundary.resources import resource
from verifier.data import Documents
from verifier.dataset_inference.statistic import trial_p_values
from verifier.scoring.table import score_documents
from verifier.stats.metrics import evaluate_scores, fill_failed
from verifier.targets import ApiOptions, ScoreCache, load_target
from verifier.targets.serving import model_folder, start_server
from verifier.testbed.build import PRESETS, build_testbed

DEFAULT_RUNS = ["prefix_lcs_word,prefix_lcs_token,name_cloze,familiarity:400", "samia,cdd:20", "decop:24"]


def attack_rows(
    texts: list[str],
    labels: np.ndarray,
    spec: str,
    signals: list[str],
    cache: ScoreCache,
    seed: int,
    signal_params: dict | None = None,
    api: ApiOptions | None = None,
) -> tuple[dict, dict]:
    """AUC rows per signal (failed items filled label-blind, counted) and the blind baseline; the target's usage."""
    target = load_target(spec, api=api)
    started = time.perf_counter()
    table = score_documents(
        Documents(texts, labels.tolist(), "bench"),
        target,
        signal_names=signals,
        cache=cache,
        signal_params=signal_params,
    )
    usage = target.usage | {"wall_s_total": round(time.perf_counter() - started, 1)}
    raw = np.column_stack([table.signal(s) for s in signals])
    filled, failed = fill_failed(raw)
    rows = {}
    for i, name in enumerate(signals):
        m = evaluate_scores(name, filled[:, i], labels, seed=seed)
        rows[name] = {
            "auc": m.auc,
            "ci": [m.auc_ci_low, m.auc_ci_high],
            "tpr5": m.tpr_at_5_fpr,
            "acc": m.best_balanced_accuracy,
            "failed": int(failed[i]),
            "unscored_all": bool(failed[i] == len(texts)),
        }
    blind = evaluate_scores("bag_of_words", bag_of_words_scores(texts, labels, seed=seed), labels, seed=seed)
    rows["blind bag_of_words"] = {
        "auc": blind.auc,
        "ci": [blind.auc_ci_low, blind.auc_ci_high],
        "tpr5": blind.tpr_at_5_fpr,
        "acc": blind.best_balanced_accuracy,
        "failed": 0,
        "unscored_all": False,
    }
    return rows, usage | {
        "features": filled.tolist(),
        "failure_reasons": {
            c: table.frame[c].value_counts().to_dict() for c in table.frame.columns if c.startswith("failure.")
        },
    }


def print_rows(title: str, rows: dict, usage: dict) -> None:
    print(f"\n## {title}")
    print(f"{'attack':<22} {'AUC':>6} {'95% CI':>15} {'TPR@5%':>7} {'ACC':>6} {'failed':>6}")
    for name, r in rows.items():
        if r["unscored_all"]:
            print(f"{name:<22} {'no score for any document (reason below)':>36} {r['failed']:6d}")
            continue
        print(
            f"{name:<22} {r['auc']:6.3f} [{r['ci'][0]:.3f}, {r['ci'][1]:.3f}] {r['tpr5']:7.3f} {r['acc']:6.3f} "
            f"{r['failed']:6d}"
        )
    if usage.get("failure_reasons"):
        print(f"unscored documents, by reason: {usage['failure_reasons']}")
    print(
        f"requests sent {usage['requests_sent']}, answers from cache {usage['answers_from_cache']}, retries "
        f"{usage['retries']}, "
        f"failures {usage['failures']}, prompt/completion tokens "
        f"{usage['prompt_tokens']}/{usage['completion_tokens']}, "
        f"wall {usage['wall_s_total']} s"
    )


def power_table(features: np.ndarray, labels: np.ndarray, sizes: list[int], draws: int, seed: int) -> None:
    """Rates of p < 0.05 over ``draws`` independent draws per size, in five batches (spread = SD of batch rates)."""
    rng = np.random.default_rng(seed)
    members, non = np.flatnonzero(labels == 1), np.flatnonzero(labels == 0)
    print("\n## Set-level dataset inference, black-box features (permutation test, 199 relabellings, alpha 0.05)")
    print(f"{'n per set':>9} {'power':>16} {'member-free FPR':>18}   (rate over draws, +- SD across 5 batches)")
    for n in sizes:
        if n > len(members) or 2 * n > len(non):
            print(f"{n:>9}   needs {n} members and {2 * n} non-members scored (have {len(members)}, {len(non)})")
            continue
        power, fpr = [], []
        for _ in range(5):
            batch = max(1, draws // 5)
            s = np.stack([rng.choice(members, n, replace=False) for _ in range(batch)])
            picks = np.stack([rng.choice(non, 2 * n, replace=False) for _ in range(batch)])
            p_power = trial_p_values(features[s], features[picks[:, :n]], rng, n_permutations=199)
            p_fpr = trial_p_values(features[picks[:, :n]], features[picks[:, n:]], rng, n_permutations=199)
            power.append(float(np.mean(p_power < 0.05)))
            fpr.append(float(np.mean(p_fpr < 0.05)))
        print(f"{n:>9} {np.mean(power):8.3f} +- {np.std(power):.3f} {np.mean(fpr):10.3f} +- {np.std(fpr):.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--preset", default="finetune", choices=[p for p in PRESETS if p.startswith("finetune")])
    parser.add_argument("--run", action="append", help=f"SIGNALS:DOCS (repeatable; default {' '.join(DEFAULT_RUNS)})")
    parser.add_argument("--sizes", default="25,50,100")
    parser.add_argument("--draws", type=int, default=200)
    parser.add_argument("--cache-dir", type=Path, default=None)
    parser.add_argument("--skip-wikimia", action="store_true")
    parser.add_argument("--port", type=int, default=8771, help="the testbed's server port (WikiMIA's: the next one)")
    parser.add_argument("--wikimia-max", type=int, default=200, help="at most this many WikiMIA documents per run")
    args = parser.parse_args()
    runs = [(spec.rsplit(":", 1)[0].split(","), int(spec.rsplit(":", 1)[1])) for spec in (args.run or DEFAULT_RUNS)]
    cache = ScoreCache(args.cache_dir)

    started = time.perf_counter()
    testbed = build_testbed(
        PRESETS[args.preset], on_epoch=lambda e, loss: print(f"fine-tune epoch {e}: mean loss {loss:.3f}")
    )
    print(
        f"testbed {args.preset}: {testbed.folder.name}, built in {testbed.manifest['build_seconds']} s "
        f"(this call {time.perf_counter() - started:.0f} s), train loss {testbed.manifest['train_loss_per_epoch']}"
    )
    docs = [json.loads(line) for line in testbed.documents.read_text().splitlines()]
    texts, labels = [d["text"] for d in docs], np.array([d["member"] for d in docs])
    setups = [("Fine-tuned testbed (members vs same-period non-members)", texts, labels, testbed.model_dir)]
    if not args.skip_wikimia:
        wiki = [
            json.loads(line)
            for line in (resource("examples", "data", "wikimia") / "length64.jsonl").read_text().splitlines()
        ]
        picked = [wiki[i] for i in np.random.default_rng(0).permutation(len(wiki))]
        setups.append(
            (
                "WikiMIA-64 against SmolLM2-135M-Instruct (date-shifted: pre-2017 vs post-2023)",
                [r["text"] for r in picked][: args.wikimia_max],
                np.array([r["label"] for r in picked])[: args.wikimia_max],
                model_folder("smollm2-135m"),
            )
        )
    for s_i, (title, s_texts, s_labels, folder) in enumerate(setups):
        with start_server(
            folder, port=args.port + s_i
        ) as server:  # fixed ports: the endpoint is part of every cache key
            for r_i, (signals, count) in enumerate(runs):
                count = min(count, len(s_texts))
                rows, usage = attack_rows(s_texts[:count], s_labels[:count], server.spec, signals, cache, seed=0)
                print_rows(f"{title}: {s_labels[:count].sum()} vs {count - s_labels[:count].sum()}", rows, usage)
                if s_i == 0 and r_i == 0:
                    power_table(
                        np.array(usage["features"]),
                        s_labels[:count],
                        [int(n) for n in args.sizes.split(",")],
                        args.draws,
                        seed=0,
                    )


if __name__ == "__main__":
    main()
