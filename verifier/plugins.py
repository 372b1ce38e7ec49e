"""Where verifier's parts come from: the modules of its part folders, then other packages' entry points.

Each registry (``ROUTES``, ``signals.REGISTRY``, ``targets.KINDS``) is a ``Registry``. The first read
of any of them discovers the parts of all three, together, never when a module is imported (so a
helper shared by two routes may itself import the route contract without a cycle): first every
built-in part, then every plugin. Each part a plugin adds, in any registry and whatever its
entry-point group, is credited to that plugin (its entry point, module, distribution, version and
the SHA-256 of the module file), and findings name it; a plugin that fails to load is one line and
leaves no part behind.

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

import hashlib
import importlib
import pkgutil
import re
import sys
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from importlib.metadata import entry_points
from pathlib import Path
from typing import Generic, TypeVar

from verifier.errors import VerifierError

GROUPS = {
    "routes": "verifier.routes",
    "signals": "verifier.signals",
    "targets": "verifier.targets",
}  # part kind -> entry-point group
CONTRACT_MODULE = "base"  # the module of a part folder that holds the contract, not a part
# The modules that define the three registries: imported before discovery, so that all three exist.
REGISTRY_MODULES = ("verifier.routes.base", "verifier.signals.base", "verifier.targets.registry")
NAME = re.compile(r"^[a-z][a-z0-9_]*$")  # a part's name: it appears in policies, findings and CLI options


@dataclass(frozen=True)
class Plugin:
    """Where a plugin part came from (findings name it: a verdict that could use a plugin's code
    rests on that code)."""

    entry_point: str  # "group:name = value"
    module: str
    distribution: str | None
    version: str | None
    sha256: str | None  # of the module's file, as loaded

    def as_finding(self) -> dict[str, str | None]:
        return {
            "entry_point": self.entry_point,
            "module": self.module,
            "distribution": self.distribution,
            "version": self.version,
            "module_sha256": self.sha256,
        }


def part_modules(package: str) -> list[str]:
    """The modules of ``package`` that are parts: every one but ``base`` and private helpers shared by
    parts (a leading underscore); subpackages are data or families."""
    found = importlib.import_module(package)
    return sorted(
        info.name
        for info in pkgutil.iter_modules(found.__path__, f"{package}.")
        if not info.ispkg and (short := info.name.rsplit(".", 1)[1]) != CONTRACT_MODULE and not short.startswith("_")
    )


def subpackages(package: str) -> list[str]:
    """The subpackages of ``package``: the families of signals (``gray_box``, ``output_only``, ``traces``)."""
    found = importlib.import_module(package)
    return sorted(info.name for info in pkgutil.iter_modules(found.__path__, f"{package}.") if info.ispkg)


def _file_sha256(module: str) -> str | None:
    path = getattr(sys.modules.get(module), "__file__", None)
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest() if path else None
    except OSError:
        return None


Part = TypeVar("Part")
REGISTRIES: list[Registry] = []  # every registry made, in the order REGISTRY_MODULES makes them
_discovery = {"state": "new"}  # -> "loading" -> "loaded": one discovery for all registries


def discover() -> None:
    """Import every built-in part of every registry, then every plugin of every group (once)."""
    if _discovery["state"] != "new":
        return
    _discovery["state"] = "loading"
    try:
        for name in REGISTRY_MODULES:
            importlib.import_module(name)
        for registry in REGISTRIES:
            for name in registry.modules():
                importlib.import_module(name)
        for group in GROUPS.values():
            for point in entry_points(group=group):
                _load_plugin(point, group)
    except BaseException:
        _discovery["state"] = "new"
        raise
    for registry in REGISTRIES:
        registry.sort()
    _discovery["state"] = "loaded"


def _load_plugin(point, group: str) -> None:  # noqa: ANN001 - an importlib.metadata.EntryPoint
    """Load one entry point; credit every part it added, in any registry, to it; on any failure
    (SystemExit included: a plugin does not end the program) remove what it added and say so in one line."""
    before = {id(registry): set(registry._parts) for registry in REGISTRIES}
    try:
        point.load()
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - a third party's code: any failure is theirs, named in one line
        for registry in REGISTRIES:
            for name in set(registry._parts) - before[id(registry)]:
                del registry._parts[name]
        raise VerifierError(
            f"plugin {point.name!r} ({group} entry point {point.value}) failed to load: {type(exc).__name__}: {exc}"
        ) from None
    dist = point.dist
    plugin = Plugin(
        f"{group}:{point.name} = {point.value}",
        point.module,
        dist.name if dist else None,
        dist.version if dist else None,
        _file_sha256(point.module),
    )
    added = False
    for registry in REGISTRIES:
        for name in set(registry._parts) - before[id(registry)]:
            registry.plugins[name] = plugin
            added = True
    if not added:
        silent.append(plugin)


silent: list[Plugin] = []  # plugins that loaded but registered nothing (check_discovery names them)


class Registry(Mapping[str, Part], Generic[Part]):
    """Parts by name, discovered on the first read (``discover``); ``plugins`` maps each part a
    plugin added to where it came from. Parts are listed in the order of their modules in
    discovery, then in the order each module registers them, whatever order the modules happened
    to be imported in."""

    def __init__(
        self,
        kind: str,
        modules: Callable[[], list[str]],
        module_of: Callable[[Part], str] = lambda part: part.__module__,
    ) -> None:
        self.kind = kind
        self._modules = modules
        self._module_of = module_of
        self._parts: dict[str, Part] = {}
        self.plugins: dict[str, Plugin] = {}
        REGISTRIES.append(self)

    def modules(self) -> list[str]:
        """The built-in modules discovery imports for this registry (plugins come after)."""
        return self._modules()

    def module_of(self, part: Part) -> str:
        return self._module_of(part)

    def add(self, name: str, part: Part) -> None:
        """Register ``part`` (the decorators call this; it never triggers discovery)."""
        if not isinstance(name, str) or not NAME.match(name):
            raise ValueError(
                f"{self.kind[:-1]} name {name!r}: lower-case letters, digits and underscores, starting with a letter"
            )
        if name in self._parts:
            raise ValueError(f"{self.kind[:-1]} {name!r} registered twice")
        self._parts[name] = part

    def sort(self) -> None:
        modules = self._modules()
        rank = {name: i for i, name in enumerate(modules + sorted({p.module for p in self.plugins.values()}))}
        order = sorted(
            self._parts, key=lambda name: rank.get(self._module_of(self._parts[name]), len(rank))
        )  # stable: in-module order kept
        self._parts = {name: self._parts[name] for name in order}

    def load(self) -> Registry[Part]:
        discover()
        return self

    def __getitem__(self, name: str) -> Part:
        return self.load()._parts[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self.load()._parts)

    def __len__(self) -> int:
        return len(self.load()._parts)
