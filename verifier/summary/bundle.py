"""A summary check's bundle as files: their names, and ``verify_summary``, which checks one.

Kept apart from ``check`` (which runs audits) so that ``verifier verify`` reads a summary check's
bundle without the scoring stack: the signature, every file's digest, the batch (as
``verify_batch``), and that every row's verdict is the verdict its claim's bundle holds.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from verifier.boundary.peers import read_json
from verifier.errors import VerifierError
from verifier.trust.bundle import BATCH_INDEX, sha256, verify_batch
from verifier.trust.envelopes import (
    is_predicate,
    key_id,
    load_public_key,
    predicate_type,
    read_envelope,
    read_statement,
    verify_envelope,
)

CLAIMS = "claims"  # the batch's folder (and id) inside the bundle
SUMMARY_COPY, FINDINGS, REPORT, ENVELOPE = "summary.yaml", "summary.json", "report.html", "summary.dsse.json"
KEY = "public_key.pem"
PREDICATE = predicate_type("summary-check")


def verify_summary(
    folder: Path, pinned_key_pem: bytes | None = None, trust_dir: Path | None = None
) -> tuple[dict[str, Any], str]:
    """Check a summary-check bundle (see the module docstring); return its findings and the signing
    key's fingerprint. Raises one line naming the first file that differs."""
    envelope_path = folder / ENVELOPE
    if not envelope_path.is_file() or envelope_path.is_symlink():
        raise VerifierError(f"{folder}: no {ENVELOPE}: an unsigned summary check cannot be verified")
    try:
        envelope = read_envelope(envelope_path.read_bytes())
        claimed = read_statement(envelope.body())
    except ValueError:
        raise VerifierError(f"{ENVELOPE}: differs: not a signed statement") from None
    if not is_predicate(claimed.predicateType, "summary-check"):
        raise VerifierError(f"{ENVELOPE}: differs: not a summary check's statement")
    pem = pinned_key_pem if pinned_key_pem is not None else (folder / KEY).read_bytes()
    verify_envelope(envelope, load_public_key(pem, KEY), ENVELOPE)
    subjects = claimed.subjects()
    for entry in sorted(folder.iterdir()):
        if entry.name not in subjects and entry.name not in (KEY, CLAIMS, ENVELOPE):
            raise VerifierError(f"{entry.name}: differs: not a file the summary check signed")
        if entry.is_symlink():
            raise VerifierError(f"{entry.name}: differs: a link")
    for name, digest in subjects.items():
        path = folder / name
        if not path.is_file() or path.is_symlink() or sha256(path.read_bytes()) != digest:
            raise VerifierError(f"{name}: differs: not the file the summary check signed")
    for name in (SUMMARY_COPY, FINDINGS, REPORT):
        if name not in subjects:
            raise VerifierError(f"{ENVELOPE}: differs: does not sign {name}")
    findings = read_json((folder / FINDINGS).read_bytes())
    if not isinstance(findings, dict) or not isinstance(findings.get("rows"), list):
        raise VerifierError(f"{FINDINGS}: differs: not a summary check's findings")
    claim_rows = [r for r in findings["rows"] if isinstance(r, dict) and r.get("claim_id")]
    if claim_rows:
        if f"{CLAIMS}/{BATCH_INDEX}" not in subjects:
            raise VerifierError(f"{ENVELOPE}: differs: rows name claims but the batch index is not signed")
        batch = verify_batch(folder / CLAIMS, pem, trust_dir)
        listed = {entry["claim_id"]: entry["verdict"] for entry in batch.predicate["claims"]}
        for row in claim_rows:
            if listed.get(row["claim_id"]) != row.get("verdict"):
                raise VerifierError(
                    f"{FINDINGS}: differs: the row {row.get('field')!r} says {row.get('verdict')}, its claim's bundle "
                    f"says {listed.get(row['claim_id'])}"
                )
    elif (folder / CLAIMS).exists():
        raise VerifierError(f"{CLAIMS}: differs: the findings name no claim")
    return findings, key_id(pem)
