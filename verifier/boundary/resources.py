"""Files that ship inside the package: policies, report templates, bundled examples and data.

They are read through ``importlib.resources``, so a wheel installed anywhere (not only an
editable checkout) finds them; nothing is located relative to the source tree.
"""

from __future__ import annotations

import hashlib
from functools import cache
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
        raise VerifierError(
            f"{text}: no such bundled example; bundled: {', '.join(EXAMPLE_PREFIX + n for n in examples())}"
        )
    return resource("examples", f"{name}.yaml")


@cache
def word_list() -> tuple[str, ...]:
    """The bundled list of 2,048 lower-case words (frequent words of the bundled WikiMIA texts)."""
    words = tuple(resource("marks", "words.txt").read_text(encoding="utf-8").split())
    if len(words) != 2048 or len(set(words)) != 2048:
        raise RuntimeError("verifier/marks/words.txt must hold 2,048 distinct words")
    return words


def word_list_sha256() -> str:
    """SHA-256 of the word list (a marks registration names the list its marks were drawn from)."""
    return hashlib.sha256("\n".join(word_list()).encode()).hexdigest()
