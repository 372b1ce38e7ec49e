"""RFC 3161 timestamps: a time-stamping authority's signed word that some bytes existed at a time.

Why: everything else in a bundle or a marks registration is dated by its own signer, who can write
any date. A token from a time-stamping authority (TSA) the reader pins dates a signature
independently of the signer: a registration stamped in March existed in March, whoever made it.

What is stamped: the SHA-256 of the raw Ed25519 signature of a DSSE envelope (the first
signature's ``sig``, base64-decoded). The signature covers the statement, the statement every
file, so one token dates everything the envelope signs, and a token cannot be moved to another
envelope. A token is stored verbatim as the TSA's DER ``TimeStampResp``, in a file of its own
beside the envelope (``timestamp-<n>.tsr`` in a bundle; ``NAME.timestamp-<n>.tsr`` beside a marks
registration or a plan ``NAME.dsse.json``; a plan's tokens travel into the bundle as signed
``plan.timestamp-<n>.tsr`` files), so ``openssl ts -verify -in timestamp-1.tsr -data sig.bin -CAfile
tsa-ca.pem`` checks it without verifier. Tokens are added after signing and are not among the
statement's subjects; each must date this envelope's signature or verification fails.

Getting a token (``stamp``): a query with a random nonce and a request for the TSA's certificate
goes through the peer client (bounded time and size, no redirects, http only to loopback unless
allowed). The answer is refused, in one line, unless its status is granted, it stamps our digest
and carries our nonce; nothing is written as timestamped otherwise.

Checking a token (``check_token``): against the TSA certificates the reader pins (``--tsa-cert``,
or ``<trust store>/tsa/*.pem``): the TSA's root CA, or a self-signed TSA certificate. A token
whose imprint is not this signature's, or whose signature or chain does not hold under a pinned
certificate, is an error; a token from a TSA nobody pinned is reported as not trusted and dates
nothing. Tokens are read as real TSAs encode them (asn1crypto: certificate sets in any order, the
chain included or not, SHA-256/384/512 imprints) and checked by pyHanko's token validation with
pyhanko-certvalidator over the bytes as received (signature, ESSCertID or ESSCertIDv2, chain); no
ASN.1 is written here.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from asn1crypto import cms, core, tsp
from asn1crypto import x509 as asn1_x509
from cryptography import x509
from cryptography.hazmat.primitives import serialization

from verifier.boundary.files import read_plain
from verifier.boundary.peers import ItemFailed, PeerAccess, PeerClient, check_endpoint
from verifier.errors import VerifierError
from verifier.trust.keys import default_trust_dir

TOKEN_SUFFIX = ".tsr"
MAX_TOKEN_BYTES = 64 << 10  # a response is a few KB (one signature and its certificates)
CONTENT_TYPE = "application/timestamp-query"


@dataclass(frozen=True)
class Timestamp:
    """What one token says, and whether a pinned TSA vouches for it."""

    time: datetime  # the TSA's genTime (UTC)
    tsa: str  # the TSA's name in the token, else its certificate's subject
    serial: int
    pinned: bool  # signature and chain hold under a pinned TSA certificate

    def describe(self) -> str:
        when = self.time.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        return f"{when} by {self.tsa}" + (
            "" if self.pinned else " (not trusted: no pinned TSA certificate vouches for it)"
        )


def signature_bytes(envelope: dict) -> bytes:
    """The raw bytes of the signature of an envelope just signed (one signature): what a timestamp dates."""
    try:
        return base64.b64decode(envelope["signatures"][0]["sig"], validate=True)
    except (KeyError, IndexError, TypeError, ValueError):
        raise VerifierError("envelope: no readable signature to timestamp") from None


def check_tsa(urls: list[str] | None, signed: bool = True, access: object = None) -> None:
    """Refuse time-stamping authorities a command could not use, before anything runs: a URL that
    is not http(s), carries credentials or leaves the machine over plain http (the peer client's
    rules), or a TSA for an unsigned output, which has no signature to date."""

    if urls and not signed:
        raise VerifierError("--tsa: an unsigned bundle (--no-sign) has no signature to timestamp")
    for url in urls or []:
        check_endpoint(url, "--tsa", access or PeerAccess())


def post_query(query: bytes, url: str, access: object = None, timeout_s: float = 30.0) -> bytes:
    """The TSA's answer to a DER ``TimeStampReq``, through the peer client (bounded time and size,
    no redirects, http only to loopback unless allowed); one line on failure."""

    what = f"--tsa {url}"
    client = PeerClient(
        url,
        what=what,
        access=access or PeerAccess(),
        timeout_s=timeout_s,
        retries=1,
        max_body=MAX_TOKEN_BYTES,
        content_type=CONTENT_TYPE,
    )

    def read(answer: Any) -> bytes:  # the peer client's Answer
        if answer.status != 200:
            raise VerifierError(f"{what}: answered HTTP {answer.status}, not a timestamp")
        return answer.body

    try:
        return client.post("", query, read)
    except ItemFailed as exc:
        raise VerifierError(f"{what}: no timestamp ({exc})") from None


def _response(der: bytes, what: str) -> tsp.TimeStampResp:
    """The TSA's ``TimeStampResp`` as received, parsed as real TSAs encode it (BER, certificate sets
    in any order); one line naming ``what`` when the bytes are not one."""
    try:
        response = tsp.TimeStampResp.load(der, strict=True)
        response.native  # noqa: B018 - parses every field now, so garbage fails here and not later
        return response
    except (ValueError, TypeError, KeyError):
        raise VerifierError(f"{what}: the answer is not a DER timestamp response") from None


def _granted(response: tsp.TimeStampResp, what: str) -> tuple[cms.SignedData, tsp.TSTInfo]:
    """The token's signed data and what it says, if the TSA granted it; one line otherwise."""
    if response["status"]["status"].native not in ("granted", "granted_with_mods"):
        raise VerifierError(f"{what}: the TSA refused (status {response['status']['status'].native})")
    token = response["time_stamp_token"]
    signed = token["content"] if token["content_type"].native == "signed_data" else None
    content = signed["encap_content_info"]["content"] if isinstance(signed, cms.SignedData) else None
    info = content.parsed if isinstance(content, core.ParsableOctetString) else None  # absent when detached
    if not isinstance(info, tsp.TSTInfo):
        raise VerifierError(f"{what}: the answer is not a DER timestamp response")
    return signed, info


def check_answer(der: bytes, imprint: bytes, nonce: int | None, what: str) -> None:
    """Refuse a TSA's answer, in one line, unless it is a granted token over ``imprint`` (the digest
    asked about) carrying our ``nonce``: nothing is marked as timestamped otherwise."""
    _, info = _granted(_response(der, what), what)
    if info["message_imprint"]["hashed_message"].native != imprint:
        raise VerifierError(f"{what}: the token dates other data than the signature sent")
    if info["nonce"].native != nonce:
        raise VerifierError(f"{what}: the token does not carry this request's nonce (a replayed or foreign token)")


def stamp(data: bytes, url: str, access: object = None, timeout_s: float = 30.0) -> bytes:
    """A TSA's DER response dating ``data`` (see the module docstring); one line on any failure."""
    imprint, nonce = hashlib.sha256(data).digest(), secrets.randbits(63)
    request = tsp.TimeStampReq(
        {
            "version": 1,
            "message_imprint": {"hash_algorithm": {"algorithm": "sha256"}, "hashed_message": imprint},
            "nonce": nonce,
            "cert_req": True,
        }
    )
    der = post_query(request.dump(), url, access, timeout_s)
    check_answer(der, imprint, nonce, f"--tsa {url}")
    return der


def _tsa_name(signed: cms.SignedData, info: tsp.TSTInfo) -> str:
    """The name the token gives its TSA, else the subject of the (first) certificate it carries, as
    RFC 4514 writes names."""
    named = info["tsa"]  # optional: OpenSSL's default (tsa_name = no) leaves it out
    if isinstance(named, asn1_x509.GeneralName) and named.name == "directory_name":
        return _rfc4514(named.chosen)
    for choice in signed["certificates"] or []:
        if choice.name == "certificate":
            return _rfc4514(choice.chosen.subject)
    return "an unnamed TSA"


def _rfc4514(name: asn1_x509.Name) -> str:
    """The name as RFC 4514 writes it (as cryptography does); a name cryptography will not build
    (a country code of three letters) as asn1crypto writes it."""
    try:
        return x509.Name(
            [
                x509.RelativeDistinguishedName(
                    x509.NameAttribute(x509.ObjectIdentifier(pair["type"].dotted), str(pair["value"].native))
                    for pair in rdn
                )
                for rdn in name.chosen
            ]
        ).rfc4514_string()
    except ValueError:
        return name.human_friendly


DIGESTS = {"sha256": hashlib.sha256, "sha384": hashlib.sha384, "sha512": hashlib.sha512}


def check_token(der: bytes, data: bytes, pinned: list[x509.Certificate], where: str) -> Timestamp:
    """What the token ``der`` says of ``data``; raises naming ``where`` if it is not a token over
    ``data`` or does not hold under the pinned certificates it should.

    The signature, the signing-certificate attribute (ESSCertID or ESSCertIDv2) and the chain are
    checked by pyHanko's token validation over the bytes as received, at the token's own time,
    with nothing fetched: the chain must end in a pinned anchor (a CA's or a self-signed
    certificate); other pinned certificates (a TSA's own, where its tokens omit it) only help
    build the path."""
    signed, info = _granted(_response(der, f"{where}: differs"), f"{where}: differs")
    algorithm = info["message_imprint"]["hash_algorithm"]["algorithm"].native
    digest = DIGESTS.get(algorithm)
    if digest is None or info["message_imprint"]["hashed_message"].native != digest(data).digest():
        raise VerifierError(f"{where}: differs: the token dates other data than this signature")
    from pyhanko.sign.validation.errors import SignatureValidationError
    from pyhanko.sign.validation.generic_cms import validate_tst_signed_data
    from pyhanko_certvalidator import ValidationContext

    time = info["gen_time"].native
    trusted = False
    anchors = [c for c in pinned if is_anchor(c)]
    if anchors:
        context = ValidationContext(
            trust_roots=[_asn1(c) for c in anchors],
            moment=time,
            allow_fetching=False,
        )
        helpers = [_asn1(c) for c in pinned if not is_anchor(c)]
        if helpers:
            # A token that omits its certificates names its signer only by issuer and serial: the
            # pinned helpers join a copy's (unsigned) certificate set, the signed bytes untouched.
            signed = signed.copy()
            carried = [choice for choice in signed["certificates"] or [] if choice.name == "certificate"]
            signed["certificates"] = [*carried, *helpers]
        try:
            status = asyncio.run(validate_tst_signed_data(signed, context, lambda name: DIGESTS[name](data).digest()))
            trusted = bool(status["intact"] and status["valid"] and status.get("trust_problem_indic") is None)
        except (SignatureValidationError, ValueError, KeyError, TypeError, AttributeError, NotImplementedError):
            trusted = False  # a signature pyHanko cannot check (an unknown digest or key) vouches for nothing
    return Timestamp(time.astimezone(UTC), _tsa_name(signed, info), info["serial_number"].native, trusted)


def _asn1(certificate: x509.Certificate) -> asn1_x509.Certificate:
    return asn1_x509.Certificate.load(certificate.public_bytes(serialization.Encoding.DER))


MAX_CERTIFICATE_FILE_BYTES = 1 << 20


def is_anchor(certificate: x509.Certificate) -> bool:
    """A certificate that can anchor a chain: a CA, or self-signed."""
    try:
        if certificate.extensions.get_extension_for_class(x509.BasicConstraints).value.ca:
            return True
    except x509.ExtensionNotFound:
        pass
    return certificate.issuer == certificate.subject


def load_tsa_certificates(
    paths: list[Path], trust_dir: Path | None = None, what: str = "--tsa-cert"
) -> list[x509.Certificate]:
    """The TSA certificates the reader pins: ``paths`` (PEM, each may hold several), then the trust
    store's ``tsa/*.pem``. Each file must hold an anchor - a CA's certificate or a self-signed one:
    a TSA's own certificate issued by a CA anchors no chain, so pinning it alone would vouch for
    nothing. Other certificates beside an anchor (the TSA's own, an intermediate) only help build
    a chain, for TSAs whose tokens omit their certificates."""

    store = (trust_dir or default_trust_dir()) / "tsa"
    files = [(Path(p), what) for p in paths] + [
        (p, "trust store") for p in (sorted(store.glob("*.pem")) if store.is_dir() else [])
    ]
    certificates = []
    for path, label in files:
        data = read_plain(path, MAX_CERTIFICATE_FILE_BYTES, label)
        try:
            found = x509.load_pem_x509_certificates(data)
        except ValueError:
            raise VerifierError(f"{label} {path}: not a PEM certificate") from None
        if not any(is_anchor(certificate) for certificate in found):
            leaf = found[0]
            raise VerifierError(
                f"{label} {path}: {leaf.subject.rfc4514_string()} is not a CA certificate; pin the TSA's "
                f"root CA (this one is issued by {leaf.issuer.rfc4514_string()})"
            )
        certificates += found
    return certificates


def tokens_beside(path: Path) -> list[Path]:
    """The tokens published beside the envelope file ``path`` (``NAME.dsse.json``): ``NAME.timestamp-<n>.tsr``, in token
    order."""
    import re

    stem = path.name.removesuffix(".dsse.json")
    found = [
        (int(m.group(1)), p)
        for p in path.parent.glob(f"{stem}.timestamp-*{TOKEN_SUFFIX}")
        if (m := re.fullmatch(re.escape(stem) + r"\.timestamp-([1-9][0-9]{0,2})\.tsr", p.name))
    ]
    return [p for _, p in sorted(found)]


def names_beside(path: Path, count: int) -> list[str]:
    """Where ``count`` tokens of the envelope file ``path`` are published: ``NAME.timestamp-1.tsr``, ..."""
    stem = path.name.removesuffix(".dsse.json")
    return [f"{stem}.{name}" for name in token_names(count)]


def read_tokens_beside(path: Path) -> list[tuple[str, bytes]]:
    """(name, bytes) of each token beside ``path``; one line for a token too large to be one."""
    return [(token.name, read_plain(token, MAX_TOKEN_BYTES, "timestamp token")) for token in tokens_beside(path)]


def token_names(count: int) -> list[str]:
    """Where the tokens of a bundle's envelope are stored: ``timestamp-1.tsr``, ``timestamp-2.tsr``, ..."""
    return [f"timestamp-{i}{TOKEN_SUFFIX}" for i in range(1, count + 1)]


def stamp_envelope(envelope_bytes: bytes, urls: list[str], access: object = None) -> list[bytes]:
    """One token from each TSA in ``urls`` over the envelope's signature (all or none: one failure raises)."""
    import json

    data = signature_bytes(json.loads(envelope_bytes))
    return [stamp(data, url, access) for url in urls]


def trust_tsa_certificate(path: Path, trust_dir: Path | None = None) -> tuple[Path, str]:
    """Copy a TSA's CA certificate (PEM) into the trust store's ``tsa/`` folder: (where, its subject)."""
    found = load_tsa_certificates([path], Path("/nonexistent-trust-store"), what="keys trust-tsa")
    certificate = next(c for c in found if is_anchor(c))
    pem = b"".join(c.public_bytes(serialization.Encoding.PEM) for c in found)
    store = (trust_dir or default_trust_dir()) / "tsa"
    store.mkdir(parents=True, exist_ok=True)
    target = store / f"{hashlib.sha256(pem).hexdigest()[:16]}.pem"
    target.write_bytes(pem)
    return target, certificate.subject.rfc4514_string()
