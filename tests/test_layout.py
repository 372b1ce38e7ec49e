"""The house, one floor at a time: the import graph of ``verifier/`` read from its source.

The floors are listed once, in docs/layout.md (the ``floors`` block): a subsystem imports only
subsystems on lower floors (and itself); nothing imports in a circle, at module level or inside a
function; and imports made inside functions (to defer a heavy package, never to dodge a circle)
stay few. ``TYPE_CHECKING`` imports name types only and are not counted.
"""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "verifier"
# Imports from a lower floor to a higher one that are allowed, each with its reason (none at present).
EXCEPTIONS: dict[tuple[str, str], str] = {}
MAX_FUNCTION_IMPORTS = (
    12  # internal imports inside functions, outside the CLI (each defers a heavy package; the cap was 60)
)


def floors() -> dict[str, int]:
    """Subsystem -> floor, from the ``floors`` block of docs/layout.md (``N: name name ...``)."""
    text = (ROOT / "docs" / "layout.md").read_text(encoding="utf-8")
    block = re.search(r"```floors\n(.*?)```", text, re.DOTALL)
    assert block, "docs/layout.md has no ```floors block"
    found: dict[str, int] = {}
    for line in block.group(1).splitlines():
        number, _, names = line.partition(":")
        for name in names.split("#")[0].split():
            assert name not in found, f"docs/layout.md lists {name} on two floors"
            found[name] = int(number)
    return found


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in PACKAGE.rglob("*.py")}


def subsystem(module: str) -> str:
    """``verifier.x.y`` -> ``x`` (a top-level module is its own subsystem; the package root is ``verifier``)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "verifier"


def _targets(module: str, node: ast.Import | ast.ImportFrom, is_package: bool) -> list[str]:
    if isinstance(node, ast.Import):
        names = [a.name for a in node.names]
    else:
        base = node.module or ""
        if node.level:
            parts = module.split(".")[: len(module.split(".")) - node.level + (1 if is_package else 0)]
            base = ".".join(parts + ([node.module] if node.module else []))
        names = [f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base for a in node.names]
    out = []
    for name in names:
        if name == "verifier" or name.startswith("verifier."):
            while name not in MODULES and "." in name:
                name = name.rsplit(".", 1)[0]
            out.append(name)
    return out


def _dynamic(node: ast.Call) -> str | None:
    """The module an ``importlib.import_module("verifier...")`` call names (a literal only)."""
    name = ast.unparse(node.func)
    if name in ("importlib.import_module", "import_module") and node.args and isinstance(node.args[0], ast.Constant):
        value = node.args[0].value
        if isinstance(value, str) and (value == "verifier" or value.startswith("verifier.")):
            return value
    return None


def imports() -> list[tuple[str, str, bool]]:
    """(importer, imported, inside a function) for every import of a verifier module: import
    statements wherever they stand (under ``try``, in functions) and ``import_module`` of a literal
    name. Only the body of ``if TYPE_CHECKING:`` is left out (it names types; its ``else`` runs)."""
    found = []
    for module, path in MODULES.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))

        def walk(node: ast.AST, in_function: bool, module: str = module, path: Path = path) -> None:
            for child in ast.iter_child_nodes(node):
                inner = in_function or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda)
                if isinstance(child, ast.If) and ast.unparse(child.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING"):
                    for other in child.orelse:
                        walk(ast.Module(body=[other], type_ignores=[]), inner)
                    continue
                if isinstance(child, ast.Import | ast.ImportFrom):
                    found.extend(
                        (module, target, inner) for target in _targets(module, child, path.name == "__init__.py")
                    )
                if isinstance(child, ast.Call) and (name := _dynamic(child)):
                    while name not in MODULES and "." in name:
                        name = name.rsplit(".", 1)[0]
                    found.append((module, name, inner))
                walk(child, inner)

        walk(tree, False)
    return found


def test_every_subsystem_has_a_floor():
    listed = floors()
    missing = sorted({subsystem(m) for m in MODULES} - set(listed))
    assert not missing, f"subsystems not on a floor of docs/layout.md: {missing}"
    stale = sorted(set(listed) - {subsystem(m) for m in MODULES})
    assert not stale, f"docs/layout.md lists subsystems that do not exist: {stale}"


def test_no_import_runs_up_a_floor():
    floor = floors()
    upward = sorted(
        {
            (a, b)
            for a, b, _ in imports()
            if subsystem(a) != subsystem(b)
            and floor[subsystem(b)] >= floor[subsystem(a)]
            and (subsystem(a), subsystem(b)) not in EXCEPTIONS
        }
    )
    assert not upward, "imports to the same or a higher floor:\n" + "\n".join(f"  {a} -> {b}" for a, b in upward)


def test_no_import_circle():
    """Importing ``verifier.x.y`` runs ``verifier.x``'s ``__init__`` first, so each import also
    reaches the packages above its target (those that do not hold the importer)."""
    graph: dict[str, set[str]] = defaultdict(set)
    for a, b, _ in imports():
        targets = {b} | {b.rsplit(".", i)[0] for i in range(1, b.count(".") + 1)}
        graph[a] |= {t for t in targets if t in MODULES and t != a and not a.startswith(t + ".")}
    state: dict[str, int] = {}  # 1: on the path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return path[path.index(nxt) :] + [nxt]
            if nxt not in state and (circle := visit(nxt)):
                return circle
        state[node] = 2
        path.pop()
        return None

    for module in sorted(MODULES):
        if module not in state and (circle := visit(module)):
            pytest.fail("import circle: " + " -> ".join(circle))


def test_imports_inside_functions_stay_few():
    inside = [(a, b) for a, b, in_function in imports() if in_function and subsystem(a) != "cli"]
    assert len(inside) <= MAX_FUNCTION_IMPORTS, (
        f"{len(inside)} imports of verifier modules inside functions outside cli/ (at most {MAX_FUNCTION_IMPORTS}): "
        "import at module level unless the import defers a heavy package"
    )
