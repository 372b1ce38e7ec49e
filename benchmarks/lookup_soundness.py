"""Corpus lookup soundness: verdicts per transformation class on real text.

For each class, real texts are put into a corpus (or asked about) in one of the forms the same
text takes in real corpora (``verifier.corpus.stored_forms``), and each text is the subject of
single-document claims (``not_trained_on`` and ``trained_on``) decided by the corpus_lookup
route's own rules. The truth is known, so every VERIFIED / CONTRADICTED is either right or wrong:

- contaminated classes (the text IS in the corpus): a VERIFIED absence is wrong; the CONTRADICTED
  share of the denials is the rate at which contamination is still found;
- absent classes (the text is NOT in the corpus; it only shares source-wide boilerplate): a
  CONTRADICTED denial or a VERIFIED training claim is wrong;
- parts (partial copies, collages): the content is in the corpus, the document is not, so a
  VERIFIED ``trained_on`` is wrong, and so is a VERIFIED absence.

Texts: WikiMIA-24 (2024 Wikipedia event summaries, 64 words), arXiv abstracts, and Project
Gutenberg openings added after PG-19; the background corpus is the demo corpus (PG-19 openings,
Wikipedia events). ``--documents`` texts a class (>= 20 for the acceptance numbers).

    python benchmarks/lookup_soundness.py --documents 24 [--seeds 3] [--record]

With ``--seeds`` the texts are drawn afresh per seed (the spread across draws is printed), and
``--record`` writes each class's wrong-verdict rate to the method-validation table.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from verifier.boundary.resources import resource
from verifier.claims import ClaimKind
from verifier.corpus import CorpusIndex, build_index
from verifier.corpus import stored_forms as forms
from verifier.corpus.backends import LocalBackend
from verifier.corpus.queries import lookup
from verifier.dataset_inference.power import wilson
from verifier.routes.corpus import CorpusLookupParams, CorpusLookupRoute, decide, hidden_forms, judge
from verifier.validation import record

DATA = resource("examples", "data")
KINDS = (ClaimKind.NOT_TRAINED_ON, ClaimKind.TRAINED_ON)


def rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def write_jsonl(path: Path, texts: list[str]) -> None:
    path.write_text("".join(json.dumps({"text": t}, ensure_ascii=False) + "\n" for t in texts), encoding="utf-8")


def verdicts(index: CorpusIndex, suspects: list[str], params: CorpusLookupParams) -> dict[str, Counter]:
    """Per claim kind, the verdicts of single-document claims about each suspect."""
    found = lookup(
        index,
        suspects,
        ngram=params.ngram,
        min_span_words=params.min_span_words,
        spans=5,
        span_documents=3,
        characters=params.fifty_char_rule,
        near_duplicates=params.near_overlap,
        shared_documents=params.shared_documents,
    )
    out = {kind.value: Counter() for kind in KINDS}
    hiding = bool(hidden_forms(LocalBackend(index), params.max_uncompared_share))
    for item in found:
        status = decide(Counter([judge(item, params)[0]]), 1, hiding)
        for kind in KINDS:
            out[kind.value][CorpusLookupRoute.verdicts[status][kind].value] += 1
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--documents", type=int, default=24, help="texts per class")
    parser.add_argument("--seeds", type=int, default=1, help="independent draws of the texts (seeds 0..S-1)")
    parser.add_argument("--record", action="store_true", help="write the rows to the method-validation table")
    args = parser.parse_args()
    results: dict[tuple[str, str], list[tuple[int, int]]] = {}
    for seed in range(args.seeds):
        for name, truth, wrong, claims in run(seed, args.documents):
            results.setdefault((name, truth), []).append((wrong, claims))
    print(
        f"\n{args.seeds} draws: wrong VERIFIED/CONTRADICTED per class, Wilson 95% CI over all claims, spread across "
        "draws"
    )
    rows = []
    for (name, truth), per_seed in results.items():
        total = wilson(sum(w for w, _ in per_seed), sum(c for _, c in per_seed))
        spread = (min(w / c for w, c in per_seed), max(w / c for w, c in per_seed))
        print(
            f"  {name:<70} {total.value:.3f} [{total.ci_low:.3f}, {total.ci_high:.3f}]  draws "
            f"{spread[0]:.3f}-{spread[1]:.3f}"
        )
        rows.append(
            {
                "route": "corpus",
                "quantity": "wrong VERIFIED or CONTRADICTED (single-document claims of both kinds)",
                "scenario": f"{name} ({truth})",
                "n": args.documents,
                "value": round(total.value, 4),
                "ci": (round(total.ci_low, 4), round(total.ci_high, 4)),
                "spread": spread,
                "trials": total.trials,
                "builds": args.seeds,
            }
        )
    if args.record:
        record(
            "lookup_soundness",
            rows,
            [f"texts drawn with seeds 0-{args.seeds - 1}", "demo-v1 corpus"],
            "python benchmarks/lookup_soundness.py " + " ".join(sys.argv[1:]),
        )
        print("recorded in verifier/validation/table.json", file=sys.stderr)


def run(seed: int, n: int) -> list[tuple[str, str, int, int]]:
    """One draw of the texts through every class: (class, truth, wrong verdicts, claims)."""
    rng = random.Random(seed)
    # WikiMIA-24 holds some texts twice (698 rows, 586 texts; 585 distinct openings): each text
    # once, by its first 20 words, so a text drawn as absent is never also in the corpus.
    wiki = list(
        {
            " ".join(r["text"].split()[:20]): r["text"]
            for r in rows(DATA / "wikimia24" / "length64.jsonl")
            if r["label"] == 0
        }.values()
    )
    rng.shuffle(wiki)
    abstracts = [r["text"] for r in rows(DATA / "arxiv-carriers" / "abstracts.jsonl")]
    rng.shuffle(abstracts)
    later = [r["text"] for r in rows(DATA / "gutenberg-later" / "openings.jsonl")]
    rng.shuffle(later)
    serbian = rows(DATA / "serbian-scripts" / "pairs.jsonl")
    rng.shuffle(serbian)
    inserted = wiki[: n // 2] + abstracts[: n - n // 2]  # put into the corpus, in some form
    absent = wiki[n : 2 * n]  # never in the corpus
    pieces_from = wiki[2 * n : 2 * n + 6 * n]  # corpus documents collages are cut from
    params = CorpusLookupParams()
    work = Path(tempfile.mkdtemp(prefix="lookup-soundness-"))
    background = DATA / "corpus" / "demo-v1"
    # (class, truth, corpus files added to the background, suspects)
    cases = [
        ("unchanged", "in corpus", {"docs.jsonl": inserted}, inserted),
        (
            "short records (<= 42 characters, one JSONL record each)",
            "in corpus",
            {"records.jsonl": [line for t in inserted for line in forms.as_records(t)]},
            inserted,
        ),
        (
            "suspects as CoNLL-2003 token lines",
            "in corpus",
            {"docs.jsonl": inserted},
            [forms.as_conll(t) for t in inserted],
        ),
        ("suspects as CoNLL-U rows", "in corpus", {"docs.jsonl": inserted}, [forms.as_conllu(t) for t in inserted]),
        (
            "suspects as word-level markup (TEI <w>)",
            "in corpus",
            {"docs.jsonl": inserted},
            [forms.as_markup(t) for t in inserted],
        ),
        ("corpus as HTML pages", "in corpus", {"pages.jsonl": [forms.as_html(t) for t in inserted]}, inserted),
        (
            "corpus in printed lines, words hyphenated at line ends",
            "in corpus",
            {"book.jsonl": [forms.hyphenated_lines(t, 40) for t in inserted]},
            inserted,
        ),
        (
            "suspects percent-encoded / JSON-escaped / base64",
            "in corpus",
            {"docs.jsonl": inserted},
            [(forms.percent_encoded, forms.escaped, forms.as_base64)[i % 3](t) for i, t in enumerate(inserted)],
        ),
        (
            "suspects gzip-compressed then base64 (read back)",
            "in corpus",
            {"docs.jsonl": inserted},
            [forms.gzipped(t) for t in inserted],
        ),
        (
            "suspects bzip2-compressed then base64 (not read back)",
            "in corpus",
            {"docs.jsonl": inserted},
            [forms.compressed(t) for t in inserted],
        ),
        (
            "suspects with look-alike letters",
            "in corpus",
            {"docs.jsonl": inserted},
            [forms.with_lookalikes(t) for t in inserted],
        ),
        (
            "corpus in Unicode small capitals",
            "in corpus",
            {"docs.jsonl": [forms.small_capitals(t) for t in inserted]},
            inserted,
        ),
        (
            "corpus letter-spaced (PDF extraction)",
            "in corpus",
            {"pdf.jsonl": [forms.letter_spaced(t) for t in inserted]},
            inserted,
        ),
        (
            "corpus with its spaces lost (PDF extraction)",
            "in corpus",
            {"pdf.jsonl": [forms.run_together(t) for t in inserted]},
            inserted,
        ),
        (
            "corpus: the texts bzip2-compressed in base64 data fields (not read back)",
            "in corpus",
            {"blobs.jsonl": [forms.compressed(t) for t in inserted]},
            inserted,
        ),
        ("corpus upside down", "in corpus", {"joke.jsonl": [forms.upside_down(t) for t in inserted]}, inserted),
        (
            "short records stored in reverse order",
            "in corpus",
            {"subs.jsonl": [r for t in inserted for r in reversed(forms.as_records(t, 36))]},
            inserted,
        ),
        (
            "6-word records interleaved with another text's",
            "in corpus",
            {
                "subs.jsonl": [
                    r for i, t in enumerate(inserted) for r in forms.interleaved_records(t, absent[-1 - i], 6)
                ]
            },
            inserted,
        ),
        (
            "corpus holds the first 91% of each",
            "parts in corpus",
            {"docs.jsonl": [forms.prefix(t, 0.91) for t in inserted]},
            inserted,
        ),
        (
            "corpus holds the first 55% of each",
            "parts in corpus",
            {"docs.jsonl": [forms.prefix(t, 0.55) for t in inserted]},
            inserted,
        ),
        (
            "collages of 45-word pieces of 6 corpus documents",
            "parts in corpus",
            {"docs.jsonl": pieces_from},
            [forms.collage(pieces_from[6 * i : 6 * i + 6]) for i in range(n)],
        ),
        (
            "corpus: the sentences in a CoLA-style TSV (source, label, mark, sentence)",
            "in corpus",
            {"cola/in_domain_train.tsv": forms.as_glue_tsv(inserted)},
            inserted,
        ),
        (
            "corpus: a PAWS/MRPC-style TSV with a header, each text a sentence1",
            "in corpus",
            {"paws/train.tsv": forms.as_paired_tsv(inserted)},
            inserted,
        ),
        (
            "corpus: Tatoeba sentences.csv (id, language, sentence)",
            "in corpus",
            {"tatoeba/sentences.csv": forms.as_tatoeba(inserted)},
            inserted,
        ),
        (
            "corpus: NIST CTM word alignments, a file per text",
            "in corpus",
            {f"ctm/rec{i:03d}.ctm": forms.as_ctm(t) for i, t in enumerate(inserted)},
            inserted,
        ),
        (
            "corpus: Tesseract OCR TSV, a file per text",
            "in corpus",
            {f"ocr/page{i:03d}.tsv": forms.as_ocr_tsv(t) for i, t in enumerate(inserted)},
            inserted,
        ),
        (
            "corpus: the texts down the columns of aligned tables (10 texts a table, 5-word cells)",
            "in corpus",
            {f"tables/t{i:03d}.txt": forms.as_column_table(inserted[i : i + 10]) for i in range(0, n, 10)},
            inserted,
        ),
        (
            "corpus: HTML pages holding the text only in an attribute (alt, meta content, iframe srcdoc)",
            "in corpus",
            {"pages.jsonl": [forms.in_attributes(t, i) for i, t in enumerate(inserted)]},
            inserted,
        ),
        (
            "corpus: xxd hex dumps, a file per text",
            "in corpus",
            {f"dumps/d{i:03d}.hex": forms.as_hex_dump(t) for i, t in enumerate(inserted)},
            inserted,
        ),
        (
            "corpus: lyrics split into syllables (ABC w: lines), a file per text",
            "in corpus",
            {f"tunes/t{i:03d}.abc": forms.as_syllables(t) for i, t in enumerate(inserted)},
            inserted,
        ),
        (
            "corpus: Gutenberg openings with their lines shuffled (OSCAR-style)",
            "in corpus",
            {"oscar.jsonl": [forms.shuffled_lines(t, i) for i, t in enumerate(later[:n])]},
            later[:n],
        ),
        (
            "corpus: the texts in a dot-file of the corpus folder",
            "in corpus",
            {".cache/part-0.jsonl": inserted},
            inserted,
        ),
        (
            "corpus: Serbian messages in Cyrillic; suspects in Latin letters",
            "in corpus",
            {"sr.jsonl": [p["cyrillic"] for p in serbian[:n]]},
            [p["latin"] for p in serbian[:n]],
        ),
        (
            "corpus: Serbian messages in Latin letters; suspects in Cyrillic",
            "in corpus",
            {"sr.jsonl": [p["latin"] for p in serbian[:n]]},
            [p["cyrillic"] for p in serbian[:n]],
        ),
        *[
            (
                f"corpus: the texts {label} (not read as language)",
                "in corpus",
                {"hidden.jsonl": [form(t) for t in inserted]},
                inserted,
            )
            for label, form in (
                ("in ROT13", forms.rot13),
                ("as mojibake (UTF-8 read as Windows-1252)", forms.mojibake),
                ("in quoted-printable", forms.quoted_printable),
                ("overstruck (nroff bold)", forms.overstruck),
                ("in negative squared letters", forms.squared_letters),
                ("uuencoded", forms.uuencoded),
            )
        ],
        ("absent, unchanged", "absent", {}, absent),
        (
            "absent; the corpus holds other texts as TSVs, tables, dumps and syllables",
            "absent",
            {
                "cola.tsv": forms.as_glue_tsv(inserted),
                "table.txt": forms.as_column_table(inserted[:10]),
                "dump.hex": forms.as_hex_dump(inserted[0]),
                "tune.abc": forms.as_syllables(inserted[1]),
                "oscar.jsonl": [forms.shuffled_lines(t, i) for i, t in enumerate(later[n : 2 * n])],
            },
            absent,
        ),
        (
            "absent Serbian messages in Latin letters; the corpus holds others in Cyrillic",
            "absent",
            {"sr.jsonl": [p["cyrillic"] for p in serbian[n : 2 * n]]},
            [p["latin"] for p in serbian[2 * n : 3 * n]],
        ),
        ("absent Gutenberg openings (PG boilerplate shared with the corpus)", "absent", {}, later[:n]),
    ]
    print(
        f"{n} texts a class; background corpus demo-v1 "
        f"({sum(1 for f in background.glob('*.jsonl') for _ in f.open())} documents); "
        f"route defaults ({params.ngram}-grams, present_share {params.present_share}, shared_documents "
        f"{params.shared_documents})\n"
    )
    print("| class | truth | not_trained_on verdicts | trained_on verdicts | wrong | found | s |")
    print("|---|---|---|---|---|---|---|")
    wrong_total = 0
    out = []
    for name, truth, extra, suspects in cases:
        started = time.perf_counter()
        corpus = work / "corpus"
        shutil.rmtree(corpus, ignore_errors=True)
        shutil.copytree(background, corpus)
        for file, texts in extra.items():
            (corpus / file).parent.mkdir(parents=True, exist_ok=True)
            if isinstance(texts, str):  # a file stored as it is (TSV, table, dump)
                (corpus / file).write_text(texts, encoding="utf-8")
            else:
                write_jsonl(corpus / file, texts)
        build_index([corpus], work / "index", force=True)
        counts = verdicts(CorpusIndex.open(work / "index"), suspects, params)
        denial, training = counts["not_trained_on"], counts["trained_on"]
        if truth == "in corpus":
            wrong, found = denial["VERIFIED"] + training["CONTRADICTED"], f"{denial['CONTRADICTED']}/{len(suspects)}"
        elif truth == "parts in corpus":
            wrong, found = denial["VERIFIED"] + training["VERIFIED"], f"{denial['CONTRADICTED']}/{len(suspects)}"
        else:
            wrong, found = (
                denial["CONTRADICTED"] + training["VERIFIED"],
                f"{denial['VERIFIED']}/{len(suspects)} verified absent",
            )
        wrong_total += wrong
        out.append((name, truth, wrong, 2 * len(suspects)))

        def show(c):
            return ", ".join(f"{k} {v}" for k, v in sorted(c.items()))

        print(
            f"| {name} | {truth} | {show(denial)} | {show(training)} | {wrong} | {found} | "
            f"{time.perf_counter() - started:.0f} |"
        )
    shutil.rmtree(work, ignore_errors=True)
    print(f"\nwrong VERIFIED/CONTRADICTED in all: {wrong_total}")
    return out


if __name__ == "__main__":
    main()
