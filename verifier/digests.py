"""Canonical JSON and the findings digest: what a signature covers, importable without the ML stack
(``verify`` needs them and must not load torch)."""

from __future__ import annotations

import hashlib
import json
from typing import Any


def canonical_json(data: Any) -> bytes:
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def findings_digest(findings: dict[str, Any]) -> str:
    return hashlib.sha256(canonical_json(findings)).hexdigest()
