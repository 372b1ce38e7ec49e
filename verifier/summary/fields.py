"""The template's fields, each with what a check can test of it, from what evidence, and why not.

One row per field of the Commission's template (sections 1.1-3.3, the multi-part 1.3 and 2.3
split into what can be tested apart). A field is tested by a claim (run by a route, under the
batch's error control), by the model's identity (1.2: a digest compared, no test at a level),
or not at all - and then the row says why: a fact outside the weights and outputs (who the
provider is, what a crawler was for), or evidence the auditor did not give (a corpus, marks).
Nothing is dropped: every field is in the report's table.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from verifier.summary.schema import TrainingSummary


@dataclass(frozen=True)
class SummaryEvidence:
    """What the auditor brings beside the summary; paths relative to the summary's folder and inside it."""

    model: str
    corpus: Path | None = None  # the training corpus (files or folder) the provider delivered or published
    corpus_sha256: str | None = None  # the digest the provider declared for it (default: the corpus as given)
    corpus_documents: Path | None = None  # one document file of the corpus (a claim names a document set)
    opted_out_marks: Path | None = None  # a marks folder: content published with a TDM opt-out, marked
    user_data_marks: Path | None = None  # a marks folder: content submitted through the provider's service, marked
    removed: Path | None = None  # documents the provider says it removed (illegal content), one JSONL/CSV/Parquet


@dataclass
class FieldPlan:
    """One template field: what is declared, how it is tested (a claim's body, the identity, or nothing)."""

    key: str  # "1.3 latest collection date"
    regulation: str  # "eu:1.3"
    declared: str
    claim: dict[str, Any] | None = None  # the claim that tests it (its model and policy added by the check)
    identity: bool = False  # 1.2: compared with the model's identity
    tokenizer: bool = False  # 1.3 languages without a corpus: the tokenizer's merges read (evidence, no verdict)
    not_testable: str | None = None  # why no test: outside the weights, or evidence not given
    limits: str = ""  # what the test cannot show
    notes: list[str] = field(default_factory=list)


def _list(items: list[str] | None) -> str:
    return ", ".join(items) if items else "none listed"


def _used(used: bool, description: str | None) -> str:
    return ("yes" if used else "no") + (f": {description}" if description else "")


def _corpus_claim(slug: str, statement: str, fields: list[str], declared: dict[str, Any]) -> dict[str, Any]:
    return {
        "slug": slug,
        "kind": "summary_field",
        "statement": statement,
        "regulation_fields": fields,
        "declared_summary": declared,
        "evidence": "corpus",
    }


NO_CORPUS = "no training corpus given (--corpus): the field is a fact about the data, not the weights"


def plan_fields(summary: TrainingSummary, evidence: SummaryEvidence) -> list[FieldPlan]:
    """Every template field of ``summary`` with its test (see the module docstring)."""
    m, s, p = summary.modalities, summary.sources, summary.processing
    corpus = evidence.corpus is not None
    plans: list[FieldPlan] = [
        FieldPlan(
            "1.1 provider",
            "eu:1.1",
            summary.provider.name,
            not_testable="who the provider is is a legal fact; nothing in a model's weights or outputs shows it",
        ),
        FieldPlan(
            "1.2 model identity",
            "eu:1.2",
            f"{_list(summary.model.names)}"
            + (f"; weights sha256 {summary.model.weights_sha256[:16]}..." if summary.model.weights_sha256 else "")
            + (f"; API id {summary.model.api_model_id}" if summary.model.api_model_id else "")
            + (f"; on the market {summary.model.market_date}" if summary.model.market_date else ""),
            identity=True,
            limits="the digest identifies the weights tested, not that they are the ones on the market",
        ),
        FieldPlan(
            "1.3 modalities",
            "eu:1.3",
            _list(list(m.modalities)),
            not_testable="a text model's outputs do not show which other modalities it was trained on",
        ),
        FieldPlan(
            "1.3 text size band",
            "eu:1.3",
            m.text_size_band or "not declared",
            claim=_corpus_claim(
                "size-band",
                f"The training corpus holds text in the size band {m.text_size_band} tokens (summary 1.3).",
                ["eu:1.3"],
                {"size_band": m.text_size_band},
            )
            if corpus and m.text_size_band
            else None,
            not_testable=None if m.text_size_band else "not declared",
            limits="the corpus's size, as delivered; that the model was trained on all of it is the provider's word",
        ),
        FieldPlan(
            "1.3 content types",
            "eu:1.3",
            _list(m.content_types),
            not_testable="no maintained classifier of the template's content types is part of this tool; the types are "
            "the provider's description",
        ),
        FieldPlan(
            "1.3 latest collection date",
            "eu:1.3",
            m.latest_collection or "not declared",
            claim=_corpus_claim(
                "latest-collection",
                f"The training data was collected until {m.latest_collection} (summary 1.3).",
                ["eu:1.3"],
                {"latest_collection": m.latest_collection},
            )
            if corpus and m.latest_collection
            else None,
            not_testable=None if m.latest_collection else "not declared",
            limits="collection dates the corpus records; publication dates can contradict, never confirm",
        ),
        FieldPlan(
            "1.3 languages",
            "eu:1.3",
            _list(m.languages),
            claim=_corpus_claim(
                "languages",
                f"The training data is in the languages {', '.join(m.languages)} (summary 1.3).",
                ["eu:1.3"],
                {"languages": m.languages},
            )
            if corpus and m.languages
            else None,
            tokenizer=bool(m.languages) and not corpus,
            not_testable=None if m.languages else "not declared",
            limits="languages of the corpus given, identified per document (py3langid on case-folded text); a "
            "language under 1% of the text is not required to be declared"
            if corpus
            else "the tokenizer's training data, which may differ from the model's: evidence, never a verdict",
        ),
        FieldPlan(
            "2.1 public datasets",
            "eu:2.1",
            _list([d.name for d in s.public_datasets]),
            claim=_corpus_claim(
                "public-datasets",
                "The large public datasets in the training corpus are those the summary lists (summary 2.1).",
                ["eu:2.1"],
                {
                    "public_datasets": {d.name: d.files for d in s.public_datasets},
                    "elsewhere": s.crawled.files + s.private_data.files,
                },
            )
            if corpus and s.public_datasets
            else None,
            not_testable=None if s.public_datasets else "no public dataset listed with its corpus files",
            limits="which corpus files hold each dataset is the summary's mapping; what 'large' means is the "
            "template's threshold, not read here",
        ),
        FieldPlan(
            "2.2 private data",
            "eu:2.2",
            f"licensed: {'yes' if s.private_data.licensed else 'no'}; other: {_list(s.private_data.other)}",
            not_testable="a rights holder's private same-period held-out set is needed (dataset inference: "
            "verifier audit with evidence.heldout); a summary check has none",
        ),
        FieldPlan(
            "2.3 most relevant domains",
            "eu:2.3",
            _list(s.crawled.top_domains) if s.crawled.used else "no crawled data",
            claim=_corpus_claim(
                "top-domains",
                "The most relevant crawled domains are those the summary lists (summary 2.3).",
                ["eu:2.3"],
                {"crawled_domains": s.crawled.top_domains, "sme": s.crawled.sme},
            )
            if corpus and s.crawled.used and s.crawled.top_domains
            else None,
            not_testable=None if s.crawled.used and s.crawled.top_domains else "no domains declared",
            limits="domains ranked by the text the corpus records under each URL's host, over the whole corpus given "
            "(not its crawled files alone)",
        ),
        FieldPlan(
            "2.3 crawlers, purpose and behaviour",
            "eu:2.3",
            f"crawlers: {_list(s.crawled.crawlers)}; behaviour: {s.crawled.behaviour or 'not described'}",
            not_testable="what a crawler was for and whether it obeyed robots.txt is not in the data or the weights",
        ),
        FieldPlan(
            "2.4 user data",
            "eu:2.4",
            _used(s.user_data.used, s.user_data.description),
            claim=_marks_claim("user-data", "content submitted through the provider's services", "eu:2.4")
            if evidence.user_data_marks is not None and not s.user_data.used
            else None,
            not_testable=None
            if evidence.user_data_marks is not None and not s.user_data.used
            else "declared used"
            if s.user_data.used
            else "no marks placed in content submitted through the service were given (--user-data-marks)",
            limits="only the marked content is tested; unmarked user data is not covered",
        ),
        FieldPlan(
            "2.5 synthetic data",
            "eu:2.5",
            _used(s.synthetic_data.used, s.synthetic_data.description),
            not_testable="text a model generated leaves no trace in the weights this tool can attribute",
        ),
        FieldPlan(
            "2.6 other sources",
            "eu:2.6",
            _used(s.other_sources.used, s.other_sources.description),
            not_testable="a residual field: nothing specific to test",
        ),
        FieldPlan(
            "3.1 opt-outs respected",
            "eu:3.1",
            "yes" if p.opt_out_respected else "no" if p.opt_out_respected is False else "not declared",
            claim=_marks_claim("opt-out", "content published with a machine-readable opt-out", "eu:3.1")
            if evidence.opted_out_marks is not None and p.opt_out_respected
            else None,
            not_testable=None
            if evidence.opted_out_marks is not None and p.opt_out_respected
            else "no marks placed in opted-out content were given (--opted-out-marks)"
            if p.opt_out_respected
            else "not declared respected",
            limits="only the marked opted-out content is tested; a verdict on it says nothing of other opted-out "
            "content",
        ),
        FieldPlan(
            "3.2 illegal content removed",
            "eu:3.2",
            p.illegal_content_measures or "not described",
            claim={
                "slug": "removed",
                "kind": "decontaminated",
                "statement": "Documents the provider says it removed are not in the training corpus (summary 3.2).",
                "regulation_fields": ["eu:3.2"],
                "evidence": "removed",
            }
            if corpus and evidence.removed is not None
            else None,
            not_testable=None
            if corpus and evidence.removed is not None
            else "no list of removed documents (--removed) with the corpus (--corpus)",
            limits="only the documents listed are looked up",
        ),
        FieldPlan("3.3 other information", "eu:3.3", p.other or "none", not_testable="free text: nothing to test"),
    ]
    for plan in plans:
        if plan.claim is None and not plan.identity and not plan.tokenizer and plan.not_testable is None:
            plan.not_testable = NO_CORPUS
    return plans


def _marks_claim(slug: str, what: str, regulation: str) -> dict[str, Any]:
    return {
        "slug": slug,
        "kind": "not_trained_on",
        "statement": f"The model was not trained on the marked {what} (summary {regulation.removeprefix('eu:')}).",
        "regulation_fields": [regulation],
        "evidence": slug,
    }
