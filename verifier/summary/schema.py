"""The EU public summary of training content as typed data (AI Act Art. 53(1)(d); the Commission's
template of 24 July 2025, annex to C(2025) 5235).

A provider's summary is read from YAML or JSON and validated at the boundary like claims and
policies: an unknown key, a date that is not a month, a domain that is a public suffix, a size
band the template does not have - each is one line naming the file and the key. The sections and
their keys follow the template (``section_1`` general information, ``section_2`` data sources,
``section_3`` data processing); what ``verifier summary check`` can test of each field is in
``verifier.summary.fields``.

Only the template's "additional comments" are optional in the template itself; here a field left
out is "not declared", which the check reports as such (never as confirmed).
"""

from __future__ import annotations

import hashlib
import re
from datetime import date
from pathlib import Path
from typing import Literal

from pydantic import Field, ValidationError, field_validator, model_validator

from verifier.boundary.safe_yaml import load_yaml_bytes, read_bounded
from verifier.claims import Strict, checked_domains
from verifier.errors import VerifierError, first_validation_error

SUMMARY_FORMAT = "verifier-eu-summary/1"
MONTH = r"^\d{4}-(0[1-9]|1[0-2])$"
LANGUAGE = re.compile(r"^[a-z]{2,3}$")  # ISO 639-1 (or 639-3 where no two-letter code exists)


class Provider(Strict):
    """1.1: who places the model on the market."""

    name: str = Field(min_length=1, max_length=300)
    contact: str | None = Field(None, max_length=300)
    authorised_representative: str | None = Field(None, max_length=300)


class ModelIdentity(Strict):
    """1.2: the versioned model the summary covers, and what identifies it for a test."""

    names: list[str] = Field(min_length=1, max_length=50, description="versioned model name(s)")
    dependencies: list[str] = Field(
        default_factory=list, max_length=50, description="models this one was built on (a fine-tune's base)"
    )
    market_date: date | None = Field(None, description="date placed on the EU market, YYYY-MM-DD")
    weights_sha256: str | None = Field(
        None,
        pattern=r"^[0-9a-f]{64}$",
        description="the SHA-256 of the released weights as verifier digests them (compared with the model tested)",
    )
    api_model_id: str | None = Field(
        None, max_length=200, description="the model id an API serves it under (compared with the API's answer)"
    )


class Modalities(Strict):
    """1.3: modalities, size, content types, collection date, languages."""

    modalities: list[Literal["text", "image", "audio", "video"]] = Field(min_length=1)
    text_size_band: Literal["<1B", "1B-10T", ">10T"] | None = Field(
        None, description="training-data size band for text, in tokens"
    )
    content_types: list[str] = Field(default_factory=list, max_length=50, description="fiction, scientific text, ...")
    latest_collection: str | None = Field(None, pattern=MONTH, description="latest date of data collection, YYYY-MM")
    languages: list[str] = Field(default_factory=list, max_length=300, description="ISO 639-1 codes")

    @field_validator("languages")
    @classmethod
    def _codes(cls, codes: list[str]) -> list[str]:
        bad = [c for c in codes if not LANGUAGE.match(c)]
        if bad:
            raise ValueError(f"not ISO 639 language codes (lower case, 2 or 3 letters): {bad[:3]}")
        return codes


class PublicDataset(Strict):
    """2.1: a publicly available dataset used, and the files of the training corpus that hold it."""

    name: str = Field(min_length=1, max_length=300)
    link: str | None = Field(None, max_length=500)
    files: list[str] = Field(
        min_length=1,
        max_length=1000,
        description="glob patterns of the corpus files holding this dataset (paths under the corpus folder)",
    )


class PrivateData(Strict):
    """2.2: licensed third-party data (2.2.1) and other private data (2.2.2)."""

    licensed: bool = False
    licensed_modalities: list[str] = Field(default_factory=list, max_length=10)
    other: list[str] = Field(default_factory=list, max_length=100, description="other private datasets, described")
    files: list[str] = Field(
        default_factory=list, max_length=1000, description="glob patterns of the corpus files holding private data"
    )


class Crawling(Strict):
    """2.3: data crawled or scraped by or for the provider."""

    used: bool
    crawlers: list[str] = Field(default_factory=list, max_length=50)
    purpose: str | None = Field(None, max_length=2000)
    behaviour: str | None = Field(None, max_length=2000, description="robots.txt, paywalls, logins")
    period_start: str | None = Field(None, pattern=MONTH)
    period_end: str | None = Field(None, pattern=MONTH)
    top_domains: list[str] | None = Field(None, max_length=100_000, description="the most relevant domain names")
    sme: bool = Field(False, description="an SME lists the top 5% or 1,000 domains instead of the top 10%")
    files: list[str] = Field(
        default_factory=list, max_length=1000, description="glob patterns of the corpus files holding crawled data"
    )

    @field_validator("top_domains")
    @classmethod
    def _domains(cls, domains: list[str] | None) -> list[str] | None:
        # one rule for domain names: the claim schema's (browser form, no public suffixes)
        return checked_domains(domains)

    @model_validator(mode="after")
    def _used(self) -> Crawling:
        if not self.used and (self.files or self.top_domains):
            raise ValueError("files and top_domains describe crawled data: declare used: true, or leave them out")
        return self


class Used(Strict):
    """2.4 user data, 2.5 synthetic data, 2.6 other sources: used or not, and what."""

    used: bool
    description: str | None = Field(None, max_length=5000)


class DataSources(Strict):
    public_datasets: list[PublicDataset] = Field(default_factory=list, max_length=1000)

    @field_validator("public_datasets")
    @classmethod
    def _distinct(cls, datasets: list[PublicDataset]) -> list[PublicDataset]:
        names = [d.name for d in datasets]
        if twice := sorted({n for n in names if names.count(n) > 1}):
            raise ValueError(f"datasets listed twice: {twice[:3]}")
        return datasets

    private_data: PrivateData = Field(default_factory=PrivateData)
    crawled: Crawling
    user_data: Used
    synthetic_data: Used
    other_sources: Used


class Processing(Strict):
    """3.1 respect of reservations of rights (TDM opt-out), 3.2 removal of illegal content, 3.3 other."""

    opt_out_respected: bool | None = None
    code_of_practice_signatory: bool | None = None
    opt_out_measures: str | None = Field(None, max_length=5000)
    illegal_content_measures: str | None = Field(None, max_length=5000)
    other: str | None = Field(None, max_length=5000)


class TrainingSummary(Strict):
    """A provider's public summary of training content, field by field."""

    format: Literal["verifier-eu-summary/1"] = Field(description="this schema's version")
    id: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$", description="names the check's output folder")
    provider: Provider
    model: ModelIdentity
    modalities: Modalities
    sources: DataSources
    processing: Processing = Field(default_factory=Processing)


def load_summary(path: Path) -> tuple[TrainingSummary, str]:
    """The validated summary at ``path`` and the SHA-256 of its bytes, or one line naming the file and key."""
    data = read_bounded(path, "summary")
    raw = load_yaml_bytes(data, path)  # JSON is YAML
    if not isinstance(raw, dict):
        raise VerifierError(f"{path}: not a summary (a mapping with format, id, provider, model, ...)")
    try:
        summary = TrainingSummary.model_validate(raw)
    except ValidationError as exc:
        more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
        raise VerifierError(f"{path}: {first_validation_error(exc, model=TrainingSummary)}{more}") from None
    return summary, hashlib.sha256(data).hexdigest()
