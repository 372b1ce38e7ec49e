"""Tokens as real time-stamping authorities encode them, each from OpenSSL's own TSA configured that way.

Public TSAs send their certificate chain (``certs =`` in OpenSSL's ``ts`` section; Microsoft's and
Bouncy Castle-based TSAs list it in chain order, which a strict DER parser refuses as an unsorted
SET), may omit every certificate when the request does not ask for them, identify their
certificate by ESSCertID (SHA-1) or ESSCertIDv2, and stamp SHA-256, SHA-384 or SHA-512 imprints.
Each token is checked by ``openssl ts -verify`` (the independent check) and by verifier, which
must agree: trusted under the TSA's pinned CA, not trusted under another CA, and an error for
other data.
"""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path

import pytest
from cryptography import x509
from tsa import LoopbackTSA, make_tsa_ca, openssl_reply, openssl_verify, stamping  # noqa: F401 - stamping is a fixture
from typer.testing import CliRunner

from verifier.cli import app
from verifier.errors import VerifierError
from verifier.trust.timestamps import check_token, load_tsa_certificates

CONFIGURATIONS = {
    "chain in chain order": "certs = $dir/chain.crt\n",
    "CA only beside the signer": "certs = $dir/ca.crt\n",
    "ESSCertID (SHA-1)": "ess_cert_id_alg = sha1\n",
    "ESSCertIDv2 over the chain": "certs = $dir/ca.crt\ness_cert_id_chain = yes\n",
    "no TSA name (OpenSSL's default)": "tsa_name = no\n",
}
DATA = b"the bytes of a bundle's signature"


def query(data: bytes, digest: str = "sha256", certificates: bool = True) -> bytes:
    """OpenSSL's own request (``openssl ts -query``) over ``data``."""
    args = ["openssl", "ts", "-query", f"-{digest}", "-digest", hashlib.new(digest, data).hexdigest()]
    return subprocess.run(args + (["-cert"] if certificates else []), capture_output=True, check=True).stdout


@pytest.fixture(scope="module")
def authorities(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("tsas")
    made = {
        name: make_tsa_ca(root / f"tsa-{i}", settings=extra) for i, (name, extra) in enumerate(CONFIGURATIONS.items())
    }
    made["rogue"] = make_tsa_ca(root / "rogue", "Rogue TSA")
    return made


def pinned(*files: Path) -> list[x509.Certificate]:
    return load_tsa_certificates(list(files), Path("/nonexistent-trust-store"))


@pytest.mark.parametrize("configuration", list(CONFIGURATIONS))
@pytest.mark.parametrize("digest", ["sha256", "sha384", "sha512"])
def test_tokens_as_real_tsas_encode_them_are_read_and_checked(authorities, configuration, digest, tmp_path):
    folder = authorities[configuration]
    token = tmp_path / "token.tsr"
    token.write_bytes(openssl_reply(folder, query(DATA, digest)))
    assert "Verification: OK" in openssl_verify(token, DATA, folder / "ca.crt").stdout
    stamp = check_token(token.read_bytes(), DATA, pinned(folder / "ca.crt"), "timestamp-1.tsr")
    assert stamp.pinned and stamp.tsa == "CN=Test TSA,O=verifier tests"
    assert not check_token(token.read_bytes(), DATA, pinned(authorities["rogue"] / "ca.crt"), "t").pinned
    with pytest.raises(VerifierError, match="dates other data"):
        check_token(token.read_bytes(), DATA[::-1], pinned(folder / "ca.crt"), "timestamp-1.tsr")


def test_a_token_without_certificates_holds_under_the_pinned_ca_and_the_tsas_certificate(authorities, tmp_path):
    folder = authorities["chain in chain order"]
    token = tmp_path / "bare.tsr"
    token.write_bytes(openssl_reply(folder, query(DATA, certificates=False)))
    # openssl needs the TSA's certificate too (-untrusted); so does verifier: a CA alone finds no signer.
    done = subprocess.run(
        ["openssl", "ts", "-verify", "-in", str(token), "-digest", hashlib.sha256(DATA).hexdigest()]
        + ["-CAfile", str(folder / "ca.crt"), "-untrusted", str(folder / "tsa.crt")],
        capture_output=True,
        text=True,
    )
    assert "Verification: OK" in done.stdout
    assert not check_token(token.read_bytes(), DATA, pinned(folder / "ca.crt"), "t").pinned
    assert check_token(token.read_bytes(), DATA, pinned(folder / "chain.crt"), "t").pinned
    # The TSA's own certificate alone anchors nothing, and pinning it is refused in one line.
    with pytest.raises(VerifierError, match="is not a CA certificate; pin the TSA's root CA"):
        pinned(folder / "tsa.crt")


def test_a_bundle_dated_by_a_tsa_that_sends_its_chain_verifies_with_its_time(authorities, stamping, tmp_path):
    runner = CliRunner()
    folder = authorities["chain in chain order"]
    with LoopbackTSA(folder) as tsa:
        result = runner.invoke(
            app,
            ["audit", str(stamping["claim"]), "--out", str(tmp_path), "--sign-key", str(stamping["key"])]
            + ["--cache-dir", str(tmp_path / "cache"), "--tsa", tsa.url()],
        )
    assert result.exit_code == 4, result.output
    (bundle,) = [p for p in tmp_path.iterdir() if p.name.startswith("stamped-")]
    base = ["verify", str(bundle), "--key", str(stamping["pub"]), "--trust-dir", str(tmp_path / "no-store")]
    trusted = runner.invoke(app, [*base, "--tsa-cert", str(folder / "ca.crt")])
    assert trusted.exit_code == 0 and "timestamp 1: 20" in trusted.output and "(not trusted" not in trusted.output
    other = runner.invoke(app, [*base, "--tsa-cert", str(authorities["rogue"] / "ca.crt")])
    assert other.exit_code == 0 and "(not trusted: no pinned TSA certificate vouches for it)" in other.output
