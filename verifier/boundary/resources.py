"""Files that ship inside the package: policies, report templates, bundled examples and data.

They are read through ``importlib.resources``, so a wheel installed anywhere (not only an
editable checkout) finds them; nothing is located relative to the source tree.
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

from verifier.errors import VerifierError

EXAMPLE_PREFIX = "example:"


def resource(*parts: str) -> Path:
    """The installed file or folder ``verifier/<parts>``, as a filesystem path."""
    found = files("verifier").joinpath(*parts)
    if not isinstance(found, Path):  # a zipped install: the claims' relative paths need real folders
        raise VerifierError("verifier's package data must be installed as files, not inside a zip archive")
    return found


def examples() -> list[str]:
    """Names of the bundled example claims (``example:NAME``)."""
    return sorted(p.stem for p in resource("examples").glob("*.yaml"))


def resolve_claim_path(spec: str | Path) -> Path:
    """A claim file, or ``example:NAME`` for a bundled example claim."""
    text = str(spec)
    if not text.startswith(EXAMPLE_PREFIX):
        return Path(spec)
    name = text.removeprefix(EXAMPLE_PREFIX)
    if name not in examples():
        raise VerifierError(f"{text}: no such bundled example; bundled: {', '.join(EXAMPLE_PREFIX + n for n in examples())}")
    return resource("examples", f"{name}.yaml")
