"""X.509 certificates for signing report PDFs: issued for a signing key, or an organisation's own.

Why a second key: the bundle is signed with Ed25519, which PDF readers do not all verify yet
(poppler's pdfsig on NSS 3.87 reports an Ed25519 PDF signature as corrupted; Adobe Reader does
not accept it). A report PDF is therefore signed with an ECDSA P-256 key whose certificate every
PAdES validator reads. The self-signed certificate ``verifier keys generate`` issues names the
Ed25519 key it belongs to (its fingerprint, in the subject's organisational unit), and the
bundle's Ed25519 signature covers the signed PDF, so each key vouches for the other's document.

Files, beside the Ed25519 key ``NAME.key``: ``NAME.pdf.key`` (the P-256 key, mode 0600) and
``NAME.pdf.crt`` (the certificate, PEM). An organisation's certificate and key are used instead
with ``--pdf-cert``/``--pdf-key`` (PEM) or ``--pdf-p12`` (PKCS#12, its password read from the
environment variable ``--pdf-p12-password-env`` names). A certificate that is expired or not yet
valid is refused, whoever issued it.
"""

from __future__ import annotations

import datetime
import os
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from cryptography.hazmat.primitives.serialization import pkcs12
from cryptography.x509.oid import NameOID

from verifier.boundary.files import read_plain
from verifier.errors import VerifierError
from verifier.trust.envelopes import key_id, public_pem
from verifier.trust.private_files import check_private
from verifier.trust.timestamps import MAX_CERTIFICATE_FILE_BYTES

VALID_DAYS = 825  # the longest validity browsers accept for a leaf; a report signer renews like one
SigningKey = ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey


@dataclass(frozen=True)
class DocumentSigner:
    """What signs a report PDF: the certificate, its private key and the chain above it."""

    certificate: x509.Certificate
    key: SigningKey
    chain: tuple[x509.Certificate, ...]
    source: str  # where it came from, for messages: "self-signed (NAME.pdf.crt)", "--pdf-cert FILE", ...

    @property
    def subject(self) -> str:
        return self.certificate.subject.rfc4514_string()


def document_paths(signing_key: Path) -> tuple[Path, Path]:
    """(private key, certificate) of the document signer that belongs to the Ed25519 key ``signing_key``."""
    stem = signing_key.name.removesuffix(".key")
    return signing_key.with_name(f"{stem}.pdf.key"), signing_key.with_name(f"{stem}.pdf.crt")


def issue_self_signed(
    signing_key_path: Path,
    signing_key: ed25519.Ed25519PrivateKey,
    name: str | None = None,
    days: int = VALID_DAYS,
    force: bool = False,
) -> Path:
    """Create the P-256 key (0600) and a self-signed certificate naming the Ed25519 key; returns the certificate's
    path."""

    key_path, cert_path = document_paths(signing_key_path)
    if not force and (key_path.exists() or cert_path.exists()):
        raise VerifierError(
            f"{cert_path}: a report-signing certificate exists; refusing to replace it (--force replaces it)"
        )
    fingerprint = key_id(public_pem(signing_key.public_key()))
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    subject = x509.Name(
        [
            x509.NameAttribute(NameOID.COMMON_NAME, name or f"verifier signer {fingerprint[:16]}"),
            x509.NameAttribute(NameOID.ORGANIZATIONAL_UNIT_NAME, f"verifier Ed25519 key {fingerprint}"),
        ]
    )
    certificate = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=days))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=True,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=False,
                crl_sign=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    key_path.parent.mkdir(parents=True, exist_ok=True)
    descriptor = os.open(key_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "wb") as handle:
        handle.write(
            key.private_bytes(
                serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
            )
        )
    key_path.chmod(0o600)
    cert_path.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    return cert_path


def check_validity(certificate: x509.Certificate, where: str, now: datetime.datetime | None = None) -> None:
    """Refuse a certificate outside its validity period (a signature it makes would not validate)."""
    now = now or datetime.datetime.now(datetime.UTC)
    if now < certificate.not_valid_before_utc:
        raise VerifierError(
            f"{where}: the certificate is not valid yet (from {certificate.not_valid_before_utc:%Y-%m-%d %H:%M} UTC)"
        )
    if now > certificate.not_valid_after_utc:
        raise VerifierError(f"{where}: the certificate expired on {certificate.not_valid_after_utc:%Y-%m-%d %H:%M} UTC")


def _read(path: Path, what: str) -> bytes:
    return read_plain(path, MAX_CERTIFICATE_FILE_BYTES, what)


def _usable(key: object, certificate: x509.Certificate, where: str) -> SigningKey:
    if not isinstance(key, ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey):
        raise VerifierError(f"{where}: the key is not an ECDSA or RSA key (what PDF readers verify)")
    if key.public_key().public_numbers() != certificate.public_key().public_numbers():  # type: ignore[union-attr]
        raise VerifierError(f"{where}: the key does not belong to the certificate")
    return key


def load_pem_signer(cert_path: Path, key_path: Path) -> DocumentSigner:
    """An organisation's certificate (PEM; further certificates in the file are its chain) and key (PEM, mode 0600)."""
    key_bytes = _read(key_path, "--pdf-key")
    check_private(key_path, "--pdf-key")
    try:
        certificates = x509.load_pem_x509_certificates(_read(cert_path, "--pdf-cert"))
    except ValueError:
        raise VerifierError(f"--pdf-cert {cert_path}: not a PEM certificate") from None
    try:
        key = serialization.load_pem_private_key(key_bytes, password=None)
    except (ValueError, TypeError):
        raise VerifierError(f"--pdf-key {key_path}: not an unencrypted PEM private key") from None
    where = f"--pdf-cert {cert_path}"
    check_validity(certificates[0], where)
    return DocumentSigner(certificates[0], _usable(key, certificates[0], where), tuple(certificates[1:]), where)


def load_p12_signer(path: Path, password_env: str | None) -> DocumentSigner:
    """An organisation's PKCS#12 file (mode 0600); its password is read from the environment variable named."""
    data = _read(path, "--pdf-p12")
    check_private(path, "--pdf-p12")
    password = os.environ.get(password_env, "").encode() if password_env else None
    if password_env and not os.environ.get(password_env):
        raise VerifierError(f"--pdf-p12-password-env: the environment variable {password_env} is not set")
    try:
        key, certificate, chain = pkcs12.load_key_and_certificates(data, password)
    except ValueError:
        raise VerifierError(f"--pdf-p12 {path}: not a PKCS#12 file, or the password is wrong") from None
    if certificate is None or key is None:
        raise VerifierError(f"--pdf-p12 {path}: holds no certificate with its key")
    where = f"--pdf-p12 {path}"
    check_validity(certificate, where)
    return DocumentSigner(certificate, _usable(key, certificate, where), tuple(chain), where)


def own_signer(signing_key_path: Path, signing_key: ed25519.Ed25519PrivateKey) -> tuple[DocumentSigner, Path | None]:
    """The self-signed document signer of ``signing_key``, issued on first use: (signer, the certificate if just
    created)."""
    key_path, cert_path = document_paths(signing_key_path)
    created = None
    if not key_path.exists() and not cert_path.exists():
        created = issue_self_signed(signing_key_path, signing_key)
    signer = load_pem_signer(cert_path, key_path)
    return DocumentSigner(signer.certificate, signer.key, signer.chain, f"self-signed ({cert_path.name})"), created


@dataclass(frozen=True)
class PdfSigning:
    """The auditor's choice of report signer: an organisation's certificate (PEM pair or PKCS#12),
    or by default the signing key's own self-signed certificate."""

    cert: Path | None = None
    key: Path | None = None
    p12: Path | None = None
    p12_password_env: str | None = None

    def signer(
        self, signing_key_path: Path, signing_key: ed25519.Ed25519PrivateKey
    ) -> tuple[DocumentSigner, Path | None]:
        """(the signer, the certificate this call issued or None); everything checked before an audit runs."""
        if self.p12 is not None:
            if self.cert is not None or self.key is not None:
                raise VerifierError("--pdf-p12: give either a PKCS#12 file or --pdf-cert with --pdf-key, not both")
            return load_p12_signer(self.p12, self.p12_password_env), None
        if self.cert is not None or self.key is not None:
            if self.cert is None or self.key is None:
                raise VerifierError("--pdf-cert and --pdf-key: give both (the certificate and its private key)")
            return load_pem_signer(self.cert, self.key), None
        return own_signer(signing_key_path, signing_key)
