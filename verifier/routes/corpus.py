"""Route: a published training corpus -> look the suspect documents up in it.

The only route that can reach VERIFIED: when a developer declares its training corpus (by digest)
and the corpus or an index of it is at hand, "was this document in the training data" becomes a
lookup, not a statistical guess. What the lookup establishes is what the declared corpus
contains; the link from that corpus to the model is the developer's declaration, and the report
says so.

What is compared (both sides alike): each text read in its stored form (``corpus.forms``:
markup read as its text, token-per-line files as their token column, JSON as its strings), then
folded (case, punctuation, spacing, invisible characters). In the corpus, the records of one
file are joined in file order, as a pipeline concatenates them into training sequences, so text
split over short records is found. Verbatim spans that at least ``shared_documents`` corpus
documents hold (credits, licences, a publisher's list: text a whole source shares) are set aside
and named; what remains is the document's own content.

Each suspect document is classed, and the classes say what they mean:
- present (the document): found verbatim, or an edited copy in one place of the corpus (one run
  of joined records) holding at least ``near_duplicate`` of its own words in order;
- content present: at least ``present_share`` of its own word n-grams found, but not the document
  in one place (a partial copy, or a collage of pieces from several documents);
- clean: at most ``clean_share`` of its own n-grams found, no edited copy reaching
  ``near_overlap``, no 50-character string of its own content shared (with the rule on), at most
  ``shared_max_share`` of its words set aside as shared text, and no form the lookup cannot read
  (encoded text, look-alike letters from other scripts);
- partial: anything else, which decides nothing either way.
Absence claims (not_trained_on, decontaminated) are VERIFIED only when every document is clean,
and CONTRADICTED by one document or its content present; trained_on is VERIFIED only when every
document is present (content in parts is not the document) and CONTRADICTED when every one is
clean. A summary_field claim about EU summary sections 2.1 (the public datasets listed, by the
corpus files holding them), 2.3 (top domains by size) or 1.3 (size
band, latest collection date) is checked against the corpus's own composition
(``corpus.composition``, compared in ``corpus.summary``): VERIFIED when every field named agrees
and can be confirmed from the fields the corpus records, CONTRADICTED when one disagrees.
"""

from __future__ import annotations

import tempfile
from collections import Counter
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from pydantic import Field, model_validator

from verifier.boundary.peers import PeerAccess
from verifier.claims import ClaimKind, CorpusRef, Role
from verifier.corpus import CorpusIndex, Lookup, build_index
from verifier.corpus.backends import CorpusBackend, LocalBackend, RemoteBackend
from verifier.corpus.build import SHORT_RECORD_WORDS
from verifier.corpus.normalise import NORMALISATION
from verifier.corpus.summary import check_summary
from verifier.corpus.vocabulary import NOT_LANGUAGE
from verifier.dataset_inference.power import wilson
from verifier.errors import VerifierError
from verifier.findings import Notes, RouteOutcome, Spans, Table
from verifier.routes.base import Route, RouteParams, register
from verifier.scoring.session import RouteContext
from verifier.verdicts import Verdict

DOCUMENT_KINDS = frozenset({ClaimKind.TRAINED_ON, ClaimKind.NOT_TRAINED_ON, ClaimKind.DECONTAMINATED})
KINDS = DOCUMENT_KINDS | {ClaimKind.SUMMARY_FIELD}
SHOWN_ITEMS = 150
SHOWN_SPANS = 5

LIMITATIONS = [
    "The lookup verifies what the declared corpus contains. That the model was trained on this corpus, and on nothing "
    "else "
    "that matters to the claim, is the developer's declaration; the lookup does not test the model.",
    "Matching is on words in compared form: each text read in its stored form (markup as its text, token-per-line "
    "files as "
    "their token column, JSON as its strings), then Unicode NFKC, case-folded, invisible and combining characters "
    "deleted, "
    "punctuation and spacing removed, each character of unspaced scripts a word. A corpus file's records are joined "
    "in file "
    "order, so text split over neighbouring records is found; text split over two files, or over two shards of one "
    "file, is "
    "not. An edited copy is found when it keeps most of the document's words in order (inserted words cost nothing); a "
    "paraphrase or a translation is not. Look-alike letters from other scripts and encoded text are not read back: a "
    "suspect "
    "document holding them can be present, never clean; a corpus that hides copies that way is not detected. Documents "
    "shorter than one n-gram can be clean, never present.",
    "Text that many corpus documents share (at least shared_documents of them: credits, licences, lists a whole source "
    "repeats) is set aside before presence or absence is decided, and named; a document more than shared_max_share of "
    "which "
    "is such text decides nothing. Presence of the document (verbatim, or an edited copy in one place) is told apart "
    "from "
    "presence of its content (its n-grams found, possibly in pieces from several documents): only the first verifies "
    "training on the document; either contradicts its absence.",
]


class CorpusLookupParams(RouteParams):
    # Each of these can favour either side (a longer n-gram finds less contamination and less
    # presence alike), so any change from the default is reported as weakening the route.
    ngram: int = Field(
        13,
        ge=8,
        le=64,
        json_schema_extra={"weaker": "either"},
        description="word n-grams compared, as in decontamination practice",
    )
    present_share: float = Field(
        0.5,
        gt=0,
        le=1,
        json_schema_extra={"weaker": "either"},
        description="a document's content is present when this share of its n-grams is found",
    )
    clean_share: float = Field(
        0.0,
        ge=0,
        lt=0.5,
        json_schema_extra={"weaker": "higher"},
        description="a document is clean when at most this share of its n-grams is found (and nothing else matches)",
    )
    fifty_char_rule: bool = Field(
        True,
        json_schema_extra={"weaker": "false"},
        description="a shared string of 50 characters keeps a document from being clean",
    )
    # An edited copy (the share of the document's words found in order in one corpus document):
    # at near_duplicate it is present, at near_overlap it keeps the document from being clean.
    near_duplicate: float = Field(
        0.9,
        ge=0.7,
        le=1.0,
        json_schema_extra={"weaker": "either"},
        description="an edited copy holding this share of the document's words in order makes it present",
    )
    # A close copy is the document only when this share of its own words lies inside found n-grams.
    document_coverage: float = Field(
        0.95,
        ge=0.8,
        le=1.0,
        json_schema_extra={"weaker": "lower"},
        description="a close copy is the document only when this share of its words lies inside found n-grams",
    )
    # Content present when this share of its own words is in one place in order, others between them.
    inserted_copy: float = Field(
        0.98,
        ge=0.9,
        le=1.0,
        json_schema_extra={"weaker": "either"},
        description="content is present when this share of its words is in one place in order, others between them",
    )
    near_overlap: float = Field(
        0.7,
        ge=0.5,
        le=0.95,
        json_schema_extra={"weaker": "higher"},
        description="an edited copy holding this share of its words keeps the document from being clean",
    )
    min_span_words: int = Field(8, ge=4, le=64, description="the shortest verbatim span shown in the report, in words")
    # Source-wide shared text: verbatim spans held by at least shared_documents corpus documents
    # are set aside; a document more than shared_max_share of which is such text is never clean.
    shared_documents: int = Field(
        3,
        ge=2,
        le=100_000,
        json_schema_extra={"weaker": "either"},
        description="verbatim text held by at least this many corpus documents is set aside as shared",
    )
    shared_max_share: float = Field(
        0.25,
        gt=0,
        le=0.5,
        json_schema_extra={"weaker": "higher"},
        description="a document more than this share of which is shared text decides nothing",
    )
    # Only an index built here from the corpus files is checked against the declared digest; a
    # prebuilt index (pinned by the claim) or a remote one is taken on trust only if the policy says so.
    trust_prebuilt: bool = Field(
        False,
        json_schema_extra={"weaker": "true"},
        description="take a prebuilt index (pinned by the claim) on trust instead of rebuilding it from the files",
    )
    trust_remote: bool = Field(
        False,
        json_schema_extra={"weaker": "true"},
        description="take a remote index on trust (its contents cannot be checked at all)",
    )

    unit_chance: float = Field(
        0.05,
        gt=0,
        lt=1,
        json_schema_extra={"weaker": "either"},
        description="the rate at which lines and sentences of documents absent from a corpus are found in it "
        "(the null of the units test; benchmarks/lookup_soundness.py measures it)",
    )
    other_script_words: float = Field(
        0.3,
        gt=0,
        le=1,
        json_schema_extra={"weaker": "higher"},
        description="a document is not clean when this share of its words is in the corpus written in another "
        "script (the corpus holds its language in another script, where another romanisation could hide a copy)",
    )
    max_uncompared_share: float = Field(
        0.01,
        ge=0,
        le=1,
        json_schema_extra={"weaker": "higher"},
        description="absence is verified only when at most this share of the corpus's bytes is text not read as "
        "words of a known language (any encoded data, spaced or run-together letters, or short records out of "
        "order keep it from being verified)",
    )

    @model_validator(mode="after")
    def ordered(self) -> CorpusLookupParams:
        if self.near_overlap > self.near_duplicate:
            raise ValueError("near_overlap must not exceed near_duplicate")
        return self


@register
class CorpusLookupRoute(Route[CorpusLookupParams]):
    name = "corpus"
    Params = CorpusLookupParams
    requires = frozenset({Role.SUSPECT, "corpus"})
    claim_kinds = KINDS
    _undecided = {ClaimKind.SUMMARY_FIELD: Verdict.INCONCLUSIVE}  # document statuses never arise for a summary claim
    verdicts = {
        "all_present": {
            ClaimKind.TRAINED_ON: Verdict.VERIFIED,
            ClaimKind.NOT_TRAINED_ON: Verdict.CONTRADICTED,
            ClaimKind.DECONTAMINATED: Verdict.CONTRADICTED,
        }
        | _undecided,
        "some_present": {
            ClaimKind.TRAINED_ON: Verdict.INCONCLUSIVE,
            ClaimKind.NOT_TRAINED_ON: Verdict.CONTRADICTED,
            ClaimKind.DECONTAMINATED: Verdict.CONTRADICTED,
        }
        | _undecided,
        "all_clean": {
            ClaimKind.TRAINED_ON: Verdict.CONTRADICTED,
            ClaimKind.NOT_TRAINED_ON: Verdict.VERIFIED,
            ClaimKind.DECONTAMINATED: Verdict.VERIFIED,
        }
        | _undecided,
        "partial_overlap": dict.fromkeys(KINDS, Verdict.INCONCLUSIVE),
        "index_unchecked": dict.fromkeys(KINDS, Verdict.INCONCLUSIVE),
        "corpus_hides_forms": dict.fromkeys(KINDS, Verdict.INCONCLUSIVE),
        "summary_consistent": dict.fromkeys(DOCUMENT_KINDS, Verdict.INCONCLUSIVE)
        | {ClaimKind.SUMMARY_FIELD: Verdict.VERIFIED},
        "summary_inconsistent": dict.fromkeys(DOCUMENT_KINDS, Verdict.INCONCLUSIVE)
        | {ClaimKind.SUMMARY_FIELD: Verdict.CONTRADICTED},
        "summary_uncheckable": None,
    }
    plain = {
        "all_present": "every suspect document was found in the published corpus the claim names",
        "some_present": "the content of some or all suspect documents was found in the published corpus the claim "
        "names, but not every document whole",
        "all_clean": "no suspect document was found in the published corpus the claim names, in any form compared",
        "partial_overlap": "the suspect documents share only passages with the corpus, which neither shows nor "
        "excludes their use",
        "index_unchecked": "the corpus index was taken on trust, so what it holds could not be checked",
        "corpus_hides_forms": "part of the corpus is stored in forms the lookup cannot read, so absence cannot be "
        "shown",
        "summary_consistent": "the declared summary fields agree with what the declared corpus shows",
        "summary_inconsistent": "the declared summary fields disagree with what the declared corpus shows",
    }

    def run(self, ctx: RouteContext, params: CorpusLookupParams) -> RouteOutcome:
        ref = ctx.claim.evidence.corpus
        assert ref is not None  # the engine runs this route only when the claim names a corpus
        texts = ctx.load(ctx.claim.evidence.suspect).texts
        with ExitStack() as stack:
            backend, identity = open_corpus(ref, ctx.base_dir, stack, ctx.access)
            local = isinstance(backend, LocalBackend)
            if ctx.claim.claim.kind == ClaimKind.SUMMARY_FIELD:
                return summary_outcome(backend, identity | backend.describe(), ctx)
            near = params.near_overlap if local else None
            lookups = backend.lookup(
                texts,
                ngram=params.ngram,
                min_span_words=params.min_span_words,
                spans=5,
                span_documents=3,
                characters=local and params.fifty_char_rule,
                near_duplicates=near,
                shared_documents=params.shared_documents,
            )
            identity = backend.describe() | identity
        judged = [judge(item, params) for item in lookups]
        classes, reasons, lookups = [c for c, _, _ in judged], [r for _, r, _ in judged], [j for _, _, j in judged]
        hiding = hidden_forms(backend, params.max_uncompared_share) if local else []
        status = decide(Counter(classes), len(classes), bool(hiding))
        kind = ctx.claim.claim.kind
        trusted = {FROM_FILES: True, PREBUILT: params.trust_prebuilt, REMOTE: params.trust_remote}[
            identity["provenance"]
        ]
        if not trusted and status in ("all_present", "some_present", "all_clean"):
            status = "index_unchecked"
        identity["forms_not_compared"] = hiding
        if local:
            identity["coverage"] = corpus_coverage(backend)
        metrics = findings(lookups, classes, reasons, params, identity, near is not None)
        summary = summarise(status, metrics, kind, ref)
        return RouteOutcome(
            status, summary, metrics, sections(lookups, classes, metrics), list(LIMITATIONS), size=len(texts)
        )


def hidden_forms(backend: CorpusBackend, max_share: float = 0.0) -> list[str]:
    """What in the corpus word matching did not compare, when it can hide a copy: any bytes in a
    form made to hide or no reading restores (encoded data that is not text, letters spaced apart,
    words run together, turned letters, files of records too short for an n-gram), or text not
    read as words of a known language beyond ``max_share`` of the corpus. Empty when what was
    compared is enough to show absence."""
    coverage = corpus_coverage(backend)
    rows = coverage["not_compared"]
    if all(row["kind"] == NOT_LANGUAGE for row in rows) and coverage["not_compared_share"] <= max_share:
        return []
    return [f"{row['kind']}: {row['bytes']:,} bytes in {', '.join(row['files'][:3])}" for row in rows]


def corpus_coverage(backend: CorpusBackend) -> dict[str, Any]:
    """The share of the corpus's bytes compared, and what was not, by kind and file (the build
    measures it: ``corpus.forms.not_compared``)."""
    m = backend.index.manifest  # type: ignore[attr-defined]
    kinds: dict[str, dict[str, Any]] = {}
    for src in m.sources:
        found = dict(src.not_compared)
        if src.documents and src.short_records >= 0.5 * src.documents:
            found[f"records shorter than {SHORT_RECORD_WORDS} words, compared only in file order"] = (
                src.short_record_bytes
            )
        for kind, size in found.items():
            row = kinds.setdefault(kind, {"kind": kind, "bytes": 0, "files": []})
            row["bytes"] += min(size, src.text_bytes)
            row["files"].append(src.name)
    total = sum(src.text_bytes for src in m.sources)
    missing = min(total, sum(row["bytes"] for row in kinds.values()))
    return {
        "text_bytes": total,
        "compared_share": 1 - missing / total if total else 0.0,
        "not_compared_share": missing / total if total else 1.0,
        "not_compared": sorted(kinds.values(), key=lambda row: (-row["bytes"], row["kind"])),
        "excluded": list(m.excluded),
    }


FROM_FILES = "indexed here from the corpus files"
PREBUILT = "prebuilt index pinned by the claim, taken as built from the declared files (not recomputed)"
REMOTE = "remote index, taken on trust (its contents cannot be checked)"


def open_corpus(
    ref: CorpusRef, base: Path, stack: ExitStack, access: PeerAccess
) -> tuple[CorpusBackend, dict[str, Any]]:
    """The backend the claim names and what identifies it (``provenance``: how far its corpus
    digest was checked). Corpus evidence that cannot stand raises: the audit stops, since a
    refused corpus is no evidence and no later route may decide in its place."""
    declared = {"declared_corpus_sha256": ref.sha256, "version": ref.version}
    if ref.api is not None:
        return RemoteBackend(ref.api, ref.index, access=access), declared | {"provenance": REMOTE}
    path = base / ref.index
    if (path / "manifest.json").is_file():
        if ref.index_sha256 is None:
            # Whoever built an index wrote its corpus digest; only the files can confirm it. A pinned
            # index digest is a public commitment anyone holding the files can check by rebuilding.
            raise _refused(
                "a prebuilt index is accepted only when the claim pins it (evidence.corpus.index_sha256, printed by "
                "'verifier corpus build'; anyone with the corpus files can rebuild it and compare); otherwise give "
                "the corpus files"
            )
        index = CorpusIndex.open(path, structure="full")  # someone else built it: its suffix arrays are recomputed
        identity = declared | {"provenance": PREBUILT}
    else:  # corpus files: indexed now, so the corpus digest is computed from the files themselves
        folder = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="verifier-index-")))
        build_index(
            [path], folder / Path(ref.index).name, minhash=False, follow_links=False, exclude=tuple(ref.exclude)
        )
        index = CorpusIndex.open(folder / Path(ref.index).name)
        identity = declared | {"provenance": FROM_FILES}
    if index.corpus_sha256 != ref.sha256:
        raise _refused(
            f"the index's corpus digest {index.corpus_sha256[:16]}... differs from the declared "
            f"{ref.sha256[:16]}... (another corpus, or another version of it)"
        )
    if ref.index_sha256 is not None and index.sha256 != ref.index_sha256:
        raise _refused(f"the index digest {index.sha256[:16]}... differs from the pinned {ref.index_sha256[:16]}...")
    return LocalBackend(index), identity


def _refused(why: str) -> VerifierError:
    return VerifierError(f"the corpus evidence is refused: {why}")


def summary_outcome(backend: CorpusBackend, identity: dict[str, Any], ctx: RouteContext) -> RouteOutcome:
    """EU summary sections 2.1 (public datasets), 2.3 (top domains) and 1.3 (size band, latest
    collection date) against the declared corpus, for the sections the claim names and the summary
    declares."""
    declared = ctx.claim.model.declared_summary
    fields = set(ctx.claim.claim.regulation_fields)
    if not isinstance(backend, LocalBackend) or declared is None or not fields & {"eu:2.1", "eu:2.3", "eu:1.3"}:
        why = (
            "a remote index cannot list the corpus's domains, files or size"
            if not isinstance(backend, LocalBackend)
            else "the claim names none of eu:2.1, eu:2.3, eu:1.3 with a model.declared_summary to compare"
        )
        return RouteOutcome(
            "summary_uncheckable", f"The corpus cannot check this summary claim: {why}.", {"corpus": identity}
        )
    checked = check_summary(backend.index, declared, fields)
    rows, problems, unchecked = checked.rows, checked.problems, checked.unchecked
    metrics = {"corpus": identity, **checked.metrics}
    sections = [
        Table(
            "EU summary fields against the declared corpus",
            ["field", "what the corpus shows"],
            rows or [["-", "nothing to compare"]],
        ),
        Notes("What this check shows", [LIMITATIONS[0], *(f"Not established: {u}." for u in unchecked)]),
    ]
    if problems:
        return RouteOutcome(
            "summary_inconsistent",
            "The declared summary disagrees with the declared corpus: " + "; ".join(problems) + ".",
            metrics,
            sections,
            [LIMITATIONS[0]],
        )
    if unchecked or not rows:
        return RouteOutcome(
            "summary_uncheckable",
            "The corpus does not establish the summary fields: "
            + ("; ".join(unchecked) or "nothing declared to compare")
            + ".",
            metrics,
            sections,
            [LIMITATIONS[0]],
        )
    return RouteOutcome(
        "summary_consistent",
        "The declared summary fields agree with the declared corpus: " + "; ".join(str(r[1]) for r in rows) + ".",
        metrics,
        sections,
        [LIMITATIONS[0]],
    )


PRESENT, CONTENT, CLEAN, PARTIAL, NO_WORDS = "present", "content present", "clean", "partial", "no words"


def judge(item: Lookup, params: CorpusLookupParams) -> tuple[str, str | None, Lookup]:
    """A document's class over all its readings, why (for one that decides nothing), and the
    reading that decided: found when any reading is (the document before its content), clean only
    when every reading with words is clean and its lines and sentences are not found beyond
    chance; a reading that is partial, or units found beyond chance, make it decide nothing."""
    judged = [(*classify(r, params), r) for r in [item, *item.alternatives]]
    with_words = [j for j in judged if j[0] != NO_WORDS] or judged[:1]
    for wanted in (PRESENT, CONTENT):
        if decided := next((j for j in with_words if j[0] == wanted), None):
            return decided
    beyond, p_value = units_beyond_chance(item, params)
    if beyond:
        return (
            CONTENT,
            f"{item.units_found} of its {item.units} lines and sentences are in the corpus, in some order (chance "
            f"p = {p_value:.1e})",
            item,
        )
    if all(j[0] == CLEAN for j in with_words):
        if item.other_script_share >= params.other_script_words:
            return (
                PARTIAL,
                f"{item.other_script_share:.0%} of its words are in the corpus written in another script: a copy "
                "romanised another way is not compared",
                item,
            )
        if item.units_found and p_value < UNITS_CLEAN_ALPHA:
            return (
                PARTIAL,
                f"{item.units_found} of its {item.units} lines and sentences are in the corpus, more than chance "
                f"explains (p = {p_value:.2g})",
                item,
            )
        return with_words[0]
    return next(j for j in with_words if j[0] != CLEAN)


UNITS_FOUND_ALPHA = 1e-3  # units found beyond chance at this level: the document's content is present
UNITS_CLEAN_ALPHA = 0.05  # at this level it is no longer clean


def units_beyond_chance(item: Lookup, params: CorpusLookupParams) -> tuple[bool, float]:
    """Whether a document's lines and sentences are found in the corpus more often than chance
    explains (one-sided binomial test against ``unit_chance``, the rate at which units of
    documents absent from a corpus are found in it), with at least three found, and the p-value."""
    if not item.units_found:
        return False, 1.0
    from scipy.stats import binom

    p_value = float(binom.sf(item.units_found - 1, item.units, params.unit_chance))
    return item.units_found >= 3 and p_value < UNITS_FOUND_ALPHA, p_value


def classify(item: Lookup, params: CorpusLookupParams) -> tuple[str, str | None]:
    """One reading's class and, for a partial one, why it decides nothing."""
    if item.words == 0:  # nothing left to compare (punctuation only): decides nothing either way
        return NO_WORDS, "no words to compare"
    contained = max((c for _, c, _ in item.near_duplicates or []), default=0.0)
    close = max((c for _, _, c in item.near_duplicates or []), default=0.0)
    # The document: verbatim, or a close copy in one place whose words lie, all but a few, inside
    # verbatim n-grams (a copy with a word changed here and there). Its content: its own n-grams
    # found. Words in order with others between them (containment alone) prove neither: another
    # article filled into the same template looks like that too.
    whole = item.verbatim or (close >= params.near_duplicate and item.word_coverage >= params.document_coverage)
    # Every word of it, or all but a few, in order in one place with other words inserted between
    # them: a copy disguised by insertion. Words replaced (another text of the same template) fall
    # below this share and decide nothing.
    found = whole or item.content_share >= params.present_share or contained >= params.inserted_copy
    if found and item.words < params.ngram:
        # A document shorter than one n-gram found in the corpus may be a common phrase, not a copy.
        return PARTIAL, f"shorter than one {params.ngram}-gram: found, but possibly a common phrase"
    if whole:
        return PRESENT, None
    if found:
        return CONTENT, None
    if item.unread:
        return PARTIAL, "holds " + ", ".join(item.unread) + ", which the lookup does not read back"
    shared_share = item.shared_words / item.words
    if shared_share > params.shared_max_share:
        return (
            PARTIAL,
            f"{shared_share:.0%} of its words are text many corpus documents share; too little of its own to decide",
        )
    if item.longest_shared >= params.ngram:
        # Set aside, shared text decides no presence; but a passage of an n-gram or more that
        # several corpus documents hold may be the document quoted, so it is never absent either.
        return (
            PARTIAL,
            f"shares a {item.longest_shared}-word passage with several corpus documents (set aside: it proves neither "
            "presence nor absence)",
        )
    # Clean needs every check the policy asks for to have run and found nothing (a remote index
    # cannot run the 50-character rule or the edited-copy check: its documents are never clean).
    checks_ran = item.near_duplicates is not None and not (params.fifty_char_rule and item.fifty_char is None)
    if not checks_ran:
        return PARTIAL, "the edited-copy check or the 50-character rule could not run on this index"
    if (
        item.content_share <= params.clean_share
        and not (params.fifty_char_rule and item.fifty_char)
        and contained < params.near_overlap
    ):
        return CLEAN, None
    if contained >= params.near_overlap and item.content_share < params.present_share:
        return (
            PARTIAL,
            f"{contained:.0%} of its words are in one place of the corpus in order, with other words between them: an "
            "edited copy or another text from the same template",
        )
    return PARTIAL, "overlaps the corpus below the presence thresholds"


def decide(classes: Counter, n: int, corpus_hides: bool = False) -> str:
    """The route's status from the documents' classes; ``corpus_hides``: the corpus holds forms
    the comparison cannot see into (``hidden_forms``), so documents clean in what was compared
    are not shown absent."""
    if n and classes[PRESENT] == n:
        return "all_present"
    if classes[PRESENT] or classes[CONTENT]:
        return "some_present"
    if n and classes[CLEAN] == n:
        return "corpus_hides_forms" if corpus_hides else "all_clean"
    return "partial_overlap"  # partial overlaps, or documents with no words to compare


def findings(
    lookups: list[Lookup],
    classes: list[str],
    reasons: list[str | None],
    params: CorpusLookupParams,
    identity: dict[str, Any],
    near_checked: bool,
) -> dict[str, Any]:
    n = len(lookups)
    counts = Counter(classes)
    rate = wilson(counts[PRESENT] + counts[CONTENT], n) if n else None
    shared: dict[str, dict[str, Any]] = {}
    for i, item in enumerate(lookups):
        for span in item.shared_spans:
            entry = shared.setdefault(
                item.text[span.start : span.end],
                {
                    "words": span.words,
                    "corpus_count": span.count,
                    "corpus_documents": [_doc_name(h.meta, h.document) for h in span.documents],
                    "suspect_items": [],
                },
            )
            entry["suspect_items"].append(i + 1)
    return {
        "corpus": identity,
        "thresholds": params.model_dump(),
        "n_documents": n,
        "present": counts[PRESENT],
        "content_present": counts[CONTENT],
        "partial": counts[PARTIAL],
        "clean": counts[CLEAN],
        "no_words": counts[NO_WORDS],
        "present_rate": None if rate is None else {"value": rate.value, "ci_low": rate.ci_low, "ci_high": rate.ci_high},
        "verbatim": sum(item.verbatim for item in lookups),
        "fifty_char": None
        if all(item.fifty_char is None for item in lookups)
        else sum(bool(item.fifty_char) for item in lookups),
        "mean_ngram_share": sum(item.ngram_share for item in lookups) / n if n else None,
        "near_duplicates_checked": near_checked,
        "normalisation": NORMALISATION,
        "forms": dict(Counter(item.form for item in lookups)),
        "unread_forms": sum(bool(item.unread) for item in lookups),
        "shared_text": [
            {"text": text[:300]} | entry
            for text, entry in sorted(shared.items(), key=lambda kv: (-len(kv[1]["suspect_items"]), kv[0]))
        ][:50],
        "items": [
            {
                "item": i + 1,
                "class": c,
                "reason": r,
                "form": item.form,
                "unread": list(item.unread),
                "words": item.words,
                "ngrams": item.ngrams,
                "ngrams_found": item.ngrams_found,
                "shared_words": item.shared_words,
                "content_share": round(item.content_share, 4),
                "verbatim": item.verbatim,
                "longest_words": item.longest_words,
                "longest_chars": item.longest_chars,
                "near_duplicate": max((c for _, c, _ in item.near_duplicates or []), default=None),
                "near_duplicate_closeness": max((c for _, _, c in item.near_duplicates or []), default=None),
                "documents": sorted({h.document for s in item.spans for h in s.documents})[:5],
            }
            for i, (item, c, r) in enumerate(zip(lookups, classes, reasons))
        ],
    }


def summarise(status: str, m: dict[str, Any], kind: ClaimKind, ref: CorpusRef) -> str:
    corpus = f"the declared corpus{f' (version {ref.version})' if ref.version else ''}"
    rate = m["present_rate"]
    found = (
        (
            f"{m['present']} of {m['n_documents']} suspect documents are present in {corpus} and the content of "
            f"{m['content_present']} more ({rate['value']:.1%} in all, 95% CI "
            f"{rate['ci_low']:.1%}-{rate['ci_high']:.1%}), "
            f"{m['partial']} overlap it partly, {m['clean']} are clean"
        )
        if rate
        else "no suspect document"
    )
    shared = (
        f" (text that many corpus documents share, {len(m['shared_text'])} passage(s), was set aside first)"
        if m["shared_text"]
        else ""
    )
    why = {
        "all_present": "every document is present, verbatim or as an edited copy in one place",
        "some_present": (
            "at least one document or its content is present"
            + (
                "; a claim of training on every document needs each one present whole, in one place, which is not "
                "established"
                if kind == ClaimKind.TRAINED_ON
                else ""
            )
        ),
        "all_clean": "no document shares any of its own word n-grams beyond the policy's clean share"
        + (", nor a 50-character string," if m["fifty_char"] is not None else ",")
        + " with the corpus"
        + shared,
        "partial_overlap": "some documents overlap the corpus partly below the presence threshold, are mostly text "
        "many corpus "
        "documents share, hold forms the lookup cannot read back, or have no words to compare: neither presence "
        "nor absence is established",
        "index_unchecked": f"the lookup ran on a {m['corpus']['provenance']}, so the policy grants no verdict on it "
        "(give the corpus files, or a policy with trust_prebuilt / trust_remote)",
        "corpus_hides_forms": "every document is clean in what could be compared, but absence is not established: "
        + "; ".join(m["corpus"].get("forms_not_compared", [])[:3]),
    }[status]
    if status == "all_clean" and m["corpus"].get("coverage"):
        why += f"; compared: {coverage_line(m['corpus']['coverage'])} of the corpus" + (
            "; not compared: "
            + "; ".join(f"{r['kind']} ({r['bytes']:,} bytes)" for r in m["corpus"]["coverage"]["not_compared"][:3])
            if m["corpus"]["coverage"]["not_compared"]
            else ""
        )
    trust = (
        ""
        if m["corpus"]["provenance"] == FROM_FILES or status == "index_unchecked"
        else f" The lookup ran on a {m['corpus']['provenance']}."
    )
    return (
        f"Corpus lookup: {found}; {why}. This verifies what the declared corpus contains; that the model was trained "
        "on it "
        f"is the developer's declaration.{trust}"
    )


def sections(lookups: list[Lookup], classes: list[str], m: dict[str, Any]) -> list:
    c = m["corpus"]
    rate = m["present_rate"]

    def pct(v: float) -> str:
        return f"{v:.1%}"

    rates = Table(
        "Contamination rates (per suspect document)",
        ["measure", "value"],
        [
            ["documents looked up", m["n_documents"]],
            ["document present (verbatim, or an edited copy in one place)", m["present"]],
            [
                "content present, not the document (own n-gram share at or above threshold: a partial copy or pieces "
                "of several)",
                m["content_present"],
            ],
            [
                "document or content present",
                f"{m['present'] + m['content_present']} ({pct(rate['value'])}, 95% CI "
                f"{pct(rate['ci_low'])}-{pct(rate['ci_high'])})"
                if rate
                else "-",
            ],
            ["partial overlap (decides nothing)", m["partial"]],
            ["clean", m["clean"]],
            ["no words to compare (punctuation or symbols only; decides nothing)", m["no_words"]],
            ["present verbatim", m["verbatim"]],
            [
                "sharing a 50-character string (50-character rule)",
                "not computed" if m["fifty_char"] is None else m["fifty_char"],
            ],
            ["mean share of word n-grams found", "-" if m["mean_ngram_share"] is None else pct(m["mean_ngram_share"])],
            ["forms read", ", ".join(f"{form} {k}" for form, k in sorted(m["forms"].items()))],
            ["documents holding forms not read back (never clean)", m["unread_forms"]],
            [
                "edited-copy check (near-duplicates)",
                (
                    "word 4-gram probes"
                    + (" and MinHash LSH" if m["corpus"].get("minhash") else "")
                    + ", confirmed by rapidfuzz partial_ratio"
                )
                if m["near_duplicates_checked"]
                else "not available (remote index)",
            ],
        ],
        note="Wilson 95% interval over the suspect documents. Null of the interval: the documents are a sample of the "
        "set the claim is about.",
    )
    corpus = Table(
        "Corpus",
        ["field", "value"],
        [
            ["declared corpus digest", c["declared_corpus_sha256"]],
            ["version", c.get("version") or "-"],
            ["index", f"{c.get('kind', '-')} {c.get('name', '')}"],
            ["corpus digest the index records", c.get("corpus_sha256", "not available (remote)")],
            ["index digest", c.get("index_sha256", "-")],
            ["corpus digest", c["provenance"]],
            ["share of the corpus's bytes compared", coverage_line(c.get("coverage"))],
            [
                "not compared (absence is verified only when at most max_uncompared_share of the corpus is)",
                "; ".join(
                    f"{row['kind']}: {row['bytes']:,} bytes ({', '.join(row['files'][:3])})"
                    for row in (c.get("coverage") or {}).get("not_compared", [])
                )
                or "-",
            ],
            [
                "files left out by the auditor (exclude)",
                ", ".join((c.get("coverage") or {}).get("excluded", [])) or "none: every file under the folder",
            ],
            ["documents / text", f"{c.get('documents', '-')} / {c.get('text_bytes', '-')} bytes"],
        ],
    )
    order = sorted(range(len(lookups)), key=lambda i: (classes[i] == CLEAN, -lookups[i].ngram_share, i))[:SHOWN_ITEMS]
    items = Table(
        "Per-document lookup",
        [
            "#",
            "class",
            "form",
            "words",
            f"{lookups[0].ngram if lookups else 13}-grams found",
            "verbatim",
            "longest span (words)",
            "longest (chars)",
            "edited copy: contained / close",
            "corpus documents",
        ],
        [
            [
                i + 1,
                classes[i],
                lookups[i].form,
                lookups[i].words,
                f"{lookups[i].ngrams_found}/{lookups[i].ngrams}",
                "yes" if lookups[i].verbatim else "",
                lookups[i].longest_words,
                "-" if lookups[i].longest_chars is None else lookups[i].longest_chars,
                "-"
                if not lookups[i].near_duplicates
                else f"{lookups[i].near_duplicates[0][1]:.2f} / {lookups[i].near_duplicates[0][2]:.2f}",
                ", ".join(
                    _doc_name(h.meta, h.document)
                    for h in {h.document: h for s in lookups[i].spans for h in s.documents}.values()
                )[:120],
            ]
            for i in order
        ],
        row_classes=[classes[i].replace(" ", "-") for i in order],
        note=(
            f"Documents with the most overlap first; {len(order)} of {len(lookups)} shown, all in the findings."
            if len(order) < len(lookups)
            else None
        ),
    )
    out: list = [rates, items, corpus]
    if m["shared_text"]:
        out.append(
            Table(
                "Text many corpus documents share, set aside before deciding",
                ["passage (compared form)", "words", "corpus documents (first)", "suspect items"],
                [
                    [
                        e["text"][:160],
                        e["words"],
                        ", ".join(e["corpus_documents"])[:120],
                        ", ".join(map(str, e["suspect_items"][:12])),
                    ]
                    for e in m["shared_text"][:20]
                ],
                note=f"Verbatim spans held by at least {m['thresholds']['shared_documents']} corpus documents: "
                "source-wide "
                "text (credits, licences, lists), no evidence about any one document.",
            )
        )
    partial_why = Counter(it["reason"] for it in m["items"] if it["class"] in (PARTIAL, NO_WORDS))
    if partial_why:
        out.append(
            Table(
                "Why documents decide nothing", ["reason", "documents"], [[r, k] for r, k in partial_why.most_common()]
            )
        )
    for i in [i for i in order if lookups[i].spans][:SHOWN_SPANS]:
        item = lookups[i]
        labels = [
            (s.start, s.end, f"{s.words} words, {s.count}x in corpus")
            for s in sorted(item.spans, key=lambda s: s.start)
        ]
        sources = sorted({_doc_name(h.meta, h.document) for s in item.spans for h in s.documents})
        out.append(
            Spans(
                f"Document {i + 1}: verbatim spans found in the corpus (compared form)",
                item.text,
                labels,
                note="From corpus documents: " + ", ".join(sources[:8]),
            )
        )
    out.append(
        Notes(
            "What this lookup shows",
            [
                LIMITATIONS[0],
                LIMITATIONS[1],
                LIMITATIONS[2],
                "Classes: present = the document verbatim, or an edited copy in one place holding at least "
                "near_duplicate of its own "
                "words in order; content present = at least present_share of its own n-grams found, not in one place; "
                "clean = own "
                "n-gram share at most clean_share, no 50-character string of its own shared, no edited copy reaching "
                "near_overlap, "
                "at most shared_max_share of it shared text and every form read; partial = anything else.",
            ],
        )
    )
    return out


def coverage_line(coverage: dict[str, Any] | None) -> str:
    """The share of the corpus compared, in words (a remote index cannot say)."""
    if not coverage:
        return "not known (remote index)"
    return f"{coverage['compared_share']:.2%} of {coverage['text_bytes']:,} bytes"


def _doc_name(meta: dict[str, Any], document: int) -> str:
    return str(meta.get("id") or meta.get("url") or f"document {document}")[:80]
