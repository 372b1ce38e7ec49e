"""Signed report PDFs, checked by the tools a reader of a report has: poppler's ``pdfsig`` and ``pyhanko sign
validate``.

The signer is the signing key's self-signed certificate by default, or an organisation's
certificate (PEM with its chain, or PKCS#12). One flipped byte breaks both validators; a
certificate outside its validity period, or a key others can read, is refused before any audit.
"""

from __future__ import annotations

import datetime
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.serialization import pkcs12
from cryptography.x509.oid import NameOID
from tsa import LoopbackTSA, stamping  # noqa: F401 - stamping is a fixture
from typer.testing import CliRunner

from verifier.cli import app
from verifier.trust.certificates import document_paths
from verifier.trust.pdf_signing import signed_reason

runner = CliRunner()
PYHANKO = str(Path(sys.executable).with_name("pyhanko"))


def audit(stamping: dict[str, Path], out: Path, *extra: str):
    return runner.invoke(
        app,
        [
            "audit",
            str(stamping["claim"]),
            "--out",
            str(out),
            "--sign-key",
            str(stamping["key"]),
            "--cache-dir",
            str(out / "cache"),
            *extra,
        ],
    )


def bundle_of(out: Path) -> Path:
    (folder,) = [p for p in out.iterdir() if p.name.startswith("stamped-")]
    return folder


def pdfsig(pdf: Path) -> str:
    return subprocess.run(["pdfsig", str(pdf)], capture_output=True, text=True, timeout=60).stdout


def pyhanko_validate(pdf: Path, *trusted: Path) -> subprocess.CompletedProcess:
    args = [PYHANKO, "sign", "validate", "--pretty-print", "--trust-replace"]
    for cert in trusted:
        args += ["--trust", str(cert)]
    return subprocess.run([*args, str(pdf)], capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def signed(stamping, tmp_path_factory) -> Path:
    """A bundle whose report is signed by the key's self-signed certificate, timestamped (PAdES B-T)."""
    out = tmp_path_factory.mktemp("signed")
    with LoopbackTSA(stamping["tsa"]) as tsa:
        result = audit(stamping, out, "--tsa", tsa.url())
    assert result.exit_code == 4, result.output
    return bundle_of(out)


def test_pdf_readers_validate_the_report_and_name_its_signer(signed, stamping):
    certificate = document_paths(stamping["key"])[1]
    shown = pdfsig(signed / "report.pdf")
    assert (
        "Signature Validation: Signature is Valid." in shown
        and "Signer full Distinguished Name: OU=verifier Ed25519 key " in shown
    )
    checked = pyhanko_validate(signed / "report.pdf", certificate, stamping["tsa"] / "ca.crt")
    assert checked.returncode == 0 and "The signature is judged VALID." in checked.stdout
    assert (
        "The signer's certificate is trusted." in checked.stdout and "Common Name: verifier signer " in checked.stdout
    )
    assert (
        "This timestamp is backed by a time stamping authority." in checked.stdout
        and "The TSA certificate is trusted." in checked.stdout
    )
    # The PDF and the bundle point at each other: the PDF names the findings, the statement covers the PDF.
    findings = json.loads((signed / "findings.json").read_text())
    from verifier.trust.digests import findings_digest

    assert f"findings SHA-256 {findings_digest(findings)}" in signed_reason((signed / "report.pdf").read_bytes())


def test_one_flipped_byte_breaks_the_pdf_signature_in_both_readers(signed, stamping, tmp_path):
    data = bytearray((signed / "report.pdf").read_bytes())
    data[len(data) // 3] ^= 0x01  # inside the first signed byte range (the report's body)
    tampered = tmp_path / "report.pdf"
    tampered.write_bytes(bytes(data))
    assert "Signature Validation: Signature is Valid." not in pdfsig(tampered)
    checked = pyhanko_validate(tampered, document_paths(stamping["key"])[1])
    assert checked.returncode != 0 and "judged VALID" not in checked.stdout
    copy = tmp_path / "bundle"
    shutil.copytree(signed, copy)
    (copy / "report.pdf").write_bytes(bytes(data))
    shown = runner.invoke(app, ["verify", str(copy), "--key", str(stamping["pub"])])
    assert shown.exit_code == 2 and "report.pdf: differs: SHA-256 does not match the signed statement" in shown.output


def _certificate(
    key,
    subject: str,
    issuer: x509.Name | None,
    issuer_key,
    start: datetime.datetime,
    end: datetime.datetime,
    ca: bool = False,
) -> x509.Certificate:
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)])
    return (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(issuer or name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(end)
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=not ca,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=ca,
                crl_sign=ca,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .sign(issuer_key or key, hashes.SHA256())
    )


@pytest.fixture(scope="module")
def organisation(tmp_path_factory) -> dict[str, Path]:
    """An organisation's CA, a report-signing certificate it issued, and expired / future ones."""
    folder = tmp_path_factory.mktemp("org")
    now = datetime.datetime.now(datetime.UTC)
    day = datetime.timedelta(days=1)
    ca_key, key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca = _certificate(ca_key, "Example Org Root", None, None, now - day, now + 3650 * day, ca=True)
    pem = serialization.Encoding.PEM
    (folder / "ca.crt").write_bytes(ca.public_bytes(pem))
    key_pem = key.private_bytes(pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    for name, start, end in (
        ("signer", now - day, now + 365 * day),
        ("expired", now - 400 * day, now - day),
        ("future", now + day, now + 400 * day),
    ):
        cert = _certificate(key, f"Example Org {name}", ca.subject, ca_key, start, end)
        (folder / f"{name}.crt").write_bytes(cert.public_bytes(pem) + ca.public_bytes(pem))
    (folder / "signer.key").write_bytes(key_pem)
    (folder / "signer.key").chmod(0o600)
    signer = x509.load_pem_x509_certificates((folder / "signer.crt").read_bytes())[0]
    (folder / "signer.p12").write_bytes(
        pkcs12.serialize_key_and_certificates(
            b"signer", key, signer, [ca], serialization.BestAvailableEncryption(b"correct horse")
        )
    )
    (folder / "signer.p12").chmod(0o600)
    return folder


def test_an_organisations_certificate_signs_the_report_and_chains_to_its_ca(
    stamping, organisation, tmp_path, monkeypatch
):
    for extra in (
        ["--pdf-cert", str(organisation / "signer.crt"), "--pdf-key", str(organisation / "signer.key")],
        ["--pdf-p12", str(organisation / "signer.p12"), "--pdf-p12-password-env", "ORG_P12_PASSWORD"],
    ):
        monkeypatch.setenv("ORG_P12_PASSWORD", "correct horse")
        out = tmp_path / extra[0].strip("-")
        result = audit(stamping, out, *extra)
        assert result.exit_code == 4, result.output
        pdf = bundle_of(out) / "report.pdf"
        assert "Signer Certificate Common Name: Example Org signer" in pdfsig(pdf)
        checked = pyhanko_validate(pdf, organisation / "ca.crt")  # only the CA is trusted: the chain must lead to it
        assert checked.returncode == 0 and "The signer's certificate is trusted." in checked.stdout


@pytest.mark.parametrize(
    "case, message",
    [
        ("expired", "the certificate expired on "),
        ("future", "the certificate is not valid yet"),
        ("readable key", "must be owned and readable by you only"),
        ("wrong password", "not a PKCS#12 file, or the password is wrong"),
        ("cert alone", "--pdf-cert and --pdf-key: give both"),
        ("someone else's key", "the key does not belong to the certificate"),
        ("missing key", "signer.missing: not found"),
    ],
)
def test_an_unusable_report_certificate_is_refused_before_the_audit(
    stamping, organisation, tmp_path, monkeypatch, case, message
):
    key = organisation / "signer.key"
    extra = {
        "expired": ["--pdf-cert", str(organisation / "expired.crt"), "--pdf-key", str(key)],
        "future": ["--pdf-cert", str(organisation / "future.crt"), "--pdf-key", str(key)],
        "cert alone": ["--pdf-cert", str(organisation / "signer.crt")],
        "missing key": [
            "--pdf-cert",
            str(organisation / "signer.crt"),
            "--pdf-key",
            str(organisation / "signer.missing"),
        ],
        "wrong password": ["--pdf-p12", str(organisation / "signer.p12"), "--pdf-p12-password-env", "ORG_P12_PASSWORD"],
    }.get(case)
    monkeypatch.setenv("ORG_P12_PASSWORD", "wrong")
    if case == "readable key":
        shutil.copy(key, tmp_path / "open.key")
        (tmp_path / "open.key").chmod(0o644)
        extra = ["--pdf-cert", str(organisation / "signer.crt"), "--pdf-key", str(tmp_path / "open.key")]
    if case == "someone else's key":
        other = ec.generate_private_key(ec.SECP256R1())
        (tmp_path / "other.key").write_bytes(
            other.private_bytes(
                serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
            )
        )
        (tmp_path / "other.key").chmod(0o600)
        extra = ["--pdf-cert", str(organisation / "signer.crt"), "--pdf-key", str(tmp_path / "other.key")]
    result = audit(stamping, tmp_path / "out", *extra)
    assert result.exit_code != 0 and message in result.output and len(result.output.strip().splitlines()) == 1, (
        result.output
    )
    assert not (tmp_path / "out").exists() or not any(
        p.name.startswith("stamped-") for p in (tmp_path / "out").iterdir()
    )


def test_a_signer_cannot_bundle_another_audits_signed_report(signed, stamping, tmp_path):
    """The statement's subjects recomputed and re-signed with the genuine key over a signed report
    of another audit: the files and the signature hold, but the report names other findings."""
    import base64
    import hashlib

    import yaml

    from verifier.trust.envelopes import sign_envelope
    from verifier.trust.keys import load_private_key

    other_claim = tmp_path / "claim.yaml"
    data = yaml.safe_load(stamping["claim"].read_text())
    data["claim"]["statement"] = "Another statement, so other findings."
    shutil.copy(stamping["claim"].parent / "docs.jsonl", tmp_path / "docs.jsonl")
    other_claim.write_text(yaml.safe_dump(data))
    result = runner.invoke(
        app,
        [
            "audit",
            str(other_claim),
            "--out",
            str(tmp_path / "other"),
            "--sign-key",
            str(stamping["key"]),
            "--cache-dir",
            str(tmp_path / "cache"),
        ],
    )
    assert result.exit_code == 4, result.output
    copy = tmp_path / "copy"
    shutil.copytree(signed, copy)
    for token in copy.glob("timestamp-*.tsr"):
        token.unlink()  # tokens date the old signature
    shutil.copy(bundle_of(tmp_path / "other") / "report.pdf", copy / "report.pdf")
    envelope = json.loads((copy / "envelope.dsse.json").read_text())
    statement = json.loads(base64.b64decode(envelope["payload"]))
    for subject in statement["subject"]:
        subject["digest"]["sha256"] = hashlib.sha256((copy / subject["name"]).read_bytes()).hexdigest()
    body = json.dumps(statement, sort_keys=True, separators=(",", ":")).encode()
    (copy / "envelope.dsse.json").write_text(json.dumps(sign_envelope(body, load_private_key(stamping["key"]))))
    shown = runner.invoke(app, ["verify", str(copy), "--key", str(stamping["pub"])])
    assert (
        shown.exit_code == 2
        and "report.pdf: differs: its PDF signature names other findings than findings.json" in shown.output
    )
