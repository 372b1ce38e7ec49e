"""Canonical JSON and the findings digest: what a signature covers, importable without the ML stack
(``verify`` needs them and must not load torch)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any


def canonical_json(data: Any) -> bytes:
    """Sorted keys, no spaces, UTF-8; NaN and Infinity refused (they are not JSON: ``verify``'s strict
    reader would refuse the signed file, so a NaN reaching the findings must fail the audit, not the bundle)."""
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode("utf-8")


def file_sha256(path: str | Path) -> str:
    """SHA-256 of a file, read in 1 MiB blocks (model weights and corpora do not fit in memory)."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def findings_digest(findings: dict[str, Any]) -> str:
    return hashlib.sha256(canonical_json(findings)).hexdigest()
