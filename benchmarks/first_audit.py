"""A first audit of your own model, timed: what a new user waits for, and how fast bad input is refused.

Builds "your own model" - a tiny GPT-2 (2 layers, random weights, a byte-level BPE tokenizer trained
on the texts) - and "your own files" - 40 suspect and 40 held-out WikiMIA texts of the same period
as JSONL - then runs the installed CLI as a user would (a subprocess each, so every time includes
Python's start and the imports): ``verifier init`` (writes and checks the claim), ``verifier audit``
(an empty score cache), the identical re-run (which finds its bundle), and three bad inputs that
must be refused in one line before any model loads: a 3-document set, a ``where`` no row matches,
a mistyped model name. The same audit is then run with the bundled SmolLM2-135M (GGUF, loaded
with transformers) on an empty and on a warm cache. Each step runs ``--rounds`` times; the median
and the range are printed, with the exit status (0 holds, 3 contradicted, 4 cannot say, 2 bad input)
and the number of words of the report's plain-language lead.

Usage: ``python benchmarks/first_audit.py [--rounds 3]``
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WIKIMIA = ROOT / "verifier" / "examples" / "data" / "wikimia" / "length64.jsonl"


def verifier(*args: str, cwd: Path) -> tuple[float, int, str]:
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "verifier.cli", *args], cwd=cwd, capture_output=True, text=True)
    return time.perf_counter() - started, done.returncode, done.stdout + done.stderr


def tiny_model(folder: Path, texts: list[str]) -> None:
    import torch
    from tokenizers import ByteLevelBPETokenizer
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(texts, vocab_size=600, special_tokens=["<|endoftext|>"])
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=bpe, eos_token="<|endoftext|>", pad_token="<|endoftext|>")
    torch.manual_seed(0)
    config = GPT2Config(vocab_size=len(tokenizer), n_positions=256, n_embd=64, n_layer=2, n_head=4)
    GPT2LMHeadModel(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    rows = [json.loads(line) for line in WIKIMIA.read_text().splitlines()]
    same_period = [r["text"] for r in rows if r["label"] == 1]
    times: dict[str, list[float]] = {}
    status: dict[str, set[int]] = {}
    words: set[int] = set()
    for _ in range(args.rounds):
        with tempfile.TemporaryDirectory() as tmp:
            work = Path(tmp)
            audit = work / "my-audit"
            audit.mkdir()
            for name, part in (("suspect", same_period[:40]), ("heldout", same_period[40:80])):
                (audit / f"{name}.jsonl").write_text("".join(json.dumps({"text": t}) + "\n" for t in part))
            (audit / "few.jsonl").write_text("".join(json.dumps({"text": t}) + "\n" for t in same_period[:3]))
            tiny_model(work / "my-model", same_period)
            cache = ["--cache-dir", str(work / "cache")]

            def step(name: str, *command: str, work: Path = work) -> str:
                seconds, code, output = verifier(*command, cwd=work)
                times.setdefault(name, []).append(seconds)
                status.setdefault(name, set()).add(code)
                return output

            base = ["init", "my-audit/claim.yaml", "--suspect", "my-audit/suspect.jsonl", "--made-by", "me"]
            step(
                "init (write and check the claim)", *base, "--model", "my-model", "--heldout", "my-audit/heldout.jsonl"
            )
            for name in ("audit, tiny HF model, empty cache", "identical re-run (finds its bundle)"):
                step(name, "audit", "my-audit/claim.yaml", "--no-sign", *cache)
            (bundle,) = (work / "evidence").iterdir()
            words.add(len(json.loads((bundle / "findings.json").read_text())["lead"].split()))
            shutil.rmtree(work / "evidence")
            step(
                "refused: a 3-document set (init)",
                "init",
                "bad.yaml",
                "--model",
                "smollm2-135m",
                "--suspect",
                "my-audit/few.jsonl",
                "--heldout",
                "my-audit/heldout.jsonl",
                "--made-by",
                "me",
            )
            claim = (audit / "claim.yaml").read_text()
            (audit / "nothing.yaml").write_text(
                claim.replace('{path: "heldout.jsonl"}', '{path: "heldout.jsonl", where: {label: 7}}')
            )
            step("refused: a where no row matches (audit)", "audit", "my-audit/nothing.yaml", "--no-sign", *cache)
            step("refused: a mistyped model name (init)", *base, "--model", "smollm2-135", "--force")
            (audit / "smol.yaml").write_text(claim.replace('target: "../my-model"', 'target: "smollm2-135m"'))
            smol_cache = ["--cache-dir", str(work / "smol-cache")]
            for name in ("audit, SmolLM2-135M, empty cache", "audit, SmolLM2-135M, warm cache (--force)"):
                step(name, "audit", "my-audit/smol.yaml", "--no-sign", "--force", *smol_cache)
    print(f"{args.rounds} rounds, 40 suspect + 40 held-out documents; seconds per step, median [min, max]:")
    print()
    print("| step | seconds | exit status |")
    print("|---|---|---|")
    for name, values in times.items():
        print(
            f"| {name} | {statistics.median(values):.1f} [{min(values):.1f}, {max(values):.1f}] | "
            f"{', '.join(str(c) for c in sorted(status[name]))} |"
        )
    print()
    print(f"words in the report's lead (tiny-model audit): {sorted(words)}")


if __name__ == "__main__":
    main()
