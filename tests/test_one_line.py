"""One line, nothing else: what a user's terminal shows of a signed audit and of verify.

Run as users run it - the installed ``verifier`` in a fresh interpreter - so third-party warnings
raised when pyhanko, cryptography or numpy are first imported would show (in-process runners have
imported them long before).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from conftest import write_refused_claim

from verifier.trust.keys import generate_key


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("VERIFIER_DEBUG", "PYTHONWARNINGS")}
    return subprocess.run(
        [sys.executable, "-m", "verifier.cli", *args], cwd=cwd, capture_output=True, text=True, env=env, timeout=600
    )


def test_a_signed_audit_and_its_verification_show_no_warning(tmp_path):
    claim = write_refused_claim(tmp_path, "quiet")
    generate_key(tmp_path / "signing.key")
    out = tmp_path / "evidence"
    audit = run("audit", str(claim), "--out", str(out), "--sign-key", str(tmp_path / "signing.key"), cwd=tmp_path)
    assert audit.returncode == 4, audit.stderr  # REJECTED-METHOD
    (bundle,) = [p for p in out.iterdir() if p.is_dir()]
    verify = run("verify", str(bundle), "--key", str(tmp_path / "signing.key.pub"), cwd=tmp_path)
    assert verify.returncode == 0, verify.stderr
    for done in (audit, verify):
        shown = done.stdout + done.stderr
        assert "Warning" not in shown and "warnings.warn" not in shown and sys.prefix not in shown, shown
    # The folder above a bundle is not one; verify names what it holds.
    above = run("verify", str(out), cwd=tmp_path)
    assert above.returncode == 2
    said = " ".join(above.stderr.split())
    assert "not an evidence bundle (no envelope.dsse.json, findings.json or report); it holds 1 bundle(s)" in said
    assert f"verify one of them, e.g. evidence/{bundle.name}" in said
