"""YAML from users (claims, policies), read defensively: bounded size and depth, no aliases.

Aliases are what a "billion laughs" document multiplies; claims and policies never need them.
A file larger than ``MAX_BYTES`` or nested deeper than ``MAX_DEPTH`` is refused with one line.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from verifier.errors import VerifierError

MAX_BYTES = 1 << 20
MAX_DEPTH = 32


class _BoundedLoader(yaml.SafeLoader):
    """The safe loader, refusing aliases and deep nesting while it composes the document."""

    depth = 0

    def compose_node(self, parent, index):  # noqa: ANN001, ANN201 - PyYAML's signature
        if self.check_event(yaml.AliasEvent):
            raise yaml.YAMLError(f"aliases (*name) are not allowed, line {self.peek_event().start_mark.line + 1}")
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise yaml.YAMLError(f"nested deeper than {MAX_DEPTH} levels")
        try:
            return super().compose_node(parent, index)
        finally:
            self.depth -= 1


def load_yaml_file(path: Path, what: str) -> Any:
    """The parsed document at ``path``, or a one-line ``VerifierError`` naming the file."""
    if not path.is_file():
        raise VerifierError(f"{path}: {what} file not found")
    if path.stat().st_size > MAX_BYTES:
        raise VerifierError(f"{path}: {what} file larger than {MAX_BYTES // 1024} KiB")
    try:
        return yaml.load(path.read_text(encoding="utf-8"), Loader=_BoundedLoader)  # noqa: S506 - a SafeLoader subclass
    except (yaml.YAMLError, UnicodeDecodeError, RecursionError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise VerifierError(f"{path}: not valid YAML ({first})") from None
