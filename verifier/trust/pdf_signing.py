"""PAdES signatures on report PDFs (pyHanko), so a PDF reader shows who signed a report and that it is intact.

The report PDF is signed first (PAdES B-B; B-T when a time-stamping authority is given: the
TSA's token over the signature is embedded in it), then the bundle's Ed25519 statement covers the
signed PDF's bytes. The PDF cannot carry the statement's digest (the statement signs the PDF), so
it carries what the statement signs: the signature's reason names the claim and the SHA-256 of the
findings, and ``verify`` checks that the PDF in a bundle names its own findings. B-LT (revocation
data embedded) is not produced: a self-signed certificate has none, and an organisation's CA's
revocation service cannot be reached from an offline audit.

Checked with standard tools: ``pdfsig report.pdf`` and ``pyhanko sign validate --trust CERT
report.pdf`` (tests/trust/test_pdf_signing.py); one flipped byte breaks both.
"""

from __future__ import annotations

import asyncio
import io
import re
from typing import Any

from verifier.errors import VerifierError
from verifier.trust.certificates import DocumentSigner
from verifier.trust.timestamps import check_answer, post_query

FIELD = "verifier"
REASON = "verifier evidence report: claim {claim}, findings SHA-256 {digest}"
REASON_DIGEST = re.compile(r"findings SHA-256 ([0-9a-f]{64})")


def _timestamper(url: str, access: object) -> Any:  # a pyhanko TimeStamper (pyhanko imported when signing)
    """A pyHanko time stamper that asks through verifier's peer client (bounded, no redirects)."""
    from asn1crypto import tsp
    from pyhanko.sign.timestamps.api import TimeStamper

    class PeerTimeStamper(TimeStamper):
        async def async_request_tsa_response(self, req: tsp.TimeStampReq) -> tsp.TimeStampResp:
            der = await asyncio.to_thread(post_query, req.dump(), url, access)
            check_answer(der, req["message_imprint"]["hashed_message"].native, req["nonce"].native, f"--tsa {url}")
            return tsp.TimeStampResp.load(der)

    return PeerTimeStamper()


def sign_pdf(
    pdf: bytes,
    signer: DocumentSigner,
    claim_id: str,
    findings_sha256: str,
    tsa: str | None = None,
    access: object = None,
) -> bytes:
    """``pdf`` with a PAdES signature by ``signer`` naming the claim and the findings digest."""
    from asn1crypto import keys, x509
    from cryptography.hazmat.primitives import serialization
    from pyhanko.pdf_utils.incremental_writer import IncrementalPdfFileWriter
    from pyhanko.sign import fields, signers
    from pyhanko_certvalidator.registry import SimpleCertificateStore

    def asn1(certificate: Any) -> Any:  # cryptography's certificate -> asn1crypto's
        return x509.Certificate.load(certificate.public_bytes(serialization.Encoding.DER))

    key = keys.PrivateKeyInfo.load(
        signer.key.private_bytes(
            serialization.Encoding.DER, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    simple = signers.SimpleSigner(
        signing_cert=asn1(signer.certificate),
        signing_key=key,
        cert_registry=SimpleCertificateStore.from_certs([asn1(c) for c in signer.chain]),
    )
    metadata = signers.PdfSignatureMetadata(
        field_name=FIELD,
        reason=REASON.format(claim=claim_id, digest=findings_sha256),
        subfilter=fields.SigSeedSubFilter.PADES,
        md_algorithm="sha256",
    )
    try:
        signed = signers.sign_pdf(
            IncrementalPdfFileWriter(io.BytesIO(pdf)),
            metadata,
            signer=simple,
            timestamper=_timestamper(tsa, access) if tsa else None,
        )
    except VerifierError:
        raise
    except Exception as exc:  # noqa: BLE001 - pyHanko's errors (a TSA's bad token among them) are one line here
        raise VerifierError(f"report.pdf: could not be signed ({type(exc).__name__}: {str(exc)[:200]})") from None
    return signed.getvalue()


def signed_reason(pdf: bytes) -> str | None:
    """The reason of the report PDF's verifier signature, or None if it has none (an unsigned report)."""
    from pyhanko.pdf_utils.reader import PdfFileReader

    try:
        reader = PdfFileReader(io.BytesIO(pdf), strict=False)
        for embedded in reader.embedded_signatures:
            if embedded.field_name == FIELD:
                return str(embedded.sig_object.get("/Reason", ""))
    except Exception:  # noqa: BLE001 - an unreadable PDF has no signature we can name
        return None
    return None
