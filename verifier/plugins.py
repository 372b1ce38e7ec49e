"""Where verifier's parts come from: the modules of its part folders, then other packages' entry points.

Each registry (``ROUTES``, ``signals.REGISTRY``, ``targets.KINDS``) is a ``Registry``: it discovers
its parts the first time it is read, never when a module is imported, so a module that a part
imports (a helper shared by two routes, say) may itself import the part's contract without a cycle.

There is no hand-kept list of routes, signals or target kinds. A part is a module that registers
itself with a decorator (``routes.base.register``, ``signals.base.register``,
``targets.registry.register``); discovery imports every module of the part folders (all but
``base``, which holds the contract, and subpackages, which hold a part's data) and then every
entry point of the group, so a third party adds a part by installing a package that declares, in
its ``pyproject.toml``::

    [project.entry-points."verifier.signals"]
    my_signal = "my_package.my_signal"      # a module whose import registers the part

The contract tests (``verifier.conformance``) check that every discovered module registered
something, so a file dropped in a part folder cannot be silently ignored.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from importlib.metadata import entry_points
from typing import Generic, TypeVar

from verifier.errors import VerifierError


@dataclass(frozen=True)
class Plugin:
    """Where a plugin part came from: its module and the distribution that installed it (findings
    name both, since a verdict that used a plugin's code rests on that code)."""

    module: str
    distribution: str | None
    version: str | None

    def as_finding(self) -> str:
        return f"{self.module} ({self.distribution or 'unknown distribution'} {self.version or ''})".replace(" )", ")")


GROUPS = {"routes": "verifier.routes", "signals": "verifier.signals", "targets": "verifier.targets"}  # part kind -> entry-point group
CONTRACT_MODULE = "base"  # the module of a part folder that holds the contract, not a part


def part_modules(package: str) -> list[str]:
    """The modules of ``package`` that are parts: every one but ``base`` (subpackages are data or families)."""
    found = importlib.import_module(package)
    return sorted(info.name for info in pkgutil.iter_modules(found.__path__, f"{package}.")
                  if not info.ispkg and info.name.rsplit(".", 1)[1] != CONTRACT_MODULE)


def subpackages(package: str) -> list[str]:
    """The subpackages of ``package``: the families of signals (``gray_box``, ``output_only``, ``traces``)."""
    found = importlib.import_module(package)
    return sorted(info.name for info in pkgutil.iter_modules(found.__path__, f"{package}.") if info.ispkg)


def import_parts(modules: list[str], group: str) -> dict[str, Plugin]:
    """Import ``modules``, then load the entry points of ``group``; returns each plugin by
    entry-point name (a plugin that fails to load is one line naming it, not a traceback)."""
    for name in modules:
        importlib.import_module(name)
    plugins = {}
    for point in entry_points(group=group):
        try:
            point.load()
        except Exception as exc:  # a third party's code: any failure is theirs, named in one line
            raise VerifierError(f"plugin {point.name!r} ({group} entry point {point.value}) failed to load: "
                                f"{type(exc).__name__}: {exc}") from None
        dist = point.dist
        plugins[point.name] = Plugin(point.module, dist.name if dist else None, dist.version if dist else None)
    return plugins


Part = TypeVar("Part")


class Registry(Mapping[str, Part], Generic[Part]):
    """Parts by name, discovered on the first read: ``modules()`` are imported, then the entry points
    of the kind's group (``plugins`` maps each plugin's entry-point name to where it came from). Parts are
    listed in the order of their modules in discovery, then in the order each module registers
    them, whatever order the modules happened to be imported in."""

    def __init__(self, kind: str, modules: Callable[[], list[str]], module_of: Callable[[Part], str] = lambda part: part.__module__) -> None:
        self.kind = kind
        self._modules = modules
        self._module_of = module_of
        self._parts: dict[str, Part] = {}
        self._state = "new"  # -> "loading" -> "loaded"; reads while loading see what is registered so far
        self.plugins: dict[str, Plugin] = {}

    def modules(self) -> list[str]:
        """The modules discovery imports (before plugins)."""
        return self._modules()

    def add(self, name: str, part: Part) -> None:
        """Register ``part`` (the decorators call this; it never triggers discovery)."""
        if name in self._parts:
            raise ValueError(f"{self.kind[:-1]} {name!r} registered twice")
        self._parts[name] = part

    def load(self) -> Registry[Part]:
        if self._state == "new":
            self._state = "loading"
            try:
                modules = self._modules()
                self.plugins = import_parts(modules, GROUPS[self.kind])
            except BaseException:
                self._state = "new"
                raise
            rank = {name: i for i, name in enumerate(modules + sorted({p.module for p in self.plugins.values()}))}
            order = sorted(self._parts, key=lambda name: rank.get(self._module_of(self._parts[name]), len(rank)))  # stable: in-module order kept
            self._parts = {name: self._parts[name] for name in order}
            self._state = "loaded"
        return self

    def __getitem__(self, name: str) -> Part:
        return self.load()._parts[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self.load()._parts)

    def __len__(self) -> int:
        return len(self.load()._parts)
