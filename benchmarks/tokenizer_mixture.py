"""Tokenizer data-mixture inference (``verifier.summary.mixture``): its error on byte-level BPE tokenizers
trained here on known language mixtures.

Each trial draws ``--languages`` languages of the candidates (wordfreq's space-delimited ones) and
their byte shares from a flat Dirichlet, writes ``--megabytes`` of text by sampling each language's
20,000 most frequent words by frequency (lines of 20 words, shuffled), trains a byte-level BPE
tokenizer on it (``tokenizers``, vocabulary 256 + ``--merges``), and infers the shares of all
candidates from its merge list. The inference reads each language's 3,000 most frequent words: the
training text is drawn from the same word lists, so this is the favourable case (real text has
punctuation, digits, names and code the lists lack); the paper's reference on controlled mixtures
of real text is a mean absolute error of about 1e-2.

Printed per trial: the mean absolute error over every candidate, over the languages in the mixture,
and the largest error; then the median and range over trials.

Usage: ``python benchmarks/tokenizer_mixture.py [--trials 10] [--languages 5] [--megabytes 2] [--merges 1500]
[--record]``
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

from verifier.summary.mixture import byte_level_merges, candidates, infer_mixture
from verifier.validation import record

LINE = 20
TRAINING_WORDS = 20_000


def training_text(shares: dict[str, float], megabytes: float, rng: np.random.Generator) -> list[str]:
    import wordfreq

    lines: list[str] = []
    for code, share in shares.items():
        table = wordfreq.get_frequency_dict(code, wordlist="small")
        words = sorted(table, key=table.__getitem__, reverse=True)[:TRAINING_WORDS]
        p = np.array([table[w] for w in words])
        p /= p.sum()
        mean_bytes = float(p @ np.array([len(w.encode()) + 1 for w in words]))
        count = int(share * megabytes * 1e6 / mean_bytes)
        drawn = rng.choice(len(words), size=count, p=p)
        lines += [" ".join(words[i] for i in drawn[j : j + LINE]) for j in range(0, count, LINE)]
    order = rng.permutation(len(lines))
    return [lines[i] for i in order]


def trial(seed: int, k: int, megabytes: float, merges: int) -> dict[str, float]:
    from tokenizers import ByteLevelBPETokenizer

    rng = np.random.default_rng(seed)
    pool = candidates()
    chosen = [pool[i] for i in rng.choice(len(pool), size=k, replace=False)]
    truth = dict(zip(chosen, rng.dirichlet(np.ones(k))))
    started = time.perf_counter()
    tokenizer = ByteLevelBPETokenizer()
    tokenizer.train_from_iterator(
        training_text(truth, megabytes, rng), vocab_size=256 + merges, min_frequency=2, show_progress=False
    )
    trained = time.perf_counter() - started
    found = infer_mixture(byte_level_merges(tokenizer.to_str()))
    errors = {c: abs(found.shares.get(c, 0.0) - truth.get(c, 0.0)) for c in pool}
    row = {
        "mae_all": float(np.mean(list(errors.values()))),
        "mae_mixed": float(np.mean([errors[c] for c in chosen])),
        "max": max(errors.values()),
        "seconds": time.perf_counter() - started,
    }
    shown = ", ".join(f"{c} {truth[c]:.3f}->{found.shares.get(c, 0):.3f}" for c in chosen)
    print(
        f"| {seed} | {shown} | {row['mae_all']:.4f} | {row['mae_mixed']:.4f} | {row['max']:.3f} | "
        f"{trained:.0f} + {row['seconds'] - trained:.0f} s |",
        flush=True,
    )
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=10)
    parser.add_argument("--languages", type=int, default=5)
    parser.add_argument("--megabytes", type=float, default=2.0)
    parser.add_argument("--merges", type=int, default=1500)
    parser.add_argument("--record", action="store_true")
    args = parser.parse_args()
    print(
        f"# Tokenizer mixture inference: {args.trials} byte-level BPE tokenizers ({args.merges} merges) trained on "
        f"{args.megabytes} MB of {args.languages}-language mixtures (shares ~ Dirichlet(1)); {len(candidates())} "
        "candidate languages\n"
    )
    print("| seed | true -> estimated byte shares | MAE (all candidates) | MAE (mixed languages) | max error | time |")
    print("|---|---|---|---|---|---|")
    rows = [trial(seed, args.languages, args.megabytes, args.merges) for seed in range(args.trials)]
    summary = {key: np.array([r[key] for r in rows]) for key in ("mae_all", "mae_mixed", "max")}
    print()
    for key, values in summary.items():
        print(f"- {key}: median {np.median(values):.4f} (range {values.min():.4f}-{values.max():.4f})")
    if args.record:
        record(
            "tokenizer_mixture",
            [
                {
                    "route": "summary",
                    "n": args.merges,
                    "trials": args.trials,
                    "builds": args.trials,
                    "quantity": f"mean absolute error of tokenizer mixture shares ({key.removeprefix('mae_')}"
                    f" languages)",
                    "scenario": f"byte-level BPE trained on {args.megabytes} MB of {args.languages}-language "
                    "word-list text (favourable: the inference reads the same lists)",
                    "value": round(float(np.median(summary[key])), 5),
                    "spread": [round(float(summary[key].min()), 5), round(float(summary[key].max()), 5)],
                }
                for key in ("mae_all", "mae_mixed")
            ],
            ["tokenizers"],
            "python benchmarks/tokenizer_mixture.py " + " ".join(sys.argv[1:]),
        )
        print("\nrecorded in verifier/validation/table.json", file=sys.stderr)


if __name__ == "__main__":
    main()
