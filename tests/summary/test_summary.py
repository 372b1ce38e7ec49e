"""verifier summary check: a provider's whole training-content summary, field by field, in one signed bundle."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from verifier.boundary.resources import resource
from verifier.errors import VerifierError
from verifier.summary.bundle import FINDINGS, verify_summary
from verifier.summary.check import NOT_TESTABLE, check_summary_file
from verifier.summary.fields import SummaryEvidence
from verifier.summary.schema import load_summary
from verifier.trust.keys import generate_key, signing_key

EXAMPLES = resource("examples")
DEMO = EXAMPLES / "summary" / "demo.yaml"
TEMPLATE_FIELDS = 17


def rows_by_field(findings: dict) -> dict[str, dict]:
    return {row["field"]: row for row in findings["rows"]}


@pytest.fixture(scope="module")
def key(tmp_path_factory):
    path = tmp_path_factory.mktemp("key") / "auditor.key"
    generate_key(path)
    return signing_key(path)[0]


@pytest.fixture(scope="module")
def demo_check(tmp_path_factory, key):
    out = tmp_path_factory.mktemp("evidence")
    evidence = SummaryEvidence(model="smollm2-135m", corpus=Path("data/corpus/demo-v1"))
    return check_summary_file(DEMO, evidence, out, key, base=EXAMPLES)


def test_the_shipped_summary_is_checked_into_one_signed_bundle(demo_check):
    rows = rows_by_field(demo_check.findings)
    assert len(rows) == TEMPLATE_FIELDS and demo_check.signed
    assert rows["1.2 model identity"]["verdict"] == "VERIFIED"  # the declared digest is the bundled weights'
    assert rows["2.1 public datasets"]["verdict"] == "VERIFIED"
    assert rows["1.3 text size band"]["verdict"] == "VERIFIED"
    untested = [r for r in rows.values() if r["verdict"] == NOT_TESTABLE]
    assert all(r["reason"] for r in untested) and "1.1 provider" in {r["field"] for r in untested}
    findings, _ = verify_summary(demo_check.folder)
    assert findings == demo_check.findings
    report = (demo_check.folder / "report.html").read_text()
    assert report.index("The template, field by field") < report.index("How the fields were tested")
    assert demo_check.findings["reproduce"].startswith("verifier summary check summary/demo.yaml --model smollm2-135m")
    assert "/" + str(EXAMPLES).strip("/") not in (demo_check.folder / FINDINGS).read_text()  # no absolute path


def test_an_edited_row_or_claim_bundle_is_caught(demo_check, tmp_path):
    copy = tmp_path / "bundle"
    shutil.copytree(demo_check.folder, copy)
    findings = json.loads((copy / FINDINGS).read_text())
    findings["rows"][7]["verdict"] = "CONTRADICTED"
    (copy / FINDINGS).write_text(json.dumps(findings))
    with pytest.raises(VerifierError, match="summary.json: differs"):
        verify_summary(copy)
    shutil.rmtree(copy)
    shutil.copytree(demo_check.folder, copy)
    bundle = next(p for p in (copy / "claims").iterdir() if p.is_dir())
    (bundle / "findings.json").write_text((bundle / "findings.json").read_text().replace("VERIFIED", "SUPPORTED"))
    with pytest.raises(VerifierError, match="differs"):
        verify_summary(copy)


def web_corpus(folder: Path) -> Path:
    """A corpus of three files with URLs and crawl dates: PG-19 openings (gutenberg.org), WikiMIA
    texts (en.wikipedia.org), and 20 crawled blog pages (one much larger), collected 2016-01 to 2016-11."""
    corpus = folder / "corpus"
    corpus.mkdir()
    data = EXAMPLES / "data"
    books = [json.loads(line)["text"] for line in (data / "corpus" / "demo-v1" / "pg19-openings.jsonl").open()][:40]
    wiki = [json.loads(line)["text"] for line in (data / "corpus" / "demo-v1" / "wikipedia-events.jsonl").open()]
    blogs = [json.loads(line)["text"] for line in (data / "wikimia" / "length64.jsonl").open()][:20]

    def write(name: str, records: list[dict]) -> None:
        (corpus / name).write_text("".join(json.dumps(r) + "\n" for r in records))

    write(
        "books.jsonl",
        [
            {"text": t, "url": f"https://www.gutenberg.org/ebooks/{i}", "crawl_date": "2016-01"}
            for i, t in enumerate(books)
        ],
    )
    write(
        "wiki.jsonl",
        [
            {"text": t, "url": f"https://en.wikipedia.org/wiki/E{i}", "crawl_date": "2016-06"}
            for i, t in enumerate(wiki)
        ],
    )
    write(
        "web.jsonl",
        [
            {"text": t * (40 if i == 7 else 1), "url": f"https://blog{i}.example.org/p", "crawl_date": "2016-11"}
            for i, t in enumerate(blogs)
        ],
    )
    return corpus


def summary_file(folder: Path, name: str, **changes) -> Path:
    body = yaml.safe_load(DEMO.read_text())
    body["id"] = name
    body["modalities"]["latest_collection"] = "2016-11"
    body["sources"]["public_datasets"] = [
        {"name": "PG-19", "files": ["books.jsonl"]},
        {"name": "WikiMIA", "files": ["wiki.jsonl"]},
    ]
    body["sources"]["crawled"] = {
        "used": True,
        "files": ["web.jsonl"],
        "top_domains": ["en.wikipedia.org", "gutenberg.org", "blog7.example.org"],
        "crawlers": ["ExampleBot"],
    }
    for path, value in changes.items():
        *keys, last = path.split("__")
        node = body
        for k in keys:
            node = node[k]
        node[last] = value
    (folder / f"{name}.yaml").write_text(yaml.safe_dump(body))
    return folder / f"{name}.yaml"


def test_false_domains_date_and_a_missing_dataset_are_contradicted_and_nothing_else(tmp_path, key):
    web_corpus(tmp_path)
    evidence = SummaryEvidence(model="smollm2-135m", corpus=Path("corpus"))
    honest = check_summary_file(
        tmp_path / summary_file(tmp_path, "honest"), evidence, tmp_path / "out", key, base=tmp_path
    )
    false = check_summary_file(
        summary_file(
            tmp_path,
            "false",
            modalities__latest_collection="2016-06",
            sources__public_datasets=[{"name": "PG-19", "files": ["books.jsonl"]}],
            sources__crawled__top_domains=["gutenberg.org", "blog3.example.org", "blog4.example.org"],
        ),
        evidence,
        tmp_path / "out",
        key,
        base=tmp_path,
    )
    before, after = rows_by_field(honest.findings), rows_by_field(false.findings)
    tested = ["1.3 latest collection date", "2.1 public datasets", "2.3 most relevant domains"]
    assert [before[f]["verdict"] for f in tested] == ["VERIFIED"] * 3, [before[f]["reason"] for f in tested]
    assert [after[f]["verdict"] for f in tested] == ["CONTRADICTED"] * 3, [after[f]["reason"] for f in tested]
    assert (
        "WikiMIA" not in after["2.1 public datasets"]["declared"]
        and "wiki.jsonl" in after["2.1 public datasets"]["reason"]
    )
    for field in set(before) - set(tested):
        assert after[field]["verdict"] == before[field]["verdict"], field
    verify_summary(false.folder)


def test_a_summary_is_validated_at_the_boundary(tmp_path):
    body = yaml.safe_load(DEMO.read_text())
    body["modalities"]["latest_collection"] = "2016-13"
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(body))
    with pytest.raises(VerifierError, match=r"s.yaml: modalities.latest_collection") as info:
        load_summary(tmp_path / "s.yaml")
    assert "\n" not in str(info.value)
    body = yaml.safe_load(DEMO.read_text())
    body["sources"]["crawled"] = {"used": True, "top_domains": ["co.uk"]}
    body["provider"]["nam"] = "x"
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(body))
    with pytest.raises(VerifierError, match=r"provider.nam: not a key here; did you mean 'name'"):
        load_summary(tmp_path / "s.yaml")
    del body["provider"]["nam"]
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(body))
    with pytest.raises(VerifierError, match="sources.crawled.top_domains.*public suffixes"):
        load_summary(tmp_path / "s.yaml")
    template = yaml.safe_load((EXAMPLES / "summary" / "template.yaml").read_text())
    assert template["format"] == "verifier-eu-summary/1"


def test_evidence_outside_the_working_folder_is_refused(tmp_path):
    inside = tmp_path / "work"
    inside.mkdir()
    shutil.copy(DEMO, inside / "demo.yaml")
    with pytest.raises(VerifierError, match="--corpus .*must lie in the working folder"):
        check_summary_file(
            inside / "demo.yaml", SummaryEvidence(model="smollm2-135m", corpus=tmp_path), tmp_path / "o", base=inside
        )


def test_an_undeclared_language_in_the_corpus_is_contradicted(tmp_path, key):
    """118 real Serbian sentences (Cyrillic) beside the demo's English corpus: a summary declaring
    only English is contradicted on 1.3 languages; declaring Serbian too, it is verified."""
    shutil.copytree(EXAMPLES / "data" / "corpus" / "demo-v1", tmp_path / "corpus")
    serbian = [json.loads(line)["cyrillic"] for line in (EXAMPLES / "data" / "serbian-scripts" / "pairs.jsonl").open()]
    (tmp_path / "corpus" / "sr.jsonl").write_text("".join(json.dumps({"text": t}) + "\n" for t in serbian))
    evidence = SummaryEvidence(model="smollm2-135m", corpus=Path("corpus"))
    verdicts = {}
    for name, declared in (("en-only", ["en"]), ("en-sr", ["en", "sr"])):
        body = yaml.safe_load(DEMO.read_text()) | {"id": name}
        body["modalities"]["languages"] = declared
        body["sources"]["public_datasets"] = []
        (tmp_path / f"{name}.yaml").write_text(yaml.safe_dump(body))
        result = check_summary_file(tmp_path / f"{name}.yaml", evidence, tmp_path / "out", key, base=tmp_path)
        verdicts[name] = rows_by_field(result.findings)["1.3 languages"]
    assert verdicts["en-only"]["verdict"] == "CONTRADICTED" and "sr" in verdicts["en-only"]["reason"]
    assert verdicts["en-sr"]["verdict"] == "VERIFIED", verdicts["en-sr"]["reason"]


def test_outside_attacks_on_the_dataset_list_never_confirm_it(tmp_path, key):
    """An outside review: a pattern matching every file ("*") beside another dataset, or a file
    declared under crawled data too, counted a file twice and hid an unlisted large one (VERIFIED);
    now every file needs one owner, or the list is unconfirmed. A duplicate name (the first
    entry silently dropped), a dataset without files, and crawled files with crawling declared
    unused are refused when the summary is read."""
    web_corpus(tmp_path)
    evidence = SummaryEvidence(model="smollm2-135m", corpus=Path("corpus"))
    star = summary_file(
        tmp_path,
        "star",
        sources__public_datasets=[{"name": "Wiki", "files": ["*"]}, {"name": "PG-19", "files": ["books.jsonl"]}],
    )
    row = rows_by_field(check_summary_file(star, evidence, tmp_path / "out", key, base=tmp_path).findings)[
        "2.1 public datasets"
    ]
    assert row["verdict"] not in ("VERIFIED", "CONTRADICTED") and "more than one" in row["reason"], row
    assert row["reason"].startswith("not established")  # the corpus route's reason, not the disclosure route's
    for changes, message in (
        (
            {"sources__public_datasets": [{"name": "W", "files": ["wiki.jsonl"]}, {"name": "W", "files": ["x"]}]},
            "twice",
        ),
        ({"sources__public_datasets": [{"name": "W"}]}, "files"),
        ({"sources__crawled": {"used": False, "files": ["web.jsonl"]}}, "declare used: true"),
    ):
        with pytest.raises(VerifierError, match=message):
            load_summary(summary_file(tmp_path, "bad", **changes))


def test_model_and_digest_options_are_checked_before_anything_runs(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    shutil.copy(DEMO, work / "demo.yaml")
    with pytest.raises(VerifierError, match="--model .*credentials") as info:
        check_summary_file(
            work / "demo.yaml",
            SummaryEvidence(model="openai-compatible:https://alice:s3cret@127.0.0.1:9/v1#m"),
            tmp_path / "o",
            base=work,
        )
    assert "s3cret" not in str(info.value).split("--model")[0] and "\n" not in str(info.value)
    outside = tmp_path / "model.gguf"
    outside.write_bytes(b"GGUF")
    with pytest.raises(VerifierError, match="--model .*must lie in the working folder"):
        check_summary_file(work / "demo.yaml", SummaryEvidence(model=str(outside)), tmp_path / "o", base=work)
    shutil.copytree(EXAMPLES / "data" / "corpus" / "demo-v1", work / "corpus")
    with pytest.raises(VerifierError, match="--corpus-sha256 'zzz': not a SHA-256"):
        check_summary_file(
            work / "demo.yaml",
            SummaryEvidence(model="smollm2-135m", corpus=Path("corpus"), corpus_sha256="zzz"),
            tmp_path / "o",
            base=work,
        )


def test_an_api_model_identity_is_not_taken_from_the_auditors_spec(tmp_path, key):
    work = tmp_path / "work"
    work.mkdir()
    body = yaml.safe_load(DEMO.read_text())
    body["model"]["api_model_id"] = "demo-model"
    (work / "s.yaml").write_text(yaml.safe_dump(body))
    result = check_summary_file(
        work / "s.yaml",
        SummaryEvidence(model="openai-compatible:https://127.0.0.1:9/v1#demo-model"),
        tmp_path / "o",
        key,
        base=work,
    )
    assert rows_by_field(result.findings)["1.2 model identity"]["verdict"] == "UNVERIFIABLE"


def test_a_replaced_check_leaves_nothing_behind_and_extra_files_fail_verification(demo_check, tmp_path, key):
    copy = tmp_path / "bundle"
    shutil.copytree(demo_check.folder, copy)
    (copy / "extra.html").write_text("<p>not signed</p>")
    with pytest.raises(VerifierError, match="extra.html: differs"):
        verify_summary(copy)
    out = tmp_path / "out"
    shutil.copytree(demo_check.folder, out / "demo-summary")
    with pytest.raises(VerifierError, match="refusing to replace"):
        check_summary_file(DEMO, SummaryEvidence(model="smollm2-135m"), out, key, base=EXAMPLES)
    again = check_summary_file(DEMO, SummaryEvidence(model="smollm2-135m"), out, key, base=EXAMPLES, force=True)
    assert not (again.folder / "claims").exists()  # the earlier check's claims went with it
    verify_summary(again.folder)


@pytest.mark.slow
def test_without_a_corpus_languages_are_read_from_the_tokenizer_as_evidence_only(tmp_path, key):
    """SmolLM2's tokenizer (trained mostly on English) read through its merges: English first, and the
    row stays INCONCLUSIVE - it is evidence about the tokenizer's training data, not the model's."""
    result = check_summary_file(DEMO, SummaryEvidence(model="smollm2-135m"), tmp_path, key, base=EXAMPLES)
    row = rows_by_field(result.findings)["1.3 languages"]
    assert row["verdict"] == "INCONCLUSIVE" and row["reason"].startswith(
        "the tokenizer's training data is estimated at en"
    )
    assert "not the model's" in row["reason"]
