"""Corpus index benchmark: build rate, index size, query latencies, attribution and overlap.

The corpus is real text available offline: the project's bundled data (PG-19 openings,
WikiMIA; WikiMIA-24 is kept out, as the overlap queries) and the Python sources and documentation of the installed
packages (one
document per file), up to ``--megabytes`` MB. Prints:
- build MB/s (input bytes / wall seconds, one shard per ``--shard-mb``) and index bytes per input byte;
- count p50/p95 (single-string queries: word runs cut from corpus documents, and absent strings);
- documents-containing (``find``, first 10 documents) p50;
- attribution (maximal verbatim spans with their documents) of a 2,500-character text, p50;
- 13-gram overlap of 1,000 documents (WikiMIA-24 texts, one batched lookup), and the route's full
  lookup of 200 of them (50-character rule and edited-copy check).
Targets on the 2-core machine: build >= 8 MB/s, count p50 < 0.1 ms, attribution < 100 ms,
overlap of 1,000 documents < 10 s, the structure checks of every open (suffix-array range, 4,096
sampled pairs in order) at most 10% of the open time. Usage: python benchmarks/index.py [--megabytes 110]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

from verifier.corpus import CorpusIndex, build_index, count, find, lookup, normalise
from verifier.corpus.index import check_structure

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "verifier" / "examples" / "data"


def gather(folder: Path, megabytes: int) -> tuple[Path, int]:
    """A JSONL corpus of real text: bundled data first, then installed packages' sources."""
    out = folder / "corpus.jsonl"
    budget = megabytes * 1_000_000
    written = 0
    with out.open("w", encoding="utf-8") as handle:
        for path in sorted(
            p for p in DATA.rglob("*.jsonl") if "wikimia24" not in p.parts
        ):  # WikiMIA-24 is the overlap query set
            for line in path.read_text(encoding="utf-8").splitlines():
                row = json.loads(line)
                for text in [row["text"]] if "text" in row else [row["cyrillic"], row["latin"]]:  # Serbian pairs
                    handle.write(json.dumps({"text": text, "source": path.name}, ensure_ascii=False) + "\n")
                    written += len(text.encode())
        site = Path(json.__file__).parent.parent  # the standard library, then site-packages
        roots = [site] + [Path(p) for p in sys.path if p.endswith("site-packages")]
        for root in roots:
            for path in sorted(root.rglob("*")):
                if written >= budget:
                    break
                if path.suffix not in (".py", ".rst", ".md", ".txt") or not path.is_file():
                    continue
                try:
                    text = path.read_text(encoding="utf-8")
                except (UnicodeDecodeError, OSError):
                    continue
                if text.strip():
                    handle.write(json.dumps({"text": text, "id": str(path.relative_to(root))}) + "\n")
                    written += len(text.encode())
    return out, written


def timed(fn, repeats: int) -> list[float]:
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return times


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--megabytes", type=int, default=110)
    parser.add_argument("--shard-mb", type=int, default=512)
    parser.add_argument("--queries", type=int, default=2000)
    args = parser.parse_args()
    rng = random.Random(0)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        corpus, text_bytes = gather(folder, args.megabytes)
        input_bytes = corpus.stat().st_size
        report = build_index([corpus], folder / "index", shard_bytes=args.shard_mb << 20)
        index_bytes = sum(p.stat().st_size for p in (folder / "index").rglob("*") if p.is_file())
        print(
            f"corpus: {input_bytes / 1e6:.1f} MB JSONL ({text_bytes / 1e6:.1f} MB of text), {report.documents} "
            f"documents, {report.shards} shard(s)"
        )
        print(
            f"build: {report.seconds:.1f} s = {input_bytes / 1e6 / report.seconds:.1f} MB/s; "
            f"index {index_bytes / 1e6:.1f} MB = {index_bytes / input_bytes:.2f} bytes per input byte"
        )
        opens = []
        for _ in range(3):  # alternating with the structure checks alone: medians, as timings swing between runs
            started = time.perf_counter()
            index = CorpusIndex.open(folder / "index")
            opens.append(time.perf_counter() - started)
        checks = []
        for _ in range(3):
            started = time.perf_counter()
            for shard in index.shards:
                check_structure(shard, shard.entry.name, "sampled")
            checks.append(time.perf_counter() - started)
        started = time.perf_counter()
        for shard in index.shards:
            check_structure(shard, shard.entry.name, "full")
        full = time.perf_counter() - started
        open_s, check_s = statistics.median(opens), statistics.median(checks)
        print(
            f"open with every digest and the sampled structure checked: {open_s:.2f} s (median of 3); the structure "
            "checks "
            f"alone {check_s:.3f} s = {check_s / open_s:.1%} of the open; full check (suffix arrays recomputed, "
            "audits of a "
            f"prebuilt index, 'verifier corpus check'): {full:.1f} s = {text_bytes / 1e6 / full:.1f} MB/s of text"
        )
        docs = [json.loads(line)["text"] for line in corpus.read_text(encoding="utf-8").splitlines()]
        queries = []
        for _ in range(args.queries):
            words = normalise(rng.choice(docs)).split()
            if not words:
                continue
            k = rng.randint(1, 8)
            i = rng.randrange(max(1, len(words) - k))
            queries.append(" ".join(words[i : i + k]))
        queries += [f"zq{rng.randrange(10**9)} absent words" for _ in range(args.queries // 10)]
        rng.shuffle(queries)
        counts = [timed(lambda q=q: count(index, q), 1)[0] for q in queries]
        finds = [timed(lambda q=q: find(index, q, 10), 1)[0] for q in queries[:500]]

        def ms(xs, p):
            return statistics.quantiles(xs, n=100)[p - 1] * 1000

        print(f"count: p50 {ms(counts, 50):.3f} ms, p95 {ms(counts, 95):.3f} ms ({len(counts)} queries)")
        print(f"documents containing (first 10): p50 {ms(finds, 50):.3f} ms, p95 {ms(finds, 95):.3f} ms")
        long_docs = [d for d in docs if len(d) >= 2500]
        samples = [rng.choice(long_docs)[:2500] for _ in range(20)]
        attribution = [timed(lambda s=s: lookup(index, [s], min_span_words=8), 1)[0] for s in samples]
        chars = [timed(lambda s=s: lookup(index, [s], characters=True), 1)[0] for s in samples[:5]]
        print(
            "attribution of a 2,500-character text (maximal spans >= 8 words, their documents): p50 "
            f"{statistics.median(attribution) * 1000:.1f} ms; "
            f"with the 50-character rule: p50 {statistics.median(chars) * 1000:.1f} ms"
        )
        bench = [
            json.loads(line)["text"]
            for path in sorted((DATA / "wikimia24").glob("*.jsonl"))
            for line in path.read_text(encoding="utf-8").splitlines()
        ][:1000]
        started = time.perf_counter()
        results = lookup(index, bench, ngram=13)
        seconds = time.perf_counter() - started
        found = sum(r.ngrams_found > 0 for r in results)
        print(
            f"13-gram overlap of {len(bench)} documents ({sum(r.words for r in results)} words): {seconds:.2f} s; "
            f"{found} share a 13-gram with the corpus"
        )
        started = time.perf_counter()
        checked = lookup(index, bench[:200], ngram=13, characters=True, near_duplicates=0.7)
        print(
            "the route's full lookup (50-character rule, edited-copy check) of 200 of them: "
            f"{time.perf_counter() - started:.2f} s; "
            f"{sum(bool(r.near_duplicates) for r in checked)} with an edited copy at 70%"
        )


if __name__ == "__main__":
    main()
