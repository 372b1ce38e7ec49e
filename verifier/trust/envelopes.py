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
import os
from pathlib import Path
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from verifier.boundary.atomic import atomic_output
from verifier.boundary.peers import read_json
from verifier.errors import VerifierError
from verifier.trust.private_files import check_private

PAYLOAD_TYPE = "application/vnd.in-toto+json"
STATEMENT_TYPE = "https://in-toto.io/Statement/v1"
# The predicate: {claim_id, verdict, findings_sha256, verifier (version)}; documented in evidence/README.md.
PREDICATE_TYPE = "https://github.com/verifier/verifier/audit/v1"


def default_trust_dir() -> Path:
    """``$VERIFIER_TRUST_DIR``, else ``~/.config/verifier/trusted``: the public keys a reader pins."""
    if env := os.environ.get("VERIFIER_TRUST_DIR"):
        return Path(env)
    return Path.home() / ".config" / "verifier" / "trusted"


def trusted_keys(trust_dir: Path | None = None) -> set[str]:
    """Fingerprints of the pinned public keys (``*.pem`` / ``*.pub`` files of the trust store)."""
    return set(pinned_public_keys(trust_dir))


def pinned_public_keys(trust_dir: Path | None = None) -> dict[str, bytes]:
    """The trust store's public keys (PEM) by fingerprint."""
    folder = trust_dir or default_trust_dir()
    if not folder.is_dir():
        return {}
    found = {}
    for path in sorted(folder.iterdir()):
        if path.suffix in (".pem", ".pub") and path.is_file() and not path.is_symlink():
            try:  # a file that is not an Ed25519 public key pins nothing (and blocks nothing)
                pem = public_pem(load_public_key(path.read_bytes(), str(path)))
            except (VerifierError, OSError):
                continue
            found[key_id(pem)] = pem
    return found


def trust_key(public_path: Path, trust_dir: Path | None = None) -> tuple[Path, str]:
    """Pin a signer's public key: copy it into the trust store, named by its fingerprint."""
    try:
        pem = Path(public_path).read_bytes()
    except OSError as exc:
        raise VerifierError(f"{public_path}: cannot read ({exc.strerror})") from None
    fingerprint = key_id(public_pem(load_public_key(pem, str(public_path))))
    folder = trust_dir or default_trust_dir()
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / f"{fingerprint[:16]}.pem"
    with atomic_output(target) as tmp:
        tmp.write_bytes(public_pem(load_public_key(pem, str(public_path))))
    return target, fingerprint


def pae(payload_type: str, body: bytes) -> bytes:
    kind = payload_type.encode()
    return b"DSSEv1 %d %s %d %s" % (len(kind), kind, len(body), body)


def generate_key(path: Path, force: bool = False) -> Path:
    """Write a new private key (PEM, mode 0600) and its public key beside it (``.pub``).

    Either file may be the only copy of a key that signed published bundles, so neither is
    replaced unless ``force``; each is written atomically, so a crash never leaves a half-written key.
    """
    public_path = path.with_name(path.name + ".pub")
    if not force:
        for existing in (path, public_path):
            if existing.exists():
                raise VerifierError(f"{existing}: exists; refusing to overwrite a key (keys generate --force replaces it)")
    key = Ed25519PrivateKey.generate()
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    with atomic_output(path) as tmp:
        tmp.chmod(0o600)  # before the secret is written
        tmp.write_bytes(pem)
    with atomic_output(public_path) as tmp:
        tmp.write_bytes(public_pem(key.public_key()))
        tmp.chmod(0o644)
    return public_path


def public_pem(key: Ed25519PublicKey) -> bytes:
    return key.public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)


def key_id(public: bytes) -> str:
    return hashlib.sha256(public).hexdigest()


def load_private_key(path: Path) -> Ed25519PrivateKey:
    """The Ed25519 key at ``path``, refused when other accounts can read it (they could sign as you)."""
    try:
        check_private(Path(path), "signing key")
        key = serialization.load_pem_private_key(Path(path).read_bytes(), password=None)
    except (OSError, ValueError, TypeError) as exc:
        raise VerifierError(f"{path}: not a readable private key ({exc})") from None
    if not isinstance(key, Ed25519PrivateKey):
        raise VerifierError(f"{path}: not an Ed25519 key")
    return key


def load_public_key(pem: bytes, where: str) -> Ed25519PublicKey:
    try:
        key = serialization.load_pem_public_key(pem)
    except ValueError:
        raise VerifierError(f"{where}: not a readable public key") from None
    if not isinstance(key, Ed25519PublicKey):
        raise VerifierError(f"{where}: not an Ed25519 public key")
    return key


def statement(subjects: dict[str, str], predicate: dict[str, Any], predicate_type: str = PREDICATE_TYPE) -> dict[str, Any]:
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


def verify_envelope(envelope: Envelope, public: Ed25519PublicKey, where: str = "envelope.dsse.json") -> tuple[bytes, bytes]:
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
