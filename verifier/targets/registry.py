"""Target kinds: how a model SPEC names the kind of model it is, and what that kind can do.

A target kind is a class in one module of ``targets/kinds`` (or of a plugin package, through the
``verifier.targets`` entry points) decorated with ``register``. The registry answers, for a spec and
before anything is loaded: which kind it is, its capabilities, the options a claim may give it
(``model.api``), the limitations every route that queries it must state, and whether it is another
party's server. Nothing else in verifier tests a spec's prefix.

A kind's class provides, besides the ``Target`` protocol:

- ``kind`` (the name findings give), ``capabilities``, ``limitations`` and ``remote`` (class attributes);
- ``load(spec, scoring, api, access)``: the loaded target (a classmethod);
- ``check_spec(spec)``: raises ``VerifierError`` on a malformed spec, loading nothing (a classmethod);
- ``unloaded_identity(spec, base)``: how the findings name a model the audit never loaded (a classmethod).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

from pydantic import BaseModel

from verifier.errors import VerifierError
from verifier.plugins import Registry, part_modules


class TargetClass(Protocol):
    """What ``register`` reads off a target kind's class."""

    kind: ClassVar[str]
    capabilities: ClassVar[frozenset[str]]
    limitations: ClassVar[tuple[str, ...]]
    remote: ClassVar[bool]

    @classmethod
    def load(cls, spec: str, scoring: Any, api: Any, access: Any) -> Any: ...

    @classmethod
    def check_spec(cls, spec: str) -> None: ...

    @classmethod
    def unloaded_identity(cls, spec: str, base: Any) -> dict[str, object]: ...


@dataclass(frozen=True)
class TargetKind:
    """One kind of audited model; ``prefix`` None marks the default kind (local files, folders, hub ids)."""

    cls: type[TargetClass]
    prefix: str | None
    options: type[BaseModel] | None  # what a claim's ``model.api`` holds for this kind (None: it takes none)

    @property
    def name(self) -> str:
        return self.cls.kind

    @property
    def capabilities(self) -> frozenset[str]:
        return self.cls.capabilities

    @property
    def limitations(self) -> tuple[str, ...]:
        return self.cls.limitations

    @property
    def remote(self) -> bool:
        return self.cls.remote

    def matches(self, spec: str) -> bool:
        return self.prefix is not None and spec.startswith(self.prefix)


# Every module of kinds/, then plugins: discovered when first read.
KINDS: Registry[TargetKind] = Registry(
    "targets", lambda: part_modules("verifier.targets.kinds"), module_of=lambda kind: kind.cls.__module__
)
PREFIX = re.compile(r"^[a-z][a-z0-9-]*:$")
REQUIRED = ("kind", "capabilities", "limitations", "remote", "load", "check_spec", "unloaded_identity")


def register(prefix: str | None, options: type[BaseModel] | None = None):  # noqa: ANN201 - a class decorator
    """Class decorator: make a target kind available to specs starting with ``prefix`` (None: the
    default kind, which takes every spec no other kind claims; there is one)."""

    def add(cls: type) -> type:
        if prefix is not None and not PREFIX.match(prefix):
            raise ValueError(
                f"target kind {getattr(cls, 'kind', cls.__name__)!r}: prefix {prefix!r} must be a scheme like 'name:' "
                "(lower-case letters, digits and '-', then ':'), so it can never take a model name, path or hub id"
            )
        if missing := [name for name in REQUIRED if not hasattr(cls, name)]:
            raise ValueError(f"target kind {cls.__name__} lacks {', '.join(missing)}")
        for other in KINDS._parts.values():  # the kinds registered so far (reading KINDS would discover them all)
            if prefix is None and other.prefix is None:
                raise ValueError(f"target kinds {other.name!r} and {cls.kind!r} both claim to be the default kind")
            if prefix and other.prefix and (prefix.startswith(other.prefix) or other.prefix.startswith(prefix)):
                raise ValueError(f"target kinds {other.name!r} and {cls.kind!r} claim overlapping prefixes")
        KINDS.add(cls.kind, TargetKind(cls, prefix, options))
        return cls

    return add


def kind_of(spec: str) -> TargetKind:
    """The kind a SPEC names: the one whose prefix it starts with, else the default kind."""
    for kind in KINDS.values():
        if kind.matches(spec):
            return kind
    for kind in KINDS.values():
        if kind.prefix is None:
            return kind
    raise VerifierError(f"no target kind takes {spec!r} (registered: {', '.join(sorted(KINDS)) or 'none'})")


def kind_of_target(target: object) -> TargetKind | None:
    """The registered kind of a loaded target (None for a target made outside the registry, as tests do)."""
    for kind in KINDS.values():
        if isinstance(target, kind.cls):
            return kind
    return None
