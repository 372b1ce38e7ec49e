"""Throughput and precision of the batched scorer against a batch-1 published-style loop.

Prints, on the same WikiMIA texts with SmolLM2-135M at 256 tokens:
- tokens/s of the batched scorer in fp32 and bf16, and of a batch-1 loop written the way the
  published implementations score (one unpadded text per forward pass, full-vocabulary
  softmax and log-softmax, statistics on the host), with ratios;
- the machine's measured fp32 matmul GFLOP/s and the scorer's share of it (2 x params FLOPs/token);
- how far each signal's AUC moves between fp32 and bf16.

Measured on the 2-core development machine (AVX-512 with avx512_bf16 but no AMX): batched fp32
563 tokens/s, 1.33x the batch-1 loop (424), 51% of the fp32 GEMM roofline (298 GFLOP/s); bf16
0.95x (its GEMMs run at about half the fp32 rate without AMX), AUC shifts <= 0.004. Dynamic int8
quantisation of the body reached 2.0x but moved AUCs by 0.02-0.06, so it is not offered.

Machines here are noisy (2-5x between runs), so configurations are run in alternation for
several rounds and medians are reported. Usage: python benchmarks/score_throughput.py [--texts 200] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import numpy as np
import torch

from verifier.data import load_documents
from verifier.signals import ScoredDocument, compute_signals, make_signals
from verifier.stats.metrics import evaluate_scores
from verifier.targets import ScoringOptions
from verifier.targets.kinds.causal_lm import CausalLMTarget

DATA = Path(__file__).resolve().parent.parent / "verifier" / "examples" / "data" / "wikimia" / "length128.jsonl"


def matmul_gflops(size: int = 2048, repeats: int = 5) -> float:
    """Best-of-``repeats`` fp32 GEMM rate: the roofline the scorer is compared with."""
    a, b = torch.randn(size, size), torch.randn(size, size)
    a @ b  # warm-up
    best = 0.0
    for _ in range(repeats):
        start = time.perf_counter()
        a @ b
        best = max(best, 2 * size**3 / (time.perf_counter() - start) / 1e9)
    return best


@torch.inference_mode()
def batch1_loop(target: CausalLMTarget, texts: list[str]) -> int:
    """Score one unpadded text per forward pass, as the published code does; returns tokens seen."""
    tokens = 0
    for text in texts:
        ids = target.tokenizer(text[: target.options.max_chars], truncation=True, max_length=target.options.max_tokens)[
            "input_ids"
        ]
        logits = target.model(torch.tensor([ids])).logits[0, :-1].float()
        probs = torch.softmax(logits, dim=-1).numpy()
        logp = torch.log_softmax(logits, dim=-1).numpy()
        mu = (probs * logp).sum(-1)
        sigma = np.sqrt(np.maximum((probs * logp**2).sum(-1) - mu**2, 0))
        _ = logp[np.arange(len(ids) - 1), ids[1:]], sigma
        tokens += len(ids)
    return tokens


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--texts", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--batch-tokens", type=int, default=None, help="tokens per forward pass (default: the scorer's)"
    )
    args = parser.parse_args()

    docs = load_documents(DATA, label_field="label")
    texts, labels = docs.texts[: args.texts], docs.labels[: args.texts]
    fp32 = CausalLMTarget("smollm2-135m", ScoringOptions(dtype="fp32", batch_tokens=args.batch_tokens))
    bf16 = CausalLMTarget("smollm2-135m", ScoringOptions(dtype="bf16", batch_tokens=args.batch_tokens))
    n_tokens = sum(len(fp32.encode(t).ids) for t in texts)
    params = sum(p.numel() for p in fp32.model.parameters())

    runs: dict[str, list[float]] = {"batch-1 loop fp32": [], "batched fp32": [], "batched bf16": []}
    results = {}
    for round_ in range(args.rounds):
        runs["batch-1 loop fp32"].append(timed(lambda: batch1_loop(fp32, texts)))
        runs["batched fp32"].append(timed(lambda: results.__setitem__("fp32", fp32.score(texts))))
        runs["batched bf16"].append(timed(lambda: results.__setitem__("bf16", bf16.score(texts))))
        print(f"round {round_ + 1}: " + ", ".join(f"{k} {v[-1]:.1f}s" for k, v in runs.items()), flush=True)

    rate = {name: n_tokens / statistics.median(times) for name, times in runs.items()}
    gflops = statistics.median(matmul_gflops() for _ in range(3))
    base = rate["batch-1 loop fp32"]
    print(
        f"\n{len(texts)} WikiMIA-128 texts, {n_tokens} tokens, {params / 1e6:.1f}M parameters, "
        f"{torch.get_num_threads()} threads, medians of {args.rounds} alternating rounds"
    )
    print(f"{'configuration':<20}{'tokens/s':>10}{'x batch-1':>11}{'% fp32 roofline':>17}")
    for name, value in rate.items():
        share = 100 * value * 2 * params / (gflops * 1e9)
        print(f"{name:<20}{value:>10.0f}{value / base:>10.2f}x{share:>16.1f}%")
    print(f"fp32 matmul roofline: {gflops:.1f} GFLOP/s (2048^3 GEMM, best of 5, median of 3)")

    signals = make_signals(["loss", "zlib", "min_k", "min_k_pp", "gap_k"], fp32.capabilities)
    aucs = {}
    for precision, scores in results.items():
        columns = compute_signals([ScoredDocument(text=t, target=s) for t, s in zip(texts, scores)], signals)
        aucs[precision] = {name: evaluate_scores(name, c.values, labels).auc for name, c in columns.items()}
    print(f"\n{'signal':<10}{'AUC fp32':>10}{'AUC bf16':>10}{'|shift|':>9}")
    for name, ref in aucs["fp32"].items():
        print(f"{name:<10}{ref:>10.4f}{aucs['bf16'][name]:>10.4f}{abs(ref - aucs['bf16'][name]):>9.4f}")
    print(json.dumps({"tokens_per_s": rate, "matmul_gflops": gflops, "auc": aucs}))


if __name__ == "__main__":
    main()
