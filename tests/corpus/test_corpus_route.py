"""The corpus-lookup route end to end (claims, policy, verdicts), and attempts to make it give a
wrong VERIFIED or CONTRADICTED: disguised copies, forged or unpinned indexes, another corpus,
partial overlaps, remote indexes that cannot be checked or reached."""

from __future__ import annotations

import json
import shutil
import threading
from pathlib import Path

import pytest
import yaml

from verifier.audit import run_audit
from verifier.corpus import build_index, digest_files
from verifier.errors import VerifierError
from verifier.policy.engine import AuditIncomplete

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "verifier" / "examples" / "data"


def never_load(role: str):
    pytest.fail(f"the {role} model was loaded; a corpus lookup needs none")


def rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


@pytest.fixture()
def folder(tmp_path: Path) -> Path:
    shutil.copytree(DATA / "corpus" / "demo-v1", tmp_path / "corpus")
    return tmp_path


def claim(folder: Path, suspect: list[str], kind: str, corpus: dict | None = None, policy: str = "default") -> Path:
    (folder / "suspect.jsonl").write_text("".join(json.dumps({"text": t}) + "\n" for t in suspect))
    corpus = corpus or {"index": "corpus", "sha256": digest_files([folder / "corpus"])[0]}
    body = {
        "claim": {"id": "c", "statement": "s", "kind": kind, "made_by": "tests"},
        "model": {"target": "smollm2-135m"},
        "evidence": {"suspect": {"path": "suspect.jsonl"}, "corpus": corpus},
        "policy": policy,
    }
    path = folder / "claim.yaml"
    path.write_text(yaml.safe_dump(body))
    return path


def lookup_of(findings: dict) -> dict:
    return next(r for r in findings["path"] if r["route"] == "corpus")


BOOKS = [r["text"] for r in rows(DATA / "corpus" / "demo-v1" / "pg19-openings.jsonl")]
BENCH = rows(DATA / "wikimia" / "length64.jsonl")


def test_bundled_examples_reach_verified_and_contradicted() -> None:
    verified = run_audit("example:corpus-pg19", target_factory=never_load).findings
    assert verified["verdict"] == "VERIFIED" and verified["decided_by"] == "corpus"
    metrics = lookup_of(verified)["outcome"]["metrics"]
    assert (
        metrics["present"] == metrics["n_documents"] == 25
        and metrics["corpus"]["provenance"] == "indexed here from the corpus files"
    )
    assert "developer's declaration" in verified["verdict_sentence"]
    contradicted = run_audit("example:corpus-wikimia-decontaminated", target_factory=never_load).findings
    assert contradicted["verdict"] == "CONTRADICTED"
    m = lookup_of(contradicted)["outcome"]["metrics"]
    # every present item really begins a corpus document; no non-member (2023) item is present
    present = [it["item"] for it in m["items"] if it["class"] == "present"]
    assert len(present) == m["present"] > 100 and all(BENCH[i - 1]["label"] == 1 for i in present)
    assert m["present_rate"]["ci_low"] < m["present"] / 542 < m["present_rate"]["ci_high"]
    sections = lookup_of(contradicted)["outcome"]["sections"]
    assert any(s["kind"] == "spans" and s["spans"] for s in sections)


def test_absent_documents_verify_absence_and_contradict_training(folder: Path) -> None:
    novel = [r["text"] for r in BENCH if r["label"] == 0]  # 2023 events: not in the corpus
    result = run_audit(claim(folder, novel[:40], "not_trained_on"), target_factory=never_load).findings
    assert lookup_of(result)["outcome"]["status"] == "all_clean" and result["verdict"] == "VERIFIED"
    trained = run_audit(claim(folder, novel[:40], "trained_on"), target_factory=never_load).findings
    assert trained["verdict"] == "CONTRADICTED"
    # Over all 258, the 2023 BAFTA article repeats a sentence of the 2014 one in the corpus (29
    # words) and a few share 50-character phrases: partial overlaps, so absence is not verified.
    everything = run_audit(claim(folder, novel, "not_trained_on"), target_factory=never_load).findings
    outcome = lookup_of(everything)["outcome"]
    assert outcome["status"] == "partial_overlap" and everything["verdict"] == "INCONCLUSIVE"
    assert outcome["metrics"]["partial"] == 8 and outcome["metrics"]["present"] == 0


def disguise(text: str) -> str:
    """Re-cased, re-punctuated, re-spaced and sprinkled with zero-width characters."""
    words = text.upper().split()
    return "  ".join(w[:2] + "\u200b" + w[2:] + ("," if i % 3 == 0 else "") for i, w in enumerate(words))


def test_disguised_copies_still_contradict_decontamination(folder: Path) -> None:
    items = [r["text"] for r in BENCH if r["label"] == 1][:30]
    corpus = folder / "corpus" / "wikipedia-events.jsonl"
    corpus.write_text(
        "".join(
            json.dumps({"text": disguise(json.loads(line)["text"])}) + "\n" for line in corpus.read_text().splitlines()
        )
    )
    result = run_audit(claim(folder, items, "decontaminated"), target_factory=never_load).findings
    assert result["verdict"] == "CONTRADICTED", result["verdict_sentence"]


def rewrite_corpus(folder: Path, edit) -> None:
    corpus = folder / "corpus" / "wikipedia-events.jsonl"
    corpus.write_text(
        "".join(json.dumps({"text": edit(json.loads(line)["text"])}) + "\n" for line in corpus.read_text().splitlines())
    )


@pytest.mark.parametrize(
    "edit",
    [
        lambda t: " ".join(w[:2] + "\U000e0020" + w[2:] for w in t.split()),  # tag characters (an outside attack)
        lambda t: " ".join(
            w[:2] + "\u034f" + w[2:] + "\ufe0f" for w in t.split()
        ),  # grapheme joiner, variation selector
        lambda t: t.replace("e", "&#101;"),  # HTML character references
        lambda t: " ".join(
            w + (" indeed" if i % 4 == 3 else "") for i, w in enumerate(t.split())
        ),  # a word inserted every 4 words
        lambda t: " ".join(
            w + (" indeed" if i % 2 == 1 else "") for i, w in enumerate(t.split())
        ),  # ... every 2 words (no 3-gram survives)
    ],
    ids=["tags", "joiners", "entities", "insertions", "dense-insertions"],
)
def test_edited_copies_still_contradict_decontamination(folder: Path, edit) -> None:
    rewrite_corpus(folder, edit)
    items = [r["text"] for r in BENCH if r["label"] == 1][:40]
    result = run_audit(claim(folder, items, "decontaminated"), target_factory=never_load).findings
    assert result["verdict"] == "CONTRADICTED", result["verdict_sentence"]


def test_swapped_words_are_never_clean(folder: Path) -> None:
    """Adjacent words swapped once in every four (an outside attack): an edited copy at about 75%,
    so neither absence nor training is established."""

    def swap(text: str) -> str:
        words = text.split()
        for i in range(0, len(words) - 1, 4):
            words[i], words[i + 1] = words[i + 1], words[i]
        return " ".join(words)

    rewrite_corpus(folder, swap)
    items = [r["text"] for r in BENCH if r["label"] == 1][:30]
    for kind in ("decontaminated", "trained_on"):
        result = run_audit(claim(folder, items, kind), target_factory=never_load).findings
        assert result["verdict"] == "INCONCLUSIVE", result["verdict_sentence"]


def test_unspaced_script_items_inside_clauses_are_found(folder: Path) -> None:
    """Chinese items copied into the middle of clauses (an outside attack): characters are words."""
    import random

    rng = random.Random(0)
    common = "的一是在不了有和人这中大为上个国我以要他时来用们生到作地于出就分对成会可也你"
    items = ["".join(rng.choice(common) for _ in range(45)) for _ in range(10)]
    (folder / "corpus" / "news.jsonl").write_text(
        "".join(json.dumps({"text": "新闻报道。今天上午" + it + "据说明天还有更多的消息。"}) + "\n" for it in items)
    )
    result = run_audit(claim(folder, items, "decontaminated"), target_factory=never_load).findings
    assert result["verdict"] == "CONTRADICTED" and lookup_of(result)["outcome"]["metrics"]["present"] == 10


def test_punctuation_only_items_decide_nothing(folder: Path) -> None:
    result = run_audit(
        claim(folder, ["* * * * *", "...", "\u2014", "!!"], "trained_on"), target_factory=never_load
    ).findings
    outcome = lookup_of(result)["outcome"]
    assert (
        outcome["status"] == "partial_overlap"
        and outcome["metrics"]["no_words"] == 4
        and result["verdict"] == "INCONCLUSIVE"
    )


def test_links_in_corpus_evidence_are_refused(folder: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    outside = tmp_path_factory.mktemp("outside") / "secret.jsonl"
    outside.write_text(json.dumps({"text": "private words"}) + "\n")
    (folder / "corpus" / "extra.jsonl").symlink_to(outside)
    with pytest.raises(VerifierError, match="extra.jsonl: a link; corpus evidence must be plain files"):
        run_audit(claim(folder, BOOKS[:2], "trained_on"), target_factory=never_load)


def test_partial_overlap_decides_nothing(folder: Path) -> None:
    novel = "the quarterly report of the river authority listed seventeen unusual herons nesting near the old mill " * 3
    mixed = [" ".join(b.split()[60:80]) + " " + novel for b in BOOKS[:5]]
    for kind in ("trained_on", "decontaminated", "not_trained_on"):
        result = run_audit(claim(folder, mixed, kind), target_factory=never_load).findings
        assert lookup_of(result)["outcome"]["status"] == "partial_overlap"
        assert result["verdict"] not in ("VERIFIED", "CONTRADICTED")


def test_short_common_phrases_are_never_present(folder: Path) -> None:
    phrases = ["of the", "the project gutenberg", "in the united states", "it was the best of times"]
    result = run_audit(claim(folder, phrases, "trained_on"), target_factory=never_load).findings
    assert lookup_of(result)["outcome"]["metrics"]["present"] == 0 and result["verdict"] != "VERIFIED"


def test_another_corpus_is_refused_as_evidence(folder: Path) -> None:
    """The refusal is the headline: the audit stops, and the disclosure route never gets to say
    'no published corpus' about a claim that named one."""
    path = claim(folder, BOOKS[:5], "trained_on", {"index": "corpus", "sha256": "0" * 64})
    with pytest.raises(
        AuditIncomplete,
        match="route corpus failed: the corpus evidence is refused: the index's corpus "
        "digest .* differs from the declared 0000000000000000",
    ):
        run_audit(path, target_factory=never_load)


def trusting(folder: Path, **params) -> str:
    policy = yaml.safe_load((ROOT / "verifier" / "policies" / "default.yaml").read_text())
    policy["routes"][0]["params"].update(params)
    (folder / "trusting.yaml").write_text(yaml.safe_dump(policy))
    return "trusting.yaml"


def test_a_prebuilt_index_needs_a_pin_and_trust_and_a_forged_one_fails(folder: Path) -> None:
    declared = digest_files([folder / "corpus"])[0]
    built = build_index([folder / "corpus"], folder / "index")
    again = build_index([folder / "corpus"], folder / "index-again")
    assert again.index_sha256 == built.index_sha256, (
        "indexing is deterministic: a pinned digest can be re-derived from the files"
    )
    contaminated = [r["text"] for r in BENCH if r["label"] == 1][:20]
    with pytest.raises(AuditIncomplete, match="a prebuilt index is accepted only when the claim pins it"):
        run_audit(
            claim(folder, contaminated, "decontaminated", {"index": "index", "sha256": declared}),
            target_factory=never_load,
        )
    pinned = {"index": "index", "sha256": declared, "index_sha256": built.index_sha256}
    untrusted = run_audit(claim(folder, contaminated, "decontaminated", pinned), target_factory=never_load).findings
    assert lookup_of(untrusted)["outcome"]["status"] == "index_unchecked" and untrusted["verdict"] == "INCONCLUSIVE"
    trusted = run_audit(
        claim(folder, contaminated, "decontaminated", pinned, policy=trusting(folder, trust_prebuilt=True)),
        target_factory=never_load,
    ).findings
    assert trusted["verdict"] == "CONTRADICTED" and "prebuilt index" in trusted["verdict_sentence"]
    assert any("trust_prebuilt" in w for w in trusted["policy"]["weaker_than_default"])
    # Forgery: drop the Wikipedia file, rebuild, and write the declared corpus digest into the manifest.
    (folder / "clean").mkdir()
    shutil.copy(folder / "corpus" / "pg19-openings.jsonl", folder / "clean")
    forged = build_index([folder / "clean"], folder / "forged")
    manifest = json.loads((folder / "forged" / "manifest.json").read_text())
    manifest["corpus_sha256"] = declared
    (folder / "forged" / "manifest.json").write_text(json.dumps(manifest))
    from verifier.corpus import CorpusIndex

    with pytest.raises(VerifierError, match="not the digest of the listed source files"):
        CorpusIndex.open(folder / "forged")
    manifest["sources"] = json.loads((folder / "index" / "manifest.json").read_text())[
        "sources"
    ]  # forge the file list too
    (folder / "forged" / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(VerifierError, match="the sources list 639 documents, the index 500"):
        CorpusIndex.open(folder / "forged")
    manifest["sources"][1]["documents"] = 0  # and the counts: consistent, pinned, but not trusted by default
    (folder / "forged" / "manifest.json").write_text(json.dumps(manifest))
    import hashlib

    forged_pin = {
        "index": "forged",
        "sha256": declared,
        "index_sha256": hashlib.sha256((folder / "forged" / "manifest.json").read_bytes()).hexdigest(),
    }
    result = run_audit(claim(folder, contaminated, "decontaminated", forged_pin), target_factory=never_load).findings
    assert lookup_of(result)["outcome"]["status"] == "index_unchecked" and result["verdict"] == "INCONCLUSIVE"
    assert forged.index_sha256 != built.index_sha256


def test_corpus_outside_the_claim_folder_is_refused_at_load(
    folder: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    path = claim(folder, BOOKS[:2], "trained_on", {"index": str(elsewhere), "sha256": "0" * 64})
    with pytest.raises(VerifierError, match="evidence.corpus.index: .* must be a path relative"):
        run_audit(path, target_factory=never_load)
    path = claim(folder, BOOKS[:2], "trained_on", {"index": "missing", "sha256": "0" * 64})
    with pytest.raises(VerifierError, match="evidence.corpus.index: missing not found"):
        run_audit(path, target_factory=never_load)


@pytest.fixture()
def api(demo_index):
    from verifier.corpus.server import make_server

    server = make_server(demo_index, "demo")
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_port}/"
    server.shutdown()


def test_remote_index_gives_no_verdict_unless_the_policy_trusts_it(folder: Path, api: str, demo_index) -> None:
    remote = {"index": "demo", "api": api, "sha256": demo_index.corpus_sha256}
    result = run_audit(claim(folder, BOOKS[:5], "trained_on", remote), target_factory=never_load).findings
    assert lookup_of(result)["outcome"]["status"] == "index_unchecked" and result["verdict"] == "INCONCLUSIVE"
    trusted = run_audit(
        claim(folder, BOOKS[:5], "trained_on", remote, policy=trusting(folder, trust_remote=True)),
        target_factory=never_load,
    ).findings
    assert trusted["verdict"] == "VERIFIED" and any(
        "trust_remote" in w for w in trusted["policy"]["weaker_than_default"]
    )
    assert "remote index" in trusted["verdict_sentence"]


def test_unreachable_remote_index_stops_the_audit_never_absent(folder: Path) -> None:
    """A peer that cannot be reached is not evidence about the claim: no verdict at all."""
    remote = {"index": "demo", "api": "http://127.0.0.1:9/", "sha256": "0" * 64}
    with pytest.raises(
        AuditIncomplete, match="route corpus failed: index API http://127.0.0.1:9/, index demo: not available"
    ):
        run_audit(claim(folder, BOOKS[:2], "not_trained_on", remote), target_factory=never_load)


def summary_corpus(folder: Path, late: str | None = None, undated: bool = False) -> dict:
    """The demo texts with URLs and dates: gutenberg.org books, en.wikipedia.org articles, and 20
    small blogs (one WikiMIA-64 text each); 22 domains, so the top 10% is 3 domains."""
    corpus = folder / "web"
    corpus.mkdir(exist_ok=True)
    records = [
        {"text": t, "url": f"https://www.gutenberg.org/ebooks/{i}", "crawl_date": "2016-01"}
        for i, t in enumerate(BOOKS[:50])
    ]
    wiki = rows(DATA / "corpus" / "demo-v1" / "wikipedia-events.jsonl")
    records += [
        {"text": r["text"], "url": f"https://en.wikipedia.org/wiki/Event_{i}", "crawl_date": "2016-06"}
        for i, r in enumerate(wiki)
    ]
    records += [
        {"text": r["text"] * (3 if i == 7 else 1), "url": f"https://blog{i}.example.org/post", "crawl_date": "2016-11"}
        for i, r in enumerate(BENCH[:20])
    ]
    if late:
        records[-1]["crawl_date"] = late
    if undated:
        del records[-1]["crawl_date"]
    (corpus / "web.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    return {"index": "web", "sha256": digest_files([corpus])[0]}


def summary_claim(folder: Path, corpus: dict, fields: tuple[str, ...] = ("eu:2.3", "eu:1.3"), **declared) -> Path:
    path = claim(folder, BOOKS[:2], "summary_field", corpus)
    body = yaml.safe_load(path.read_text())
    body["claim"]["regulation_fields"] = list(fields)
    body["model"]["declared_summary"] = declared
    path.write_text(yaml.safe_dump(body))
    return path


def test_summary_fields_checked_against_the_corpus(folder: Path) -> None:
    corpus = summary_corpus(folder)
    full = ["gutenberg.org", "en.wikipedia.org", "blog7.example.org"]
    ok = run_audit(
        summary_claim(
            folder, corpus, crawled_domains=full + ["other.net"], size_band="<1B", latest_collection="2016-12"
        ),
        target_factory=never_load,
    ).findings
    metrics = lookup_of(ok)["outcome"]["metrics"]
    assert (
        ok["verdict"] == "VERIFIED"
        and set(metrics["required_domains"] + metrics["tied_domains"]) == set(full)
        and metrics["domain_coverage"] == 1.0
    )
    missing = run_audit(
        summary_claim(folder, corpus, crawled_domains=full[:2], size_band="<1B"), target_factory=never_load
    ).findings
    assert missing["verdict"] == "CONTRADICTED" and "blog7.example.org" in missing["verdict_sentence"]
    band = run_audit(
        summary_claim(folder, corpus, crawled_domains=full, size_band="1B-10T"), target_factory=never_load
    ).findings
    assert band["verdict"] == "CONTRADICTED" and "outside the declared band" in band["verdict_sentence"]
    sme = run_audit(
        summary_claim(folder, corpus, crawled_domains=full[:2], sme=True), target_factory=never_load
    ).findings
    assert sme["verdict"] == "VERIFIED"  # SMEs list the top 5%: 2 of 22 domains


def test_summary_dates_late_or_missing(folder: Path) -> None:
    full = ["gutenberg.org", "en.wikipedia.org", "blog7.example.org"]
    late = run_audit(
        summary_claim(
            folder, summary_corpus(folder, late="2017-03-02"), crawled_domains=full, latest_collection="2016-12"
        ),
        target_factory=never_load,
    ).findings
    assert late["verdict"] == "CONTRADICTED" and "2017-03" in late["verdict_sentence"]
    undated = run_audit(
        summary_claim(folder, summary_corpus(folder, undated=True), crawled_domains=full, latest_collection="2016-12"),
        target_factory=never_load,
    ).findings
    assert undated["verdict"] == "UNVERIFIABLE" and lookup_of(undated)["outcome"]["status"] == "summary_uncheckable"
    bad = summary_claim(folder, summary_corpus(folder), crawled_domains=["not a domain!"])
    with pytest.raises(VerifierError, match="declared_summary.crawled_domains"):
        run_audit(bad, target_factory=never_load)


def test_summary_ambiguities_never_confirm(folder: Path) -> None:
    """Ties at the domain cut, dates known only to the year or given as timestamps, and
    internationalised names (an outside review)."""
    corpus = folder / "web"
    corpus.mkdir()
    text = BOOKS[0]
    records = [{"text": text * 3, "url": "https://big.example/1", "date": "2016-01-05"}]
    records += [{"text": text, "url": f"https://{name}/a", "date": "2016-02"} for name in ("beta.org", "zeta.org")]
    records += [{"text": BOOKS[i][:200], "url": f"https://small{i}.org/a", "date": "2015"} for i in range(1, 18)]
    records += [{"text": BOOKS[20], "url": "https://b\u00fccher.de/x", "date": "2016"}] * 3
    (corpus / "web.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    ref = {"index": "web", "sha256": digest_files([corpus])[0]}
    # 21 domains: the top 10% is 3; big.example and bücher.de are certainly in it, beta/zeta tie for the third place
    ok = run_audit(
        summary_claim(folder, ref, crawled_domains=["big.example", "xn--bcher-kva.de", "zeta.org"]),
        target_factory=never_load,
    ).findings
    assert ok["verdict"] == "VERIFIED", ok["verdict_sentence"]
    short = run_audit(
        summary_claim(folder, ref, crawled_domains=["big.example", "bücher.de"]), target_factory=never_load
    ).findings
    assert short["verdict"] == "CONTRADICTED" and "tied" in short["verdict_sentence"]
    # dated to the year 2016 only: cannot confirm a declared 2016-06, and 2015 documents contradict nothing
    unsure = run_audit(
        summary_claim(
            folder, ref, crawled_domains=["big.example", "bücher.de", "beta.org"], latest_collection="2016-06"
        ),
        target_factory=never_load,
    ).findings
    assert unsure["verdict"] == "UNVERIFIABLE"
    late = run_audit(
        summary_claim(
            folder, ref, crawled_domains=["big.example", "bücher.de", "beta.org"], latest_collection="2015-12"
        ),
        target_factory=never_load,
    ).findings
    assert late["verdict"] == "CONTRADICTED" and "2016" in late["verdict_sentence"]


def test_hosts_hidden_in_urls_and_subdomains(folder: Path) -> None:
    corpus = folder / "web"
    corpus.mkdir()
    records = [{"text": BOOKS[i], "url": f"https://en.site{i % 2}.org/{i}"} for i in range(6)]
    records += [{"text": BOOKS[10][:100], "url": f"https://small{i}.org/"} for i in range(14)]
    ref = {"index": "web", "sha256": ""}
    (corpus / "web.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    ref["sha256"] = digest_files([corpus])[0]
    covered = run_audit(
        summary_claim(folder, ref, crawled_domains=["site0.org", "site1.org"]), target_factory=never_load
    ).findings
    assert covered["verdict"] == "VERIFIED"  # a declared domain covers its subdomains
    records.append({"text": BOOKS[30] * 20, "url": "https://hidden.com\\@site0.org/"})  # a browser goes to hidden.com
    (corpus / "web.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    ref["sha256"] = digest_files([corpus])[0]
    hidden = run_audit(
        summary_claim(folder, ref, crawled_domains=["site0.org", "site1.org"]), target_factory=never_load
    ).findings
    assert hidden["verdict"] == "CONTRADICTED" and "hidden.com" in hidden["verdict_sentence"]
    records.append({"text": BOOKS[31], "url": "::::"})
    (corpus / "web.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    ref["sha256"] = digest_files([corpus])[0]
    unknown = run_audit(
        summary_claim(folder, ref, crawled_domains=["site0.org", "site1.org", "hidden.com"]), target_factory=never_load
    ).findings
    assert unknown["verdict"] == "UNVERIFIABLE"  # a URL without a host: its domain could be any


def test_hosts_are_read_as_browsers_read_them(folder: Path) -> None:
    """An outside attack: the largest site spelt eight ways with percent-encoding, case and a
    trailing dot (each spelling below the cut) left a summary that omits it VERIFIED; a site
    written as a decimal IPv4 address and declared in its dotted form got CONTRADICTED."""
    spellings = [
        "https://%62ig.example/",
        "https://BIG.example./",
        "https://b%69g.example/",
        "https://bi%67.example/",
        "https://big%2Eexample/",
        "HTTPS://Big.Example/x",
        "https://big.%65xample/",
        "//big.example/",
    ]
    records = [{"text": BOOKS[i], "url": url} for i, url in enumerate(spellings)]
    records += [{"text": BOOKS[20][:900], "url": "https://other.org/"}]
    records += [{"text": BOOKS[10][:100], "url": f"https://small{i}.org/"} for i in range(12)]
    omitted = run_audit(web_claim(folder, records, crawled_domains=["other.org"]), target_factory=never_load).findings
    assert omitted["verdict"] == "CONTRADICTED" and "big.example" in omitted["verdict_sentence"]
    decimal = [{"text": BOOKS[i], "url": "http://1572395042/page"} for i in range(4)]
    decimal += [{"text": BOOKS[20][:900], "url": "https://other.org/"}]
    decimal += [{"text": BOOKS[10][:100], "url": f"https://small{i}.org/"} for i in range(12)]
    dotted = run_audit(
        web_claim(folder, decimal, crawled_domains=["93.184.216.34", "other.org"]), target_factory=never_load
    ).findings
    assert dotted["verdict"] == "VERIFIED", dotted["verdict_sentence"]


def web_claim(folder: Path, records: list[dict], **declared) -> Path:
    corpus = folder / "web"
    corpus.mkdir(exist_ok=True)
    (corpus / "web.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    fields = ("eu:2.3",) if "crawled_domains" in declared else ("eu:1.3",)
    return summary_claim(folder, {"index": "web", "sha256": digest_files([corpus])[0]}, fields, **declared)


def test_publication_dates_never_confirm_a_collection_date(folder: Path) -> None:
    """Before: latest_collection 2023-06 VERIFIED for records published 2023-05 but crawled 2025-02."""
    crawled_late = [{"text": b, "date": "2023-05-02", "metadata": {"crawl_date": "2025-02-11"}} for b in BOOKS[:6]]
    late = run_audit(web_claim(folder, crawled_late, latest_collection="2023-06"), target_factory=never_load).findings
    assert late["verdict"] == "CONTRADICTED" and "2025-02" in late["verdict_sentence"]
    fields = lookup_of(late)["outcome"]["metrics"]["date_fields"]
    assert fields == {"collected": {"metadata.crawl_date": 6}, "published": {"date": 6}}
    published_only = [{"text": b, "date": "2023-05-02"} for b in BOOKS[:6]]
    unsure = run_audit(
        web_claim(folder, published_only, latest_collection="2023-06"), target_factory=never_load
    ).findings
    assert unsure["verdict"] == "UNVERIFIABLE"  # a publication date cannot say when a page was collected
    published_late = [{"text": b, "date": "2024-01-09", "WARC-Date": "2023-04-01T10:00:00Z"} for b in BOOKS[:6]]
    impossible = run_audit(
        web_claim(folder, published_late, latest_collection="2023-06"), target_factory=never_load
    ).findings
    assert impossible["verdict"] == "CONTRADICTED" and "publication date" in impossible["verdict_sentence"]
    dumps = [
        {"text": b, "dump": "CC-MAIN-2023-14"} for b in BOOKS[:6]
    ]  # a crawl ending in week 14 of 2023: March to April
    assert (
        run_audit(web_claim(folder, dumps, latest_collection="2023-04"), target_factory=never_load).findings["verdict"]
        == "VERIFIED"
    )
    assert (
        run_audit(web_claim(folder, dumps, latest_collection="2023-03"), target_factory=never_load).findings["verdict"]
        == "UNVERIFIABLE"
    )
    assert (
        run_audit(web_claim(folder, dumps, latest_collection="2023-02"), target_factory=never_load).findings["verdict"]
        == "CONTRADICTED"
    )


@pytest.mark.parametrize(
    "late",
    [
        {"published": "July 4, 2023"},
        {"date": "2023/07/04"},
        {"date": "04.07.2023"},
        {"date": "20230704"},
        {"timestamp": "20230704120000"},  # Wayback / CDX style
        {"fetch_time": "Tue, 04 Jul 2023 10:00:00 GMT"},  # a second collection field, HTTP date
        {"warc_headers": {"warc-date": "2023-07-04T10:00:00Z"}},  # OSCAR's lower-case WARC header, nested
        {"crawl_date": "2023-05-31T23:30:00-05:00"},  # 2023-06-01 in UTC, as WARC dates are
    ],
)
def test_every_date_field_in_every_format_can_contradict(folder: Path, late: dict) -> None:
    """An outside attack: each of these later dates was skipped (an unread format, or a second
    date field behind the first one read), and latest_collection 2023-05 was VERIFIED."""
    records = [{"text": b, "crawl_date": "2023-05-02"} for b in BOOKS[:5]]
    records[-1] |= late if "crawl_date" not in late else {"crawl_date": late["crawl_date"]}
    findings = run_audit(web_claim(folder, records, latest_collection="2023-05"), target_factory=never_load).findings
    assert findings["verdict"] == "CONTRADICTED", findings["verdict_sentence"]


def test_a_date_field_that_is_no_calendar_date_leaves_the_date_unconfirmed(folder: Path) -> None:
    records = [{"text": b, "crawl_date": "2023-05-02"} for b in BOOKS[:5]]
    records[-1]["fetch_time"] = 1688472000000  # epoch milliseconds: read as no date, never as none
    assert (
        run_audit(web_claim(folder, records, latest_collection="2023-05"), target_factory=never_load).findings[
            "verdict"
        ]
        == "UNVERIFIABLE"
    )


def test_text_without_urls_that_could_move_the_cut_leaves_the_domains_unconfirmed(folder: Path) -> None:
    """An outside attack: 600 bytes without a URL, less than either required domain, VERIFIED a
    list whose second place a third domain 300 bytes behind could take with them."""
    text = " ".join(BOOKS[0].split())
    records = [
        {"text": text[:1500], "url": "https://aaa.com/"},
        {"text": text[:1200], "url": "https://bbb.com/"},
        {"text": text[:900], "url": "https://ccc.com/"},
    ]
    records += [{"text": text[: 100 + i], "url": f"https://small{i}.org/"} for i in range(17)]
    assert (
        run_audit(
            web_claim(folder, records, crawled_domains=["aaa.com", "bbb.com"]), target_factory=never_load
        ).findings["verdict"]
        == "VERIFIED"
    )
    records.append({"text": text[:600]})
    assert (
        run_audit(
            web_claim(folder, records, crawled_domains=["aaa.com", "bbb.com"]), target_factory=never_load
        ).findings["verdict"]
        == "UNVERIFIABLE"
    )


def test_urls_in_nested_and_warc_fields_are_ranked(folder: Path) -> None:
    """Before: a host whose URLs sat in metadata.url held half the text and was left out of the
    ranking, so a summary omitting it was VERIFIED."""
    records = [{"text": BOOKS[i], "url": f"https://site{i % 2}.org/{i}"} for i in range(4)]
    records += [{"text": BOOKS[10][:100], "url": f"https://small{i}.org/"} for i in range(14)]
    records += [{"text": BOOKS[20 + i] * 4, "metadata": {"url": f"https://big.example/{i}"}} for i in range(3)]
    records += [{"text": BOOKS[30] * 6, "warc_headers": {"WARC-Target-URI": "https://warc.example/x"}}]
    missing = run_audit(
        web_claim(folder, records, crawled_domains=["site0.org", "site1.org"]), target_factory=never_load
    ).findings
    assert missing["verdict"] == "CONTRADICTED" and "big.example" in missing["verdict_sentence"]
    metrics = lookup_of(missing)["outcome"]["metrics"]
    assert metrics["url_fields"] == {"metadata.url": 3, "url": 18, "warc_headers.WARC-Target-URI": 1}
    assert "warc.example" in metrics["required_domains"] + metrics["tied_domains"]
    # a document with no URL in any field read, holding as much text as a top domain: unconfirmed
    unknown = records + [{"text": BOOKS[40] * 30, "source": "somewhere"}]
    listed = ["site0.org", "site1.org", "big.example", "warc.example"]
    assert (
        run_audit(web_claim(folder, unknown, crawled_domains=listed), target_factory=never_load).findings["verdict"]
        == "UNVERIFIABLE"
    )


@pytest.mark.parametrize("declared", [["com", "org"], ["co.uk"], ["blogspot.com"]])
def test_public_suffixes_are_not_domains(folder: Path, declared: list[str]) -> None:
    """Before: crawled_domains [com, org] VERIFIED as the top domains (each covered every host under it)."""
    records = [{"text": BOOKS[i], "url": f"https://site{i}.org/"} for i in range(5)]
    with pytest.raises(VerifierError, match="declared_summary.crawled_domains.*public suffixes") as info:
        run_audit(web_claim(folder, records, crawled_domains=declared), target_factory=never_load)
    assert "\n" not in str(info.value)


def test_timestamps_are_not_dates(folder: Path) -> None:
    corpus = folder / "web"
    corpus.mkdir()
    (corpus / "web.jsonl").write_text(
        "".join(json.dumps({"text": b, "timestamp": 1727740800}) + "\n" for b in BOOKS[:5])
    )
    ref = {"index": "web", "sha256": digest_files([corpus])[0]}
    result = run_audit(summary_claim(folder, ref, latest_collection="2024-01"), target_factory=never_load).findings
    assert result["verdict"] == "UNVERIFIABLE"  # 1727740800 is not the year 1727


def test_a_trusted_remote_index_still_cannot_verify_absence(folder: Path, api: str, demo_index) -> None:
    remote = {"index": "demo", "api": api, "sha256": demo_index.corpus_sha256}
    novel = [r["text"] for r in BENCH if r["label"] == 0][:10]
    result = run_audit(
        claim(folder, novel, "not_trained_on", remote, policy=trusting(folder, trust_remote=True)),
        target_factory=never_load,
    ).findings
    assert result["verdict"] == "INCONCLUSIVE"  # the 50-character rule and the edited-copy check need the index itself
