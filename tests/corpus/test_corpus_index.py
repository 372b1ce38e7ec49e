"""The corpus index against brute-force search on real text (the bundled PG-19 openings and
Wikipedia event texts), and the index's refusals: corrupt files, bad inputs."""

from __future__ import annotations

import gzip
import json
import random
import re
import shutil
from bisect import bisect_right
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from verifier.corpus import CorpusIndex, build_index, count, digest_files, find, lookup, normalise
from verifier.corpus.build import record_frames
from verifier.corpus.sources import other_text
from verifier.errors import VerifierError

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "verifier" / "examples" / "data" / "corpus" / "demo-v1"
WIKIMIA64 = ROOT / "verifier" / "examples" / "data" / "wikimia" / "length64.jsonl"


def rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


@pytest.fixture(scope="module")
def corpus_texts() -> list[str]:
    return [r["text"] for f in sorted(CORPUS.glob("*.jsonl")) for r in rows(f)]


@pytest.fixture(scope="module")
def index(demo_index: CorpusIndex) -> CorpusIndex:
    return demo_index


def brute_count(frames: list[str], query: str) -> int:
    needle = f" {normalise(query)} "
    return sum(len(re.findall(f"(?={re.escape(needle)})", f)) for f in frames)


@pytest.fixture(scope="module")
def frames(corpus_texts: list[str]) -> list[str]:
    return [f" {normalise(t)} " for t in corpus_texts if normalise(t)]


@pytest.fixture(scope="module")
def streams() -> list[tuple[str, list[tuple[int, int]]]]:
    """The corpus as the index compares it: each file's records' main readings joined in file
    order by one space, then each record's other readings on their own (a character no query
    holds between them), with the offset where each of a document's readings starts and the
    document it belongs to."""
    out = []
    document = 0
    for path in sorted(CORPUS.glob("*.jsonl")):
        stream, starts, extras = "", [], []
        for r in rows(path):
            main, others, _, _ = record_frames(r["text"], other_text(r, "text"))
            if not main and not others:
                continue
            starts.append((max(0, len(stream) - 1), document))
            stream += main.decode()[1:] if stream else main.decode()
            extras += [(document, e.decode()) for e, _ in others]
            document += 1
        for owner, extra in extras:
            starts.append((len(stream) + 1, owner))
            stream += "\x00" + extra
        out.append((stream, starts))
    return out


@pytest.fixture(scope="module")
def texts(streams: list[tuple[str, list[tuple[int, int]]]]) -> list[str]:
    return [text for text, _ in streams]


def holding(streams: list[tuple[str, list[tuple[int, int]]]], query: str) -> list[int]:
    """Numbers of the corpus documents in which an occurrence of ``query`` starts (brute force)."""
    needle, docs = f" {normalise(query)} ", set()
    for text, starts in streams:
        at = [s for s, _ in starts]
        docs |= {starts[bisect_right(at, m.start()) - 1][1] for m in re.finditer(f"(?={re.escape(needle)})", text)}
    return sorted(docs)


def test_count_and_find_match_brute_force(index: CorpusIndex, frames: list[str], streams, texts: list[str]) -> None:
    rng = random.Random(0)
    queries = ["the", "of the", "project gutenberg", "zzqx never", "The  PROJECT, gutenberg!"]
    for _ in range(60):  # word runs cut from corpus documents, and from WikiMIA (mostly absent)
        words = rng.choice(frames).split()
        k = rng.randint(1, 6)
        i = rng.randrange(max(1, len(words) - k))
        queries.append(" ".join(words[i : i + k]))
    for r in rows(WIKIMIA64)[:30]:
        words = r["text"].split()
        queries.append(" ".join(words[5:15]))
    for q in queries:
        assert count(index, q) == brute_count(texts, q), q
        found = find(index, q, limit=1000)
        assert found.count == count(index, q)
        assert sorted(h.document for h in found.documents) == holding(streams, q), q
        for hit in found.documents[:3]:
            assert normalise(q) in hit.snippet


def test_batched_counts_equal_one_by_one(index: CorpusIndex, frames: list[str], texts: list[str]) -> None:
    rng = random.Random(1)
    batch = []
    for _ in range(200):  # above the one-by-one threshold: the vectorised search answers
        words = rng.choice(frames).split()
        k = rng.randint(1, 4)
        i = rng.randrange(max(1, len(words) - k))
        batch.append(f" {' '.join(words[i : i + k])} ".encode())
    batch.append(b" zzqx absent ")
    assert index.count_frames(batch).tolist() == [int(index.count_frames([f])[0]) for f in batch]
    assert index.count_frames(batch)[:5].tolist() == [brute_count(texts, f.decode()) for f in batch[:5]]


def test_ascii_fast_path_equals_the_general_normalisation(corpus_texts: list[str]) -> None:
    import html

    from verifier.corpus.normalise import normalise_unicode

    samples = [t for t in corpus_texts if t.isascii()][:300] + [
        "A_b\x0bC\x1fd  e--F\tg\r\nH~1_2",
        "___",
        "",
        " x ",
        "&#101;x &amp; y",
    ]
    assert len(samples) > 250
    assert all(normalise(t) == normalise_unicode(html.unescape(t)) for t in samples)


@pytest.mark.parametrize(
    ("text", "compared"),
    [
        ("Caf\u00e9 \u200bZERO\u200bwidth \ufb01ne", "café zerowidth fine"),
        (
            "ze\U000e0020ro wi\u034fdth se\ufe0fle\u17b4ct \u3164x q\U0001d173r",
            "zero width select x qr",
        ),  # tags, CGJ, selectors, fillers
        ("Cafe\u0301 \u0130stanbul", "caf\u00e9 istanbul"),  # combining marks composed or deleted, dotted capital I
        ("&#101;ntity&nbsp;text", "entity text"),
        ("新闻报道。今天", "新 闻 报 道 今 天"),  # scripts without spaces: a character is a word
        (
            "\u0e44\u0e21\u0e48 \u0e44\u0e21\u0e49",
            "\u0e44 \u0e21\u0e48 \u0e44 \u0e21\u0e49",
        ),  # Thai "not" and "wood": marks kept, units apart
        (
            "\u0645\u064e\u0646 \u092e\u0948\u0902",
            "\u0645\u0646 \u092e\u0948\u0902",
        ),  # Arabic vowel points deleted, Hindi signs kept
    ],
)
def test_disguises_normalise_away(text: str, compared: str) -> None:
    assert normalise(text) == compared


def test_count_is_whole_word(index: CorpusIndex, texts: list[str]) -> None:
    assert count(index, "gutenberg") > 0
    assert count(index, "utenberg") == brute_count(texts, "utenberg") == 0


def test_lookup_matches_brute_force(index: CorpusIndex, texts: list[str], corpus_texts: list[str]) -> None:
    grams = {}
    suspects = (
        corpus_texts[:3]
        + [r["text"] for r in rows(WIKIMIA64)[:25]]
        + ["no word here is zzqx in any corpus document at all ok"]
    )
    results = lookup(index, suspects, ngram=13, min_span_words=8, characters=True)
    joined = "\xff".join(texts)
    for text, result in zip(suspects, results):
        words = normalise(text).split()
        n = min(13, len(words))
        present = [f" {' '.join(words[i : i + n])} " in joined for i in range(len(words) - n + 1)]
        assert result.ngrams == len(present) and result.ngrams_found == sum(present), text[:40]
        assert result.verbatim == (f" {' '.join(words)} " in joined)
        longest = 0
        for i in range(len(words)):
            k = longest
            while i + k < len(words) and f" {' '.join(words[i : i + k + 1])} " in joined:
                k += 1
            longest = max(longest, k)
        assert result.longest_words == longest
        norm = normalise(text)
        best = 0
        for i in range(len(norm)):
            while i + best < len(norm) and norm[i : i + best + 1] in joined:
                best += 1
        assert result.longest_chars == best
        assert result.fifty_char == (best >= 50)
        for span in result.spans:
            piece = result.text[span.start : span.end]
            assert len(piece.split()) == span.words >= 8
            assert span.count == brute_count(texts, piece) > 0
            assert all(piece in h.snippet for h in span.documents)
        grams[text] = result
    assert results[0].verbatim and results[0].ngrams_found == results[0].ngrams
    assert results[-1].ngrams_found == 0 and results[-1].spans == []
    # the benchmark items extended in the corpus's Wikipedia documents are found, most others are not
    assert 0 < sum(r.verbatim for r in results[3:-1]) < 25


def test_near_duplicates_survive_edits(index: CorpusIndex, corpus_texts: list[str]) -> None:
    original = corpus_texts[7]
    words = original.split()
    edited = " ".join(w if i % 25 else "changed" for i, w in enumerate(words))
    result = lookup(index, [edited, "an unrelated sentence about nothing in particular at all"], near_duplicates=0.8)
    hits = result[0].near_duplicates
    assert hits and hits[0][0].document == 7 and 0.8 <= hits[0][1] < 1.0 and 0.8 <= hits[0][2] < 1.0
    assert result[1].near_duplicates == []


def test_digest_is_the_files_and_index_records_it(index: CorpusIndex, tmp_path: Path) -> None:
    digest, files = digest_files([CORPUS])
    assert digest == index.corpus_sha256 and [n for n, _ in files] == [
        "demo-v1/pg19-openings.jsonl",
        "demo-v1/wikipedia-events.jsonl",
    ]
    renamed = tmp_path / "other"
    renamed.mkdir()
    for name, _ in files:
        shutil.copy(CORPUS / Path(name).name, renamed / ("x-" + Path(name).name))
    assert digest_files([renamed])[0] == digest  # names do not enter the corpus digest; contents and order do


def test_a_build_in_worker_processes_is_the_same_index(index: CorpusIndex, tmp_path: Path) -> None:
    """Large corpora read their documents' forms in worker processes; the index must not depend on it."""
    from verifier.corpus import build_index

    parallel = build_index([CORPUS], tmp_path / "demo", shard_bytes=300_000, minhash=True, workers=2)
    assert parallel.index_sha256 == index.sha256 and parallel.documents == index.manifest.documents


@pytest.fixture()
def small_copy(index: CorpusIndex, tmp_path: Path) -> Path:
    folder = tmp_path / "copy"
    shutil.copytree(index.folder, folder)
    return folder


@pytest.mark.parametrize(
    "damage", ["flip-text", "truncate-sa", "drop-meta", "edit-manifest", "manifest-not-json", "link"]
)
def test_damaged_index_is_refused_in_one_line(small_copy: Path, damage: str) -> None:
    shard = small_copy / "shard-00000"
    if damage == "flip-text":
        data = bytearray((shard / "text.bin").read_bytes())
        data[100] ^= 1
        (shard / "text.bin").write_bytes(bytes(data))
    elif damage == "truncate-sa":
        data = (shard / "sa.bin").read_bytes()
        (shard / "sa.bin").write_bytes(data[:-4])
    elif damage == "drop-meta":
        (shard / "meta.jsonl").unlink()
    elif damage == "edit-manifest":
        manifest = json.loads((small_copy / "manifest.json").read_text())
        manifest["shards"][0]["documents"] += 1
        (small_copy / "manifest.json").write_text(json.dumps(manifest))
    elif damage == "manifest-not-json":
        (small_copy / "manifest.json").write_text("{not json")
    else:
        (shard / "docs.bin").rename(shard / "real")
        (shard / "docs.bin").symlink_to(shard / "real")
    with pytest.raises(VerifierError) as info:
        CorpusIndex.open(small_copy)
    assert "\n" not in str(info.value) and str(small_copy.parent) not in str(info.value)


@pytest.mark.parametrize(
    ("url", "host"),
    [
        ("https://www.Example.org/a", "example.org"),
        ("www.hidden-a.com/page", "hidden-a.com"),
        ("https://hidden-b.com\\@d01.com/", "hidden-b.com"),
        ("https://user:pw@site.net:8080/x", "site.net"),
        ("not a url", ""),
    ],
)
def test_url_hosts_as_browsers_read_them(url: str, host: str) -> None:
    from verifier.corpus.sources import url_host

    assert url_host(url) in (host, host.lower()) or (host == "" and " " in url_host(url) or url_host(url) == host)


def test_inputs_every_format_and_every_refusal(tmp_path: Path) -> None:
    texts = [r["text"] for r in rows(CORPUS / "wikipedia-events.jsonl")[:6]]
    lines = "".join(
        json.dumps({"text": t, "url": f"https://www.example{i}.org/a", "date": "2016"}) + "\n"
        for i, t in enumerate(texts)
    )
    (tmp_path / "a.jsonl.gz").write_bytes(gzip.compress(lines[: len(lines) // 2].encode()))
    import zstandard

    rest = lines.splitlines(keepends=True)
    (tmp_path / "b.jsonl.zst").write_bytes(zstandard.ZstdCompressor().compress("".join(rest[3:]).encode()))
    (tmp_path / "a.jsonl.gz").write_bytes(gzip.compress("".join(rest[:3]).encode()))
    pq.write_table(pa.table({"text": texts[:2], "id": ["p1", "p2"]}), tmp_path / "c.parquet")
    (tmp_path / "d.txt").write_text(texts[0])
    report = build_index([tmp_path], tmp_path.parent / "ix")
    assert report.documents == 6 + 2 + 1
    index = CorpusIndex.open(tmp_path.parent / "ix")
    hit = find(index, " ".join(texts[1].split()[:12])).documents
    assert {h.meta.get("domain") for h in hit} >= {"example1.org"} and any(h.meta.get("id") == "p2" for h in hit)
    with pytest.raises(VerifierError, match="exists"):
        build_index([tmp_path], tmp_path.parent / "ix")
    victim = tmp_path / "victim"
    (victim / "sub").mkdir(parents=True)
    (victim / "sub" / "keep.txt").write_text("x")
    with pytest.raises(VerifierError, match="not a corpus index; not replaced"):
        build_index([tmp_path / "d.txt"], victim, force=True)
    with pytest.raises(VerifierError, match="overlaps the input"):
        build_index([tmp_path], tmp_path / "inside", force=True)
    assert (victim / "sub" / "keep.txt").exists()
    bad = {
        "dupkey.jsonl": b'{"text": "ok", "text": "other"}\n',
        "empty.jsonl": b"",
        "binary.txt": b"\x00\x01\x02abc",
        "latin1.txt": "caf\u00e9".encode("latin-1"),
        "broken.jsonl": b'{"text": "fine"}\n{oops\n',
        "notext.jsonl": b'{"body": "x"}\n',
        "number.jsonl": b'{"text": 5}\n',
        "trunc.jsonl.gz": gzip.compress(lines.encode())[:40],
        "nonutf.jsonl": b'{"text": "\xff\xfe"}\n',
        "junk.parquet": b"not parquet at all",
    }
    for name, data in bad.items():
        path = tmp_path / "bad" / name
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(data)
        with pytest.raises(VerifierError) as info:
            build_index([path], tmp_path / f"out-{name}")
        message = str(info.value)
        assert message.startswith(name) and "\n" not in message, message
        assert not (tmp_path / f"out-{name}").exists()
        assert not list(tmp_path.glob(f".out-{name}*")), "a failed build leaves nothing behind"
        path.unlink()


def test_long_texts_in_pieces_count_exactly(index: CorpusIndex, texts: list[str], corpus_texts: list[str]) -> None:
    """Texts over 1,500 words are looked up in overlapping pieces: n-gram counts stay exact and
    whole-text presence is one count."""
    words = " ".join(corpus_texts[:40]).split()
    assert len(words) > 3500
    mixed = " ".join(w if i % 700 else "zzqx" for i, w in enumerate(words))  # a novel word every 700
    result = lookup(index, [mixed], characters=True)[0]
    joined = "\xff".join(texts)
    norm = normalise(mixed).split()
    present = [f" {' '.join(norm[i : i + 13])} " in joined for i in range(len(norm) - 12)]
    assert result.ngrams == len(present) and result.ngrams_found == sum(present)
    assert not result.verbatim and result.fifty_char
    whole = lookup(index, [corpus_texts[5] * 1])[0]
    assert whole.verbatim


def test_fifty_character_rule_counts_whole_characters(tmp_path: Path) -> None:
    (tmp_path / "c.jsonl").write_text(json.dumps({"text": "a" * 49 + "\u00e8"}) + "\n")
    build_index([tmp_path / "c.jsonl"], tmp_path / "ix")
    ix = CorpusIndex.open(tmp_path / "ix")
    shared_prefix, same = lookup(ix, ["a" * 49 + "\u00e9", "a" * 49 + "\u00e8"], characters=True)
    assert (shared_prefix.longest_chars, shared_prefix.fifty_char) == (49, False)  # the byte match ends inside é
    assert (same.longest_chars, same.fifty_char) == (50, True)


def test_edited_copy_found_wherever_probes_hit_first(tmp_path: Path, corpus_texts: list[str]) -> None:
    """An edited copy is scored at every place the probes hit, and decoys holding the same
    3-grams cannot crowd it out (an outside review)."""
    item = " ".join(corpus_texts[600].split()[:40])
    words = item.split()
    copy = " ".join(w + (" indeed" if i % 4 == 3 else "") for i, w in enumerate(words))

    def decoy(k):
        return " ".join(" ".join(words[i : i + 3]) for i in random.Random(k).sample(range(0, 37, 3), 12))

    rows = (
        [{"text": " ".join(words[:3]) + " filler " * 50 + copy}]
        + [{"text": decoy(k)} for k in range(25)]
        + [{"text": copy}]
    )
    (tmp_path / "c.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    build_index([tmp_path / "c.jsonl"], tmp_path / "ix")
    ix = CorpusIndex.open(tmp_path / "ix")
    found = {
        h.document: (contained, close)
        for h, contained, close in lookup(ix, [item], near_duplicates=0.7)[0].near_duplicates
    }
    assert found.get(0, (0,))[0] == 1.0 and found.get(26, (0,))[0] == 1.0
    # every word is there in order, but a quarter more words lie between them: contained, not close
    assert 0.7 < found[26][1] < 0.9
