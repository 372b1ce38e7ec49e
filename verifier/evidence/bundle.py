"""Content-addressed, signed evidence bundles, and their verification.

A bundle is a folder named ``<claim id>-<first 16 hex of the findings SHA-256>`` holding the
claim, the policy, findings.json (canonical JSON: its file digest *is* the findings digest),
scores.parquet (text digests and signal values, never the texts), report.html, report.pdf,
manifest.json (every file's SHA-256) and, when signed, public_key.pem and envelope.dsse.json:
an Ed25519-signed DSSE envelope over an in-toto Statement whose subjects are all other files.
The folder is assembled under a temporary name and renamed into place when complete.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import os
import shutil
import tempfile
from pathlib import Path

from verifier.audit import AuditResult, canonical_json, findings_digest
from verifier.errors import VerifierError
from verifier.evidence.signing import load_public_key, public_pem, sign_envelope, statement, verify_envelope

ENVELOPE = "envelope.dsse.json"
PUBLIC_KEY = "public_key.pem"


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def write_bundle(result: AuditResult, html: str, pdf: bytes, out_root: Path, private_key=None) -> Path:  # noqa: ANN001
    """Write the bundle for ``result``; sign it when ``private_key`` (Ed25519) is given."""
    digest = findings_digest(result.findings)
    scores = io.BytesIO()
    result.scores.to_parquet(scores, index=False)
    files = {
        "claim.yaml": result.claim_path.read_bytes(),
        "policy.yaml": result.policy_path.read_bytes(),
        "findings.json": canonical_json(result.findings),
        "scores.parquet": scores.getvalue(),
        "report.html": html.encode("utf-8"),
        "report.pdf": pdf,
    }
    if private_key is not None:
        files[PUBLIC_KEY] = public_pem(private_key.public_key())
    manifest = {"findings_sha256": digest, "verdict": result.findings["verdict"], "files": {n: sha256(b) for n, b in sorted(files.items())}}
    files["manifest.json"] = json.dumps(manifest, indent=1, sort_keys=True).encode()
    if private_key is not None:
        subjects = {name: sha256(data) for name, data in files.items()}
        predicate = {"claim_id": result.findings["claim"]["claim"]["id"], "verdict": result.findings["verdict"],
                     "findings_sha256": digest, "verifier": result.findings["environment"]["verifier"]}
        body = canonical_json(statement(subjects, predicate))
        files[ENVELOPE] = json.dumps(sign_envelope(body, private_key), indent=1).encode()
    folder = out_root / f"{result.findings['claim']['claim']['id']}-{digest[:16]}"
    out_root.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", dir=out_root))
    try:
        for name, data in files.items():
            (work / name).write_bytes(data)
        if folder.exists():
            shutil.rmtree(folder)
        os.replace(work, folder)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return folder


def verify_bundle(folder: Path, public_key_pem: bytes | None = None) -> dict:
    """Check every digest and the signature; return the signed statement or raise naming the first file that differs.

    Without ``public_key_pem`` the key embedded in the bundle is used, which proves the bundle is
    intact and was signed by *that* key; pin the signer's published key to prove who signed it.
    """
    folder = Path(folder)
    envelope_path = folder / ENVELOPE
    if not folder.is_dir():
        raise VerifierError(f"{folder}: not a bundle folder")
    if not envelope_path.is_file():
        raise VerifierError(f"{folder}: bundle is not signed (no {ENVELOPE})")
    try:
        envelope = json.loads(envelope_path.read_bytes())
        claimed = json.loads(base64.b64decode(envelope["payload"], validate=True))
        subjects = {s["name"]: s["digest"]["sha256"] for s in claimed["subject"]}
    except (ValueError, KeyError, TypeError):
        raise VerifierError(f"{ENVELOPE}: differs: not a readable DSSE envelope with an in-toto Statement") from None
    # The signature is the root of trust: check it first, so a change to the envelope is never
    # blamed on a file it describes. If it fails, say whether the embedded key was changed.
    pem = public_key_pem if public_key_pem is not None else _read(folder / PUBLIC_KEY)
    try:
        body = verify_envelope(envelope, load_public_key(pem, PUBLIC_KEY))
    except VerifierError:
        if public_key_pem is None and sha256(pem) != subjects.get(PUBLIC_KEY):
            raise VerifierError(f"{PUBLIC_KEY}: differs: SHA-256 does not match the signed statement") from None
        raise
    present = sorted(p.name for p in folder.iterdir() if p.is_file() and p.name != ENVELOPE)
    for name in sorted(set(present) | set(subjects)):
        path = folder / name
        if name not in subjects:
            raise VerifierError(f"{name}: differs: file is not covered by the signature")
        if not path.is_file():
            raise VerifierError(f"{name}: differs: file is missing")
        if sha256(path.read_bytes()) != subjects[name]:
            raise VerifierError(f"{name}: differs: SHA-256 does not match the signed statement")
    return json.loads(body)


def _read(path: Path) -> bytes:
    if not path.is_file():
        raise VerifierError(f"{path.name}: differs: file is missing")
    return path.read_bytes()
