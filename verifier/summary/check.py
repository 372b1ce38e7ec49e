"""``verifier summary check``: a provider's whole training-content summary against the model and the
evidence an auditor has, in one signed bundle.

Each field of the template is planned (``verifier.summary.fields``); the testable ones become
claims, derived in memory (read as if they lay in the working folder, which must hold the summary
and every piece of evidence: their paths are then relative, checked like any claim's, and no
absolute path enters the bundle; nothing is written into the auditor's folder), and are audited
as one batch: one score cache, the policy's error control across the summary's claims (a
summary of 20 fields is 20 chances of a false CONTRADICTED), resumable where it stopped. The
bundle is a folder:

- ``claims/``: the batch (one bundle per claim and the signed batch index);
- ``summary.yaml``: the provider's summary as read (its SHA-256 in the findings);
- ``summary.json``: the findings: one row per template field (declared, evidence used, verdict or
  "not testable" with the reason, what the test cannot show) and how to reproduce the check;
- ``report.html``: the report, opening with the template's table;
- ``summary.dsse.json``: a signed statement over those files and the batch index.

``verify_summary`` checks a bundle: the signature, every file's digest, the batch (as
``verify_batch``), and that every row's verdict is the verdict its claim's bundle holds.
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from verifier import __version__
from verifier.batch import BatchInfo, BatchManifest, batch_of, run_batch
from verifier.boundary.atomic import atomic_output
from verifier.claims import LoadedClaim, ModelUnderTest, claim_of_bytes
from verifier.corpus.build import digest_files
from verifier.errors import VerifierError, first_validation_error
from verifier.report.render import render_summary_html
from verifier.scoring.table import Progress
from verifier.summary.bundle import CLAIMS, ENVELOPE, FINDINGS, KEY, PREDICATE, REPORT, SUMMARY_COPY
from verifier.summary.fields import FieldPlan, SummaryEvidence, plan_fields
from verifier.summary.mixture import MIN_MERGES, NO_SPACES, byte_level_merges, declared_as, infer_mixture
from verifier.summary.schema import TrainingSummary, load_summary
from verifier.targets import kind_of
from verifier.targets.model_source import load_tokenizer, resolve_model
from verifier.trust.bundle import BATCH_INDEX, sha256
from verifier.trust.digests import canonical_json
from verifier.trust.envelopes import (
    key_id,
    public_pem,
    sign_envelope,
    statement,
)
from verifier.validation import load_table
from verifier.verdicts import Verdict

FORMAT = "verifier-summary-check/1"
NOT_TESTABLE = "NOT TESTABLE"
DOCUMENT_FILES = (".jsonl", ".json", ".csv", ".parquet")


@dataclass
class SummaryResult:
    folder: Path
    findings: dict[str, Any]
    signed: bool


def _inside(base: Path, option: str, path: Path | None) -> Path | None:
    """``path`` (relative to ``base`` or absolute) as a path relative to ``base``, inside it and present."""
    if path is None:
        return None
    resolved = (base / path).resolve()
    if not resolved.is_relative_to(base.resolve()):
        raise VerifierError(
            f"{option} {path}: must lie in the working folder or below it (the derived claims name it relatively)"
        )
    if not resolved.exists():
        raise VerifierError(f"{option} {path}: not found")
    return resolved.relative_to(base.resolve())


def checked_evidence(base: Path, evidence: SummaryEvidence) -> SummaryEvidence:
    """The evidence with every path relative to ``base``, checked to exist; the corpus's digest (the
    declared one, or the corpus as given) and one document file of it."""
    corpus = _inside(base, "--corpus", evidence.corpus)
    if evidence.corpus_sha256 is not None and not re.fullmatch(r"[0-9a-f]{64}", evidence.corpus_sha256):
        raise VerifierError(
            f"--corpus-sha256 {evidence.corpus_sha256[:80]!r}: not a SHA-256 (64 lower-case hex digits)"
        )
    found = replace(
        evidence,
        corpus=corpus,
        opted_out_marks=_inside(base, "--opted-out-marks", evidence.opted_out_marks),
        user_data_marks=_inside(base, "--user-data-marks", evidence.user_data_marks),
        removed=_inside(base, "--removed", evidence.removed),
    )
    if corpus is None:
        return found
    folder = base / corpus
    files = sorted(p for p in folder.rglob("*") if p.suffix in DOCUMENT_FILES) if folder.is_dir() else [folder]
    files = [p for p in files if p.is_file() and p.suffix in DOCUMENT_FILES]
    if not files:
        raise VerifierError(
            f"--corpus {evidence.corpus}: holds no JSONL, JSON, CSV or Parquet file (a claim names one as its document "
            "set; the summary fields read the whole corpus)"
        )
    digest = evidence.corpus_sha256 or digest_files([folder])[0]
    return replace(found, corpus_sha256=digest, corpus_documents=files[0].relative_to(base))


def checked_model(base: Path, spec: str) -> str:
    """``--model`` as a claim's model.target takes it (an API URL without credentials or query; a
    model that can be found), a local file or folder named relative to ``base`` and inside it."""
    try:
        ModelUnderTest.model_validate({"target": spec})
    except ValidationError as exc:
        raise VerifierError(f"--model {spec!r}: {first_validation_error(exc)}") from None
    if kind_of(spec).remote:
        return spec
    local = Path(spec).expanduser()
    if local.exists():
        inside = _inside(base, "--model", local)
        assert inside is not None
        spec = str(inside)
    resolve_model(str(base / spec) if local.exists() else spec)  # one line when it cannot be found
    return spec


def _claim(
    summary: TrainingSummary, plan: FieldPlan, evidence: SummaryEvidence, policy: str, seed: int
) -> dict[str, Any]:
    body = plan.claim or {}
    model: dict[str, Any] = {"target": evidence.model}
    if summary.model.market_date is not None:
        model["released"] = summary.model.market_date.isoformat()
    if "declared_summary" in body:
        model["declared_summary"] = {k: v for k, v in body["declared_summary"].items() if v is not None}
    corpus = {"index": str(evidence.corpus), "sha256": evidence.corpus_sha256}
    source = body["evidence"]
    if source == "corpus":
        found: dict[str, Any] = {"suspect": {"path": str(evidence.corpus_documents), "limit": 1}, "corpus": corpus}
    elif source == "removed":
        found = {"suspect": {"path": str(evidence.removed)}, "corpus": corpus}
    else:
        marks = evidence.opted_out_marks if source == "opt-out" else evidence.user_data_marks
        found = {
            "suspect": {"path": str(Path(str(marks)) / "published.jsonl")},
            "marks": {
                "registration": str(Path(str(marks)) / "registration.dsse.json"),
                "siblings": str(Path(str(marks)) / "siblings.json"),
            },
        }
    return {
        "claim": {
            "id": f"{summary.id}.{body['slug']}",
            "statement": body["statement"],
            "kind": body["kind"],
            "made_by": f"the summary of {summary.provider.name} (verifier summary check)",
            "regulation_fields": body["regulation_fields"],
        },
        "model": model,
        "evidence": found,
        "policy": policy,
        "seed": seed,
    }


def _identity(summary: TrainingSummary, spec: str) -> tuple[str, str, str]:
    """1.2: (evidence, verdict, reason) from the model's identity: a local model's weights digest
    against the declared one; an API's model id against the declared id."""
    declared = summary.model
    if kind_of(spec).remote:
        return (
            f"the API at {spec}",
            Verdict.UNVERIFIABLE.value,
            "an API's model is named by the auditor's spec, not shown by the server's weights: each derived claim's "
            "bundle records what the server answered",
        )
    source = resolve_model(spec)
    if not source.is_local:
        return f"hub model {source.public_name}", Verdict.UNVERIFIABLE.value, "a hub model is identified by its commit"
    digest = source.digest()
    evidence = f"weights of {source.public_name}: sha256 {digest}"
    if declared.weights_sha256 is None:
        return evidence, Verdict.UNVERIFIABLE.value, "no weights digest declared to compare"
    same = digest == declared.weights_sha256
    return (
        evidence,
        (Verdict.VERIFIED if same else Verdict.CONTRADICTED).value,
        "the weights tested are the declared weights"
        if same
        else f"the weights tested digest to {digest[:16]}..., not the declared {declared.weights_sha256[:16]}...",
    )


MIXTURE_SHARE = 0.05  # an undeclared language the tokenizer's mixture puts at this byte share or more is named


def _tokenizer_languages(summary: TrainingSummary, spec: str) -> tuple[str, str, str]:
    """1.3 languages without a corpus: the mixture of the tokenizer's training data, inferred from its
    merges (``verifier.summary.mixture``) - evidence about the tokenizer, so the row is INCONCLUSIVE
    whatever it shows, with the estimate and its measured error in the reason."""
    if kind_of(spec).remote:
        return "-", NOT_TESTABLE, "an API does not give its tokenizer's merges; give the training corpus (--corpus)"
    tokenizer, _ = load_tokenizer(spec)
    try:
        found = infer_mixture(byte_level_merges(tokenizer.backend_tokenizer.to_str()))
    except (AttributeError, ValueError) as exc:
        return "-", NOT_TESTABLE, f"the model's tokenizer cannot be read for its mixture ({exc})"
    if found.merges_used < MIN_MERGES:
        return (
            "-",
            NOT_TESTABLE,
            f"only {found.merges_used} of the tokenizer's first merges are pairs any candidate language writes",
        )
    declared = summary.modalities.languages
    top = ", ".join(f"{code} {share:.2f}" for code, share in list(found.shares.items())[:6])
    undeclared = [c for c, s in found.shares.items() if s >= MIXTURE_SHARE and not declared_as(c, declared)]
    error = next(
        (
            f"; measured error on tokenizers trained here: median MAE {row.value:.3f} over the mixed languages"
            for row in load_table().rows
            if row.benchmark == "tokenizer_mixture" and "mixed" in row.quantity
        ),
        "",
    )
    return (
        f"the tokenizer's merges: {found.merges_used} that some candidate language writes (mixture inference over "
        f"{len(found.languages)} languages)",
        Verdict.INCONCLUSIVE.value,
        f"the tokenizer's training data is estimated at {top} (byte shares among {len(found.languages)} candidate "
        f"languages; {', '.join(sorted(NO_SPACES))} and code are not estimable; slack {found.slack:.2f} per merge)"
        + (
            f"; undeclared languages estimated at {MIXTURE_SHARE:.0%} or more: {', '.join(undeclared)}"
            if undeclared
            else ""
        )
        + f"{error}. This is evidence about the tokenizer's training data, not the model's: no verdict",
    )


def _reason(findings: dict[str, Any]) -> str:
    """Why a derived claim got its verdict: the deciding route's sentence, or - when its evidence's
    route established nothing and a later route (disclosure) decided - what that route said."""
    tested = next(
        (r for r in findings["path"] if r.get("route") in ("corpus", "marks") and r.get("outcome")),
        None,
    )
    if tested is None or findings.get("decided_by") == tested["route"]:
        return str(findings.get("verdict_sentence", ""))
    return f"not established: {tested['outcome'].get('summary', '')}"


def _evidence_used(plan: FieldPlan, evidence: SummaryEvidence) -> str:
    source = (plan.claim or {}).get("evidence")
    if source in ("corpus", "removed"):
        used = f"corpus {evidence.corpus} (sha256 {str(evidence.corpus_sha256)[:16]}...)"
        return used + (f"; removed documents {evidence.removed}" if source == "removed" else "")
    if source == "opt-out":
        return f"marks in opted-out content ({evidence.opted_out_marks})"
    if source == "user-data":
        return f"marks in content submitted through the service ({evidence.user_data_marks})"
    return "-"


def reproduce_command(summary: Path, evidence: SummaryEvidence, policy: str, seed: int) -> str:
    """The one command that re-runs this check from the working folder (``summary`` relative to it)."""
    words = ["verifier", "summary", "check", str(summary), "--model", evidence.model]
    for option, value in (
        ("--corpus", evidence.corpus),
        ("--corpus-sha256", evidence.corpus_sha256),
        ("--opted-out-marks", evidence.opted_out_marks),
        ("--user-data-marks", evidence.user_data_marks),
        ("--removed", evidence.removed),
    ):
        if value is not None:
            words += [option, str(value)]
    if policy != "default":
        words += ["--policy", policy]
    if seed:
        words += ["--seed", str(seed)]
    return shlex.join(words)


def check_summary_file(
    summary_path: Path,
    evidence: SummaryEvidence,
    out_dir: Path,
    key: Any = None,  # an Ed25519PrivateKey, or None for an unsigned bundle
    policy: str = "default",
    seed: int = 0,
    cache_dir: Path | None = None,
    progress: Progress | None = None,
    force: bool = False,
    base: Path | None = None,
) -> SummaryResult:
    """Check the summary at ``summary_path`` (see the module docstring) into ``out_dir/<summary id>/``;
    ``base``: the working folder holding the summary and the evidence (default: the current one),
    which relative paths start from."""
    base = (base or Path.cwd()).resolve()
    at = _inside(base, "summary", summary_path)
    assert at is not None
    summary_path = base / at
    summary, summary_sha256 = load_summary(summary_path)
    evidence = checked_evidence(base, replace(evidence, model=checked_model(base, evidence.model)))
    folder = out_dir / summary.id
    if folder.exists() and any(folder.iterdir()):
        if not force:
            raise VerifierError(f"{folder}: this summary's check exists; refusing to replace it (--force replaces it)")
        if not (folder / FINDINGS).is_file():
            raise VerifierError(f"{folder}: holds no summary check; not replaced")
        shutil.rmtree(folder)  # a replaced check leaves nothing of the old one (claims, key, envelope)
    plans = plan_fields(summary, evidence)
    claims: list[LoadedClaim] = []
    for plan in plans:
        if plan.claim is not None:
            body = yaml.safe_dump(_claim(summary, plan, evidence, policy, seed), sort_keys=False).encode()
            virtual = base / f".{summary.id}.{plan.claim['slug']}.claim.yaml"
            claims.append(claim_of_bytes(body, virtual))
    verdicts: dict[str, dict[str, Any]] = {}
    batch_info: dict[str, Any] = {"claims": 0}
    folder.mkdir(parents=True, exist_ok=True)
    if claims:
        manifest = BatchManifest(
            batch=BatchInfo(id=CLAIMS, statement=f"the claims of summary {summary.id}"),
            claims=[c.path.relative_to(base) for c in claims],
        )
        batch = batch_of(manifest, Path(at), claims, summary_sha256)
        result = run_batch(batch, folder, key, cache_dir, progress, force=force)
        for bundle, found in zip(result.bundles, result.findings):
            verdicts[found["claim"]["claim"]["id"]] = {
                "verdict": found["verdict"],
                "reason": _reason(found),
                "bundle": f"{CLAIMS}/{bundle.name}",
            }
        batch_info = {"claims": len(claims), "error_control": batch.error_control, "policy_sha256": batch.policy_sha256}
    here = str(base / evidence.model) if (base / evidence.model).exists() else evidence.model
    rows = []
    for plan in plans:
        row = {"field": plan.key, "regulation": plan.regulation, "declared": plan.declared, "limits": plan.limits}
        if plan.identity:
            used, verdict, reason = _identity(summary, here)
            row |= {"evidence": used, "verdict": verdict, "reason": reason}
        elif plan.tokenizer:
            used, verdict, reason = _tokenizer_languages(summary, here)
            row |= {"evidence": used, "verdict": verdict, "reason": reason}
        elif plan.claim is not None:
            claim_id = f"{summary.id}.{plan.claim['slug']}"
            row |= {"evidence": _evidence_used(plan, evidence), "claim_id": claim_id, **verdicts[claim_id]}
        else:
            row |= {"evidence": "-", "verdict": NOT_TESTABLE, "reason": plan.not_testable or ""}
        rows.append(row)
    findings = {
        "format": FORMAT,
        "summary": {
            "id": summary.id,
            "sha256": summary_sha256,
            "provider": summary.provider.name,
            "model_names": summary.model.names,
        },
        "model": evidence.model if kind_of(evidence.model).remote else resolve_model(here).public_name,
        "rows": rows,
        "batch": batch_info,
        "policy": policy,
        "seed": seed,
        "reproduce": reproduce_command(at, evidence, policy, seed),
        "verifier": __version__,
    }
    _write(folder, summary_path.read_bytes(), findings, key)
    return SummaryResult(folder, findings, key is not None)


def _write(folder: Path, summary_bytes: bytes, findings: dict[str, Any], key: Any) -> None:
    signer = key_id(public_pem(key.public_key())) if key is not None else None
    files = {
        SUMMARY_COPY: summary_bytes,
        FINDINGS: json.dumps(findings, indent=1, ensure_ascii=False).encode(),
    }
    files[REPORT] = render_summary_html(findings, sha256(files[FINDINGS]), signer).encode()
    for name, data in files.items():
        with atomic_output(folder / name) as tmp:
            tmp.write_bytes(data)
    if key is None:
        (folder / ENVELOPE).unlink(missing_ok=True)
        return
    subjects = {name: sha256(data) for name, data in files.items()}
    if (folder / CLAIMS / BATCH_INDEX).is_file():
        subjects[f"{CLAIMS}/{BATCH_INDEX}"] = sha256((folder / CLAIMS / BATCH_INDEX).read_bytes())
    predicate = {
        "summary_id": findings["summary"]["id"],
        "findings_sha256": subjects[FINDINGS],
        "verifier": __version__,
    }
    body = canonical_json(statement(subjects, predicate, PREDICATE))
    with atomic_output(folder / KEY) as tmp:
        tmp.write_bytes(public_pem(key.public_key()))
    with atomic_output(folder / ENVELOPE) as tmp:
        tmp.write_bytes(json.dumps(sign_envelope(body, key), indent=1).encode())
