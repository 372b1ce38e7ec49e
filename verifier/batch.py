"""Many claims in one audit: one run, one score cache, error control across the batch, a signed index.

A rights holder with 200 books, or a regulator with every field of one summary, tests many
claims at once, and at alpha 0.05 one claim in twenty is "significant" by chance. A batch
manifest lists the claims (all under one policy: the policy names the error control); each claim
is audited as on its own (except that a permutation test runs enough relabellings for its p-value
to reach alpha / claims, the strictest level the adjustment applies), its result kept in a part file under the output
folder as soon as it is
done (authenticated under the cache secret: a part edited on disk is refused and the claim audited
again), so an interrupted batch resumes where it stopped. Then the p-values of the claims decided
by a statistical test are adjusted together (``trust.error_control``: Holm by default, for the
family-wise error; ``bh`` for the false discovery rate), a claim whose adjusted p-value no longer
reaches its route's level loses its SUPPORTED or CONTRADICTED to INCONCLUSIVE (an adjustment only
ever weakens), every claim gets its bundle with the batch's record in its findings, and the batch
gets an index naming every bundle by its envelope's digest, signed with the same key.

Claims decided without a test at a level (a corpus lookup, a refused method) are not in the family
and keep their verdicts; the index says which were.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import shutil
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from pydantic import Field, ValidationError, field_validator

from verifier import __version__
from verifier.audit import check_claim, run_audit
from verifier.boundary.atomic import atomic_output
from verifier.boundary.peers import read_json
from verifier.boundary.resources import resolve_claim_path
from verifier.boundary.safe_yaml import load_yaml_file
from verifier.claims import LoadedClaim, Strict, claim_model_spec, load_claim
from verifier.errors import VerifierError, first_validation_error
from verifier.findings import FINDINGS_FORMAT, AuditResult
from verifier.policy.engine import input_digests
from verifier.report import render_html, render_pdf
from verifier.routes import ROUTES
from verifier.scoring.table import Progress
from verifier.targets import ScoreCache, kind_of
from verifier.trust import write_bundle
from verifier.trust.bundle import BATCH_INDEX as INDEX
from verifier.trust.bundle import BATCH_PREDICATE, ENVELOPE, decided_test, sha256
from verifier.trust.digests import canonical_json, findings_digest
from verifier.trust.envelopes import key_id, public_pem, sign_envelope, statement
from verifier.trust.error_control import CONTROLS, adjusted_p_values
from verifier.trust.pdf_signing import sign_pdf
from verifier.trust.tags import holds, tag
from verifier.trust.timestamps import check_tsa
from verifier.validation import for_audit
from verifier.verdicts import Verdict, lead

PARTS = ".parts"  # finished claims' results, until the batch's bundles are written
ASSERTIONS = {Verdict.SUPPORTED.value, Verdict.CONTRADICTED.value}


class BatchInfo(Strict):
    id: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$", description="names the batch's output folder")
    statement: str | None = Field(None, max_length=2000, description="what the batch as a whole is about")


class BatchManifest(Strict):
    """A batch: claim files, relative to the manifest's folder and inside it."""

    batch: BatchInfo
    claims: list[Path] = Field(min_length=1, max_length=10_000)

    @field_validator("claims")
    @classmethod
    def _distinct(cls, claims: list[Path]) -> list[Path]:
        seen = set()
        for i, path in enumerate(claims):
            if path.is_absolute() or ".." in path.parts:
                raise ValueError(f"claims.{i}: {path} must be a path relative to the batch's folder and inside it")
            if path in seen:
                raise ValueError(f"claims.{i}: {path} is listed twice")
            seen.add(path)
        return claims


def is_batch(path: str | Path) -> bool:
    """Whether ``path`` is a batch manifest (a YAML mapping with a ``batch`` key) rather than a claim."""

    resolved = resolve_claim_path(path)
    data = load_yaml_file(resolved, "claim")
    return isinstance(data, dict) and "batch" in data and "claim" not in data


@dataclass(frozen=True)
class Batch:
    manifest: BatchManifest
    path: Path
    claims: list[LoadedClaim]  # loaded and validated once, in manifest order (the audits read them as loaded)
    error_control: str
    policy_sha256: str
    manifest_sha256: str  # of the manifest file, or of the summary a summary check derived the batch from


def load_batch(path: str | Path) -> Batch:
    """The validated manifest; every claim is loaded and checked, and all must share one policy."""

    path = Path(path)
    try:
        manifest = BatchManifest.model_validate(load_yaml_file(path, "batch"))
    except ValidationError as exc:
        raise VerifierError(f"{path}: {first_validation_error(exc, model=BatchManifest)}") from None
    claims = []
    for i, rel in enumerate(manifest.claims):
        claim_path = path.parent / rel
        if not claim_path.is_file():
            raise VerifierError(f"{path}: claims.{i}: file {rel} not found (paths are relative to the batch's folder)")
        if not claim_path.resolve().is_relative_to(path.parent.resolve()):
            raise VerifierError(f"{path}: claims.{i}: {rel} leads outside the batch's folder (a link?)")
        claims.append(load_claim(claim_path))
    return batch_of(manifest, path, claims, hashlib.sha256(path.read_bytes()).hexdigest())


def batch_of(manifest: BatchManifest, path: Path, claims: list[LoadedClaim], manifest_sha256: str) -> Batch:
    """A batch of claims already loaded: each checked (its inputs, before any claim is scored), ids
    distinct, one policy for all (``path`` names the batch in errors)."""
    ids: dict[str, int] = {}
    policies: dict[str, tuple[int, Any]] = {}
    for i, loaded in enumerate(claims):
        claim = loaded.manifest
        if claim.claim.id in ids:
            raise VerifierError(
                f"{path}: claims.{i}: claim id {claim.claim.id!r} is also the id of claims.{ids[claim.claim.id]}"
            )
        ids[claim.claim.id] = i
        policy = check_claim(loaded)  # every claim's inputs, before any claim is scored
        policies.setdefault(policy.sha256, (i, policy))
    if len(policies) > 1:
        (_, (i, first)), (_, (j, other)) = list(policies.items())[:2]
        raise VerifierError(
            f"{path}: claims.{j}: its policy ({other.file}) is not the policy of claims.{i} ({first.file}); "
            "a batch's error control is one policy's, so every claim must name the same policy"
        )
    ((_, policy),) = policies.values()
    return Batch(manifest, path, claims, policy.error_control, policy.sha256, manifest_sha256)


# -- parts: one finished claim, kept until the batch is written -----------------------------------


def _part_key(loaded: LoadedClaim, policy_sha256: str, family_size: int) -> dict[str, Any]:
    """What a part must have been computed from: the claim file, every input it reads, the policy,
    the batch's size (it sets how fine the tests' p-values are), the model (by the identity an
    audit records without loading it: for a local model, its weights' digest), and this verifier."""

    spec = claim_model_spec(loaded.manifest, loaded.base)
    return {
        "claim_sha256": loaded.sha256,
        "inputs": input_digests(loaded),
        "policy_sha256": policy_sha256,
        "family_size": family_size,
        "findings_format": FINDINGS_FORMAT,
        "model": kind_of(spec).cls.unloaded_identity(spec, loaded.base),
        "verifier": __version__,
    }


def _save_part(folder: Path, name: str, secret: bytes, key: dict[str, Any], result: Any, run: dict[str, Any]) -> None:

    scores = io.BytesIO()
    result.scores.to_parquet(scores, index=False)
    body = {
        "key": key,
        "findings": result.findings,
        "scores": base64.b64encode(scores.getvalue()).decode(),
        "claim": base64.b64encode(result.claim_bytes).decode(),
        "policy": base64.b64encode(result.policy_bytes).decode(),
        "usage": result.usage,
        "run": run,
    }
    folder.mkdir(parents=True, exist_ok=True)
    with atomic_output(folder / f"{name}.json") as tmp:
        tmp.write_bytes(canonical_json({"body": body, "tag": tag(secret, canonical_json(body))}))


def _load_part(path: Path, secret: bytes, key: dict[str, Any]) -> tuple[Any, dict[str, Any]] | None:
    """The part's result, if it is ours (its tag holds) and was computed from these inputs; else None."""

    try:
        data = read_json(path.read_bytes())
        body = data["body"]
        if not holds(data.get("tag"), secret, canonical_json(body)) or body["key"] != key:
            return None
        result = AuditResult(
            findings=body["findings"],
            scores=pd.read_parquet(io.BytesIO(base64.b64decode(body["scores"]))),
            claim_bytes=base64.b64decode(body["claim"]),
            policy_bytes=base64.b64decode(body["policy"]),
            usage=body["usage"],
        )
        return result, body["run"]
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _since(before: dict[str, int], now: dict[str, int]) -> dict[str, int]:
    """One claim's cache counters: what changed while it was audited."""
    return {name: now[name] - before[name] for name in now}


def _batch_of(folder: Path) -> str | None:
    """The batch id a bundle folder's findings name, or None (not a bundle, or not a batch's)."""
    try:
        record = json.loads((folder / "findings.json").read_text(encoding="utf-8")).get("batch")
        return record.get("id") if isinstance(record, dict) else None
    except (OSError, ValueError, AttributeError):
        return None


# -- the adjustment -------------------------------------------------------------------------------


def adjust(findings_list: list[dict[str, Any]], error_control: str, batch_id: str) -> list[dict[str, Any]]:
    """Each claim's findings with the batch's record, verdicts weakened where the adjusted p-value
    no longer reaches the level (new dicts; the inputs are not changed)."""

    tests = [decided_test(f) for f in findings_list]
    family = [i for i, t in enumerate(tests) if t is not None]
    adjusted = adjusted_p_values(np.array([tests[i][0] for i in family]), error_control)
    by_claim = dict(zip(family, adjusted))
    out = []
    for i, findings in enumerate(findings_list):
        findings = json.loads(json.dumps(findings))
        record: dict[str, Any] = {
            "id": batch_id,
            "error_control": error_control,
            "method": CONTROLS[error_control],
            "claims": len(findings_list),
            "tested": len(family),
            "in_family": i in by_claim,
            "unadjusted_verdict": findings["verdict"],
        }
        if i in by_claim:
            p, alpha = tests[i]  # type: ignore[misc]
            adj = float(by_claim[i])
            record |= {"p_value": p, "adjusted_p_value": round(adj, 6), "alpha": alpha}
            if findings["verdict"] in ASSERTIONS and not adj < alpha:
                findings["verdict"] = Verdict.INCONCLUSIVE.value
                decided = next(r for r in findings["path"] if r["status"] == "decided")
                if decided["route"] in ROUTES:
                    ROUTES[decided["route"]].withdraw(decided["outcome"])
                # The tree draws the adjusted verdict; "verdict" stays the route's (the index check recomputes from it).
                decided["adjusted_verdict"] = Verdict.INCONCLUSIVE.value
                findings["lead"] = lead(
                    Verdict.INCONCLUSIVE,
                    f"{len(family)} claims were tested together and, corrected for that, this claim's test is not "
                    "significant",
                    f"Alone it would be {record['unadjusted_verdict']}",
                )
                method = findings.get("method_validation") or {}
                if method.get("route"):  # the rates that bear on the weakened verdict, not on the one withdrawn
                    method["bearing"] = for_audit(
                        method["route"], method["n"], Verdict.INCONCLUSIVE.value, method.get("parameters")
                    )["bearing"]
                for row in findings.get("regulation", []):
                    if row["status"] == "shown":  # what the weakened verdict showed no longer holds
                        row["status"] = "not established"
                        row["finding"] = (
                            f"INCONCLUSIVE after adjustment across the batch's {len(family)} tested claims "
                            f"(alone: {row['finding']})"
                        )
                findings["verdict_sentence"] = (
                    f"INCONCLUSIVE: tested as one of {len(family)} claims of batch {batch_id}, this claim's p-value "
                    f"{p:.3g} adjusted by {CONTROLS[error_control]} is {adj:.3g}, not below its level {alpha}; on its "
                    "own it "
                    f"would be {record['unadjusted_verdict']}, and the findings below are that claim's own, "
                    "unadjusted. " + findings["verdict_sentence"].split(": ", 1)[-1]
                )
        record["verdict"] = findings["verdict"]
        findings["batch"] = record
        out.append(findings)
    return out


@dataclass(frozen=True)
class BatchResult:
    folder: Path
    bundles: list[Path]
    findings: list[dict[str, Any]]
    resumed: int  # claims read back from parts instead of audited again
    signed: bool


def run_batch(
    path: str | Path | Batch,
    out_dir: Path,
    key: Any = None,  # an Ed25519PrivateKey, or None for unsigned bundles
    cache_dir: Path | None = None,
    progress: Progress | None = None,
    force: bool = False,
    access: Any = None,  # PeerAccess
    audit: Callable[..., Any] | None = None,
    tsa: list[str] | None = None,
    pdf_signer: Any = None,  # a trust.certificates.DocumentSigner: signs each report.pdf
) -> BatchResult:
    """Audit every claim of the batch at ``path`` into ``out_dir/<batch id>/`` (see the module
    docstring); ``tsa``: time-stamping authorities that date each bundle's signature."""

    check_tsa(tsa, key is not None, access)
    batch = path if isinstance(path, Batch) else load_batch(path)
    folder = out_dir / batch.manifest.batch.id
    if (folder / INDEX).exists() and not force:
        raise VerifierError(
            f"{folder}: this batch's bundles and index exist; refusing to replace them (--force replaces them)"
        )
    cache = ScoreCache(cache_dir)
    secret = cache.secret
    parts = folder / PARTS
    results: list[tuple[Any, dict[str, Any]]] = []
    resumed = 0
    advance = progress(f"batch {batch.manifest.batch.id}: claims", len(batch.claims)) if progress else None
    for i, loaded in enumerate(batch.claims):
        name = f"{i:05d}"
        part_key = _part_key(loaded, batch.policy_sha256, len(batch.claims))
        kept = None if force else _load_part(parts / f"{name}.json", secret, part_key)
        if kept is not None:
            results.append(kept)
            resumed += 1
        else:
            before = (asdict(cache.counts), asdict(cache.responses))
            result = (audit or run_audit)(
                loaded, cache=cache, progress=progress, access=access, family_size=len(batch.claims)
            )
            run = {
                "cache": _since(before[0], asdict(cache.counts)),
                "api_cache": _since(before[1], asdict(cache.responses)),
                "api": result.usage,
            }
            _save_part(parts, name, secret, part_key, result, run)
            results.append((result, run))
        loaded.files.release()  # its digests stay (the part key holds them); its bytes and rows go
        if advance:
            advance(1)
    adjusted = adjust([r.findings for r, _ in results], batch.error_control, batch.manifest.batch.id)
    signer = key_id(public_pem(key.public_key())) if key is not None else None
    bundles = []
    render = progress("rendering bundles", len(results)) if progress else None
    for (result, run), findings in zip(results, adjusted):
        result.findings = findings
        html = render_html(findings, findings_digest(findings), signer, run)
        pdf = render_pdf(html)
        if pdf_signer is not None:
            pdf = sign_pdf(
                pdf,
                pdf_signer,
                findings["claim"]["claim"]["id"],
                findings_digest(findings),
                tsa[0] if tsa else None,
                access,
            )
        bundles.append(write_bundle(result, html, pdf, folder, key, force=True, run=run, tsa=tsa, access=access))
        if render:
            render(1)
    for stale in folder.iterdir():  # bundles of an earlier run of this batch, whose findings changed since
        if (
            stale.is_dir()
            and not stale.is_symlink()
            and stale not in bundles
            and _batch_of(stale) == batch.manifest.batch.id
        ):
            shutil.rmtree(stale)
    if key is not None:
        write_index(folder, bundles, adjusted, batch, key)
    shutil.rmtree(parts, ignore_errors=True)
    return BatchResult(folder, bundles, adjusted, resumed, key is not None)


def write_index(folder: Path, bundles: list[Path], findings: list[dict[str, Any]], batch: Batch, key: Any) -> None:
    """The batch index: every bundle by its envelope's digest, with its claim, verdicts and p-values, signed."""

    entries = [
        {
            "claim_id": f["claim"]["claim"]["id"],
            "bundle": b.name,
            "verdict": f["verdict"],
            "unadjusted_verdict": f["batch"]["unadjusted_verdict"],
            "in_family": f["batch"]["in_family"],
            "p_value": f["batch"].get("p_value"),
            "adjusted_p_value": f["batch"].get("adjusted_p_value"),
        }
        for b, f in zip(bundles, findings)
    ]
    predicate = {
        "batch_id": batch.manifest.batch.id,
        "statement": batch.manifest.batch.statement,
        "error_control": batch.error_control,
        "policy_sha256": batch.policy_sha256,
        "manifest_sha256": batch.manifest_sha256,
        "claims": entries,
        "verifier": __version__,
    }
    subjects = {b.name: sha256((b / ENVELOPE).read_bytes()) for b in bundles}
    body = canonical_json(statement(subjects, predicate, BATCH_PREDICATE))
    with atomic_output(folder / INDEX) as tmp:
        tmp.write_bytes(json.dumps(sign_envelope(body, key), indent=1).encode())
