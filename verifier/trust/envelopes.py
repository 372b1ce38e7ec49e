"""Ed25519 signatures over a DSSE envelope carrying an in-toto Statement.

The Statement's subjects are the bundle's files with their SHA-256 digests, so one signature
covers every byte of the bundle. DSSE signs the pre-authentication encoding
PAE(type, body) = "DSSEv1" SP len(type) SP type SP len(body) SP body, which binds the payload type.

Envelopes and statements are read once, into typed objects (``Envelope``, ``Statement``), strictly:
JSON with a key given twice, a signature that is not an object, a digest that is not a string, a
subject named twice are refused before anything in them is trusted or shown.
"""

from __future__ import annotations

import base64
import hashlib
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from verifier.boundary.peers import read_json
from verifier.errors import VerifierError

PAYLOAD_TYPE = "application/vnd.in-toto+json"
STATEMENT_TYPE = "https://in-toto.io/Statement/v1"


def predicate_type(name: str) -> str:
    """The in-toto predicate type of verifier's statements of kind ``name`` (audit, batch, plan,
    marks-registration): a URN under a name the project chose, which claims no web domain or
    account (the first versions wrote ``https://github.com/verifier/verifier/NAME/v1``, an account
    the project does not hold; statements of that type still verify: ``is_predicate``)."""
    return f"urn:verifier:{name}:v1"


def is_predicate(value: str, name: str) -> bool:
    """Whether a statement's predicate type is verifier's ``name``, as written now or before."""
    return value in (predicate_type(name), f"https://github.com/verifier/verifier/{name}/v1")


# The predicate: {claim_id, verdict, findings_sha256, verifier (version)}; documented in evidence/README.md.
PREDICATE_TYPE = predicate_type("audit")


def pae(payload_type: str, body: bytes) -> bytes:
    kind = payload_type.encode()
    return b"DSSEv1 %d %s %d %s" % (len(kind), kind, len(body), body)


def public_pem(key: Ed25519PublicKey) -> bytes:
    return key.public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)


def key_id(public: bytes) -> str:
    return hashlib.sha256(public).hexdigest()


def load_public_key(pem: bytes, where: str) -> Ed25519PublicKey:
    try:
        key = serialization.load_pem_public_key(pem)
    except ValueError:
        raise VerifierError(f"{where}: not a readable public key") from None
    if not isinstance(key, Ed25519PublicKey):
        raise VerifierError(f"{where}: not an Ed25519 public key")
    return key


def statement(
    subjects: dict[str, str], predicate: dict[str, Any], predicate_type: str = PREDICATE_TYPE
) -> dict[str, Any]:
    return {
        "_type": STATEMENT_TYPE,
        "subject": [{"name": name, "digest": {"sha256": digest}} for name, digest in sorted(subjects.items())],
        "predicateType": predicate_type,
        "predicate": predicate,
    }


def sign_envelope(body: bytes, key: Ed25519PrivateKey) -> dict[str, Any]:
    public = public_pem(key.public_key())
    return {
        "payloadType": PAYLOAD_TYPE,
        "payload": base64.b64encode(body).decode(),
        "signatures": [{"keyid": key_id(public), "sig": base64.b64encode(key.sign(pae(PAYLOAD_TYPE, body))).decode()}],
    }


class Typed(BaseModel):
    model_config = ConfigDict(strict=True, extra="ignore", frozen=True, populate_by_name=True)


class Signature(Typed):
    keyid: str = ""
    sig: str


class Envelope(Typed):
    """A DSSE envelope; ``body()`` is its decoded payload (not yet trusted: see ``verify_envelope``)."""

    payloadType: str  # noqa: N815 - the DSSE field names
    payload: str
    signatures: list[Signature]

    def body(self) -> bytes:
        return base64.b64decode(self.payload, validate=True)


class Digest(Typed):
    sha256: str


class Subject(Typed):
    name: str
    digest: Digest


class Statement(Typed):
    """An in-toto Statement v1."""

    type: str = Field(alias="_type")
    subject: list[Subject]
    predicateType: str  # noqa: N815 - the in-toto field names
    predicate: dict[str, Any]

    def subjects(self) -> dict[str, str]:
        """Subject name -> SHA-256; a name given twice is a ValueError (which digest would count?)."""
        names = [s.name for s in self.subject]
        if len(set(names)) != len(names):
            raise ValueError("a subject is named twice")
        return {s.name: s.digest.sha256 for s in self.subject}


def read_envelope(data: bytes) -> Envelope:
    """The envelope in ``data``; ValueError if it is not one (the caller names the file)."""
    try:
        return Envelope.model_validate(read_json(data))
    except (ValidationError, RecursionError) as exc:
        raise ValueError(str(exc).splitlines()[0]) from None


def read_statement(body: bytes) -> Statement:
    """The in-toto Statement an envelope carries; ValueError if it is not one."""
    try:
        statement = Statement.model_validate(read_json(body))
    except (ValidationError, RecursionError) as exc:
        raise ValueError(str(exc).splitlines()[0]) from None
    if statement.type != STATEMENT_TYPE:
        raise ValueError(f"not an in-toto Statement ({statement.type[:80]!r})")
    return statement


def verify_envelope(
    envelope: Envelope, public: Ed25519PublicKey, where: str = "envelope.dsse.json"
) -> tuple[bytes, bytes]:
    """(the payload, the raw bytes of the first signature that verifies under ``public``); else an
    error naming ``where``. The signature is what a timestamp must date: a token over another
    signature in the envelope dates nothing this key signed."""
    try:
        body = envelope.body()
        if envelope.payloadType != PAYLOAD_TYPE:
            raise ValueError("not a DSSE envelope of an in-toto statement")
    except ValueError:
        raise VerifierError(f"{where}: differs: malformed DSSE envelope") from None
    for entry in envelope.signatures:
        try:
            raw = base64.b64decode(entry.sig, validate=True)
            public.verify(raw, pae(envelope.payloadType, body))
            return body, raw
        except (InvalidSignature, ValueError):
            continue
    raise VerifierError(f"{where}: differs: signature does not verify under the public key")
