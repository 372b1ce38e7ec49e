"""Policies (YAML under verifier/policies/): the decision tree, its parameters and what each route may grant.

A policy is data: an ordered list of routes, each with its parameters and the verdicts it may
grant. Everything is checked when the policy is read, with one line naming the file and key:
the route must be registered (or planned), its parameters must satisfy the route's pydantic
model (bounds included), and it may grant only verdicts its table can reach. The evidence a
route needs is declared by the route itself, so no policy key can silently skip it.
"""

from __future__ import annotations

import difflib
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from verifier.boundary.resources import resource
from verifier.boundary.safe_yaml import load_yaml_bytes, load_yaml_file, read_bounded
from verifier.errors import VerifierError, first_validation_error
from verifier.verdicts import ALWAYS_ALLOWED, Verdict

# Old route names a policy may still use, for a release: the corpus route was corpus_lookup.
OLD_ROUTE_NAMES = {"corpus_lookup": "corpus"}


class RouteSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")
    route: str

    @field_validator("route")
    @classmethod
    def _new_name(cls, name: str) -> str:
        return OLD_ROUTE_NAMES.get(name, name)

    grants: list[Verdict] | None = Field(
        None, description="verdicts the route may grant; default: every verdict its table reaches"
    )
    params: dict[str, Any] = Field(default_factory=dict)


class PolicyFile(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str
    version: int
    routes: list[RouteSpec] = Field(min_length=1)
    error_control: Literal["holm", "bh"] = Field(
        "holm",
        description="a batch audit's adjustment across its claims: holm "
        "(family-wise error rate) or bh (false discovery rate)",
    )


class RouteOverride(BaseModel):
    """What a policy that extends another changes in one of its routes."""

    model_config = ConfigDict(extra="forbid")
    grants: list[Verdict] | None = Field(None, description="replaces the route's grants")
    params: dict[str, Any] = Field(default_factory=dict, description="merged into the route's params, key by key")


class PolicyExtension(BaseModel):
    """A policy stated as another (``extends``: a bundled name, or a path relative to this file)
    with a few keys overridden; its routes, their order and every other parameter are the base's."""

    model_config = ConfigDict(extra="forbid")
    name: str
    version: int
    extends: str
    error_control: Literal["holm", "bh"] | None = None
    routes: dict[str, RouteOverride] = Field(default_factory=dict)


MAX_EXTENDS = 4  # policies in one chain of extends


@dataclass(frozen=True)
class PolicyRoute:
    """One validated step of the tree: the route class (None for a planned route), its params, its grants."""

    name: str
    route: Any  # type[Route], or None for a planned route; Any keeps this module free of the routes' imports
    params: BaseModel  # the route's validated params
    grants: frozenset[Verdict]
    requires: frozenset[str]


@dataclass(frozen=True)
class Policy:
    name: str
    version: int
    routes: list[PolicyRoute]
    file: str
    sha256: str
    # The policy as read and validated (one that extends another: resolved, both files named): what the bundle copies.
    raw: bytes
    error_control: str = "holm"


BUNDLED_POLICIES = ("default", "strict")


def resolve_policy_path(name: str | Path, base: Path) -> Path:
    """A bare name means a bundled policy (default, strict); anything else is a path relative to ``base``."""
    text = str(name)
    if "/" not in text and not text.endswith((".yaml", ".yml")):
        if text not in BUNDLED_POLICIES:
            raise VerifierError(
                f"policy {text!r}: no bundled policy of that name; bundled: {', '.join(BUNDLED_POLICIES)} "
                f"(or give a .yaml path relative to the claim)"
            )
        return resource("policies", f"{text}.yaml")
    return (base / text).resolve()


def shown(path: Path) -> Path:
    """How an error names a file: relative to the working folder when it is below it, else by
    its name (a resolved or bundled path says where the auditor keeps things, and errors get pasted)."""
    try:
        return path.resolve().relative_to(Path.cwd().resolve())
    except ValueError:
        return Path(path.name)


def load_policy(path: Path) -> Policy:
    """The validated policy, with the SHA-256 of the bytes it was read from (recorded in the
    findings): its file, or for a policy that extends another, the resolved policy the bundle carries."""
    from verifier.routes import PLANNED, ROUTES

    label = shown(path)
    document, data = _resolved(path, label, 0)
    try:
        raw = PolicyFile.model_validate(document)
    except ValidationError as exc:
        raise VerifierError(f"{label}: {first_validation_error(exc, model=PolicyFile)}") from None
    steps, seen = [], set()
    for i, spec in enumerate(raw.routes):
        where = f"{label}: routes.{i}"
        if spec.route in seen:
            raise VerifierError(f"{where}.route: {spec.route!r} appears twice")
        seen.add(spec.route)
        if spec.route not in ROUTES and spec.route not in PLANNED:
            known = sorted(ROUTES) + sorted(PLANNED)
            close = difflib.get_close_matches(spec.route, known, n=1)
            raise VerifierError(
                f"{where}.route: unknown route {spec.route!r}"
                + (f"; did you mean {close[0]!r}?" if close else f"; known: {', '.join(known)}")
            )
        route = ROUTES.get(spec.route)
        declared = route if route is not None else PLANNED[spec.route]
        try:
            params = declared.Params.model_validate(spec.params)
        except ValidationError as exc:
            raise VerifierError(
                f"{where}.params.{first_validation_error(exc, top='(params)', model=declared.Params)}"
            ) from None
        reachable = route.reachable() if route is not None else set(declared.reachable)
        grants = frozenset(spec.grants) if spec.grants is not None else frozenset(reachable)
        if extra := sorted(v.value for v in grants - reachable - ALWAYS_ALLOWED):
            raise VerifierError(
                f"{where}.grants: {spec.route} can never reach {', '.join(extra)}; "
                f"it can reach {', '.join(sorted(v.value for v in reachable))}"
            )
        steps.append(PolicyRoute(spec.route, route, params, grants, declared.requires))
    return Policy(raw.name, raw.version, steps, path.name, hashlib.sha256(data).hexdigest(), data, raw.error_control)


def _resolved(path: Path, label: Path, depth: int) -> tuple[Any, bytes]:
    """The policy document at ``path`` and the bytes it stands for: the file itself, or, for a
    policy that extends another, the base's document with the overrides applied, written out as
    YAML under a header naming both files by SHA-256 (so the digest covers every byte that decides)."""
    data = read_bounded(path, "policy", label)
    document = load_yaml_bytes(data, label)
    if not isinstance(document, dict) or "extends" not in document:
        return document, data
    try:
        extension = PolicyExtension.model_validate(document)
    except ValidationError as exc:
        raise VerifierError(f"{label}: {first_validation_error(exc)}") from None
    if depth + 1 >= MAX_EXTENDS:
        raise VerifierError(f"{label}: extends: more than {MAX_EXTENDS} policies in one chain (does it extend itself?)")
    base_path = resolve_policy_path(extension.extends, path.parent)
    base_label = shown(base_path)
    base, base_bytes = _resolved(base_path, base_label, depth + 1)
    try:  # the base as a policy in its own right: a route it could not load itself is not extended either
        base_file = PolicyFile.model_validate(base)
    except ValidationError as exc:
        raise VerifierError(f"{base_label}: {first_validation_error(exc)} (the policy {label} extends)") from None
    steps: dict[str, dict[str, Any]] = {}
    for i, step in enumerate(base_file.routes):
        if step.route in steps:
            raise VerifierError(
                f"{base_label}: routes.{i}.route: {step.route!r} appears twice (the policy {label} extends)"
            )
        steps[step.route] = step.model_dump(mode="json", exclude_none=True)
    for name, override in extension.routes.items():
        step = steps.get(OLD_ROUTE_NAMES.get(name, name))
        if step is None:
            raise VerifierError(
                f"{label}: routes.{name}: {extension.extends} has no route {name!r} (routes: {', '.join(steps)})"
            )
        step["params"] = {**step.get("params", {}), **override.params}
        if override.grants is not None:
            step["grants"] = [v.value for v in override.grants]
        _check_params(step["route"], step["params"], f"{label}: routes.{name}.params")
    merged = {
        "name": extension.name,
        "version": extension.version,
        "error_control": extension.error_control or base_file.error_control,
        "routes": list(steps.values()),
    }
    # File names are quoted (JSON), so a name holding a line break cannot add keys to the YAML below.
    header = (
        f"# {json.dumps(path.name)} resolved: {json.dumps(base_path.name)} as resolved (SHA-256 "
        f"{hashlib.sha256(base_bytes).hexdigest()}) with the overrides of {json.dumps(path.name)} (SHA-256 "
        f"{hashlib.sha256(data).hexdigest()})\n"
    )
    return merged, (header + yaml.safe_dump(merged, sort_keys=False, allow_unicode=True)).encode("utf-8")


def _check_params(route: str, params: dict[str, Any], where: str) -> None:
    """An override's params against its route's model, named by the route (not by its position in the base)."""
    from verifier.routes import PLANNED, ROUTES

    declared = ROUTES.get(route) or PLANNED.get(route)
    if declared is not None:
        try:
            declared.Params.model_validate(params)
        except ValidationError as exc:
            raise VerifierError(f"{where}.{first_validation_error(exc, top='(params)')}") from None


def load_regulation_map() -> dict[str, Any]:
    return load_yaml_file(resource("policies", "regulation.yaml"), "regulation map")


def departures_from_default(policy: Policy) -> tuple[list[str], list[str]]:
    """How ``policy`` departs from the bundled default: (looser, other).

    Looser: routes dropped, verdicts granted beyond the default's, parameters moved in the
    direction their field marks as weaker. Other: every other departure that can change a
    verdict - verdicts the default grants and this policy does not (which can hide an adverse
    result as surely as a looser alpha can fake one), routes reordered, parameters tightened or
    changed. In a dispute either side may gain from a departure, so the report names them all.
    """
    default = load_policy(resource("policies", "default.yaml"))
    mine = {step.name: step for step in policy.routes}
    looser, other = [], []
    if policy.error_control != default.error_control:  # holm -> bh: a batch controls the false discovery rate only
        looser.append(
            f"error_control {policy.error_control} (default {default.error_control}): a batch controls the false "
            "discovery rate, not the chance of any false verdict"
        )
    order = [step.name for step in policy.routes if step.name in {b.name for b in default.routes}]
    if order != [b.name for b in default.routes if b.name in mine]:
        other.append(f"routes reordered: {' > '.join(order)}")
    for base in default.routes:
        step = mine.get(base.name)
        if step is None:
            looser.append(f"route {base.name} removed")
            continue
        if extra := sorted(v.value for v in step.grants - base.grants - ALWAYS_ALLOWED):
            looser.append(f"{base.name} may grant {', '.join(extra)}")
        if fewer := sorted(v.value for v in base.grants - step.grants - ALWAYS_ALLOWED):
            other.append(f"{base.name} may not grant {', '.join(fewer)}")
        weaker, changed = _compare_params(step.params, base.params)
        looser += [f"{base.name}.{item}" for item in weaker]
        other += [f"{base.name}.{item}" for item in changed]
    return looser, other


def _compare_params(params: BaseModel, default: BaseModel) -> tuple[list[str], list[str]]:
    weaker, changed = [], []
    for name, info in type(params).model_fields.items():
        direction = info.json_schema_extra.get("weaker") if isinstance(info.json_schema_extra, dict) else None
        mine, base = getattr(params, name), getattr(default, name)
        if mine == base:
            continue
        loosened = (
            (direction == "higher" and mine > base)
            or (direction == "lower" and mine < base)
            or direction == "either"
            or (direction == "false" and not mine)
            or (direction == "true" and mine)
        )
        (weaker if loosened else changed).append(f"{name} {mine} (default {base})")
    return weaker, changed
