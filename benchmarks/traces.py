"""Reasoning-trace attacks (BlackSpectrum and the naive trace attacks) against the local server:
AUCs beside the output-only attacks and the blind baseline, ablations, set-level power.

Prints, for the fine-tuned testbed (ground truth: members vs same-period non-members) and for
WikiMIA-64 against the base SmolLM2 (date-shifted, beside the blind baseline):
1. AUC [95% bootstrap CI], TPR@5%FPR, unscored documents (with reasons) and the requests each
   setup cost, per attack: blackspectrum, thinking_tokens, trace_compression,
   trace_consistency_char/token, trace_judge (the target judging its own traces: the only judge
   offline), prefix_lcs_word/token (output-only, for comparison);
2. BlackSpectrum's ablations from the paper's Table 4 that run offline: without denoising, without
   entropy selection of the synthetic anchors, and another encoder - only all-MiniLM-L6-v2 ships as
   a sentence encoder, so the other one is SmolLM2-135M's last hidden states mean-pooled (built once
   into the cache as a sentence-transformers folder), a weak encoder but a different one;
3. on the testbed, set-level dataset inference with the trace features (power and member-free
   FPR over independent draws, spread across five batches).

SmolLM2-135M does not reason natively: it is prompted to write its reasoning before the answer
(``verifier.signals.traces.base``), and every trace attack reads the same ``--traces`` traces per
document (cached; a re-run sends nothing).

    python benchmarks/traces.py --docs 32 --wikimia-docs 32 --anchors 5 --sizes 8 --draws 100
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
from blackbox import attack_rows, power_table, print_rows  # run as a script beside it

from verifier.boundary.resources import resource
from verifier.targets import ApiOptions, ScoreCache
from verifier.targets.serving import model_folder, start_server
from verifier.testbed.build import PRESETS, build_testbed

TRACE_SIGNALS = [
    "blackspectrum",
    "thinking_tokens",
    "trace_compression",
    "trace_consistency_char",
    "trace_consistency_token",
    "trace_judge",
]
OUTPUT_ONLY = ["prefix_lcs_word", "prefix_lcs_token"]


def smollm2_encoder(folder: Path) -> Path:
    """A sentence-transformers folder: SmolLM2-135M (``folder``, the served float32 copy) mean-pooled."""
    out = Path.home() / ".cache" / "verifier" / "encoders" / "smollm2-135m-mean"
    if not (out / "modules.json").is_file():
        from sentence_transformers import SentenceTransformer, models

        body = models.Transformer(str(folder), max_seq_length=256)
        body.tokenizer.pad_token = body.tokenizer.pad_token or body.tokenizer.eos_token
        SentenceTransformer(
            modules=[body, models.Pooling(body.get_word_embedding_dimension(), "mean")], device="cpu"
        ).save(str(out))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--preset", default="finetune", choices=[p for p in PRESETS if p.startswith("finetune")])
    parser.add_argument("--docs", type=int, default=32)
    parser.add_argument("--wikimia-docs", type=int, default=32)
    parser.add_argument("--anchors", type=int, default=5, help="k = gamma: recall and synthetic anchor sequences")
    parser.add_argument("--traces", type=int, default=3)
    parser.add_argument("--max-tokens", type=int, default=128)
    parser.add_argument("--sizes", default="8")
    parser.add_argument("--draws", type=int, default=100)
    parser.add_argument("--port", type=int, default=8771)
    parser.add_argument("--skip-wikimia", action="store_true")
    parser.add_argument(
        "--force-axis",
        action="store_true",
        help="diagnostic only: score BlackSpectrum even when its anchor sides do not differ (the tool refuses to)",
    )
    parser.add_argument(
        "--judge-max-tokens", type=int, default=16, help="SmolLM2 judging itself answers without thinking first"
    )
    args = parser.parse_args()
    cache = ScoreCache(None)
    api = ApiOptions(
        concurrency=1, timeout_s=600
    )  # one request at a time: 2 CPU cores serve one generation at full speed
    shared = {"traces": args.traces, "max_tokens": args.max_tokens}
    params = {name: dict(shared) for name in TRACE_SIGNALS} | {
        "blackspectrum": shared | {"k": args.anchors, "gamma": args.anchors},
        "trace_judge": shared | {"judge_max_tokens": args.judge_max_tokens},
    }
    ablations = {
        "no denoising": {"denoise": False},
        "no entropy selection": {"entropy_selection": False},
        "encoder SmolLM2 mean-pooled": {"encoder": str(smollm2_encoder(model_folder("smollm2-135m")))},
    }

    if args.force_axis:
        import verifier.signals.traces.blackspectrum as bs

        bs.AXIS_ALPHA = 1.0
        print("DIAGNOSTIC: BlackSpectrum scored on whatever axis its anchors give, separated or not")
    testbed = build_testbed(PRESETS[args.preset])
    docs = [json.loads(line) for line in testbed.documents.read_text().splitlines()][: args.docs]
    wiki = [
        json.loads(line)
        for line in (resource("examples", "data", "wikimia") / "length64.jsonl").read_text().splitlines()
    ]
    wiki = [wiki[i] for i in np.random.default_rng(0).permutation(len(wiki))][: args.wikimia_docs]
    setups = [
        ("Fine-tuned testbed", [d["text"] for d in docs], np.array([d["member"] for d in docs]), testbed.model_dir),
        (
            "WikiMIA-64 vs SmolLM2 (date-shifted)",
            [r["text"] for r in wiki],
            np.array([r["label"] for r in wiki]),
            model_folder("smollm2-135m"),
        ),
    ]
    for s_i, (title, texts, labels, folder) in enumerate(setups[:1] if args.skip_wikimia else setups):
        with start_server(folder, port=args.port + s_i) as server:
            started = time.perf_counter()
            rows, usage = attack_rows(
                texts, labels, server.spec, TRACE_SIGNALS + OUTPUT_ONLY, cache, seed=0, signal_params=params, api=api
            )
            print_rows(
                f"{title}: {labels.sum()} vs {len(labels) - labels.sum()}, {args.traces} traces a document", rows, usage
            )
            for label, change in ablations.items():
                ab_rows, ab_usage = attack_rows(
                    texts,
                    labels,
                    server.spec,
                    ["blackspectrum"],
                    cache,
                    seed=0,
                    signal_params={"blackspectrum": params["blackspectrum"] | change},
                    api=api,
                )
                r = ab_rows["blackspectrum"]
                if r["unscored_all"]:
                    print(
                        f"ablation {label:<28} no score: {ab_usage['failure_reasons']}; {ab_usage['requests_sent']} "
                        "more requests"
                    )
                    continue
                print(
                    f"ablation {label:<28} AUC {r['auc']:.3f} [{r['ci'][0]:.3f}, {r['ci'][1]:.3f}] TPR@5% "
                    f"{r['tpr5']:.3f} "
                    f"(full: {rows['blackspectrum']['auc']:.3f}); {ab_usage['requests_sent']} more requests"
                )
            if s_i == 0:
                features = np.array(usage["features"])[:, : len(TRACE_SIGNALS)]
                power_table(features, labels, [int(n) for n in args.sizes.split(",")], args.draws, seed=0)
            print(f"setup wall {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
