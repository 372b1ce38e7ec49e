"""The signed registration of marks, and the private file of their siblings.

Registration (``registration.dsse.json``, may be published): a DSSE envelope, signed with
Ed25519, of an in-toto Statement whose subjects are the published documents (by SHA-256 of
their text) and whose predicate records the date, the generator's parameters, and for each mark
a salted commitment to the published mark and to each of its siblings. It proves, as far as its
signer's date can be trusted, that the marks and their siblings existed before training, and
fixes which mark was published, so nobody can later pick the sibling a model happens to like.
Secrets stay out of it: salted digests reveal neither the marks nor the siblings.

Secrets (``private/siblings.json``, kept private): the seed, and each mark's published text and
siblings with their salts. Its SHA-256 is in the registration, so a sibling cannot be dropped,
added or edited afterwards.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from verifier.boundary.files import read_plain
from verifier.boundary.peers import read_json
from verifier.errors import VerifierError, first_validation_error
from verifier.marks.generators import CanaryFormat, Kind
from verifier.trust.envelopes import (
    PAYLOAD_TYPE,
    Envelope,
    is_predicate,
    load_public_key,
    predicate_type,
    read_statement,
    verify_envelope,
)
from verifier.trust.keys import pinned_public_keys
from verifier.trust.timestamps import Timestamp, check_token, load_tsa_certificates, read_tokens_beside

PREDICATE_TYPE = predicate_type("marks-registration")
REGISTRATION_FORMAT = "verifier-marks-registration/1"
SECRETS_FORMAT = "verifier-marks-secrets/1"
MAX_FILE_BYTES = 256 << 20
SHA256 = r"^[0-9a-f]{64}$"


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class RegisteredMark(Strict):
    id: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")
    kind: Kind
    format: CanaryFormat | None = None
    length: int = Field(ge=0)
    repeats: int = Field(1, ge=1)
    document: str = Field(min_length=1, max_length=300, description="the published document's id")
    document_sha256: str = Field(pattern=SHA256, description="SHA-256 of the published document's text")
    published: str = Field(pattern=SHA256, description="salted commitment to the published mark")
    siblings: list[str] = Field(
        min_length=1, max_length=10_000, description="salted commitments to the unpublished siblings"
    )

    @field_validator("siblings")
    @classmethod
    def digests(cls, values: list[str]) -> list[str]:
        if any(len(v) != 64 or any(c not in "0123456789abcdef" for c in v) for v in values):
            raise ValueError("every sibling commitment must be a SHA-256 hex digest")
        if len(set(values)) != len(values):
            raise ValueError("sibling commitments repeat")
        return values


class RegistrationPredicate(Strict):
    format: Literal["verifier-marks-registration/1"]
    name: str = Field(min_length=1, max_length=200)
    created: datetime = Field(description="when the marks were made and registered (UTC)")
    verifier: str
    generator: dict[str, Any] = Field(description="seed commitment, word list and rephraser identity")
    secrets_sha256: str = Field(pattern=SHA256)
    marks: list[RegisteredMark] = Field(min_length=1, max_length=100_000)

    @field_validator("created")
    @classmethod
    def aware(cls, value: datetime) -> datetime:
        if value.tzinfo is None:
            raise ValueError("must carry a time zone (UTC)")
        return value.astimezone(UTC)


class SecretText(Strict):
    text: str = Field(min_length=1)
    salt: str = Field(pattern=r"^[0-9a-f]{32}$")


class SecretMark(Strict):
    id: str
    published: SecretText
    siblings: list[SecretText] = Field(min_length=1)
    original: str | None = Field(None, description="rephrasings: the text rephrased (to regenerate the siblings)")
    cue: str | None = Field(None, description="output-only marks: the cue or anchor (public, in the document)")


class Secrets(Strict):
    format: Literal["verifier-marks-secrets/1"]
    registration: str
    seed: int = Field(ge=0)
    seed_salt: str = Field(pattern=r"^[0-9a-f]{32}$")
    marks: list[SecretMark]


def commitment(text: str, salt: str) -> str:
    """A hiding commitment: SHA-256 of the salt, a newline and the text."""
    return hashlib.sha256(f"{salt}\n{text}".encode()).hexdigest()


@dataclass(frozen=True)
class RegistrationDate:
    """When the registration demonstrably existed, and on whose word: the earliest token of a
    time-stamping authority the auditor pins, else the registrant's own signed ``created``."""

    when: datetime
    by: str
    trusted: bool  # a pinned TSA's clock, not the registrant's
    timestamps: tuple[Timestamp, ...] = ()

    def as_finding(self) -> dict[str, Any]:
        return {
            "date": self.when.isoformat(),
            "by": self.by,
            "trusted_timestamp": self.trusted,
            "timestamps": [{"time": t.time.isoformat(), "tsa": t.tsa, "pinned": t.pinned} for t in self.timestamps],
        }


@dataclass(frozen=True)
class Registration:
    """A registration whose signature verified under a pinned key."""

    predicate: RegistrationPredicate
    subjects: dict[str, str]  # published document id -> SHA-256 of its text
    signer: str  # fingerprint of the pinned key
    sha256: str  # of the registration file
    signature: bytes = b""  # the raw signature that verified: what a timestamp must date
    dated: RegistrationDate | None = None  # set by ``checked_registration`` (``date_registration``)


def date_registration(registration: Registration, path: Path, trust_dir: Path | None = None) -> RegistrationDate:
    """When the registration at ``path`` existed: each token beside it must date its signature
    (else it is refused, naming the token); the earliest token a pinned TSA vouches for sets the
    date, else the registrant's signed ``created`` does (and the report says it is the registrant's
    own word)."""

    pinned = load_tsa_certificates([], trust_dir)
    stamps = [check_token(data, registration.signature, pinned, name) for name, data in read_tokens_beside(path)]
    trusted = sorted((t for t in stamps if t.pinned), key=lambda t: t.time)
    if trusted:
        first = trusted[0]
        return RegistrationDate(
            first.time,
            f"the clock of the time-stamping authority {first.tsa} (a token the auditor's trust store pins)",
            True,
            tuple(stamps),
        )
    return RegistrationDate(
        registration.predicate.created,
        "the registrant's own statement (no timestamp of a pinned time-stamping authority)",
        False,
        tuple(stamps),
    )


def _read(path: Path, what: str) -> bytes:
    return read_plain(path, MAX_FILE_BYTES, what, path.name, follow_links=True)


def _bounded(data: bytes, path: Path, what: str) -> bytes:
    if len(data) > MAX_FILE_BYTES:
        raise VerifierError(f"{what} {path.name}: larger than {MAX_FILE_BYTES >> 20} MiB")
    return data


def _json(data: bytes, where: str) -> Any:
    """Strict JSON (a key given twice, NaN, numbers too long to read are refused), or one line."""
    try:
        return read_json(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise VerifierError(f"{where}: not JSON ({str(exc).splitlines()[0][:120]})") from None


def read_registration(
    path: Path, pinned_sha256: str | None = None, trust_dir: Path | None = None, data: bytes | None = None
) -> Registration:
    """The registration at ``path`` (``data``: its bytes as the caller read and digested them), if
    its signature verifies under a key pinned in the trust store (``verifier keys trust``); every
    other case is one line saying why it is refused."""
    name = path.name
    data = _read(path, "registration") if data is None else _bounded(data, path, "registration")
    digest = hashlib.sha256(data).hexdigest()
    if pinned_sha256 is not None and digest != pinned_sha256:
        raise VerifierError(
            f"{name}: is not the registration the claim pins (SHA-256 {digest[:16]}..., the claim names "
            f"{pinned_sha256[:16]}...)"
        )
    try:
        envelope = Envelope.model_validate(_json(data, name))
    except ValidationError:
        raise VerifierError(
            f"{name}: not a signed registration (a DSSE envelope made by 'verifier marks make')"
        ) from None
    if envelope.payloadType != PAYLOAD_TYPE:
        raise VerifierError(f"{name}: not a signed registration (a DSSE envelope made by 'verifier marks make')")
    if not envelope.signatures:
        raise VerifierError(f"{name}: is not signed")
    pinned = pinned_public_keys(trust_dir)
    keyids = [s.keyid for s in envelope.signatures]
    signer = next((k for k in keyids if k in pinned), None)
    if signer is None:
        shown = ", ".join(str(k)[:16] for k in keyids) or "none"
        raise VerifierError(
            f"{name}: signed by a key not pinned in the trust store (key {shown}); pin the registrant's "
            "public key with 'verifier keys trust' only if you trust the dates it signs"
        )
    try:
        public = load_public_key(pinned[signer], "trust store")
        body, signature = verify_envelope(envelope, public, where=name)
    except VerifierError:
        raise VerifierError(
            f"{name}: altered: the signature does not verify under the pinned key {signer[:16]}"
        ) from None
    try:
        statement = read_statement(body)
    except ValueError as exc:
        raise VerifierError(f"{name}: signed, but not a marks registration ({str(exc)[:120]})") from None
    if not is_predicate(statement.predicateType, "marks-registration"):
        raise VerifierError(
            f"{name}: signed, but not a marks registration (predicate type {statement.predicateType[:80]})"
        )
    try:
        predicate = RegistrationPredicate.model_validate(statement.predicate)
        subjects = statement.subjects()
    except ValidationError as exc:
        raise VerifierError(f"{name}: predicate.{first_validation_error(exc)}") from None
    except ValueError as exc:
        raise VerifierError(f"{name}: malformed subjects ({exc})") from None
    ids = [m.id for m in predicate.marks]
    if len(set(ids)) != len(ids):
        raise VerifierError(f"{name}: predicate.marks: mark ids repeat")
    documents = [m.document_sha256 for m in predicate.marks]
    if len(set(documents)) != len(documents):
        raise VerifierError(
            f"{name}: predicate.marks: two marks share a published document (marks must be independent)"
        )
    for mark in predicate.marks:
        if subjects.get(mark.document) != mark.document_sha256:
            raise VerifierError(
                f"{name}: mark {mark.id}: its document {mark.document!r} is not a subject of the statement with that "
                "digest"
            )
    return Registration(predicate, subjects, signer, digest, signature)


def read_secrets(path: Path, registration: Registration, data: bytes | None = None) -> Secrets:
    """The private siblings file, checked against the registration: its digest, and every mark's
    published text and siblings against their commitments (none missing, none added).
    (``make.regenerate`` then checks they are what the generator draws from the seed.)"""
    name = path.name
    data = _read(path, "private siblings file") if data is None else _bounded(data, path, "private siblings file")
    if hashlib.sha256(data).hexdigest() != registration.predicate.secrets_sha256:
        raise VerifierError(f"{name}: is not the siblings file this registration commits to (its SHA-256 differs)")
    try:
        secrets = Secrets.model_validate(_json(data, name))
    except ValidationError as exc:
        raise VerifierError(f"{name}: {first_validation_error(exc)}") from None
    by_id = {m.id: m for m in secrets.marks}
    texts = [m.published.text for m in secrets.marks]
    if len(set(texts)) != len(texts):
        raise VerifierError(f"{name}: two marks have the same published text (marks must be independent)")
    for mark in registration.predicate.marks:
        secret = by_id.get(mark.id)
        if secret is None:
            raise VerifierError(f"{name}: mark {mark.id}: missing (the registration lists it)")
        if commitment(secret.published.text, secret.published.salt) != mark.published:
            raise VerifierError(f"{name}: mark {mark.id}: the published text does not match its commitment")
        if len(secret.siblings) != len(mark.siblings):
            raise VerifierError(
                f"{name}: mark {mark.id}: {len(secret.siblings)} siblings, the registration commits to "
                f"{len(mark.siblings)}"
            )
        if [commitment(s.text, s.salt) for s in secret.siblings] != mark.siblings:
            raise VerifierError(f"{name}: mark {mark.id}: a sibling does not match its commitment")
    return secrets


def rephrased_by(registration: Registration, weights_sha256: str | None) -> bool:
    """Whether the registration's rephrasings were made by the model with these weights (exact
    digest: a converted copy of the same model is not caught, which costs power, not validity)."""
    rephraser = registration.predicate.generator.get("rephraser") or {}
    made_by = (rephraser.get("digests") or {}).get("weights") if isinstance(rephraser, dict) else None
    return bool(made_by) and made_by == weights_sha256


def predates_training(
    created: datetime,
    released: date | None,
    cutoff_year: int | None,
    now: datetime | None = None,
    by: str = "its signer",
) -> str | None:
    """Why a registration dated ``created`` (on the word of ``by``) cannot show that its marks
    predate training (None: it can)."""
    now = now or datetime.now(UTC)
    if created > now:
        return f"its date {created:%Y-%m-%d} is in the future"
    if released is None and cutoff_year is None:
        return (
            "the claim declares neither the model's release date nor its training cutoff, so the registration "
            "cannot be shown to predate training"
        )
    if released is not None and created.date() >= released:
        return f"it is dated {created:%Y-%m-%d} by {by}, not before the model's declared release ({released:%Y-%m-%d})"
    if cutoff_year is not None and created.year >= cutoff_year:
        return (
            f"it is dated {created:%Y-%m-%d} by {by}, not before the year of the model's declared training cutoff "
            f"({cutoff_year})"
        )
    return None
