"""Claim manifests: what is claimed, about which model, with which evidence (YAML, pydantic).

Paths in a manifest are relative to the manifest's folder. Validation errors name the file and
the key (``evidence.heldout.path: field required``), never a traceback.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
from dataclasses import dataclass, field, replace
from datetime import date
from enum import Enum, StrEnum
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictInt, ValidationError, field_validator, model_validator

from verifier.boundary.files import check_exclude
from verifier.boundary.resources import resolve_claim_path
from verifier.boundary.safe_yaml import load_yaml_bytes, read_bounded
from verifier.data import Documents, Rows, rows_of, select_documents
from verifier.errors import VerifierError, first_validation_error
from verifier.targets import ApiOptions, ScoringOptions, kind_of
from verifier.targets.base import PROMPT_LOGPROBS
from verifier.targets.model_source import BUNDLED, resolve_model

# The fields a claim may concern: EU AI Act public summary sections and OSAID data-information items.
REGULATION_FIELD = re.compile(r"^(eu:(1\.[1-3]|2\.[1-6]|3\.[1-3])|osaid:[1-3])$")


class Role(StrEnum):
    """What a document set is in an audit; each is a key of a claim's ``evidence`` (see the glossary)."""

    SUSPECT = "suspect"  # the documents the claim is about
    HELDOUT = "heldout"  # private, same period, certainly not trained on: the comparison set of dataset inference
    CONTROL = "control"  # known non-members of the suspect's period, kept apart from the held-out set to check it
    DATED = "dated"  # a set with declared dates (often after the cutoff): the comparison set of the date-shift check
    PREFIX = "prefix"  # known non-members that prefixed signals (ReCaLL) put before every text; never tested


class ClaimKind(str, Enum):
    NOT_TRAINED_ON = "not_trained_on"
    TRAINED_ON = "trained_on"
    DECONTAMINATED = "decontaminated"
    SUMMARY_FIELD = "summary_field"


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ClaimStatement(Strict):
    id: str = Field(
        pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$",
        description="names the bundle folder: starts with a letter or digit",
    )
    statement: str = Field(min_length=1, max_length=2000)
    kind: ClaimKind
    made_by: str = Field(min_length=1, max_length=300)
    regulation_fields: list[str] = Field(default_factory=list)

    @field_validator("regulation_fields")
    @classmethod
    def known_fields(cls, fields: list[str]) -> list[str]:
        bad = [f for f in fields if not REGULATION_FIELD.match(f)]
        if bad:
            raise ValueError(f"unknown field(s) {', '.join(bad)}; use eu:1.1-1.3, eu:2.1-2.6, eu:3.1-3.3 or osaid:1-3")
        return fields


@functools.cache
def public_suffix_list() -> Any:  # publicsuffixlist.PublicSuffixList (imported when first asked)
    """The Public Suffix List as the installed ``publicsuffixlist`` package ships it (never fetched)."""
    from publicsuffixlist import PublicSuffixList

    return PublicSuffixList()


def hostname(name: str) -> str:
    """A host in one form for comparison, as a browser reads it (the WHATWG URL standard, through
    ada-url): lower case, percent-encoding decoded, internationalised names in their ASCII (IDNA)
    form, IPv4 addresses written in decimal, hex or octal as dotted decimals, no trailing dot and
    no ``www.``, so ``bücher.de`` and ``xn--bcher-kva.de`` are one domain, and ``1572395042`` is
    ``93.184.216.34``. A name no browser would read as a host is kept, lower case, for the
    caller to refuse."""
    import ada_url

    name = name.strip()
    try:
        host = ada_url.URL(f"http://{name}/").hostname if name else ""
    except ValueError:
        host = ""
    if not host or host != ada_url.URL(f"http://{host}/").hostname:
        host = name.lower()
    return host.rstrip(".").removeprefix("www.")


def checked_domains(domains: list[str] | None) -> list[str] | None:
    """Declared domain names in their browser form (``hostname``); ValueError naming names that are
    not domain names or are public suffixes."""
    if domains is None:
        return None
    forms = [hostname(d) for d in domains]
    bad = [d for d, f in zip(domains, forms) if not re.fullmatch(r"[a-z0-9]([a-z0-9-]{0,62}\.)*[a-z0-9-]{1,63}", f)]
    if bad:
        raise ValueError(f"not domain names: {bad[:3]}")
    # A public suffix ("com", "co.uk", "blogspot.com") is no one's domain: declared, it would
    # cover every site under it. The Public Suffix List ships with publicsuffixlist (offline).
    suffixes = [d for d, f in zip(domains, forms) if public_suffix_list().privatesuffix(f) is None]
    if suffixes:
        raise ValueError(f"not registrable domain names (public suffixes under the Public Suffix List): {suffixes[:3]}")
    return forms


class DeclaredSummary(Strict):
    """What the developer's EU public summary declares, where a declared corpus can check it."""

    crawled_domains: list[str] | None = Field(
        None, max_length=100_000, description="section 2.3: the most relevant domain names"
    )
    sme: bool = Field(False, description="an SME lists the top 5% or 1,000 domains instead of the top 10%")
    size_band: Literal["<1B", "1B-10T", ">10T"] | None = Field(
        None, description="section 1.3: text size band, in tokens"
    )
    latest_collection: str | None = Field(
        None, pattern=r"^\d{4}-(0[1-9]|1[0-2])$", description="section 1.3: latest date of data collection, YYYY-MM"
    )
    public_datasets: dict[str, list[str]] | None = Field(
        None,
        max_length=1000,
        description="section 2.1: each listed public dataset, by name, with glob patterns of the corpus files that "
        "hold it (matched against each file's path under the corpus folder)",
    )
    languages: list[str] | None = Field(
        None,
        max_length=300,
        description="section 1.3: the languages of the training data, ISO 639-1 codes (the language identifier's "
        "codes)",
    )
    elsewhere: list[str] = Field(
        default_factory=list,
        max_length=1000,
        description="section 2.1: glob patterns of corpus files the summary declares under other sections "
        "(crawled, private data): not public datasets, so never missing from the list",
    )

    @field_validator("crawled_domains")
    @classmethod
    def hostnames(cls, domains: list[str] | None) -> list[str] | None:
        return checked_domains(domains)


class ModelUnderTest(Strict):
    target: str = Field(
        description="model SPEC: smollm2-135m, a .gguf file, a model folder, a hub id[@revision], "
        "or openai-compatible:http(s)://host/v1#model for a model behind an API"
    )
    reference: str | None = Field(None, description="a reference model SPEC: enables the reference-difference signal")
    weights: str | None = Field(
        None,
        description="for an API target: a local model SPEC of the weights the server is declared to serve; a "
        "seeded sample of the documents is scored both ways and the server refused if they differ",
    )
    training_cutoff: int | None = Field(None, ge=1900, le=2100, description="declared year of the latest training data")
    released: date | None = Field(
        None, description="declared date the model was released (its weights fixed), YYYY-MM-DD"
    )
    declared_summary: DeclaredSummary | None = None
    max_tokens: int = Field(256, ge=2, le=32_768)
    max_chars: int = Field(2500, ge=1, le=10_000_000, description="characters of each document given to the model")
    stride: int | None = Field(
        None,
        ge=1,
        description="score whole documents (up to max_chars) in windows of max_tokens advancing "
        "by stride tokens, stitched; default: cut at max_tokens",
    )
    dtype: Literal["fp32", "bf16"] = Field(
        "fp32", description="numeric precision of an open-weight model: fp32, or bf16 (half the memory, numbers move)"
    )
    device: str = Field(
        "auto",
        pattern=r"^(auto|cpu|cuda(:\d+)?)$",
        description="where an open-weight model runs: auto (CUDA when present, else the CPU), cpu, cuda or cuda:N; "
        "the device used is recorded with the model in the findings",
    )
    api: ApiOptions | None = Field(
        None, description="how an API target is called: key variable, timeout, retries, concurrency, rate limit"
    )

    @model_validator(mode="after")
    def _api_target(self) -> ModelUnderTest:
        kind = kind_of(self.target)
        try:
            kind.cls.check_spec(self.target)
        except VerifierError as exc:
            raise ValueError(str(exc)) from None
        if kind.remote and {"max_chars", "stride"} & self.model_fields_set:
            raise ValueError(
                "model.max_chars and model.stride apply to open-weight targets; an API target's cut is "
                "model.api.max_chars"
            )
        if self.api is not None and kind.options is not type(self.api):
            raise ValueError(f"model.api applies only to an openai-compatible: target, not to a {kind.name} target")
        if self.weights is not None and not kind.remote:
            raise ValueError("model.weights applies to an API target (the weights it is declared to serve)")
        if self.weights is not None and (
            kind_of(self.weights).remote or PROMPT_LOGPROBS not in kind_of(self.weights).capabilities
        ):
            raise ValueError("model.weights must be a local or hub model (its prompt log-probs are compared)")
        if self.reference and PROMPT_LOGPROBS not in kind_of(self.reference).capabilities:
            raise ValueError("model.reference must be a local or hub model (its prompt log-probs are read)")
        if self.stride is not None and self.stride >= self.max_tokens:
            raise ValueError(
                f"stride {self.stride} must be below max_tokens ({self.max_tokens}): each window needs context from "
                "the one before"
            )
        return self


class DocumentRef(Strict):
    """A document set: a file, the text field, optional equality filters and a declared year."""

    path: Path
    text_field: str = "text"
    where: dict[str, Any] = Field(default_factory=dict)
    offset: int = Field(0, ge=0, description="skip this many matching rows (to split one file into disjoint sets)")
    limit: int | None = Field(None, ge=1)
    year: StrictInt | None = Field(None, ge=1000, le=2200, description="declared year of every document in the set")


class CorpusRef(Strict):
    """The corpus a developer declared as training data: where to look it up, and its digest."""

    index: str = Field(
        min_length=1,
        max_length=300,
        description="a local index folder, or the corpus files or folder "
        "(indexed at audit time), relative to the claim; with `api`, the index name there",
    )
    api: str | None = Field(
        None,
        pattern=r"^https?://[^\s@?#;=%]+$",
        max_length=300,
        description="an infini-gram-style index API (no credentials, parameters or query string: the claim "
        "enters the bundle)",
    )
    sha256: str = Field(
        pattern=r"^[0-9a-f]{64}$", description="the corpus digest the developer declared ('verifier corpus digest')"
    )
    index_sha256: str | None = Field(
        None, pattern=r"^[0-9a-f]{64}$", description="pins a prebuilt index (its manifest's SHA-256)"
    )
    version: str | None = Field(None, max_length=100)
    exclude: list[str] = Field(
        default_factory=list,
        max_length=50,
        description="glob patterns of files under the corpus folder to leave out of the index and the digest "
        "(every other file, dot-files included, is read); recorded in the findings and the report",
    )

    @field_validator("exclude")
    @classmethod
    def _exclude(cls, value: list[str]) -> list[str]:
        try:
            return list(check_exclude(value, "exclude"))
        except VerifierError as exc:
            raise ValueError(str(exc)) from None


class MarksRef(Strict):
    """Content marked before training: the signed registration made when the marks were published
    ('verifier marks make'), and the private file of their siblings. The published documents are
    the claim's suspect set."""

    registration: Path = Field(description="the signed registration envelope (DSSE JSON), relative to the claim")
    siblings: Path = Field(description="the private siblings file the registration commits to, relative to the claim")
    sha256: str | None = Field(None, pattern=r"^[0-9a-f]{64}$", description="pins the registration file's SHA-256")
    rephraser: str | None = Field(
        None,
        max_length=300,
        description="the rephrasing model (SPEC, or a folder relative to the claim) "
        "when it is not where the registration names it; regenerates the rephrasings",
    )


class Evidence(Strict):
    suspect: DocumentRef
    heldout: DocumentRef | None = Field(None, description="private same-period set certainly not trained on")
    dated: DocumentRef | None = Field(
        None,
        description="a set with declared dates (often text published after the cutoff); "
        "its old name 'reference' is read too, for a release",
    )
    control: DocumentRef | None = Field(None, description="known non-members of the suspect's period")
    prefix: DocumentRef | None = Field(
        None,
        description="known non-members that prefixed signals (recall) put before every "
        "scored text; never tested (default: documents drawn from the held-out set)",
    )
    token_frequencies: Path | None = Field(
        None,
        description="a token frequency table of the target's tokenizer for dc_pdd "
        "('verifier frequencies'; default: the bundled one, where it matches)",
    )
    corpus: CorpusRef | None = Field(None, description="a published corpus or index")
    marks: MarksRef | None = Field(None, description="canaries, traps or rephrasings registered before training")

    @model_validator(mode="before")
    @classmethod
    def _old_names(cls, data: Any) -> Any:
        """``evidence.reference`` was the dated set's name before format 4 (it read as a reference model)."""
        if isinstance(data, dict) and "reference" in data:
            if "dated" in data:
                raise ValueError("evidence.reference is the old name of evidence.dated: give one of them")
            data = {("dated" if key == "reference" else key): value for key, value in data.items()}
        return data

    def documents(self) -> dict[Role, DocumentRef]:
        """The document sets given, by role."""
        return {Role(role): ref for role, ref in self if isinstance(ref, DocumentRef)}


class ClaimManifest(Strict):
    claim: ClaimStatement
    model: ModelUnderTest
    evidence: Evidence
    policy: Path = Path("default")
    seed: int = Field(
        0, ge=0, lt=2**32, description="seed of the bootstrap, the blind classifier's folds and relabellings"
    )


class ClaimFiles:
    """A claim's input files, each read once per audit: the SHA-256 that findings and plans name
    and the rows the routes score come from the same bytes, so a file changed while an audit runs
    cannot be digested as one content and scored as another."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self._digests: dict[Path, str] = {}
        self._raw: dict[Path, bytes] = {}  # read, not yet parsed
        self._rows: dict[Path, Rows] = {}

    def _read(self, ref: Path) -> Path:
        path = self.base / ref
        if path not in self._digests:
            try:
                raw = path.read_bytes()
            except OSError as exc:
                raise VerifierError(f"{ref}: cannot read it ({exc.strerror})") from None
            self._digests[path], self._raw[path] = hashlib.sha256(raw).hexdigest(), raw
        return path

    def sha256(self, ref: Path) -> str:
        """SHA-256 of the file at ``ref`` (relative to the claim)."""
        return self._digests[self._read(ref)]

    def read(self, ref: Path) -> bytes:
        """The bytes ``sha256`` digested, for a route that parses a file itself (a token frequency table)."""
        path = self._read(ref)
        if path not in self._raw:
            raise VerifierError(f"{ref}: read as a document set already; not a file a route parses itself")
        return self._raw[path]

    def release(self) -> None:
        """Drop the bytes and rows held (their digests stay): a batch holds many claims, one audited at a time."""
        self._raw.clear()
        self._rows.clear()

    def documents(self, ref: DocumentRef) -> Documents:
        """The document set ``ref`` selects, parsed from the bytes ``sha256`` digested."""
        path = self._read(ref.path)
        if path not in self._rows:
            self._rows[path] = rows_of(path, self._raw[path])  # a file that does not parse fails the same way each time
            del self._raw[path]
        return select_documents(path, self._rows[path], ref.text_field, None, ref.where, ref.offset, ref.limit)


@dataclass(frozen=True)
class LoadedClaim:
    """A validated claim, loaded once and passed down: its manifest, the folder its relative paths
    start from, the SHA-256 of the claim file as read, and its input files (read once)."""

    manifest: ClaimManifest
    base: Path
    path: Path
    sha256: str
    files: ClaimFiles = field(compare=False)


def load_claim(path: str | Path) -> LoadedClaim:
    """Parse and validate a claim (a file, or ``example:NAME``), its evidence files checked to exist
    inside its folder."""
    path = resolve_claim_path(path)
    return claim_of_bytes(read_bounded(path, "claim"), path)


def claim_of_bytes(data: bytes, path: Path) -> LoadedClaim:
    """A claim from its YAML ``data``, read as if it were the file ``path`` (its folder is where its
    evidence lies): how a summary check audits the claims it derives without writing them into the
    auditor's folder."""
    raw = load_yaml_bytes(data, path)
    try:
        claim = ClaimManifest.model_validate(raw)
    except ValidationError as exc:
        more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
        raise VerifierError(f"{path}: {first_validation_error(exc, model=ClaimManifest)}{more}") from None
    for role, ref in claim.evidence.documents().items():
        _inside(path, f"evidence.{role}.path", ref.path)
        if not (path.parent / ref.path).is_file():
            raise VerifierError(
                f"{path}: evidence.{role}.path: file {ref.path} not found (paths are relative to the claim's folder)"
            )
    if (table := claim.evidence.token_frequencies) is not None:
        _inside(path, "evidence.token_frequencies", table)
        if not (path.parent / table).is_file():
            raise VerifierError(f"{path}: evidence.token_frequencies: file {table} not found")
    corpus = claim.evidence.corpus
    if corpus is not None and corpus.api is None:
        _inside(path, "evidence.corpus.index", Path(corpus.index))
        if not (path.parent / corpus.index).exists():
            raise VerifierError(
                f"{path}: evidence.corpus.index: {corpus.index} not found (an index folder or corpus files, relative "
                "to the claim)"
            )
    if claim.evidence.marks is not None:
        for key in ("registration", "siblings"):
            ref = getattr(claim.evidence.marks, key)
            _inside(path, f"evidence.marks.{key}", ref)
            if not (path.parent / ref).is_file():
                raise VerifierError(f"{path}: evidence.marks.{key}: file {ref} not found")
        if claim.evidence.marks.rephraser and (path.parent / claim.evidence.marks.rephraser).exists():
            _inside(path, "evidence.marks.rephraser", Path(claim.evidence.marks.rephraser))
        elif claim.evidence.marks.rephraser and Path(claim.evidence.marks.rephraser).is_absolute():
            raise VerifierError(
                f"{path}: evidence.marks.rephraser: a model folder must be a path relative to the claim's folder and "
                "inside it"
            )
    return LoadedClaim(claim, path.parent, path, hashlib.sha256(data).hexdigest(), ClaimFiles(path.parent))


def with_model_options(loaded: LoadedClaim, options: dict[str, str]) -> LoadedClaim:
    """``loaded`` with ``model`` fields set for this run (``--device``, ``--dtype``), validated as
    the claim's own would be; the findings then show the claim as run."""
    if not options:
        return loaded
    try:
        model = ModelUnderTest.model_validate(loaded.manifest.model.model_dump(exclude_unset=True) | options)
    except ValidationError as exc:
        key = str(exc.errors()[0]["loc"][0]) if exc.errors()[0]["loc"] else "model"
        hint = {"device": "use auto, cpu, cuda or cuda:N", "dtype": "use fp32 or bf16"}.get(key, exc.errors()[0]["msg"])
        raise VerifierError(f"--{key} {options.get(key)}: {hint}") from None
    return replace(loaded, manifest=loaded.manifest.model_copy(update={"model": model}))


def check_models(loaded: LoadedClaim) -> None:
    """The claim's local models are found before anything runs (a folder, a .gguf file, a hub id or
    a bundled name, relative to the claim): one line naming the claim and its key, not an error after
    the routes ran. A hub id is only checked for form; an API target is asked when first used."""
    for role in ("target", "reference", "weights"):
        spec = getattr(loaded.manifest.model, role)
        if spec is None or kind_of(spec).prefix is not None:
            continue
        try:
            resolve_model(claim_model_spec(loaded.manifest, loaded.base, role))
            if loaded.manifest.model.device.startswith("cuda"):
                claim_scoring_options(loaded.manifest)  # a CUDA device asked for is there (torch is asked)
        except VerifierError as exc:
            raise VerifierError(f"{loaded.path}: model.{role}: {exc}") from None


def document_sizes(loaded: LoadedClaim) -> dict[str, int]:
    """Every document set of the claim read and selected now, before any model loads: the number of
    documents per evidence role. A file that does not parse, a ``where`` that matches nothing, or an
    empty selection is one line naming the claim, its key and the file (as the claim names it)."""
    sizes = {}
    for role, ref in loaded.manifest.evidence.documents().items():
        try:
            sizes[role.value] = len(loaded.files.documents(ref))
        except VerifierError as exc:
            said = str(exc).replace(str(loaded.base / ref.path), str(ref.path))
            raise VerifierError(f"{loaded.path}: evidence.{role.value}: {said}") from None
    return sizes


def _inside(claim_path: Path, key: str, ref: Path) -> None:
    """Evidence lies in the claim's folder or below it, named relatively: an absolute path would
    enter the findings and the bundle, and ``..`` would read files the claim's folder does not hold."""
    folder = claim_path.parent.resolve()
    if ref.is_absolute() or not (folder / ref).resolve().is_relative_to(folder):
        raise VerifierError(f"{claim_path}: {key}: {ref} must be a path relative to the claim's folder and inside it")


# --- facts of a loaded claim every consumer shares (the audit, plans, prescoring, marks) --------------


def public_claim(claim: ClaimManifest, base: Path) -> dict[str, Any]:
    """The claim as the findings and the bundle carry it: a local model named by its folder or
    file name, never by where it lies on the auditor's disk (evidence paths are relative already)."""
    data = claim.model_dump(mode="json")
    for role in ("target", "reference", "weights"):
        spec = data["model"].get(role)
        if (
            spec
            and spec not in BUNDLED
            and (Path(spec).is_absolute() or (base / spec).exists() or spec.startswith(("~", ".")))
        ):
            data["model"][role] = Path(spec).name
    # A policy may live anywhere (shared by many claims): named, and digested elsewhere. (Corpus
    # evidence is inside the claim folder, or an API URL without credentials or query.)
    if "/" in data["policy"]:
        data["policy"] = Path(data["policy"]).name
    return data


def claim_model_spec(claim: ClaimManifest, base: Path, role: str = "target") -> str:
    """The SPEC of the claim's target, reference or weights (the local copy of an API target's
    weights); a relative path is relative to the claim."""
    spec = {"target": claim.model.target, "reference": claim.model.reference, "weights": claim.model.weights}[role]
    if spec is None:
        raise VerifierError(f"a route asked for the claim's model.{role}, but the claim names none")
    local = base / spec
    return str(local) if not kind_of(spec).remote and local.exists() else spec


def claim_scoring_options(claim: ClaimManifest) -> ScoringOptions:
    """How an audit runs the claim's open-weight models (and so the cache keys its scores are under)."""
    return ScoringOptions(
        device=claim.model.device,
        dtype=claim.model.dtype,
        max_tokens=claim.model.max_tokens,
        max_chars=claim.model.max_chars,
        stride=claim.model.stride,
    )


# --- a first claim, written for the user (``verifier init``) -------------------------------------

KIND_WORDS = {
    ClaimKind.TRAINED_ON: "was trained on",
    ClaimKind.NOT_TRAINED_ON: "was not trained on",
    ClaimKind.DECONTAMINATED: "was decontaminated of",
}


@dataclass(frozen=True)
class Starter:
    """What ``verifier init`` was told: paths as the claim will name them (relative to its folder)."""

    claim_id: str
    kind: ClaimKind
    made_by: str
    model: str
    suspect: str
    heldout: str | None = None
    dated: str | None = None
    corpus: str | None = None
    corpus_sha256: str | None = None
    statement: str | None = None
    device: str = "auto"


def starter_claim(s: Starter) -> str:
    """A complete claim as YAML, every key commented, for the user to read, edit and audit."""

    def q(value: str) -> str:  # a YAML scalar that reads back as exactly this text
        # JSON escapes C0 controls; YAML also breaks lines at NEL, LS and PS and drops other C1 controls.
        return "".join(
            f"\\u{ord(c):04x}" if 0x7F <= ord(c) <= 0x9F or c in "\u2028\u2029" else c
            for c in json.dumps(value, ensure_ascii=False)
        )

    if s.kind == ClaimKind.SUMMARY_FIELD:
        raise VerifierError(
            "verifier init writes claims about documents; a summary_field claim names its fields by hand"
        )
    named = s.model if kind_of(s.model).remote or s.model in BUNDLED else Path(s.model).name
    statement = s.statement or f"{named} {KIND_WORDS[s.kind]} the documents in {s.suspect}."
    lines = [
        "# A claim for `verifier audit`, written by `verifier init` and checked when it was written.",
        "# Every key: docs/reference/claim.md. Paths are relative to this file's folder, and evidence",
        "# files must lie in it or below it.",
        "claim:",
        f"  id: {q(s.claim_id)}  # names the evidence bundle folder",
        f"  statement: {q(statement)}  # the claim, in one sentence, as made",
        f"  kind: {s.kind.value}  # trained_on | not_trained_on | decontaminated",
        f"  made_by: {q(s.made_by)}  # who makes the claim: shown on page 1 of the report",
        '  # regulation_fields: ["eu:2.1"]  # EU summary fields / OSAID items the claim concerns',
        "model:",
        f"  target: {q(s.model)}  # a model folder, a .gguf file, smollm2-135m, org/name, or "
        "openai-compatible:https://host/v1#model",
        "  # training_cutoff: 2024  # the declared year of the latest training data",
        f"  device: {s.device}  # auto (CUDA when present, else the CPU) | cpu | cuda",
        "  dtype: fp32  # fp32 | bf16 (half the memory; the numbers move slightly)",
        "evidence:",
        f"  suspect: {{path: {q(s.suspect)}}}  # the documents the claim is about (JSONL, CSV or Parquet; a "
        '"text" field)',
    ]
    if s.heldout:
        lines.append(
            f"  heldout: {{path: {q(s.heldout)}}}  # same kind and period as the suspect set, certainly not trained on"
        )
    else:
        lines.append(
            "  # heldout: {path: heldout.jsonl}  # same kind and period, certainly unseen: enables dataset inference"
        )
    if s.dated:
        lines.append(
            f"  dated: {{path: {q(s.dated)}}}  # a set of another date: the audit refuses to read it as unseen data"
        )
    if s.corpus:
        lines += [
            "  corpus:  # the corpus the developer declared as training data: every suspect document is looked up",
            f"    index: {q(s.corpus)}",
            f"    sha256: {s.corpus_sha256}  # the declared digest ('verifier corpus digest' prints it)",
        ]
    lines += [
        "  # where: {label: 1}, offset: 0, limit: 100 and year: 2016 select and date a set inside a file",
        "policy: default  # the bundled decision tree; 'strict' adds two rules",
        "seed: 0  # fixes every random draw: the same inputs and seed give the same findings",
        "",
    ]
    return "\n".join(lines)
