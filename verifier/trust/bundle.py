"""Content-addressed, signed evidence bundles, and their verification.

A bundle is a folder named ``<claim id>-<first 16 hex of the findings SHA-256>`` holding the
claim, the policy, findings.json (canonical JSON: its file digest *is* the findings digest),
scores.parquet (text digests and signal values, never the texts), report.html, report.pdf,
manifest.json (every file's SHA-256) and, when signed, public_key.pem and envelope.dsse.json:
an Ed25519-signed DSSE envelope over an in-toto Statement whose subjects are all other files.
The folder is assembled under a temporary name and renamed into place when complete; an
existing bundle is never replaced unless asked (``force``).

What ``verify_bundle`` proves: every file is exactly one the signer signed, nothing was added
(no extra file, sub-folder or link), and the signature holds under a key. Who that key belongs
to is the reader's decision: a key given with ``--key`` or found in the trust store is *pinned*;
the key embedded in the bundle proves only integrity, since anyone can re-sign with their own.
This module imports no ML stack.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import shutil
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from verifier.boundary.peers import read_json
from verifier.errors import VerifierError
from verifier.trust.digests import canonical_json, findings_digest
from verifier.trust.envelopes import (
    PREDICATE_TYPE,
    Envelope,
    Statement,
    is_predicate,
    key_id,
    load_public_key,
    predicate_type,
    public_pem,
    read_envelope,
    read_statement,
    sign_envelope,
    statement,
    verify_envelope,
)
from verifier.trust.error_control import CONTROLS, adjusted_p_values
from verifier.trust.keys import trusted_keys
from verifier.trust.pdf_signing import REASON_DIGEST, signed_reason
from verifier.trust.plans import CLOCK, parse_plan, plan_record, tsa_clock
from verifier.trust.timestamps import MAX_TOKEN_BYTES, Timestamp, check_token, stamp_envelope, token_names

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    from verifier.findings import AuditResult

ENVELOPE = "envelope.dsse.json"
PUBLIC_KEY = "public_key.pem"
FINDINGS = "findings.json"
PLAN = "plan.dsse.json"  # only in a pre-registered audit's bundle: the signed plan it was checked against
BUNDLE_FILES = frozenset(
    {
        "claim.yaml",
        "policy.yaml",
        "findings.json",
        "scores.parquet",
        "report.html",
        "report.pdf",
        "manifest.json",
        PUBLIC_KEY,
    }
)


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current


def bundle_folder(findings: dict[str, Any], out_root: Path) -> Path:
    """Where the bundle of these findings goes: named by claim id and findings digest."""
    return out_root / f"{findings['claim']['claim']['id']}-{findings_digest(findings)[:16]}"


def holds_findings(folder: Path, findings: dict[str, Any]) -> bool:
    """Whether ``folder`` is a bundle folder whose findings.json holds exactly these findings (an
    identical re-run: nothing to write). Its signature is not checked here: 'verify' does that."""
    if folder.is_symlink() or not (folder / FINDINGS).is_file() or (folder / FINDINGS).is_symlink():
        return False
    try:
        return findings_digest(read_json((folder / FINDINGS).read_bytes())) == findings_digest(findings)
    except (OSError, ValueError, TypeError):
        return False


def unsigned_intact(folder: Path) -> bool:
    """Whether an unsigned bundle folder holds exactly the files its manifest lists, each with its
    digest (no signature vouches for who wrote them: only that nothing was altered, added or removed)."""
    try:
        manifest = read_json((folder / "manifest.json").read_bytes())
        listed = manifest["files"]
        present = {p.name for p in folder.iterdir()}
        if present != set(listed) | {"manifest.json"} or any((folder / n).is_symlink() for n in present):
            return False
        return all(sha256((folder / name).read_bytes()) == digest for name, digest in listed.items())
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return False


def write_bundle(
    result: AuditResult,
    html: str,
    pdf: bytes,
    out_root: Path,
    private_key: Ed25519PrivateKey | None = None,
    force: bool = False,
    run: dict[str, Any] | None = None,
    tsa: list[str] | None = None,
    access: Any = None,
) -> Path:
    """Write the bundle for ``result``; sign it when ``private_key`` (Ed25519) is given.

    An existing bundle folder of the same name (same claim id and findings) is refused unless
    ``force``: it may be another signer's. Files and folder get the user's umask. ``run`` (how this
    run got its numbers, e.g. documents served by the cache) goes into the signed manifest.
    ``tsa``: URLs of time-stamping authorities, each asked for a token over the signature
    (``timestamp-<n>.tsr``); if any fails, nothing is written.
    """
    digest = findings_digest(result.findings)
    folder = bundle_folder(result.findings, out_root)
    if folder.is_symlink() or (folder.exists() and not folder.is_dir()):
        raise VerifierError(
            f"{folder}: exists and is {'a link' if folder.is_symlink() else 'not a folder'}; not replaced "
            "(--force replaces only a bundle folder)"
        )
    if folder.exists() and not force:
        raise VerifierError(
            f"{folder}: a bundle of this claim and findings exists; refusing to replace it (--force replaces it)"
        )
    if folder.exists() and not ((folder / "manifest.json").is_file() or (folder / ENVELOPE).is_file()):
        raise VerifierError(f"{folder}: exists and is not an evidence bundle; not replaced")
    scores = io.BytesIO()
    result.scores.to_parquet(scores, index=False)
    files = {
        "claim.yaml": result.claim_bytes,
        "policy.yaml": result.policy_bytes,
        "findings.json": canonical_json(result.findings),
        "scores.parquet": scores.getvalue(),
        "report.html": html.encode("utf-8"),
        "report.pdf": pdf,
    }
    if private_key is not None:
        files[PUBLIC_KEY] = public_pem(private_key.public_key())
    if result.plan_bytes is not None:
        files[PLAN] = result.plan_bytes
        files |= dict(result.plan_tokens)
    manifest = {
        "findings_sha256": digest,
        "verdict": result.findings["verdict"],
        "files": {n: sha256(b) for n, b in sorted(files.items())},
        "run": run or {},
    }
    files["manifest.json"] = json.dumps(manifest, indent=1, sort_keys=True).encode()
    if private_key is not None:
        subjects = {name: sha256(data) for name, data in files.items()}
        predicate = {
            "claim_id": result.findings["claim"]["claim"]["id"],
            "verdict": result.findings["verdict"],
            "findings_sha256": digest,
            "verifier": result.findings["environment"]["verifier"],
        }
        body = canonical_json(statement(subjects, predicate))
        files[ENVELOPE] = json.dumps(sign_envelope(body, private_key), indent=1).encode()
        if tsa:
            files |= dict(zip(token_names(len(tsa)), stamp_envelope(files[ENVELOPE], tsa, access)))
    elif tsa:
        raise VerifierError("--tsa: an unsigned bundle has no signature to timestamp")
    try:
        out_root.mkdir(parents=True, exist_ok=True)
        work = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", dir=out_root))
    except OSError as exc:
        raise VerifierError(f"{out_root}: cannot write the bundle there ({exc.strerror})") from None
    mask = _umask()
    try:
        for name, data in files.items():
            (work / name).write_bytes(data)
            (work / name).chmod(0o666 & ~mask)
        work.chmod(0o777 & ~mask)
        if folder.exists():
            shutil.rmtree(folder)
        os.replace(work, folder)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return folder


@dataclass(frozen=True)
class Verification:
    """What a bundle's verification established."""

    statement: dict[str, Any]
    signer: str  # SHA-256 fingerprint of the public key the signature verified under
    pinned_by: str | None  # "--key", "trust store", or None: valid signature, signer not pinned
    files: int
    timestamps: tuple[Timestamp, ...] = ()  # the tokens dating the signature, in file order
    lead: str | None = None  # the signed findings' plain-language lead (findings before format 9 have none)

    @property
    def predicate(self) -> dict[str, Any]:
        return self.statement["predicate"]


def verify_bundle(
    folder: Path,
    pinned_key_pem: bytes | None = None,
    trust_dir: Path | None = None,
    tsa_certificates: list[Any] | None = None,
) -> Verification:
    """Check the folder's every entry, every digest and the signature, or raise naming the first problem.

    The signature is checked under ``pinned_key_pem`` when given, else under the embedded key;
    the result says whether the signer is pinned (by ``--key`` or by the trust store). Each
    timestamp token must date the signature; it is trusted if it holds under ``tsa_certificates``.
    """
    folder = Path(folder)
    if not folder.is_dir() or folder.is_symlink():
        raise VerifierError(f"{folder}: not a bundle folder")
    if trust_dir is not None and trust_dir.resolve().is_relative_to(folder.resolve()):
        raise VerifierError(f"--trust-dir {trust_dir}: inside the bundle; a bundle cannot pin its own signer")
    if not {ENVELOPE, *BUNDLE_FILES} & {p.name for p in folder.iterdir()}:
        raise VerifierError(
            f"{folder}: not an evidence bundle (no {ENVELOPE}, findings.json or report)" + _below(folder)
        )
    digests, entries = _entries(folder)
    if ENVELOPE not in entries:
        raise VerifierError(f"{folder}: bundle is not signed (no {ENVELOPE})")
    envelope, subjects, claimed = _read_envelope(entries[ENVELOPE])
    if missing := sorted(BUNDLE_FILES - set(subjects)):
        raise VerifierError(f"{ENVELOPE}: differs: the statement does not cover {missing[0]}")
    # The signature is the root of trust: check it first, so a change to the envelope is never
    # blamed on a file it describes. If it fails, say whether the embedded key was changed.
    embedded = entries.get(PUBLIC_KEY)
    pem = pinned_key_pem if pinned_key_pem is not None else embedded
    if pem is None:
        raise VerifierError(f"{PUBLIC_KEY}: differs: file is missing")
    try:
        _, signature = verify_envelope(
            envelope, load_public_key(pem, PUBLIC_KEY if pinned_key_pem is None else "--key")
        )
    except VerifierError:
        if pinned_key_pem is None and sha256(pem) != subjects.get(PUBLIC_KEY):
            raise VerifierError(f"{PUBLIC_KEY}: differs: SHA-256 does not match the signed statement") from None
        raise
    for name in sorted({n for n in digests if n != ENVELOPE and not TOKEN.fullmatch(n)} | set(subjects)):
        if name not in subjects:
            raise VerifierError(f"{name}: differs: file is not covered by the signature")
        if name not in digests:
            raise VerifierError(f"{name}: differs: file is missing")
        if digests[name] != subjects[name]:
            raise VerifierError(f"{name}: differs: SHA-256 does not match the signed statement")
    if claimed.predicate["findings_sha256"] != digests["findings.json"]:
        raise VerifierError("findings.json: differs: its SHA-256 is not the findings digest the statement signs")
    # What verify prints (the claim id and verdict) must be what the signed findings say: a signer
    # cannot make the one-line answer disagree with the findings it signs.
    try:
        findings = read_json(entries[FINDINGS])
        said = {"claim_id": findings["claim"]["claim"]["id"], "verdict": findings["verdict"]}
    except (ValueError, KeyError, TypeError):
        raise VerifierError(f"{FINDINGS}: differs: not readable findings") from None
    if differs := [key for key, value in said.items() if claimed.predicate[key] != value]:
        raise VerifierError(f"{ENVELOPE}: differs: the statement's {differs[0]} is not the one {FINDINGS} holds")
    _check_report_names_findings(entries, subjects)
    signer = key_id(public_pem(load_public_key(pem, PUBLIC_KEY)))
    _check_plan(findings, entries, signer, tsa_certificates or [])
    pinned_by = (
        "--key" if pinned_key_pem is not None else ("trust store" if signer in trusted_keys(trust_dir) else None)
    )
    timestamps = tuple(
        check_token(entries[name], signature, tsa_certificates or [], name)
        for name in sorted(entries, key=_token_order)
        if TOKEN.fullmatch(name)
    )
    said_lead = findings.get("lead") if isinstance(findings, dict) else None  # findings before format 9 have none
    lead = said_lead if isinstance(said_lead, str) else None
    return Verification(claimed.model_dump(by_alias=True), signer, pinned_by, len(subjects), timestamps, lead)


def _token_order(name: str) -> tuple[int, str]:
    match = TOKEN.fullmatch(name)
    return (int(match.group(1)), name) if match else (0, name)


def _check_report_names_findings(entries: dict[str, bytes], subjects: dict[str, str]) -> None:
    """A report PDF signed by verifier names the findings it reports (its signature's reason): a
    signer cannot bundle the signed report of another audit with these findings. A report without
    that signature (an unsigned audit's, or one of a bundle older than PDF signing), or one too
    large to parse here, is only hashed."""

    if REPORT_PDF not in entries:
        return
    reason = signed_reason(entries[REPORT_PDF])
    named = REASON_DIGEST.search(reason or "")
    if reason is not None and (named is None or named.group(1) != subjects.get(FINDINGS)):
        raise VerifierError(f"{REPORT_PDF}: differs: its PDF signature names other findings than findings.json")


def _check_plan(findings: dict[str, Any], entries: dict[str, bytes], signer: str, tsa_certificates: list[Any]) -> None:
    """A pre-registered audit carries the plan its findings name, and the plan's own signature holds:
    the report's "pre-registered" cannot be claimed without the plan, nor a plan slipped in beside
    findings that do not name it."""

    record = findings.get("preregistration")
    registered = isinstance(record, dict) and record.get("registered") is True
    tokens = tuple(
        sorted(
            ((name, data) for name, data in entries.items() if PLAN_TOKEN.fullmatch(name)),
            key=lambda item: int(PLAN_TOKEN.fullmatch(item[0]).group(1)),
        )
    )
    if (PLAN in entries or tokens) and not registered:
        raise VerifierError(f"{PLAN}: differs: the findings do not say the audit was pre-registered")
    if not registered:
        return
    if PLAN not in entries:
        raise VerifierError(f"{PLAN}: differs: the findings say the audit was pre-registered, but the plan is missing")
    plan = parse_plan(entries[PLAN], PLAN, tokens)
    if plan.signer != signer:
        raise VerifierError(
            f"{PLAN}: differs: signed by another key than the bundle (a plan counts only as the auditor's own)"
        )
    expected = plan_record(plan, PLAN, tsa_certificates)  # every token must date the plan's signature
    clock_keys = {
        "clock",
        "timestamped",
    }  # whose clock the auditor pinned: checked against the tokens, not the reader's pins
    said = {k: v for k, v in record.items() if k not in clock_keys}
    if said != {k: v for k, v in expected.items() if k not in clock_keys}:
        raise VerifierError(
            f"{PLAN}: differs: not the plan the findings name (its digest, signer, time, design or timestamps)"
        )
    if "timestamped" in record and not any(
        t["time"] == record["timestamped"] and tsa_clock(t["tsa"]) == record.get("clock")
        for t in expected.get("timestamps", [])
    ):
        raise VerifierError(f"{PLAN}: differs: the findings date the plan by a timestamp it does not carry")
    if "timestamped" not in record and record.get("clock") != CLOCK:
        raise VerifierError(f"{PLAN}: differs: the findings name a clock the plan's record does not support")
    # The plan must be this audit's: the claim and policy it commits to are the ones the findings hold.
    policy = findings.get("policy") if isinstance(findings.get("policy"), dict) else {}
    if plan.subjects.get("claim") != hashlib.sha256(
        canonical_json(findings.get("claim"))
    ).hexdigest() or plan.subjects.get("policy") != policy.get("sha256"):
        raise VerifierError(f"{PLAN}: differs: it was made for another claim or policy than the findings'")


PREDICATE_FIELDS = {"claim_id": str, "verdict": str, "findings_sha256": str, "verifier": str}


def _read_envelope(data: bytes) -> tuple[Envelope, dict[str, str], Statement]:
    """The envelope, its subjects (name -> SHA-256) and statement, every field checked for shape
    before anything is trusted or printed: a malformed envelope is one line, never a crash."""
    try:
        envelope = read_envelope(data)
        claimed = read_statement(envelope.body())
        subjects = claimed.subjects()
        if any(not isinstance(claimed.predicate.get(k), t) for k, t in PREDICATE_FIELDS.items()):
            raise ValueError("predicate fields")
    except ValueError:
        raise VerifierError(f"{ENVELOPE}: differs: not a readable DSSE envelope with an in-toto Statement") from None
    if outside := sorted(
        name for name in subjects if name not in BUNDLE_FILES | {PLAN} and not PLAN_TOKEN.fullmatch(name)
    ):
        raise VerifierError(f"{ENVELOPE}: differs: the statement names {outside[0]!r}, which is not a bundle file")
    if not is_predicate(claimed.predicateType, "audit"):
        raise VerifierError(f"{ENVELOPE}: differs: predicate type is not {PREDICATE_TYPE}")
    return envelope, subjects, claimed


MAX_FILE_BYTES = 4 << 30


TOKEN = re.compile(
    r"timestamp-([1-9][0-9]{0,2})\.tsr"
)  # RFC 3161 tokens over the envelope's signature (trust.timestamps)
PLAN_TOKEN = re.compile(
    r"plan\.timestamp-([1-9][0-9]{0,2})\.tsr"
)  # the plan's tokens over the plan's signature: signed files
READ_WHOLE = frozenset({ENVELOPE, PUBLIC_KEY, FINDINGS, PLAN})  # parsed by verify; every other file is only hashed
REPORT_PDF = "report.pdf"  # also read whole when it is no larger than MAX_READ_BYTES: its signature's reason is checked
MAX_READ_BYTES = 64 << 20


def _entries(folder: Path) -> tuple[dict[str, str], dict[str, bytes]]:
    """Every entry of the bundle folder: name -> SHA-256, and the bytes of the files verify must
    parse (the envelope and the key); anything but a plain bundle file is refused.

    Names are checked before anything is read, and each file is opened without following links
    and checked on the open descriptor, so a link or FIFO swapped in after the listing cannot be
    read either. Files are hashed in pieces (a 3 GiB report costs no memory) and read once, so
    what is hashed is what is reported.
    """
    digests, entries = {}, {}
    with os.scandir(folder) as scan:
        listing = sorted(scan, key=lambda e: e.name)
    for entry in listing:
        mode = entry.stat(follow_symlinks=False).st_mode
        if not stat.S_ISREG(mode):
            kind = "a link" if stat.S_ISLNK(mode) else "a folder" if stat.S_ISDIR(mode) else "not a plain file"
            raise VerifierError(f"{entry.name}: differs: {kind} inside the bundle (a bundle holds plain files only)")
        if (
            entry.name not in BUNDLE_FILES | {ENVELOPE, PLAN}
            and not TOKEN.fullmatch(entry.name)
            and not PLAN_TOKEN.fullmatch(entry.name)
        ):
            raise VerifierError(f"{entry.name}: differs: file is not covered by the signature")
    for entry in listing:
        try:
            fd = os.open(entry.path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError as exc:
            raise VerifierError(f"{entry.name}: differs: cannot be opened as a plain file ({exc.strerror})") from None
        with os.fdopen(fd, "rb") as handle:
            info = os.fstat(handle.fileno())
            if not stat.S_ISREG(info.st_mode):
                raise VerifierError(
                    f"{entry.name}: differs: not a plain file inside the bundle (a bundle holds plain files only)"
                )
            if info.st_size > MAX_FILE_BYTES:
                raise VerifierError(f"{entry.name}: differs: larger than any bundle file ({info.st_size} bytes)")
            if TOKEN.fullmatch(entry.name) or PLAN_TOKEN.fullmatch(entry.name):  # read whole: checked as a token
                if info.st_size > MAX_TOKEN_BYTES:
                    raise VerifierError(
                        f"{entry.name}: differs: larger than any timestamp token ({info.st_size} bytes)"
                    )
                entries[entry.name] = handle.read(MAX_TOKEN_BYTES + 1)
                digests[entry.name] = sha256(entries[entry.name])
            elif entry.name in READ_WHOLE or (entry.name == REPORT_PDF and info.st_size <= MAX_READ_BYTES):
                if info.st_size > MAX_READ_BYTES:
                    raise VerifierError(f"{entry.name}: differs: larger than any {entry.name} ({info.st_size} bytes)")
                entries[entry.name] = handle.read(MAX_READ_BYTES + 1)
                digests[entry.name] = sha256(entries[entry.name])
            else:
                digests[entry.name] = hashlib.file_digest(handle, "sha256").hexdigest()
    return digests, entries


BATCH_INDEX = "batch-index.dsse.json"  # written by verifier.batch: the signed list of a batch's bundles
BATCH_PREDICATE = predicate_type("batch")


@dataclass(frozen=True)
class BatchVerification:
    predicate: dict[str, Any]
    signer: str
    pinned_by: str | None
    bundles: int


def decided_test(findings: dict[str, Any]) -> tuple[float, float] | None:
    """The deciding route's p-value and level, when the verdict rests on a test at a level."""
    record = next((r for r in findings["path"] if r["status"] == "decided"), None)
    outcome = record.get("outcome") if record else None
    if not outcome or outcome.get("p_value") is None or outcome.get("alpha") is None:
        return None
    return float(outcome["p_value"]), float(outcome["alpha"])


def _below(folder: Path) -> str:
    """What a folder that is no bundle holds that is: the batches and bundles one level below."""
    inner = sorted(p for p in folder.iterdir() if p.is_dir() and not p.is_symlink())
    batches = [p.name for p in inner if (p / BATCH_INDEX).is_file()]
    bundles = [p.name for p in inner if (p / ENVELOPE).is_file()]
    if batches:
        more = f" (and {len(batches) - 1} more)" if len(batches) > 1 else ""
        return f"; it holds a batch: verify {folder.name}/{batches[0]}{more}"
    if bundles:
        return f"; it holds {len(bundles)} bundle(s): verify one of them, e.g. {folder.name}/{bundles[0]}"
    return ""


def verify_batch(folder: Path, pinned_key_pem: bytes | None = None, trust_dir: Path | None = None) -> BatchVerification:
    """Check a batch folder: the index's signature; every bundle it names (as ``verify_bundle``,
    signed by the index's signer, its envelope the one the index digests); that the folder holds no
    bundle the index does not name; and that the batch's adjustment is what the index and every
    bundle's findings say: the same batch, error control and claim count, and the adjusted
    p-values and verdicts recomputed from the bundles' own p-values (a signer cannot list an
    unadjusted verdict, drop the claims that lost, or call a bh batch holm)."""
    folder = Path(folder)
    index = folder / BATCH_INDEX
    if index.is_symlink() or not index.is_file() or index.stat().st_size > MAX_READ_BYTES:
        raise VerifierError(f"{BATCH_INDEX}: differs: not a plain index file")
    envelope, subjects, claimed = _read_statement_of(index.read_bytes(), BATCH_INDEX)
    entries = claimed.predicate.get("claims")
    if (
        not is_predicate(claimed.predicateType, "batch")
        or not isinstance(entries, list)
        or not all(isinstance(e, dict) for e in entries)
    ):
        raise VerifierError(f"{BATCH_INDEX}: differs: not a batch index")
    listed = {entry.get("bundle"): entry for entry in entries}
    if len(listed) != len(entries) or set(listed) != set(subjects):
        raise VerifierError(f"{BATCH_INDEX}: differs: its claims and its signed subjects name different bundles")
    present = sorted(p.name for p in folder.iterdir() if p.name != BATCH_INDEX)
    if extra := [name for name in present if name not in subjects]:
        raise VerifierError(f"{extra[0]}: differs: not a bundle of this batch (the index does not name it)")
    signer, batches = None, {}
    for name in sorted(subjects):
        if not (folder / name).is_dir():
            raise VerifierError(f"{name}: differs: the index names a bundle that is missing")
        checked = verify_bundle(folder / name, pinned_key_pem, trust_dir)
        if sha256((folder / name / ENVELOPE).read_bytes()) != subjects[name]:
            raise VerifierError(f"{name}/{ENVELOPE}: differs: not the envelope the batch index signs")
        entry = listed[name]
        if (entry.get("claim_id"), entry.get("verdict")) != (
            checked.predicate["claim_id"],
            checked.predicate["verdict"],
        ):
            raise VerifierError(f"{BATCH_INDEX}: differs: its claim or verdict for {name} is not the bundle's")
        if signer is not None and checked.signer != signer:
            raise VerifierError(f"{name}: differs: signed by another key than the batch's other bundles")
        signer = checked.signer
        pem = pinned_key_pem if pinned_key_pem is not None else (folder / name / PUBLIC_KEY).read_bytes()
        batches[name] = read_json((folder / name / FINDINGS).read_bytes())
    if signer is None:
        raise VerifierError(f"{BATCH_INDEX}: differs: names no bundle")
    verify_envelope(envelope, load_public_key(pem, PUBLIC_KEY), BATCH_INDEX)
    _check_adjustment(claimed.predicate, listed, batches)
    pinned_by = (
        "--key" if pinned_key_pem is not None else ("trust store" if signer in trusted_keys(trust_dir) else None)
    )
    return BatchVerification(claimed.predicate, signer, pinned_by, len(subjects))


def _check_adjustment(
    predicate: dict[str, Any], listed: dict[str, dict[str, Any]], findings: dict[str, dict[str, Any]]
) -> None:
    """Recompute the batch's adjustment from its bundles' findings; raise naming the first bundle that disagrees."""

    control = predicate.get("error_control")
    if control not in CONTROLS:
        raise VerifierError(f"{BATCH_INDEX}: differs: unknown error control {str(control)[:40]!r}")
    tests = {}
    for name, found in findings.items():
        record = found.get("batch") if isinstance(found, dict) else None
        if not isinstance(record, dict) or (record.get("id"), record.get("error_control"), record.get("claims")) != (
            predicate.get("batch_id"),
            control,
            len(listed),
        ):
            raise VerifierError(
                f"{name}/{FINDINGS}: differs: its batch record is not this batch's ({len(listed)} claims, {control})"
            )
        try:
            tests[name] = decided_test(found)
        except (KeyError, TypeError, ValueError, AttributeError):
            raise VerifierError(f"{name}/{FINDINGS}: differs: not readable findings") from None
    family = sorted(name for name, test in tests.items() if test is not None)
    adjusted = dict(zip(family, adjusted_p_values(np.array([tests[name][0] for name in family]), control)))
    for name, found in findings.items():
        record, entry = found["batch"], listed[name]
        should = record.get("unadjusted_verdict")
        decided = next((r for r in found.get("path", []) if isinstance(r, dict) and r.get("status") == "decided"), {})
        if should != decided.get("verdict", "UNVERIFIABLE"):  # no route decided: a policy without a catch-all
            raise VerifierError(
                f"{name}/{FINDINGS}: differs: its unadjusted verdict is not the one its deciding route gave"
            )
        if name in adjusted:
            p, alpha = tests[name]  # type: ignore[misc]
            if record.get("p_value") != p or abs(float(record.get("adjusted_p_value", -1)) - adjusted[name]) > 1e-6:
                raise VerifierError(
                    f"{name}/{FINDINGS}: differs: its adjusted p-value is not the batch's adjustment of its p-value"
                )
            if should in ("SUPPORTED", "CONTRADICTED") and not adjusted[name] < alpha:
                should = "INCONCLUSIVE"
        listed_numbers = (entry.get("in_family"), entry.get("p_value"), entry.get("adjusted_p_value"))
        if listed_numbers != (record.get("in_family"), record.get("p_value"), record.get("adjusted_p_value")):
            raise VerifierError(f"{BATCH_INDEX}: differs: its p-values for {name} are not the bundle's")
        if (
            found.get("verdict") != should
            or entry.get("verdict") != should
            or entry.get("unadjusted_verdict") != record.get("unadjusted_verdict")
        ):
            raise VerifierError(f"{name}: differs: its verdict is not what the batch's adjustment gives ({should})")


def _read_statement_of(data: bytes, where: str) -> tuple[Envelope, dict[str, str], Statement]:
    try:
        envelope = read_envelope(data)
        claimed = read_statement(envelope.body())
        return envelope, claimed.subjects(), claimed
    except ValueError:
        raise VerifierError(f"{where}: differs: not a readable DSSE envelope with an in-toto Statement") from None
