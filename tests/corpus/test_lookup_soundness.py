"""Attempts to make the corpus lookup give a wrong VERIFIED or CONTRADICTED with the forms real
corpora store text in (an outside attack on the README found 13 of 33; each class is kept here):
records too short to hold an n-gram, structured and marked-up suspects, look-alike letters,
boilerplate a whole source shares, partial copies and collages. The full measurement over more
documents is benchmarks/lookup_soundness.py."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
import yaml

from verifier.audit import run_audit
from verifier.boundary.resources import resource
from verifier.corpus import digest_files
from verifier.corpus import stored_forms as forms
from verifier.corpus.forms import read_form, readings
from verifier.corpus.queries import lookup
from verifier.errors import VerifierError
from verifier.report.render import render_html

DATA = resource("examples", "data")
N = 8


def rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


WIKI = [r["text"] for r in rows(DATA / "wikimia24" / "length64.jsonl") if r["label"] == 0]
random.Random(3).shuffle(WIKI)
LATER = [r["text"] for r in rows(DATA / "gutenberg-later" / "openings.jsonl")]


def never_load(role: str):
    pytest.fail(f"the {role} model was loaded; a corpus lookup needs none")


def audit(
    folder: Path, corpus: dict[str, list[str] | str], suspects: list[str], kind: str, background: bool = False
) -> dict:
    """One claim over ``suspects`` against a corpus of the given files (plus the demo corpus)."""
    folder.mkdir(parents=True, exist_ok=True)
    files = folder / "corpus"
    files.mkdir(exist_ok=True)
    if background:
        for path in (DATA / "corpus" / "demo-v1").glob("*.jsonl"):
            (files / path.name).write_bytes(path.read_bytes())
    for name, texts in corpus.items():
        (files / name).parent.mkdir(parents=True, exist_ok=True)
        body = texts if isinstance(texts, str) else "".join(json.dumps({"text": t}) + "\n" for t in texts)
        (files / name).write_text(body, encoding="utf-8")  # a string: the file as it is (TSV, table, dump)
    (folder / "suspect.jsonl").write_text("".join(json.dumps({"text": t}) + "\n" for t in suspects), encoding="utf-8")
    body = {
        "claim": {"id": "c", "statement": "s", "kind": kind, "made_by": "tests"},
        "model": {"target": "smollm2-135m"},
        "evidence": {
            "suspect": {"path": "suspect.jsonl"},
            "corpus": {"index": "corpus", "sha256": digest_files([files])[0]},
        },
    }
    (folder / "claim.yaml").write_text(yaml.safe_dump(body))
    return run_audit(folder / "claim.yaml", target_factory=never_load).findings


def lookup_metrics(findings: dict) -> dict:
    return next(r for r in findings["path"] if r["route"] == "corpus")["outcome"]["metrics"]


@pytest.mark.parametrize(
    "name, corpus, suspects",
    [
        ("short records", {"records.jsonl": [line for t in WIKI[:N] for line in forms.as_records(t)]}, WIKI[:N]),
        ("CoNLL-2003 suspects", {"docs.jsonl": WIKI[:N]}, [forms.as_conll(t) for t in WIKI[:N]]),
        ("CoNLL-U suspects", {"docs.jsonl": WIKI[:N]}, [forms.as_conllu(t) for t in WIKI[:N]]),
        ("word-level markup suspects", {"docs.jsonl": WIKI[:N]}, [forms.as_markup(t) for t in WIKI[:N]]),
        ("HTML corpus", {"pages.jsonl": [forms.as_html(t) for t in WIKI[:N]]}, WIKI[:N]),
        ("look-alike letters", {"docs.jsonl": WIKI[:N]}, [forms.with_lookalikes(t) for t in WIKI[:N]]),
        ("gzip-compressed base64 suspects", {"docs.jsonl": WIKI[:N]}, [forms.gzipped(t) for t in WIKI[:N]]),
        (
            "corpus in printed lines, words hyphenated at line ends",
            {"book.jsonl": [forms.hyphenated_lines(t, 40) for t in WIKI[:N]]},
            WIKI[:N],
        ),
        (
            "percent-encoded, escaped and base64 suspects",
            {"docs.jsonl": WIKI[:N]},
            [f(t) for t, f in zip(WIKI[:N], [forms.percent_encoded, forms.escaped, forms.as_base64] * N)],
        ),
    ],
)
def test_text_in_the_corpus_in_another_form_is_found(tmp_path: Path, name: str, corpus, suspects) -> None:
    """Before: absence VERIFIED for every one of these (records of <= 42 characters hold no
    13-gram; tags became words of their own; look-alike letters broke every n-gram)."""
    denial = audit(tmp_path / "denial", corpus, suspects, "not_trained_on")
    assert denial["verdict"] == "CONTRADICTED", name
    assert lookup_metrics(denial)["present"] == N
    training = audit(tmp_path / "training", corpus, suspects, "trained_on")
    assert training["verdict"] == "VERIFIED", name


def test_structured_forms_are_read_as_their_text() -> None:
    text = WIKI[0]
    words = " ".join(text.split())
    for stored, form in (
        (forms.as_conll(text), "token-per-line"),
        (forms.as_conllu(text), "token-per-line"),
        (forms.as_markup(text), "markup"),
        (forms.as_html(text), "markup"),
        (json.dumps({"question": text}), "json"),
        (forms.with_lookalikes(text), "look-alikes"),
        (forms.percent_encoded(text), "percent-encoded"),
        (forms.as_base64(text), "base64"),
    ):
        reading = read_form(stored)
        assert reading.form == form and words in " ".join(reading.text.split()) and not reading.unread
    # running text in columns is not a token table: a poem of three-word lines, a glossary
    for plain in (
        "Roses are red\nViolets are blue\nSugar is sweet\n",
        "Haus\thouse\nKatze\tcat\nHund\tdog\n",
        "a < b and c > d",
    ):
        assert read_form(plain).form == "plain"


def test_markup_is_read_whole_comments_cdata_and_scripts_too() -> None:
    """An outside attack hid the document in a <noscript> block, a comment, an RSS CDATA section
    and a JSON-LD script: a page's text is all of it."""
    text = WIKI[1]
    for page in (
        f"<html><head><title>t</title></head><body><noscript><p>{text}</p></noscript><div>x</div></body></html>",
        f"<html><body><!-- {text} --><p>a</p><p>b</p></body></html>",
        f"<rss><channel><item><title>t</title><description><![CDATA[{text}]]></description></item></channel></rss>",
        "<html><head><script "
        f'type="application/ld+json">{json.dumps({"articleBody": text})}</script></head><body><p>a</p></body></html>',
    ):
        assert " ".join(text.split()[:20]) in " ".join(read_form(page).text.split())


def test_forms_not_read_back_are_never_clean(tmp_path: Path) -> None:
    """Copies compressed in a way nothing reads back (bzip2) and words mostly of another script's
    look-alike letters: the lookup cannot show them absent, so they decide nothing."""
    hidden = [forms.compressed(t) for t in WIKI[:3]] + [
        " ".join(
            ("Ж" + "".join(forms.LOOKALIKES.get(c, c) for c in w[1:])) if len(w) > 4 else w for w in WIKI[3].split()
        )
    ]
    assert all(read_form(t).unread for t in hidden)
    findings = audit(tmp_path, {"docs.jsonl": WIKI[:4]}, hidden, "not_trained_on")
    assert findings["verdict"] == "INCONCLUSIVE"
    assert all(
        it["class"] == "partial" and "does not read back" in it["reason"] for it in lookup_metrics(findings)["items"]
    )


def test_parts_of_a_document_are_not_the_document(tmp_path: Path) -> None:
    """Before: trained_on VERIFIED when the corpus held the first 55% of each text (the 0.5
    present_share) and for collages of 45-word pieces of six corpus documents."""
    halves = audit(
        tmp_path / "halves", {"docs.jsonl": [forms.prefix(t, 0.55) for t in WIKI[:N]]}, WIKI[:N], "trained_on"
    )
    assert halves["verdict"] == "INCONCLUSIVE" and lookup_metrics(halves)["present"] == 0
    pieces = WIKI[N : N + 6 * N]
    collages = [forms.collage(pieces[6 * i : 6 * i + 6]) for i in range(N)]
    trained = audit(tmp_path / "collage", {"docs.jsonl": pieces}, collages, "trained_on")
    assert trained["verdict"] == "INCONCLUSIVE"
    m = lookup_metrics(trained)
    assert m["present"] == 0 and m["content_present"] == N
    denied = audit(tmp_path / "collage-denied", {"docs.jsonl": pieces}, collages, "not_trained_on")
    assert denied["verdict"] == "CONTRADICTED"  # its content is in the corpus: absence is contradicted


def test_boilerplate_a_source_shares_is_no_evidence(tmp_path: Path) -> None:
    """Before: two Project Gutenberg books absent from the corpus, sharing only producer credits
    and a publisher's list with books in it, gave CONTRADICTED for a denial."""
    publisher_list = " ".join(LATER[50].split()[:30])  # a passage four corpus books repeat
    corpus = {"more-books.jsonl": [f"{t} {publisher_list}" for t in LATER[60:64]]}
    suspects = [f"{LATER[i]} {publisher_list}" for i in range(N)]
    findings = audit(tmp_path, corpus, suspects, "not_trained_on", background=True)
    assert findings["verdict"] != "CONTRADICTED"
    m = lookup_metrics(findings)
    assert m["present"] == m["content_present"] == 0
    assert any(publisher_list.lower().split()[3] in e["text"] for e in m["shared_text"])  # named in the findings
    # A passage of an n-gram or more that several corpus documents hold proves neither presence nor
    # absence (it could be the document quoted): these decide nothing, and say why.
    assert findings["verdict"] == "INCONCLUSIVE" and all(
        it["class"] == "partial" and "share" in it["reason"] for it in m["items"]
    )


def test_setting_boilerplate_aside_never_hides_a_copy(tmp_path: Path) -> None:
    """Text that many corpus documents hold is set aside only as a minor part of a document: a
    document copied into several corpus documents, or a passage making 40% of it, is not made
    absent by being repeated."""
    copies = {"copies.jsonl": [WIKI[0]] * 5 + [f"{WIKI[i]} {forms.prefix(WIKI[1], 0.4)}" for i in range(10, 15)]}
    findings = audit(tmp_path, copies, [WIKI[0], WIKI[1]], "not_trained_on")
    items = lookup_metrics(findings)["items"]
    assert findings["verdict"] == "CONTRADICTED" and items[0]["class"] == "present"
    assert items[1]["class"] not in ("clean",)


@pytest.mark.parametrize(
    "name, corpus",
    [
        ("letters spaced apart", lambda: {"pdf.jsonl": [forms.letter_spaced(t) for t in WIKI[:N]]}),
        ("words run together", lambda: {"pdf.jsonl": [forms.run_together(t) for t in WIKI[:N]]}),
        ("upside-down text", lambda: {"joke.jsonl": [forms.upside_down(t) for t in WIKI[:N]]}),
        (
            "short records stored in reverse order",
            lambda: {"subs.jsonl": [r for t in WIKI[:N] for r in reversed(forms.as_records(t, 36))]},
        ),
        (
            "short records interleaved with another text's",
            lambda: {
                "subs.jsonl": [r for i, t in enumerate(WIKI[:N]) for r in forms.interleaved_records(t, WIKI[40 + i], 6)]
            },
        ),
    ],
)
def test_a_corpus_hiding_copies_in_forms_no_reading_restores_verifies_no_absence(
    tmp_path: Path, name: str, corpus
) -> None:
    """An outside attack: absence VERIFIED for each of these corpora, although they hold the
    suspect documents. The index counts such documents (and files of records too short for an
    n-gram, compared only in file order), and absence against such a corpus is not verified."""
    findings = audit(tmp_path, corpus(), WIKI[:N], "not_trained_on")
    assert findings["verdict"] in ("INCONCLUSIVE", "CONTRADICTED"), name


def test_small_capitals_are_read_as_letters(tmp_path: Path) -> None:
    findings = audit(tmp_path, {"docs.jsonl": [forms.small_capitals(t) for t in WIKI[:N]]}, WIKI[:N], "not_trained_on")
    assert findings["verdict"] == "CONTRADICTED"


def test_close_templates_and_truncations_are_not_the_document(tmp_path: Path) -> None:
    """An outside attack: trained_on VERIFIED for a corpus holding the first 91% of a document,
    and a passage a quarter of a document long quoted in three corpus documents verified its
    absence. Neither is the document; neither is its absence."""
    truncated = audit(tmp_path / "t", {"docs.jsonl": [forms.prefix(t, 0.91) for t in WIKI[:N]]}, WIKI[:N], "trained_on")
    assert truncated["verdict"] == "INCONCLUSIVE" and lookup_metrics(truncated)["content_present"] == N
    quoted = audit(
        tmp_path / "q",
        {"docs.jsonl": [f"{WIKI[20 + i]} {forms.prefix(WIKI[0], 0.24)}" for i in range(3)]},
        [WIKI[0]],
        "not_trained_on",
    )
    assert quoted["verdict"] == "INCONCLUSIVE"


# -- Absence that holds -------------------------------------------------------------------------
# Absence that holds: an outside attack (README and docs only, real text the project had not
# seen) got ten wrong strong verdicts from the corpus lookup, six of them real contamination
# declared absent: benchmark files in the TSV layouts sentence benchmarks ship in, word-per-line
# alignments, texts down the columns of a table, copies only in HTML attribute values, hex dumps,
# lyrics split into syllables, lines shuffled within a file, a dot-file of the corpus folder,
# another script, and hosts spelt so a parser other than a browser's misreads them. Each is kept
# here; the measurement over 24 texts a class is benchmarks/lookup_soundness.py.
SERBIAN = [json.loads(line) for line in (DATA / "serbian-scripts" / "pairs.jsonl").read_text("utf-8").splitlines()]


@pytest.mark.parametrize(
    "name, corpus",
    [
        ("CoLA-style TSV", lambda: {"cola/train.tsv": forms.as_glue_tsv(WIKI[:N])}),
        ("PAWS-style TSV with a header", lambda: {"paws/train.tsv": forms.as_paired_tsv(WIKI[:N])}),
        ("Tatoeba sentences", lambda: {"sentences.csv": forms.as_tatoeba(WIKI[:N])}),
        ("CTM word alignments", lambda: {f"ctm/{i}.ctm": forms.as_ctm(t) for i, t in enumerate(WIKI[:N])}),
        ("Tesseract OCR TSV", lambda: {f"ocr/{i}.tsv": forms.as_ocr_tsv(t) for i, t in enumerate(WIKI[:N])}),
        ("texts down table columns", lambda: {"table.txt": forms.as_column_table(WIKI[:N])}),
        (
            "copies only in attributes",
            lambda: {"pages.jsonl": [forms.in_attributes(t, i) for i, t in enumerate(WIKI[:N])]},
        ),
        ("xxd hex dumps", lambda: {f"hex/{i}.hex": forms.as_hex_dump(t) for i, t in enumerate(WIKI[:N])}),
        ("a dot-file", lambda: {".cache/part-0.jsonl": WIKI[:N]}),
    ],
)
def test_contamination_stored_in_other_forms_is_found(tmp_path: Path, name: str, corpus) -> None:
    """Before: VERIFIED absence for each (the token-column reader kept only the first column of a
    TSV; tables were read only row by row; attributes, dumps and dot-files were never compared)."""
    findings = audit(tmp_path, corpus(), WIKI[:N], "decontaminated")
    assert findings["verdict"] == "CONTRADICTED", name
    m = lookup_metrics(findings)
    assert m["present"] + m["content_present"] == N, name


@pytest.mark.parametrize(
    "name, corpus, suspects",
    [
        (
            "lyrics split into syllables",
            lambda: {f"abc/{i}.abc": forms.as_syllables(t) for i, t in enumerate(WIKI[:N])},
            WIKI[:N],
        ),
        (
            "lines shuffled within each text",
            lambda: {"oscar.jsonl": [forms.shuffled_lines(t, i) for i, t in enumerate(LATER[:N])]},
            LATER[:N],
        ),
        (
            "Serbian: Cyrillic corpus, Latin suspects",
            lambda: {"sr.jsonl": [p["cyrillic"] for p in SERBIAN[:N]]},
            [p["latin"] for p in SERBIAN[:N]],
        ),
        (
            "Serbian: Latin corpus, Cyrillic suspects",
            lambda: {"sr.jsonl": [p["latin"] for p in SERBIAN[:N]]},
            [p["cyrillic"] for p in SERBIAN[:N]],
        ),
        ("bzip2 blobs nothing reads back", lambda: {"blobs.jsonl": [forms.compressed(t) for t in WIKI[:N]]}, WIKI[:N]),
        *[
            (
                f"a second outside attack: {form.__name__}",
                lambda form=form: {"h.jsonl": [form(t) for t in WIKI[:N]]},
                WIKI[:N],
            )
            for form in (forms.rot13, forms.quoted_printable, forms.overstruck, forms.squared_letters, forms.uuencoded)
        ],
    ],
)
def test_contamination_in_forms_read_in_part_is_never_verified_absent(
    tmp_path: Path, name: str, corpus, suspects
) -> None:
    """Found, or INCONCLUSIVE naming why: never VERIFIED absent (before: VERIFIED for each)."""
    findings = audit(tmp_path, corpus(), suspects, "not_trained_on")
    assert findings["verdict"] in ("CONTRADICTED", "INCONCLUSIVE"), name
    assert (
        findings["verdict"] == "CONTRADICTED"
        or all(it["class"] != "clean" for it in lookup_metrics(findings)["items"])
        or lookup_metrics(findings)["corpus"]["forms_not_compared"]
    ), name


def test_absent_text_stays_verified_beside_tables_dumps_and_other_scripts(tmp_path: Path) -> None:
    """The readings add text to the index; none of it makes an absent document look present."""
    corpus = {
        "cola.tsv": forms.as_glue_tsv(WIKI[:N]),
        "table.txt": forms.as_column_table(WIKI[N : 2 * N]),
        "dump.hex": forms.as_hex_dump(WIKI[2 * N]),
        "tune.abc": forms.as_syllables(WIKI[2 * N + 1]),
        "sr.jsonl": [p["cyrillic"] for p in SERBIAN[:N]],
    }
    findings = audit(tmp_path, corpus, WIKI[60 : 60 + N], "not_trained_on")
    m = lookup_metrics(findings)
    assert m["clean"] == N, [(i["class"], i["reason"]) for i in m["items"]]
    # Serbian in Cyrillic is read as language only in part (wordfreq lists no Serbian): named, not hidden.
    assert {row["kind"] for row in m["corpus"]["coverage"]["not_compared"]} <= {
        "text not read as words of a known language"
    }
    without = audit(
        tmp_path / "latin", {k: v for k, v in corpus.items() if k != "sr.jsonl"}, WIKI[60 : 60 + N], "not_trained_on"
    )
    assert without["verdict"] == "VERIFIED"
    assert lookup_metrics(without)["corpus"]["coverage"]["compared_share"] == 1.0


def test_a_verified_absence_states_what_was_compared(tmp_path: Path) -> None:
    """The report of a VERIFIED absence says what share of the corpus was compared, and what was
    not; a corpus holding data nothing reads back is not verified absent, with its bytes named."""
    findings = audit(tmp_path / "v", {"docs.jsonl": WIKI[:N]}, WIKI[40 : 40 + N], "not_trained_on")
    assert findings["verdict"] == "VERIFIED"
    outcome = next(r for r in findings["path"] if r["route"] == "corpus")["outcome"]
    assert "compared: 100.00% of" in outcome["summary"]
    html = render_html(findings, "0" * 64)
    assert "share of the corpus" in html and "100.00% of" in html
    blobs = audit(
        tmp_path / "b",
        {"docs.jsonl": WIKI[:N], "blobs.jsonl": [forms.compressed(t) for t in WIKI[N : N + 2]]},
        WIKI[40 : 40 + N],
        "not_trained_on",
    )
    assert blobs["verdict"] == "INCONCLUSIVE"
    m = lookup_metrics(blobs)
    assert m["corpus"]["coverage"]["not_compared"][0]["kind"] == "base64 data that is not text"
    assert "blobs.jsonl" in m["corpus"]["coverage"]["not_compared"][0]["files"][0]


def test_every_file_under_the_folder_is_read_or_excluded_by_name(tmp_path: Path) -> None:
    """Dot-files are read and digested; an exclusion the auditor chooses is recorded in the
    findings and the report, and changes the digest the claim must declare."""
    folder = tmp_path / "corpus"
    (folder / ".hidden").mkdir(parents=True)
    (folder / "docs.jsonl").write_text(json.dumps({"text": WIKI[0]}) + "\n", encoding="utf-8")
    (folder / ".hidden" / "more.jsonl").write_text(json.dumps({"text": WIKI[1]}) + "\n", encoding="utf-8")
    every, names = digest_files([folder])
    assert [n for n, _ in names] == ["corpus/.hidden/more.jsonl", "corpus/docs.jsonl"]
    fewer, names = digest_files([folder], (".hidden",))
    assert fewer != every and [n for n, _ in names] == ["corpus/docs.jsonl"]
    with pytest.raises(VerifierError, match="exclude"):
        digest_files([folder], ("../x",))
    (tmp_path / "suspect.jsonl").write_text(json.dumps({"text": WIKI[1]}) + "\n", encoding="utf-8")
    body = {
        "claim": {"id": "c", "statement": "s", "kind": "not_trained_on", "made_by": "tests"},
        "model": {"target": "smollm2-135m"},
        "evidence": {
            "suspect": {"path": "suspect.jsonl"},
            "corpus": {"index": "corpus", "sha256": fewer, "exclude": [".hidden"]},
        },
    }
    (tmp_path / "claim.yaml").write_text(yaml.safe_dump(body))
    findings = run_audit(tmp_path / "claim.yaml", target_factory=never_load).findings
    assert findings["verdict"] == "VERIFIED"  # WIKI[1] is only in the excluded folder: the auditor chose so
    assert lookup_metrics(findings)["corpus"]["coverage"]["excluded"] == [".hidden"]
    assert ".hidden" in render_html(findings, "0" * 64)


def test_tables_are_read_along_every_axis() -> None:
    """A sentence column, a word column and a text written down a column are each one run of text."""
    words = " ".join(WIKI[3].split())
    for stored in (
        forms.as_glue_tsv([WIKI[3]]),
        forms.as_ctm(WIKI[3]),
        forms.as_ocr_tsv(WIKI[3]),
        forms.as_column_table([WIKI[3], WIKI[4], WIKI[5]]),
        "| id | text |\n|---|---|\n" + "".join(f"| {i} | {s} |\n" for i, s in enumerate(forms.sentences(WIKI[3]))),
    ):
        columns = next(r for r in readings(stored) if r.form == "columns")
        assert words in " ".join(columns.text.split()), stored[:80]


def test_text_in_other_fields_of_a_record_is_read(tmp_path: Path) -> None:
    """A second outside attack: a Parquet file whose text column held other passages, the suspect
    text in another column (binary, a struct, a list), gave VERIFIED absence; so would a JSONL
    record's other fields. Every string a record holds is read beside its text."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder = tmp_path / "corpus"
    folder.mkdir()
    table = pa.table(
        {
            "text": WIKI[20 : 20 + N],
            "blob": [t.encode("utf-8") for t in WIKI[:N]],
            "meta": [{"abstract": t} for t in WIKI[N : 2 * N]],
        }
    )
    pq.write_table(table, folder / "part.parquet")
    (folder / "qa.jsonl").write_text(
        "".join(json.dumps({"text": "a", "question": {"body": [t]}}) + "\n" for t in WIKI[2 * N : 3 * N]),
        encoding="utf-8",
    )
    (tmp_path / "suspect.jsonl").write_text("".join(json.dumps({"text": t}) + "\n" for t in WIKI[: 3 * N]))
    body = {
        "claim": {"id": "c", "statement": "s", "kind": "not_trained_on", "made_by": "tests"},
        "model": {"target": "smollm2-135m"},
        "evidence": {
            "suspect": {"path": "suspect.jsonl"},
            "corpus": {"index": "corpus", "sha256": digest_files([folder])[0]},
        },
    }
    (tmp_path / "claim.yaml").write_text(yaml.safe_dump(body))
    findings = run_audit(tmp_path / "claim.yaml", target_factory=never_load).findings
    assert findings["verdict"] == "CONTRADICTED"
    assert lookup_metrics(findings)["present"] == 3 * N


def test_lone_surrogates_in_a_corpus_do_not_stop_the_build(tmp_path: Path) -> None:
    """Found by the index benchmark: a source file's "\\ud8ff" escape, decoded, is a lone
    surrogate; every reading (tables, the language share) takes it as the JSON reader does."""
    from verifier.corpus import CorpusIndex, build_index

    folder = tmp_path / "corpus"
    folder.mkdir()
    text = f"{WIKI[0]} {chr(0xD8FF)}\n" + "one\ttwo\tthree\n" * 4  # a table too: read column by column
    (folder / "odd.jsonl").write_text(json.dumps({"text": text}) + "\n", encoding="utf-8")
    build_index([folder], tmp_path / "index")
    assert lookup(CorpusIndex.open(tmp_path / "index"), [WIKI[0]])[0].verbatim
