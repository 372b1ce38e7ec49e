"""The documented check of a bundle with standard tools only (docs/verify-by-hand.md), run as written.

The script is read from the documentation page itself, so the page cannot drift from what is
tested. It must pass on a bundled example's bundle (signed, timestamped by a real TSA, its PDF
signed) and fail on every tampered copy, as ``verifier verify`` does.
"""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT
from tsa import LoopbackTSA, make_tsa_ca
from typer.testing import CliRunner

from verifier.cli import app
from verifier.trust.certificates import document_paths
from verifier.trust.envelopes import sign_envelope
from verifier.trust.keys import generate_key, load_private_key

runner = CliRunner()
PAGE = ROOT / "docs" / "verify-by-hand.md"


def procedure() -> str:
    (script,) = re.findall(r"```bash\n(.*?)```", PAGE.read_text(), flags=re.S)
    return script


def run_procedure(bundle: Path, key: Path, tsa_ca: Path) -> subprocess.CompletedProcess:
    env = {
        "PATH": os.environ["PATH"],
        "HOME": os.environ.get("HOME", "/tmp"),
        "BUNDLE": str(bundle),
        "KEY": str(key),
        "TSA_CA": str(tsa_ca),
    }
    return subprocess.run(["bash", "-c", procedure()], capture_output=True, text=True, env=env, timeout=120)


@pytest.fixture(scope="module")
def example(tmp_path_factory) -> dict[str, Path]:
    """The bundled corpus example (VERIFIED, no model), signed, its PDF signed, timestamped by a real TSA."""
    folder = tmp_path_factory.mktemp("by-hand")
    generate_key(folder / "signing.key")
    ca = make_tsa_ca(folder / "tsa")
    with LoopbackTSA(ca) as tsa:
        result = runner.invoke(
            app,
            [
                "audit",
                "example:corpus-pg19",
                "--out",
                str(folder / "out"),
                "--sign-key",
                str(folder / "signing.key"),
                "--cache-dir",
                str(folder / "cache"),
                "--tsa",
                tsa.url(),
            ],
        )
    assert result.exit_code == 0, result.output
    (bundle,) = (folder / "out").iterdir()
    return {
        "bundle": bundle,
        "key": folder / "signing.key",
        "pub": folder / "signing.key.pub",
        "tsa_ca": ca / "ca.crt",
        "other_ca": make_tsa_ca(folder / "other", "Other TSA") / "ca.crt",
    }


def test_the_procedure_verifies_a_bundled_example(example):
    checked = run_procedure(example["bundle"], example["pub"], example["tsa_ca"])
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "Signature Verified Successfully" in checked.stdout and "Verification: OK" in checked.stdout
    assert "claim corpus-pg19: VERIFIED" in checked.stdout and checked.stdout.rstrip().endswith(
        "bundle verified with standard tools"
    )
    assert (
        runner.invoke(
            app, ["verify", str(example["bundle"]), "--key", str(example["pub"]), "--tsa-cert", str(example["tsa_ca"])]
        ).exit_code
        == 0
    )  # the two checks agree
    # The bundled example's report PDF also validates in pyHanko against the signer's published certificate.
    pyhanko = str(Path(sys.executable).with_name("pyhanko"))
    checked = subprocess.run(
        [
            pyhanko,
            "sign",
            "validate",
            "--pretty-print",
            "--trust-replace",
            "--trust",
            str(document_paths(example["key"])[1]),
            "--trust",
            str(example["tsa_ca"]),
            str(example["bundle"] / "report.pdf"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert (
        checked.returncode == 0
        and "The signature is judged VALID." in checked.stdout
        and "verifier signer " in checked.stdout
    )


def _flip(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.write_bytes(bytes(data))


def _resign(bundle: Path, key_path: Path) -> None:
    """The statement re-signed by another key (its verdict could say anything)."""
    envelope = json.loads((bundle / "envelope.dsse.json").read_text())
    body = base64.b64decode(envelope["payload"])
    (bundle / "envelope.dsse.json").write_text(json.dumps(sign_envelope(body, load_private_key(key_path))))


@pytest.mark.parametrize(
    "tamper",
    [
        "findings",
        "pdf",
        "added file",
        "removed file",
        "re-signed",
        "token",
        "unaccepted TSA",
        "name with a line break",
        "folder",
        "link",
    ],
)
def test_the_procedure_fails_on_a_tampered_copy(example, tmp_path, tamper):
    copy = tmp_path / "copy"
    shutil.copytree(example["bundle"], copy)
    tsa_ca = example["tsa_ca"]
    if tamper == "findings":
        text = (copy / "findings.json").read_text().replace('"VERIFIED"', '"CONTRADICTED"', 1)
        (copy / "findings.json").write_text(text)
    elif tamper == "pdf":
        _flip(copy / "report.pdf")
    elif tamper == "added file":
        (copy / "note.txt").write_text("added after signing")
    elif tamper == "removed file":
        (copy / "scores.parquet").unlink()
    elif tamper == "re-signed":
        generate_key(tmp_path / "attacker.key")
        _resign(copy, tmp_path / "attacker.key")
    elif tamper == "token":
        _flip(copy / "timestamp-1.tsr")
    elif tamper == "unaccepted TSA":
        tsa_ca = example["other_ca"]
    elif (
        tamper == "name with a line break"
    ):  # 'ls' would show it as two names the filter drops (found by the outside attack)
        (copy / "timestamp-5.tsr\nenvelope.dsse.json").write_text("FORGED REPORT")
    elif tamper == "folder":
        (copy / "timestamp-5.tsr\nenvelope.dsse.json").mkdir()
    elif tamper == "link":  # the same bytes, but from outside the bundle
        shutil.copy(copy / "report.pdf", tmp_path / "elsewhere.pdf")
        (copy / "report.pdf").unlink()
        (copy / "report.pdf").symlink_to(tmp_path / "elsewhere.pdf")
    checked = run_procedure(copy, example["pub"], tsa_ca)
    assert checked.returncode != 0 and "bundle verified with standard tools" not in checked.stdout, tamper
