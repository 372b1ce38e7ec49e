"""A real time-stamping authority on loopback: OpenSSL's own ``openssl ts -reply`` behind a small HTTP handler.

The TSA has its own test CA (a root and a TSA certificate with the critical timeStamping extended
key usage, as RFC 3161 requires). Every token comes from OpenSSL's implementation, not from the
code under test. Faults a hostile or broken TSA shows are paths of the same server:

- ``/tsa``: an honest TSA;
- ``/garbage``: bytes that are no timestamp response;
- ``/slow``: answers after ``slow_s`` seconds;
- ``/other``: a genuine token, but for other data (the server stamps a digest of its own);
- ``/rejection``: a well-formed response with status "rejection" and no token.
"""

from __future__ import annotations

import datetime
import os
import subprocess
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from conftest import write_refused_claim
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

CONFIG = """
[ tsa ]
default_tsa = tsa_config
[ tsa_config ]
dir = {dir}
serial = $dir/serial
crypto_device = builtin
signer_cert = $dir/tsa.crt
signer_key = $dir/tsa.key
signer_digest = sha256
default_policy = 1.3.6.1.4.1.55738.1
digests = sha256, sha384, sha512
accuracy = secs:1
ordering = no
tsa_name = yes
ess_cert_id_chain = no
ess_cert_id_alg = sha256
"""


def _name(common: str) -> x509.Name:
    return x509.Name(
        [
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "verifier tests"),
            x509.NameAttribute(NameOID.COMMON_NAME, common),
        ]
    )


def make_tsa_ca(folder: Path, name: str = "Test TSA", settings: str = "") -> Path:
    """A root CA and a TSA certificate under it, as PEM files in ``folder``: ca.crt, tsa.crt, tsa.key,
    chain.crt (the TSA's certificate then the CA's, as TSAs that send their chain list it); ``settings``
    are more lines of the TSA's OpenSSL configuration (``certs = $dir/chain.crt`` sends the chain)."""
    folder.mkdir(parents=True, exist_ok=True)
    now = datetime.datetime.now(datetime.UTC)
    ca_key, tsa_key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca = (
        x509.CertificateBuilder()
        .subject_name(_name(f"{name} Root"))
        .issuer_name(_name(f"{name} Root"))
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=3650))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=False,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    tsa = (
        x509.CertificateBuilder()
        .subject_name(_name(name))
        .issuer_name(ca.subject)
        .public_key(tsa_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=3650))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.TIME_STAMPING]), critical=True)
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
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    (folder / "ca.crt").write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    (folder / "tsa.crt").write_bytes(tsa.public_bytes(serialization.Encoding.PEM))
    (folder / "tsa.key").write_bytes(
        tsa_key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    (folder / "chain.crt").write_bytes((folder / "tsa.crt").read_bytes() + (folder / "ca.crt").read_bytes())
    (folder / "serial").write_text("01\n")
    (folder / "openssl.cnf").write_text(CONFIG.format(dir=folder) + settings)
    return folder


def openssl_reply(folder: Path, query: bytes) -> bytes:
    """OpenSSL's reply to ``query`` (a DER TimeStampReq) from the TSA in ``folder``."""
    with tempfile.TemporaryDirectory() as work:
        q, r = Path(work) / "q.tsq", Path(work) / "r.tsr"
        q.write_bytes(query)
        run = subprocess.run(
            ["openssl", "ts", "-reply", "-config", str(folder / "openssl.cnf"), "-queryfile", str(q), "-out", str(r)],
            capture_output=True,
            timeout=30,
        )
        if run.returncode != 0:
            raise RuntimeError(run.stderr.decode(errors="replace"))
        return r.read_bytes()


def other_query() -> bytes:
    """A genuine query for data nobody asked about (what a TSA answering for other data signs)."""
    with tempfile.TemporaryDirectory() as work:
        data = Path(work) / "other"
        data.write_bytes(os.urandom(32))
        return subprocess.run(
            ["openssl", "ts", "-query", "-data", str(data), "-sha256", "-cert"],
            capture_output=True,
            check=True,
            timeout=30,
        ).stdout


REJECTION = bytes.fromhex("3003020102")  # TimeStampResp { status PKIStatusInfo { status 2 (rejection) } }


class LoopbackTSA:
    """``with LoopbackTSA(folder) as tsa: tsa.url()``: the TSA served on 127.0.0.1 until the block ends."""

    def __init__(self, folder: Path, slow_s: float = 5.0) -> None:
        self.folder, self.slow_s = folder, slow_s
        self.requests: list[bytes] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                query = self.rfile.read(length)
                owner.requests.append(query)
                path = urlsplit(self.path).path
                if path not in ("/tsa", "/slow", "/garbage", "/rejection", "/other"):
                    self.send_response(404)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                try:
                    if path == "/garbage":
                        body = b"<html>this is not a timestamp</html>"
                    elif path == "/rejection":
                        body = REJECTION
                    elif path == "/other":
                        body = openssl_reply(owner.folder, other_query())
                    else:
                        if path == "/slow":
                            time.sleep(owner.slow_s)
                        body = openssl_reply(owner.folder, query)
                except (RuntimeError, subprocess.SubprocessError):
                    self.send_response(500)
                    self.end_headers()
                    return
                self.send_response(200)
                self.send_header("Content-Type", "application/timestamp-reply")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                try:
                    self.wfile.write(body)
                except OSError:
                    pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def url(self, path: str = "tsa") -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/{path}"

    def __enter__(self) -> LoopbackTSA:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


def openssl_verify(token: Path, data: bytes, ca: Path) -> subprocess.CompletedProcess:
    """The independent check: ``openssl ts -verify`` of a stored response over ``data`` against the TSA's CA."""
    with tempfile.TemporaryDirectory() as work:
        stamped = Path(work) / "data"
        stamped.write_bytes(data)
        return subprocess.run(
            ["openssl", "ts", "-verify", "-in", str(token), "-data", str(stamped), "-CAfile", str(ca)],
            capture_output=True,
            text=True,
            timeout=30,
        )


@pytest.fixture(scope="module")
def stamping(tmp_path_factory) -> dict[str, Path]:
    """A claim refused on its declared years (audited in seconds, no model loaded), a signing key,
    and two time-stamping authorities' CAs (an honest and a rogue one)."""
    from verifier.trust.keys import generate_key

    folder = tmp_path_factory.mktemp("stamped")
    claim = write_refused_claim(folder, "stamped")
    generate_key(folder / "signing.key")
    return {
        "claim": claim,
        "key": folder / "signing.key",
        "pub": folder / "signing.key.pub",
        "tsa": make_tsa_ca(folder / "tsa"),
        "rogue": make_tsa_ca(folder / "rogue", "Rogue TSA"),
    }
