"""The main job: claim manifest -> policy walk -> findings -> report -> signed evidence bundle.

``run_audit`` gives the findings (nothing written); ``audit_to_bundle`` is the whole job as one
library call - the CLI's ``audit`` command is a thin wrapper over it, and scripts and notebooks
call it directly and get the same bundle.

Findings are plain JSON-serialisable data and deterministic: the same inputs, policy and seed give
the same findings digest. They name input files by file name and SHA-256 only, and a local
model by its file or folder name and weight digest, so no private path enters a bundle.
"""

from __future__ import annotations

import hashlib
import platform
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd
import yaml

from verifier import __version__
from verifier.boundary.peers import PeerAccess
from verifier.boundary.resources import resource
from verifier.claims import (
    ClaimManifest,
    LoadedClaim,
    check_models,
    claim_model_spec,
    claim_scoring_options,
    document_sizes,
    load_claim,
    public_claim,
    with_model_options,
)
from verifier.errors import Interrupted, VerifierError
from verifier.findings import FINDINGS_FORMAT, AuditResult
from verifier.plan import check_plan
from verifier.plugins import REGISTRIES, discover
from verifier.policy import departures_from_default, load_policy, resolve_policy_path
from verifier.policy.engine import (
    check_against_claim,
    decision,
    input_digests,
    precheck,
    record_to_dict,
    regulation_of_audit,
    walk,
)
from verifier.policy.schema import Policy
from verifier.report import render_html, render_pdf
from verifier.scoring.ray import prescore_claim
from verifier.scoring.session import RouteContext
from verifier.scoring.table import Progress
from verifier.targets import ScoreCache, Target, kind_of, kind_of_target, load_target
from verifier.trust import verify_bundle, write_bundle
from verifier.trust.bundle import ENVELOPE, bundle_folder, holds_findings, unsigned_intact
from verifier.trust.certificates import PdfSigning
from verifier.trust.digests import findings_digest
from verifier.trust.envelopes import key_id, public_pem
from verifier.trust.keys import default_key_path, signing_key
from verifier.trust.pdf_signing import sign_pdf
from verifier.trust.plans import NOT_REGISTERED, Plan, read_plan
from verifier.trust.timestamps import check_tsa, load_tsa_certificates
from verifier.validation import for_audit
from verifier.verdicts import GLOSSARY, Verdict, lead

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    from verifier.scoring.ray import RayOptions
    from verifier.trust.certificates import PdfSigning

PACKAGES = (
    "torch",
    "transformers",
    "numpy",
    "scipy",
    "scikit-learn",
    "pandas",
    "tokenizers",
    "weasyprint",
    "cryptography",
)


def run_audit(
    claim_path: str | Path | LoadedClaim,
    cache: ScoreCache | None = None,
    progress: Progress | None = None,
    target_factory: Callable[[str], Target] | None = None,
    access: PeerAccess | None = None,
    plan: Path | Plan | None = None,
    family_size: int = 1,
) -> AuditResult:
    """Validate the claim and its policy (against each other), walk the tree, and return the
    findings (nothing is written here).

    ``family_size``: how many claims are tested together (a batch), so that a route's test can
    give p-values small enough to survive the batch's adjustment.

    ``claim_path``: a claim file, ``example:NAME``, or a claim already loaded (``load_claim``: its
    files are then read once for the whole job). ``plan``: a signed plan (``verifier plan``; a file,
    or one already read) the claim, policy and document sets must match; checked before anything is
    scored.

    ``target_factory(role)`` supplies the model for "target" or "reference" (e.g. one already
    loaded); by default the claim's specs are loaded on first use, so routes that need no model
    never load one. ``access`` is the auditor's: which key goes to the claim's endpoint, and
    whether plain http may leave this machine (never the claim's to choose).
    """
    loaded = claim_path if isinstance(claim_path, LoadedClaim) else load_claim(claim_path)
    claim, base = loaded.manifest, loaded.base
    policy = check_claim(loaded)
    planned = read_plan(Path(plan)) if isinstance(plan, Path | str) else plan
    pinned_tsa = load_tsa_certificates([]) if planned and planned.tokens else []
    preregistration = (
        check_plan(planned, loaded, policy, f"--plan {planned.name}", pinned_tsa) if planned else NOT_REGISTERED
    )
    inputs = input_digests(loaded)  # before anything runs: the digests of the very bytes the routes then read
    access = access or PeerAccess()
    ctx = RouteContext(
        claim=claim,
        base_dir=base,
        cache=cache or ScoreCache(),
        progress=progress,
        target_factory=target_factory or _claim_targets(claim, base, access),
        access=access,
        family_size=family_size,
        files=loaded.files,
    )
    records = walk(policy, ctx)
    ctx.check_served_weights()  # after the routes: the server cannot tell the compared answers from the others
    decided = decision(records)
    summary = decided.outcome.summary if decided.outcome else decided.reason
    looser, other = departures_from_default(policy)
    findings = {
        "format": FINDINGS_FORMAT,
        "claim": public_claim(claim, base),
        "model": _model_identity(claim, ctx, base),
        "policy": {
            "name": policy.name,
            "version": policy.version,
            "file": policy.file,
            "sha256": policy.sha256,
            "weaker_than_default": looser,
            "other_departures": other,
            "regulation_map_sha256": hashlib.sha256(resource("policies", "regulation.yaml").read_bytes()).hexdigest(),
        },
        "verdict": decided.verdict,
        "decided_by": decided.route,
        "lead": lead(
            decided.verdict,
            decided.because or GLOSSARY[Verdict(decided.verdict)][0],
            f"Alone it would be {decided.uncapped_verdict}, but the policy does not let {decided.route} grant that"
            if decided.uncapped_verdict
            else None,
            decided.outcome.alpha if decided.outcome else None,
        ),
        "verdict_sentence": _sentence(claim, decided.verdict, summary),
        "failed_items": dict(ctx.failed_items),
        "failure_reasons": dict(ctx.failure_reasons),
        "signal_runs": dict(ctx.signal_runs),
        "path": [record_to_dict(r) for r in records],
        "regulation": regulation_of_audit(records, claim),
        "method_validation": for_audit(
            decided.route if decided.outcome and decided.outcome.status else None,
            decided.outcome.size if decided.outcome else None,
            decided.verdict,
            getattr(ctx.loaded.get("target"), "parameters", None),  # open weights: their size; an API: unknown
        ),
        "preregistration": preregistration,
        "inputs": inputs,
        "environment": _environment(),
        "seed": claim.seed,
    }
    scores = (
        pd.concat(ctx.scored_rows, ignore_index=True)
        if ctx.scored_rows
        else pd.DataFrame({"role": [], "text_sha256": []})
    )
    claim_yaml = "# The validated claim (local model paths reduced to their names).\n" + yaml.safe_dump(
        findings["claim"], sort_keys=False
    )
    usage = {
        role: target.usage
        for role, target in ctx.loaded.items()
        if (target_kind := kind_of_target(target)) and target_kind.remote
    }
    return AuditResult(
        findings=findings,
        scores=scores,
        claim_bytes=claim_yaml.encode("utf-8"),
        policy_bytes=policy.raw,
        usage=usage,
        plan_bytes=planned.raw if planned else None,
        plan_tokens=planned.tokens if planned else (),
    )


def check_claim(claim: str | Path | LoadedClaim) -> Policy:
    """Everything about a claim that can be checked before a model loads or a route runs, as the
    audit checks it (and ``verifier init`` when it writes one): the claim and its policy, against
    each other; every document set read and selected; its local models found; the first route the
    walk will surely run able to test the sets. One line naming the file and key; the policy."""
    loaded = claim if isinstance(claim, LoadedClaim) else load_claim(claim)
    policy = load_policy(resolve_policy_path(loaded.manifest.policy, loaded.base))
    check_against_claim(policy, loaded.manifest)
    sizes = document_sizes(loaded)
    check_models(loaded)
    precheck(policy, loaded.manifest, sizes, str(loaded.path))
    return policy


def _claim_targets(claim: ClaimManifest, base: Path, access: PeerAccess) -> Callable[[str], Target]:
    """Load the claim's target or reference model by role; a relative path is relative to the claim."""

    def load(role: str) -> Target:
        spec = claim_model_spec(claim, base, role)
        return load_target(spec, claim_scoring_options(claim), claim.model.api, access)

    return load


def _sentence(claim: ClaimManifest, verdict: str, summary: str) -> str:
    return f"{verdict}: the claim \u201c{claim.claim.statement}\u201d ({claim.claim.made_by}). {summary}"


def _model_identity(claim: ClaimManifest, ctx: RouteContext, base: Path) -> dict[str, Any]:
    """The loaded models' identities; a model never loaded is named by its spec (and weight digest
    where it is a local file), so no private path enters a bundle."""
    identity: dict[str, Any] = {
        "training_cutoff": claim.model.training_cutoff,
        "released": claim.model.released.isoformat() if claim.model.released else None,
        "dtype": claim.model.dtype,
        "max_tokens": claim.model.max_tokens,
        "max_chars": claim.model.max_chars,
        "stride": claim.model.stride,
    }
    for role in ("target", "reference"):
        spec = getattr(claim.model, role)
        if spec is None:
            continue
        if role in ctx.loaded:
            identity[role] = ctx.loaded[role].identity.as_finding()
            continue
        identity[role] = kind_of(spec).cls.unloaded_identity(spec, base)
    if kind_of(claim.model.target).remote:
        # An API target's weights: compared with the declared ones, or resting on the provider's word.
        identity["served_weights"] = ctx.parity.as_finding() if ctx.parity else None
    return identity


def _environment() -> dict[str, Any]:
    packages = {}
    for name in PACKAGES:
        try:
            packages[name] = version(name)
        except PackageNotFoundError:
            packages[name] = None
    environment = {"verifier": __version__, "python": platform.python_version(), "packages": packages}
    # Parts other packages added (entry points), each with the code it came from: named only when
    # there are any, so a plain install's findings keep their form.
    discover()
    if plugins := {
        registry.kind: {name: plugin.as_finding() for name, plugin in registry.plugins.items()}
        for registry in REGISTRIES
        if registry.plugins
    }:
        environment["plugins"] = plugins
    return environment


@dataclass(frozen=True)
class BundleResult:
    folder: Path
    findings: dict[str, Any]
    signed: bool
    created_key: Path | None  # the default key, when this run created it
    html_seconds: float
    pdf_seconds: float
    pdf_signer: str | None = None  # the certificate subject that signed report.pdf
    created_certificate: Path | None = None  # the self-signed report certificate, when this run issued it
    existed: bool = False  # an identical bundle (same claim and findings) was already there: nothing written


def _ours(folder: Path, key: Ed25519PrivateKey | None) -> bool:
    """Whether an existing bundle of these findings is one this run would have written: signed by
    this run's key and intact (every file, digest and the signature), or, unsigned, unsigned too. A
    folder someone else placed there with these findings but another report is not passed off as ours."""
    if key is None:
        return not (folder / ENVELOPE).exists() and unsigned_intact(folder)
    try:
        verify_bundle(folder, public_pem(key.public_key()))
    except VerifierError:
        return False
    return True


def audit_to_bundle(
    claim: str | Path,
    out_dir: Path = Path("evidence"),
    sign_key: Path | None = None,
    sign: bool = True,
    cache_dir: Path | None = None,
    progress: Progress | None = None,
    force: bool = False,
    ray: RayOptions | None = None,
    access: PeerAccess | None = None,
    plan: Path | None = None,
    tsa: list[str] | None = None,
    pdf_signing: PdfSigning | None = None,
    model_options: dict[str, str] | None = None,
) -> BundleResult:
    """Audit ``claim`` and write its evidence bundle under ``out_dir``.

    Signing uses ``sign_key``, else the default key (created, mode 0600, if it does not exist yet).
    The key is loaded before the audit runs, so a bad key fails in a second, not after scoring.
    An existing bundle of the same claim and findings is replaced only with ``force``. ``tsa``:
    time-stamping authorities that date the bundle's signature (checked before the audit runs).
    ``model_options``: the claim's ``model.device`` or ``model.dtype`` set for this run (the CLI's
    ``--device``, ``--dtype``), validated as claim fields and recorded in the findings' claim.
    A signed bundle's report.pdf is signed first (PAdES; B-T with the first TSA) by the
    certificate ``pdf_signing`` chooses, by default the signing key's own self-signed one.
    """

    check_tsa(tsa, sign, access)
    key, created = signing_key(sign_key) if sign else (None, None)
    document, issued = (
        (pdf_signing or PdfSigning()).signer(sign_key or default_key_path(), key) if key is not None else (None, None)
    )

    planned = read_plan(Path(plan)) if plan is not None else None
    if planned is not None and key is not None and planned.signer != key_id(public_pem(key.public_key())):
        raise VerifierError(
            f"--plan {planned.name}: signed by key {planned.signer[:16]}, not by the key that signs this audit; "
            "a plan counts only as the auditor's own commitment"
        )
    loaded = with_model_options(load_claim(claim), model_options or {})
    cache = ScoreCache(cache_dir)
    try:
        prescored = prescore_claim(loaded, cache_dir, ray) if ray is not None else None
        result = run_audit(loaded, cache=cache, progress=progress, access=access, plan=planned)
    except KeyboardInterrupt:
        raise Interrupted(
            f"{cache.counts.stored} documents' scores and {cache.responses.stored} API answers were stored in the "
            f"cache during this run ({cache.counts.served} read from it); the same command again resumes from them "
            "(nothing half-written was kept)"
        ) from None
    # How this run got its numbers: signed in the manifest and shown in the report, but outside the
    # findings, whose digest must not depend on what the cache held before.
    run = {
        "cache": asdict(cache.counts),
        "api_cache": asdict(cache.responses),
        "api": result.usage,
        **({"prescored": prescored} if prescored else {}),
    }
    digest = findings_digest(result.findings)
    existing = bundle_folder(result.findings, out_dir)
    asked_more = bool(tsa) or pdf_signing not in (None, PdfSigning())  # a timestamp or a certificate to add
    if not force and not asked_more and holds_findings(existing, result.findings) and _ours(existing, key):
        return BundleResult(existing, result.findings, key is not None, created, 0.0, 0.0, existed=True)
    started = time.perf_counter()
    signer = key_id(public_pem(key.public_key())) if key is not None else None
    html = render_html(result.findings, digest, signer, run)
    html_s = time.perf_counter() - started
    started = time.perf_counter()
    pdf = render_pdf(html)
    if document is not None:
        pdf = sign_pdf(pdf, document, result.findings["claim"]["claim"]["id"], digest, tsa[0] if tsa else None, access)
    pdf_s = time.perf_counter() - started
    folder = write_bundle(result, html, pdf, out_dir, key, force=force, run=run, tsa=tsa, access=access)
    return BundleResult(
        folder, result.findings, key is not None, created, html_s, pdf_s, document.subject if document else None, issued
    )
