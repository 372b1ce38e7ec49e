"""``verifier reproduce BUNDLE``: re-run an audit from what its bundle holds and compare every number.

A bundle holds the claim as it was run (``claim.yaml``: policy, seed, document sets and their
filters, the model's spec), the policy's digest, every input file's SHA-256 and the model's
identity. Reproducing it re-reads the claim from the bundle, looks its inputs up where the user
points (``--inputs``: the folder the claim's relative paths start from), re-runs the audit and
compares the new findings with the bundle's, leaf by leaf (the inputs' digests first: inputs other
than the bundle's are reported and nothing is re-run):

- digests, counts, names, verdicts and every other non-float: exactly;
- floats (both sides floats) within ABSOLUTE + RELATIVE x the larger magnitude: scores computed on
  another CPU (other kernels, other summation orders) move in their last digits; a p-value that moves
  by one relabelling of a permutation test (1/(B+1)) is reported as a difference, to be read;
- the environment (package versions) is printed, never compared.

A claim audited in a batch is compared with its unadjusted findings (its verdict before the batch's
error control; its p-value found with the batch's relabelling count). The bundle's integrity is
checked first (``verify_bundle``; an unsigned bundle: its manifest's digests): reproducing altered
findings would compare numbers nobody wrote.
"""

from __future__ import annotations

import json
import math
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from verifier.audit import run_audit
from verifier.boundary.peers import read_json
from verifier.boundary.safe_yaml import load_yaml_bytes
from verifier.claims import claim_of_bytes
from verifier.errors import VerifierError
from verifier.policy.engine import input_digests
from verifier.scoring.table import Progress
from verifier.targets import ScoreCache
from verifier.trust import verify_bundle
from verifier.trust.bundle import ENVELOPE, FINDINGS, PLAN, decided_test, unsigned_intact

ABSOLUTE = 1e-6
RELATIVE = 1e-3
NOT_COMPARED = frozenset({"environment"})  # printed beside the result, not a number of the audit
ADJUSTED = frozenset({"verdict", "lead", "verdict_sentence", "batch"})  # what a batch's error control rewrites


@dataclass(frozen=True)
class Difference:
    path: str
    bundle: Any
    rerun: Any


@dataclass
class Reproduction:
    compared: int = 0  # leaves compared
    differences: list[Difference] = field(default_factory=list)
    environment: tuple[Any, Any] = (None, None)  # (the bundle's, this run's)
    notes: list[str] = field(default_factory=list)  # what was not compared, and why


def same_number(a: float, b: float) -> bool:
    """Whether two floats agree within the module's tolerance (NaN equals NaN: "not computed")."""
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    if math.isinf(a) or math.isinf(b):
        return a == b
    return abs(a - b) <= ABSOLUTE + RELATIVE * max(abs(a), abs(b))


def compare(bundle: Any, rerun: Any, path: str, found: Reproduction, skip: frozenset[str] = frozenset()) -> None:
    """Walk both findings; record every leaf that differs beyond its tolerance."""
    if isinstance(bundle, dict) and isinstance(rerun, dict):
        for key in sorted(set(bundle) | set(rerun)):
            where = f"{path}.{key}" if path else key
            if where in skip:
                continue
            if key not in bundle or key not in rerun:
                found.differences.append(Difference(where, bundle.get(key, "(absent)"), rerun.get(key, "(absent)")))
                continue
            compare(bundle[key], rerun[key], where, found, skip)
        return
    if isinstance(bundle, list) and isinstance(rerun, list):
        if len(bundle) != len(rerun):
            found.differences.append(Difference(f"{path} (length)", len(bundle), len(rerun)))
            return
        for i, (a, b) in enumerate(zip(bundle, rerun)):
            compare(a, b, f"{path}[{i}]", found, skip)
        return
    found.compared += 1
    if type(bundle) is float and type(rerun) is float:  # the tolerance is for floats only: counts, flags exactly
        if not same_number(bundle, rerun):
            found.differences.append(Difference(path, bundle, rerun))
    elif type(bundle) is not type(rerun) or bundle != rerun:
        found.differences.append(Difference(path, bundle, rerun))


def reproduce_bundle(
    bundle: Path,
    inputs: Path,
    model: str | None = None,
    cache_dir: Path | None = None,
    progress: Progress | None = None,
) -> Reproduction:
    """Re-run the audit of ``bundle`` with its inputs looked up under ``inputs`` (and the model at
    ``model`` when the bundle names a local model by its folder or file name only). Nothing is read
    from a score cache unless ``cache_dir`` is given: a reproduction recomputes every score."""
    if (bundle / ENVELOPE).exists():
        verify_bundle(bundle)  # intact, whoever signed it
    elif not unsigned_intact(bundle):
        raise VerifierError(f"{bundle}: not an intact bundle (its files are not those its manifest lists)")
    try:
        return _reproduce(bundle, inputs, model, cache_dir, progress)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise VerifierError(f"{bundle}: not readable as an audit's bundle ({type(exc).__name__}: {exc})") from None


def _reproduce(
    bundle: Path, inputs: Path, model: str | None, cache_dir: Path | None, progress: Progress | None
) -> Reproduction:
    before = read_json((bundle / FINDINGS).read_bytes())
    if not isinstance(before, dict) or not isinstance(before.get("claim"), dict):
        raise VerifierError(f"{bundle / FINDINGS}: not an audit's findings")
    claim = load_yaml_bytes((bundle / "claim.yaml").read_bytes(), bundle / "claim.yaml")
    skip: set[str] = set()
    if model is not None:
        named = before["model"]["target"].get("digests", {}).get("weights")
        if not named:
            raise VerifierError(
                "--model: the bundle records no weights digest to check another spec against; reproduce it with the "
                "model it names"
            )
        claim["model"]["target"] = model
        skip |= {"claim.model.target", "model.target.spec"}  # named as given now; the weights digest is compared
    loaded = claim_of_bytes(yaml.safe_dump(claim, sort_keys=False).encode(), inputs / ".reproduced-claim.yaml")
    found = Reproduction()
    compare(before.get("inputs"), json.loads(json.dumps(input_digests(loaded))), "inputs", found)
    if found.differences:  # other inputs than the bundle's: no number of the re-run would mean anything
        return found
    batch = before.get("batch")
    plan = bundle / PLAN
    with tempfile.TemporaryDirectory(prefix="verifier-reproduce-") as fresh:
        result = run_audit(
            loaded,
            cache=ScoreCache(cache_dir or Path(fresh)),
            progress=progress,
            family_size=int(batch["claims"]) if batch else 1,
            plan=plan if plan.is_file() else None,
        )
    after = json.loads(json.dumps(result.findings))  # as the bundle stores them (tuples as lists)
    if model is not None and not after["model"]["target"].get("digests", {}).get("weights"):
        found.differences.append(Difference("model.target.digests.weights", "(recorded)", "(not computed)"))
    found.environment = (before.get("environment"), after.get("environment"))
    if batch:
        before, after = _unadjusted(before, after, batch, found)
    compare(before, after, "", found, frozenset(skip | NOT_COMPARED))
    return found


def _unadjusted(
    before: dict[str, Any], after: dict[str, Any], batch: dict[str, Any], found: Reproduction
) -> tuple[dict[str, Any], dict[str, Any]]:
    """A batch member's findings and the re-run's, compared before the batch's error control: the
    re-run's p-value must be the one the batch adjusted, and the bundle's verdict the one the
    adjustment gives from it (the adjusted p-value needs the whole batch: read, not recomputed)."""
    test = decided_test(after)
    if test is not None and not same_number(float(batch.get("p_value", math.nan)), test[0]):
        found.differences.append(Difference("batch.p_value", batch.get("p_value"), test[0]))
    unadjusted = batch["unadjusted_verdict"]
    weakened = (
        test is not None
        and unadjusted in ("SUPPORTED", "CONTRADICTED")
        and not float(batch.get("adjusted_p_value", math.nan)) < test[1]
    )
    if before["verdict"] != ("INCONCLUSIVE" if weakened else unadjusted):
        found.differences.append(Difference("verdict (after the batch's adjustment)", before["verdict"], unadjusted))
    drop = ADJUSTED | ({"path", "method_validation", "regulation"} if weakened else set())
    if weakened:
        found.notes.append(
            "the batch weakened this claim's verdict: its route record, validation rows and regulation map were "
            "rewritten by the adjustment and are not compared"
        )
    return (
        {k: v for k, v in before.items() if k not in drop} | {"verdict": unadjusted},
        {k: v for k, v in after.items() if k not in drop} | {"verdict": after["verdict"]},
    )
