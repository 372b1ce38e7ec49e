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

    python benchmarks/lookup_soundness.py --documents 24
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
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
from verifier.routes.corpus import CorpusLookupParams, CorpusLookupRoute, classify, decide, hidden_forms

DATA = resource("examples", "data")
KINDS = (ClaimKind.NOT_TRAINED_ON, ClaimKind.TRAINED_ON)


def rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def write_jsonl(path: Path, texts: list[str]) -> None:
    path.write_text("".join(json.dumps({"text": t}, ensure_ascii=False) + "\n" for t in texts), encoding="utf-8")


def verdicts(index: CorpusIndex, suspects: list[str], params: CorpusLookupParams) -> dict[str, Counter]:
    """Per claim kind, the verdicts of single-document claims about each suspect."""
    found = lookup(index, suspects, ngram=params.ngram, min_span_words=params.min_span_words, spans=5, span_documents=3,
                   characters=params.fifty_char_rule, near_duplicates=params.near_overlap, shared_documents=params.shared_documents)
    out = {kind.value: Counter() for kind in KINDS}
    hiding = bool(hidden_forms(LocalBackend(index)))
    for item in found:
        status = decide(Counter([classify(item, params)[0]]), 1, hiding)
        for kind in KINDS:
            out[kind.value][CorpusLookupRoute.verdicts[status][kind].value] += 1
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--documents", type=int, default=24, help="texts per class")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    n = args.documents
    wiki = [r["text"] for r in rows(DATA / "wikimia24" / "length64.jsonl") if r["label"] == 0]
    rng.shuffle(wiki)
    abstracts = [r["text"] for r in rows(DATA / "arxiv-carriers" / "abstracts.jsonl")]
    rng.shuffle(abstracts)
    later = [r["text"] for r in rows(DATA / "gutenberg-later" / "openings.jsonl")]
    rng.shuffle(later)
    inserted = wiki[:n // 2] + abstracts[:n - n // 2]       # put into the corpus, in some form
    absent = wiki[n:2 * n]                                  # never in the corpus
    pieces_from = wiki[2 * n:2 * n + 6 * n]                 # corpus documents collages are cut from
    params = CorpusLookupParams()
    work = Path(tempfile.mkdtemp(prefix="lookup-soundness-"))
    background = DATA / "corpus" / "demo-v1"
    # (class, truth, corpus files added to the background, suspects)
    cases = [
        ("unchanged", "in corpus", {"docs.jsonl": inserted}, inserted),
        ("short records (<= 42 characters, one JSONL record each)", "in corpus",
         {"records.jsonl": [line for t in inserted for line in forms.as_records(t)]}, inserted),
        ("suspects as CoNLL-2003 token lines", "in corpus", {"docs.jsonl": inserted}, [forms.as_conll(t) for t in inserted]),
        ("suspects as CoNLL-U rows", "in corpus", {"docs.jsonl": inserted}, [forms.as_conllu(t) for t in inserted]),
        ("suspects as word-level markup (TEI <w>)", "in corpus", {"docs.jsonl": inserted}, [forms.as_markup(t) for t in inserted]),
        ("corpus as HTML pages", "in corpus", {"pages.jsonl": [forms.as_html(t) for t in inserted]}, inserted),
        ("corpus in printed lines, words hyphenated at line ends", "in corpus",
         {"book.jsonl": [forms.hyphenated_lines(t, 40) for t in inserted]}, inserted),
        ("suspects percent-encoded / JSON-escaped / base64", "in corpus", {"docs.jsonl": inserted},
         [(forms.percent_encoded, forms.escaped, forms.as_base64)[i % 3](t) for i, t in enumerate(inserted)]),
        ("suspects gzip-compressed then base64 (cannot be read back)", "in corpus", {"docs.jsonl": inserted},
         [forms.compressed(t) for t in inserted]),
        ("suspects with look-alike letters", "in corpus", {"docs.jsonl": inserted}, [forms.with_lookalikes(t) for t in inserted]),
        ("corpus in Unicode small capitals", "in corpus", {"docs.jsonl": [forms.small_capitals(t) for t in inserted]}, inserted),
        ("corpus letter-spaced (PDF extraction)", "in corpus", {"pdf.jsonl": [forms.letter_spaced(t) for t in inserted]}, inserted),
        ("corpus with its spaces lost (PDF extraction)", "in corpus", {"pdf.jsonl": [forms.run_together(t) for t in inserted]}, inserted),
        ("corpus upside down", "in corpus", {"joke.jsonl": [forms.upside_down(t) for t in inserted]}, inserted),
        ("short records stored in reverse order", "in corpus",
         {"subs.jsonl": [r for t in inserted for r in reversed(forms.as_records(t, 36))]}, inserted),
        ("6-word records interleaved with another text's", "in corpus",
         {"subs.jsonl": [r for i, t in enumerate(inserted) for r in forms.interleaved_records(t, absent[-1 - i], 6)]}, inserted),
        ("corpus holds the first 91% of each", "parts in corpus", {"docs.jsonl": [forms.prefix(t, 0.91) for t in inserted]}, inserted),
        ("corpus holds the first 55% of each", "parts in corpus", {"docs.jsonl": [forms.prefix(t, 0.55) for t in inserted]}, inserted),
        ("collages of 45-word pieces of 6 corpus documents", "parts in corpus", {"docs.jsonl": pieces_from},
         [forms.collage(pieces_from[6 * i:6 * i + 6]) for i in range(n)]),
        ("absent, unchanged", "absent", {}, absent),
        ("absent Gutenberg openings (PG boilerplate shared with the corpus)", "absent", {}, later[:n]),
    ]
    print(f"{n} texts a class; background corpus demo-v1 ({sum(1 for f in background.glob('*.jsonl') for _ in f.open())} documents); "
          f"route defaults ({params.ngram}-grams, present_share {params.present_share}, shared_documents {params.shared_documents})\n")
    print("| class | truth | not_trained_on verdicts | trained_on verdicts | wrong | found | s |")
    print("|---|---|---|---|---|---|---|")
    wrong_total = 0
    for name, truth, extra, suspects in cases:
        started = time.perf_counter()
        corpus = work / "corpus"
        shutil.rmtree(corpus, ignore_errors=True)
        shutil.copytree(background, corpus)
        for file, texts in extra.items():
            write_jsonl(corpus / file, texts)
        build_index([corpus], work / "index", force=True)
        counts = verdicts(CorpusIndex.open(work / "index"), suspects, params)
        denial, training = counts["not_trained_on"], counts["trained_on"]
        if truth == "in corpus":
            wrong, found = denial["VERIFIED"] + training["CONTRADICTED"], f"{denial['CONTRADICTED']}/{len(suspects)}"
        elif truth == "parts in corpus":
            wrong, found = denial["VERIFIED"] + training["VERIFIED"], f"{denial['CONTRADICTED']}/{len(suspects)}"
        else:
            wrong, found = denial["CONTRADICTED"] + training["VERIFIED"], f"{denial['VERIFIED']}/{len(suspects)} verified absent"
        wrong_total += wrong
        show = lambda c: ", ".join(f"{k} {v}" for k, v in sorted(c.items()))  # noqa: E731
        print(f"| {name} | {truth} | {show(denial)} | {show(training)} | {wrong} | {found} | {time.perf_counter() - started:.0f} |")
    shutil.rmtree(work, ignore_errors=True)
    print(f"\nwrong VERIFIED/CONTRADICTED in all: {wrong_total}")


if __name__ == "__main__":
    main()
