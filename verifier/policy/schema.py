"""Policies (YAML under verifier/policies/): the decision tree, its thresholds and verdict caps.

A policy is data: an ordered list of routes, each with the evidence it needs (``when``), its
parameters and the strongest verdict it may grant. Verdicts are ordered by strength; a route's
verdict above its cap is lowered to the cap (or to INCONCLUSIVE, for caps that assert a result).
"""

from __future__ import annotations

import hashlib
from enum import Enum
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from verifier.errors import VerifierError, first_validation_error
from verifier.resources import resource



class Verdict(str, Enum):
    VERIFIED = "VERIFIED"  # corpus lookup: checkable by anyone
    SUPPORTED = "SUPPORTED"  # a sound statistical route supports the claim
    CONTRADICTED = "CONTRADICTED"  # a sound statistical route contradicts the claim
    INCONCLUSIVE = "INCONCLUSIVE"  # a sound route, no significant result
    REJECTED_METHOD = "REJECTED-METHOD"  # the evidence offered cannot test the claim (e.g. date shift)
    UNVERIFIABLE = "UNVERIFIABLE"  # disclosure only

    @property
    def strength(self) -> int:
        return STRENGTH[self]


STRENGTH = {
    Verdict.VERIFIED: 5,
    Verdict.SUPPORTED: 4,
    Verdict.CONTRADICTED: 4,
    Verdict.INCONCLUSIVE: 3,
    Verdict.REJECTED_METHOD: 2,
    Verdict.UNVERIFIABLE: 1,
}


def cap_verdict(verdict: Verdict, cap: Verdict) -> Verdict:
    """Never grant more than ``cap``: a result above it falls to the cap, or to INCONCLUSIVE
    where the cap itself asserts a result (SUPPORTED caps a CONTRADICTED at its own strength)."""
    if verdict.strength <= cap.strength:
        return verdict
    return cap if cap.strength <= Verdict.INCONCLUSIVE.strength else Verdict.INCONCLUSIVE


class RouteSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")
    route: str
    when: str = Field(description="evidence key that must be present, or 'always'")
    strongest_verdict: Verdict
    params: dict[str, Any] = Field(default_factory=dict)


class Policy(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str
    version: int
    routes: list[RouteSpec]


def resolve_policy_path(name: str | Path, base: Path) -> Path:
    """A bare name means policies/NAME.yaml; anything else is a path relative to ``base``."""
    text = str(name)
    if "/" not in text and not text.endswith((".yaml", ".yml")):
        return resource("policies", f"{text}.yaml")
    return (base / text).resolve()


def load_yaml(path: Path) -> Any:
    if not path.is_file():
        raise VerifierError(f"{path}: policy file not found")
    try:
        return yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise VerifierError(f"{path}: not valid YAML ({str(exc).splitlines()[0]})") from None


def load_policy(path: Path) -> tuple[Policy, str]:
    """The validated policy and the SHA-256 of its file (recorded in the findings)."""
    raw = load_yaml(path)
    try:
        policy = Policy.model_validate(raw)
    except ValidationError as exc:
        raise VerifierError(f"{path}: {first_validation_error(exc)}") from None
    return policy, hashlib.sha256(path.read_bytes()).hexdigest()


def load_regulation_map() -> dict[str, Any]:
    return load_yaml(resource("policies", "regulation.yaml"))
