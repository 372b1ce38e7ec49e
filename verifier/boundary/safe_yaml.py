"""YAML from users (claims, policies), read defensively: bounded size and depth, no aliases.

Aliases are what a "billion laughs" document multiplies; claims and policies never need them.
A file larger than ``MAX_BYTES`` or nested deeper than ``MAX_DEPTH`` is refused with one line.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from verifier.boundary.files import read_plain
from verifier.errors import VerifierError

MAX_BYTES = 1 << 20
MAX_DEPTH = 32


class _BoundedLoader(yaml.SafeLoader):
    """The safe loader, refusing aliases and deep nesting while it composes the document."""

    depth = 0

    def compose_node(self, parent, index):  # noqa: ANN001, ANN202 - PyYAML's signature
        if self.check_event(yaml.AliasEvent):
            raise yaml.YAMLError(f"aliases (*name) are not allowed, line {self.peek_event().start_mark.line + 1}")
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise yaml.YAMLError(f"nested deeper than {MAX_DEPTH} levels")
        try:
            return super().compose_node(parent, index)
        finally:
            self.depth -= 1

    def construct_mapping(self, node, deep=False):  # noqa: ANN001, ANN202 - PyYAML's signature
        keys = [self.construct_object(key, deep=True) for key, _ in node.value]
        for key in keys:
            if keys.count(key) > 1:
                raise yaml.YAMLError(f"key {key!r} appears twice, line {node.start_mark.line + 1}")
        return super().construct_mapping(node, deep)


def load_yaml_file(path: Path, what: str) -> Any:
    """The parsed document at ``path``, or a one-line ``VerifierError`` naming the file."""
    return load_yaml_bytes(read_bounded(path, what), path)


def read_bounded(path: Path, what: str, label: Path | None = None) -> bytes:
    """The YAML file's bytes, read once (what is parsed is what is digested), at most ``MAX_BYTES``;
    errors name it as ``label`` (default: the path). The auditor names it, so a link is followed."""
    return read_plain(path, MAX_BYTES, what, label, follow_links=True)


def load_yaml_bytes(raw: bytes, path: Path) -> Any:
    """Parse ``raw`` (read from ``path``) or raise one line naming the file."""
    try:
        data = yaml.load(raw.decode("utf-8"), Loader=_BoundedLoader)  # a SafeLoader subclass
        json.dumps(data, ensure_ascii=False, default=str).encode(
            "utf-8"
        )  # lone surrogates (a "\ud800" escape) are not text
    except (yaml.YAMLError, UnicodeError, RecursionError, ValueError, TypeError, OverflowError) as exc:
        # ValueError etc.: tags PyYAML cannot construct (!!timestamp 2020-13-45, !!float abc), integers
        # past Python's digit limit.
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        mark = getattr(exc, "problem_mark", None)
        if isinstance(exc, yaml.MarkedYAMLError) and mark is not None:  # where an editor jumps to: line:column
            first = f"{exc.problem or exc.context or first}" + (
                f" ({exc.context})" if exc.context and exc.problem else ""
            )
            raise VerifierError(f"{path}:{mark.line + 1}:{mark.column + 1}: not valid YAML: {first[:200]}") from None
        raise VerifierError(f"{path}: not valid YAML ({first[:200]})") from None
    return data
