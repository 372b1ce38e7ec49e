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
from verifier.corpus.forms import read_form

DATA = resource("examples", "data")
N = 8


def rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


WIKI = [r["text"] for r in rows(DATA / "wikimia24" / "length64.jsonl") if r["label"] == 0]
random.Random(3).shuffle(WIKI)
LATER = [r["text"] for r in rows(DATA / "gutenberg-later" / "openings.jsonl")]


def never_load(role: str):
    pytest.fail(f"the {role} model was loaded; a corpus lookup needs none")


def audit(folder: Path, corpus: dict[str, list[str]], suspects: list[str], kind: str, background: bool = False) -> dict:
    """One claim over ``suspects`` against a corpus of the given files (plus the demo corpus)."""
    folder.mkdir(parents=True, exist_ok=True)
    files = folder / "corpus"
    files.mkdir(exist_ok=True)
    if background:
        for path in (DATA / "corpus" / "demo-v1").glob("*.jsonl"):
            (files / path.name).write_bytes(path.read_bytes())
    for name, texts in corpus.items():
        (files / name).write_text("".join(json.dumps({"text": t}) + "\n" for t in texts), encoding="utf-8")
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
