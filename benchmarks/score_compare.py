"""One model, one set of texts, three ways to score them: verifier in one process, verifier on Ray
(local), and the batch-1 loop of the published implementations.

Each configuration runs in a fresh subprocess (a fresh, empty cache: nothing is served) while the
parent samples the resident memory of the subprocess and all its descendants (Ray's raylet, object
store and actors included) every 0.1 s. Configurations alternate for ``--rounds`` rounds; medians
are printed. Reported per configuration: tokens/s of the scoring call (for Ray: from the call to
the written table, actors' model loads included), the whole command's wall time, peak RSS, and
ratios. Ray is also run on 8 documents, so its fixed cost (actor start, model load, table write)
can be told from its rate per token.

Ends with a projection of a 1M-document audit of a 7B model on a GPU cluster, from a measured GPU
rate (``--gpu-json``, written by ``benchmarks/score_gpu.py --json``; by default the H200 numbers
measured for issue 14) scaled by parameter count.

Usage: python benchmarks/score_compare.py [--docs 200] [--rounds 3] [--actors 2] [--gpu-json FILE]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "verifier" / "examples" / "data" / "wikimia" / "length128.jsonl"
MODEL = "smollm2-135m"
SIGNALS = ["loss", "zlib", "min_k", "min_k_pp", "gap_k"]
# H200, bf16, 256-token documents, random-weight SmolLM2 shapes (issue 14): model body alone at 128 rows.
H200_BODY = {"135m": {"params": 134.5e6, "tokens_per_s": 598e3}, "1.7b": {"params": 1.71e9, "tokens_per_s": 115e3}}


def child(config: str, data: Path, n: int, work: Path, actors: int) -> dict:
    """Run one configuration in this process and return what it measured."""
    import torch

    from verifier.data import load_documents
    from verifier.scoring.table import score_documents
    from verifier.targets import ScoreCache, ScoringOptions
    from verifier.targets.kinds.causal_lm import CausalLMTarget

    texts = load_documents(data).texts[:n]
    subset = work / "docs.jsonl"
    subset.write_text("".join(json.dumps({"text": t}) + "\n" for t in texts))
    if config.startswith("ray"):
        from verifier.scoring.ray import RayOptions, score_file_ray

        start = time.perf_counter()
        ray = RayOptions(actors=actors, batch_docs=max(1, n // (4 * actors)))  # batches enough for every actor
        score_file_ray(
            MODEL,
            subset,
            work / "ray.parquet",
            ScoringOptions(),
            ray,
            label_field=None,
            signal_names=SIGNALS,
            cache_dir=work / "cache",
        )
        seconds = time.perf_counter() - start
        import pandas as pd

        return {
            "seconds": seconds,
            "tokens": int(pd.read_parquet(work / "ray.parquet", columns=["n_tokens"])["n_tokens"].sum()),
        }
    from score_throughput import batch1_loop  # the published-style loop, shared with the throughput benchmark

    target = CausalLMTarget(MODEL, ScoringOptions())
    start = time.perf_counter()
    if config == "in-process":
        table = score_documents(load_documents(subset), target, signal_names=SIGNALS, cache=ScoreCache(work / "cache"))
        table.write(work / "one.parquet")
    else:
        batch1_loop(target, texts)
    seconds = time.perf_counter() - start
    return {
        "seconds": seconds,
        "tokens": sum(len(e.ids) for e in target.encode_many(texts)),
        "threads": torch.get_num_threads(),
    }


def run_config(config: str, n: int, actors: int) -> dict:
    """The configuration in a subprocess, with the peak RSS of its whole process tree."""
    import psutil

    with tempfile.TemporaryDirectory() as work:
        start = time.perf_counter()
        proc = subprocess.Popen(
            [sys.executable, __file__, "--child", config, "--n", str(n), "--work", work, "--actors", str(actors)],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        peak = 0
        done = threading.Event()

        def sample() -> None:
            nonlocal peak
            root = psutil.Process(proc.pid)
            while not done.is_set():
                try:
                    tree = [root, *root.children(recursive=True)]
                    peak = max(peak, sum(p.memory_info().rss for p in tree if p.is_running()))
                except psutil.Error:
                    pass
                time.sleep(0.1)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        out, _ = proc.communicate()
        done.set()
        sampler.join()
        if proc.returncode != 0:
            raise SystemExit(f"{config} failed (exit {proc.returncode})")
        return {**json.loads(out.strip().splitlines()[-1]), "wall": time.perf_counter() - start, "peak_rss": peak}


def projection(
    gpu: dict, score_over_body: float, docs: float = 1e6, tokens: int = 256, params: float = 6.74e9, gpus: int = 8
) -> str:
    """GPU-hours of a ``docs``-document audit of a ``params`` model, from the largest measured shape's body rate."""
    shape = max(gpu, key=lambda k: gpu[k]["params"])
    body = gpu[shape]["tokens_per_s"] * gpu[shape]["params"] / params  # FLOPs per token scale with parameters
    rate = body * score_over_body
    hours = docs * tokens / rate / 3600
    return (
        f"7B ({params / 1e9:.2f}B parameters), {docs:,.0f} documents x {tokens} tokens = {docs * tokens / 1e6:,.0f}M "
        "tokens:\n"
        f"  body rate scaled from {shape} ({gpu[shape]['tokens_per_s'] / 1e3:.0f}k tokens/s at "
        f"{gpu[shape]['params'] / 1e9:.2f}B): "
        f"{body / 1e3:.1f}k tokens/s per GPU; scorer at {100 * score_over_body:.0f}% of the body: {rate / 1e3:.1f}k "
        "tokens/s\n"
        f"  {hours:.1f} GPU-hours; on {gpus} GPUs (one Ray actor each, model loaded once per actor): "
        f"{60 * hours / gpus:.0f} min "
        "+ a few minutes of actor start and model load; the pass is linear in tokens (2x with --stride at half the "
        "window)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--actors", type=int, default=2)
    parser.add_argument("--gpu-json", type=Path, help="output of benchmarks/score_gpu.py --json")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--n", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--work", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child, DATA, args.n, args.work, args.actors)))
        return

    configs = {
        "in-process": args.docs,
        f"ray ({args.actors} actors)": args.docs,
        "ray, 8 documents": 8,
        "batch-1 loop": args.docs,
    }
    runs: dict[str, list[dict]] = {name: [] for name in configs}
    for round_ in range(args.rounds):
        for name, n in configs.items():
            runs[name].append(run_config(name, n, args.actors))
        print(f"round {round_ + 1}: " + ", ".join(f"{k} {v[-1]['seconds']:.1f}s" for k, v in runs.items()), flush=True)
    med = {
        name: {key: statistics.median(r[key] for r in rs) for key in ("seconds", "wall", "peak_rss", "tokens")}
        for name, rs in runs.items()
    }
    rate = {name: m["tokens"] / m["seconds"] for name, m in med.items()}
    ray_name = f"ray ({args.actors} actors)"
    fixed = med["ray, 8 documents"]["seconds"]
    marginal = (med[ray_name]["tokens"] - med["ray, 8 documents"]["tokens"]) / max(
        med[ray_name]["seconds"] - fixed, 1e-9
    )
    print(f"\n{args.docs} WikiMIA-128 texts, {MODEL}, fp32 on the CPU, medians of {args.rounds} alternating rounds")
    print("| configuration | tokens/s | x batch-1 | scoring s | command s | peak RSS (tree) |")
    print("|---|---|---|---|---|---|")
    for name, m in med.items():
        print(
            f"| {name} | {rate[name]:.0f} | {rate[name] / rate['batch-1 loop']:.2f}x | {m['seconds']:.1f} | "
            f"{m['wall']:.1f} | "
            f"{m['peak_rss'] / 2**30:.2f} GiB |"
        )
    print(
        f"Ray: fixed cost {fixed:.1f} s (actor start, model load, table write), then {marginal:.0f} tokens/s "
        f"({marginal / rate['in-process']:.2f}x in-process)"
    )
    gpu = H200_BODY
    score_over_body = 0.8  # issue 14's target; measured values replace it with --gpu-json
    if args.gpu_json:
        measured = json.loads(args.gpu_json.read_text())["shapes"]
        gpu = {
            k: {"params": v["params"], "tokens_per_s": v["tokens_per_s"]["model body, large batch"]}
            for k, v in measured.items()
        }
        score_over_body = min(v["score_over_body"] for v in measured.values())
    print(
        "\nProjection ("
        + ("measured GPU rates" if args.gpu_json else "issue 14's H200 body rates, scorer at the 80% target")
        + "):"
    )
    print(projection(gpu, score_over_body))
    print(
        json.dumps({"medians": med, "tokens_per_s": rate, "ray_fixed_s": fixed, "ray_marginal_tokens_per_s": marginal})
    )


if __name__ == "__main__":
    main()
