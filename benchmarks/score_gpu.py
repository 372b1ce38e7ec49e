"""GPU throughput of the scorer against the model body alone and a batch-1 loop (issue 14's table).

For random-weight Llama models of SmolLM2's shapes (135M and 1.7B; random weights change no
speed) with the real SmolLM2 tokenizer, on distinct 256-token documents made of pairs of the
bundled PG-19 openings (the scorer scores a repeated text once, so every document differs),
prints tokens/s and the share of the device's measured bf16 dense peak for:
- the batch-1 loop of the published implementations (one document per tokenizer call and per
  forward pass, full-vocabulary softmax and log-softmax, statistics on the host);
- ``CausalLMTarget.score`` end to end (tokenization, batching, statistics, host copies) at 32
  and 128 rows of 256 tokens;
- forward + statistics alone at 128 rows (pre-tokenized; no tokenizer, no cache);
- the model body alone at 128 rows (``base_model``, no output layer, no statistics).
Targets: score >= 80% of the body's rate at 128 rows, >= 20x the batch-1 loop at 135M, >= 10x at 1.7B.

``--auc`` also scores WikiMIA-64 with the real SmolLM2-135M on the device (bf16 and fp32) and on
the CPU in fp32, and prints every gray-box signal's AUC shift (target: <= 0.005).

Configurations alternate for ``--rounds`` rounds and medians are printed. Runs on a CPU too, for a
smoke test (``--device cpu --dtype fp32 --docs 64 --shapes 135m --rounds 1``); the numbers that
matter come from a GPU machine. Usage: ``python benchmarks/score_gpu.py [--shapes 135m 1.7b] [--auc]``
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

import torch

from verifier.data import load_documents
from verifier.signals import ScoredDocument, compute_signals, make_signals
from verifier.stats.metrics import evaluate_scores
from verifier.targets import ScoringOptions
from verifier.targets.kinds.causal_lm import CausalLMTarget
from verifier.targets.model_source import resolve_model

ROOT = Path(__file__).resolve().parent.parent
PG19 = ROOT / "verifier" / "examples" / "data" / "corpus" / "demo-v1" / "pg19-openings.jsonl"
WIKIMIA64 = ROOT / "verifier" / "examples" / "data" / "wikimia" / "length64.jsonl"
SHAPES = {  # SmolLM2's published configurations
    "135m": {
        "hidden_size": 576,
        "intermediate_size": 1536,
        "num_hidden_layers": 30,
        "num_attention_heads": 9,
        "num_key_value_heads": 3,
    },
    "1.7b": {
        "hidden_size": 2048,
        "intermediate_size": 8192,
        "num_hidden_layers": 24,
        "num_attention_heads": 32,
        "num_key_value_heads": 32,
    },
}
TOKENS = 256


def sync(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def timed(fn, device: str) -> float:
    sync(device)
    start = time.perf_counter()
    fn()
    sync(device)
    return time.perf_counter() - start


def dense_peak(device: str, dtype: torch.dtype, size: int = 8192) -> float:
    """Best-of-5 dense GEMM rate in TFLOP/s: the peak the shares are taken of."""
    size = size if device.startswith("cuda") else 1024
    a, b = torch.randn(size, size, device=device, dtype=dtype), torch.randn(size, size, device=device, dtype=dtype)
    a @ b
    return max(2 * size**3 / timed(lambda: a @ b, device) for _ in range(5)) / 1e12


def smollm2_tokenizer(folder: Path | None = None):
    """SmolLM2's tokenizer: read from its GGUF file, or from ``folder`` where it was saved beforehand
    (a device machine that cannot take the 94 MB GGUF package along takes the 3 MB tokenizer)."""
    from transformers import AutoTokenizer

    if folder is not None:
        return AutoTokenizer.from_pretrained(folder)
    source = resolve_model("smollm2-135m")
    return AutoTokenizer.from_pretrained(source.location, gguf_file=source.gguf_file)


def random_model_folder(shape: str, tokenizer, folder: Path, dtype: torch.dtype) -> Path:
    """A Llama of SmolLM2's ``shape`` with seeded random weights and the real tokenizer, saved as a model folder."""
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(
        vocab_size=len(tokenizer),
        max_position_embeddings=8192,
        tie_word_embeddings=True,
        rope_theta=100000.0,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        **SHAPES[shape],
    )
    torch.manual_seed(0)
    model = LlamaForCausalLM(config).to(dtype)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def distinct_documents(count: int) -> list[str]:
    """``count`` distinct texts of at least 256 tokens: ordered pairs of PG-19 openings."""
    openings = [row for row in load_documents(PG19).texts]
    n = len(openings)
    return [f"{openings[i % n]}\n\n{openings[(i % n + 1 + i // n) % n]}" for i in range(count)]


@torch.inference_mode()
def batch1_loop(target: CausalLMTarget, texts: list[str]) -> None:
    """One text per tokenizer call and forward pass, as the published implementations score."""
    device = target.options.device
    for text in texts:
        ids = target.tokenizer(text[: target.options.max_chars], truncation=True, max_length=TOKENS)["input_ids"]
        logits = target.model(torch.tensor([ids], device=device)).logits[0, :-1].float()
        probs, logp = torch.softmax(logits, -1), torch.log_softmax(logits, -1)
        mu = (probs * logp).sum(-1)
        sigma = ((probs * logp.square()).sum(-1) - mu.square()).clamp_min(0).sqrt()
        _ = (
            logp.gather(-1, torch.tensor(ids[1:], device=device)[:, None]).cpu().numpy(),
            mu.cpu().numpy(),
            sigma.cpu().numpy(),
        )


def prepared_batches(target: CausalLMTarget, texts: list[str]) -> list:
    """The pre-tokenized passes of a full-width run: what forward + statistics alone are timed on."""
    windows = [w for i, enc in enumerate(target.encode_many(texts)) for w in target.windows(str(i), enc)]
    width = TOKENS
    rows = target.rows_at(width)
    return [windows[start : start + rows] for start in range(0, len(windows), rows)]


@torch.inference_mode()
def forward_and_stats(target: CausalLMTarget, batches: list) -> None:
    pending = None
    for batch in batches:
        launched = target._launch(batch, TOKENS)
        if pending is not None:
            target._collect(pending)
        pending = launched
    target._collect(pending)


@torch.inference_mode()
def body_alone(target: CausalLMTarget, batches: list) -> None:
    device, rows = target.options.device, target.rows_at(TOKENS)
    for batch in batches:
        ids = torch.zeros((rows, TOKENS), dtype=torch.long)
        for row, window in enumerate(batch):
            ids[row, : len(window.ids)] = torch.as_tensor(window.ids)
        ids = ids.to(device)
        target.model.base_model(input_ids=ids, attention_mask=torch.ones_like(ids))


def measure_shape(shape: str, args: argparse.Namespace, tokenizer, peak: float, work: Path) -> dict:
    dtype = {"bf16": torch.bfloat16, "fp32": torch.float32}[args.dtype]
    folder = random_model_folder(shape, tokenizer, work / shape, dtype)
    count = args.docs if shape == "135m" else args.docs // 2
    texts = distinct_documents(count)
    small, large = args.rows
    targets = {
        rows: CausalLMTarget(
            str(folder),
            ScoringOptions(device=args.device, dtype=args.dtype, batch_tokens=rows * TOKENS, max_tokens=TOKENS),
        )
        for rows in (small, large)
    }
    big = targets[large]
    n_tokens = sum(len(enc.ids) for enc in big.encode_many(texts))
    batch1_texts = texts[: args.batch1_docs]
    batch1_tokens = sum(len(enc.ids) for enc in big.encode_many(batch1_texts))
    batches = prepared_batches(big, texts)
    params = sum(p.numel() for p in big.model.parameters())
    work_of = {
        "batch-1 loop": (lambda: batch1_loop(big, batch1_texts), batch1_tokens),
        "score, small batch": (lambda: targets[small].score(texts), n_tokens),
        "score, large batch": (lambda: big.score(texts), n_tokens),
        "forward + statistics, large batch": (lambda: forward_and_stats(big, batches), n_tokens),
        "model body, large batch": (lambda: body_alone(big, batches), n_tokens),
    }
    runs: dict[str, list[float]] = {name: [] for name in work_of}
    for name, (fn, _) in work_of.items():  # warm-up: kernels chosen, allocator primed
        batch1_loop(big, batch1_texts[:8]) if name == "batch-1 loop" else fn()
    for round_ in range(args.rounds):
        for name, (fn, _) in work_of.items():
            runs[name].append(timed(fn, args.device))
        print(f"{shape} round {round_ + 1}: " + ", ".join(f"{k} {v[-1]:.2f}s" for k, v in runs.items()), flush=True)
    rate = {name: work_of[name][1] / statistics.median(times) for name, times in runs.items()}
    share = {name: 100 * value * 2 * params / (peak * 1e12) for name, value in rate.items()}
    return {
        "params": params,
        "documents": count,
        "tokens": n_tokens,
        "tokens_per_s": rate,
        "percent_of_peak": share,
        "score_over_body": rate["score, large batch"] / rate["model body, large batch"],
        "score_over_batch1": rate["score, large batch"] / rate["batch-1 loop"],
    }


def auc_shift(args: argparse.Namespace) -> dict:
    """Every gray-box signal's AUC on WikiMIA-64 with SmolLM2: device (bf16, fp32) against CPU fp32."""
    docs = load_documents(WIKIMIA64, label_field="label")
    names = ["loss", "zlib", "min_k", "min_k_pp", "gap_k", "lowercase"]
    aucs = {}
    for label, device, dtype in (
        ("cpu fp32", "cpu", "fp32"),
        (f"{args.device} fp32", args.device, "fp32"),
        (f"{args.device} bf16", args.device, "bf16"),
    ):
        target = CausalLMTarget("smollm2-135m", ScoringOptions(device=device, dtype=dtype))
        signals = make_signals(names, target.capabilities)
        scores, lower = target.score(docs.texts), target.score([t.lower() for t in docs.texts])
        scored = [
            ScoredDocument(text=t[: target.max_chars], target=s, lower=lo)
            for t, s, lo in zip(docs.texts, scores, lower)
        ]
        aucs[label] = {
            name: evaluate_scores(name, c.values, docs.labels).auc
            for name, c in compute_signals(scored, signals).items()
        }
    base = aucs.pop("cpu fp32")
    return {
        "cpu fp32": base,
        **{
            label: {name: {"auc": v, "shift": abs(v - base[name])} for name, v in values.items()}
            for label, values in aucs.items()
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--dtype", default="bf16", choices=["bf16", "fp32"])
    parser.add_argument("--shapes", nargs="+", default=["135m", "1.7b"], choices=sorted(SHAPES))
    parser.add_argument("--docs", type=int, default=4000, help="documents at 135M (half as many at 1.7B)")
    parser.add_argument("--batch1-docs", type=int, default=300, help="documents the batch-1 loop is timed on")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--rows", type=int, nargs=2, default=[32, 128], metavar=("SMALL", "LARGE"), help="rows of 256 tokens per pass"
    )
    parser.add_argument("--auc", action="store_true")
    parser.add_argument("--json", type=Path, help="also write the results here")
    parser.add_argument(
        "--tokenizer", type=Path, help="SmolLM2's tokenizer saved as a folder (default: read from its GGUF)"
    )
    args = parser.parse_args()

    dtype = {"bf16": torch.bfloat16, "fp32": torch.float32}[args.dtype]
    peak = statistics.median(dense_peak(args.device, dtype) for _ in range(3))
    name = torch.cuda.get_device_name(args.device) if args.device.startswith("cuda") else "cpu"
    print(f"{name}: {args.dtype} dense peak {peak:.1f} TFLOP/s (GEMM, best of 5, median of 3)", flush=True)
    tokenizer = smollm2_tokenizer(args.tokenizer)
    results: dict[str, object] = {"device": name, "dtype": args.dtype, "peak_tflops": peak, "shapes": {}}
    with tempfile.TemporaryDirectory() as work:
        for shape in args.shapes:
            results["shapes"][shape] = measure_shape(shape, args, tokenizer, peak, Path(work))  # type: ignore[index]
    print(
        f"\ntokens/s (% of {args.dtype} peak), medians of {args.rounds} alternating rounds, {TOKENS}-token documents, "
        f"small / large batch = {args.rows[0]} / {args.rows[1]} rows"
    )
    columns = [
        "batch-1 loop",
        "score, small batch",
        "score, large batch",
        "forward + statistics, large batch",
        "model body, large batch",
    ]
    print("| model | " + " | ".join(columns) + " | score / body | score / batch-1 |")
    print("|---" * (len(columns) + 3) + "|")
    for shape, r in results["shapes"].items():  # type: ignore[union-attr]
        cells = [f"{r['tokens_per_s'][c] / 1e3:.1f}k ({r['percent_of_peak'][c]:.1f}%)" for c in columns]
        print(
            f"| {shape} | "
            + " | ".join(cells)
            + f" | {100 * r['score_over_body']:.0f}% | {r['score_over_batch1']:.1f}x |"
        )
    if args.auc:
        results["auc"] = shifts = auc_shift(args)
        print("\nWikiMIA-64, SmolLM2-135M: AUC on the CPU in fp32 and the shift on the device")
        for label, values in shifts.items():
            if label != "cpu fp32":
                print(
                    f"{label}: "
                    + ", ".join(f"{n} {v['auc']:.4f} (|shift| {v['shift']:.4f})" for n, v in values.items())
                )
        print(
            "largest |shift|: "
            f"{max(v['shift'] for k, vs in shifts.items() if k != 'cpu fp32' for v in vs.values()):.4f}"
        )
    if args.json:
        args.json.write_text(json.dumps(results, indent=1, default=float))
    print(json.dumps(results, default=float))


if __name__ == "__main__":
    main()
