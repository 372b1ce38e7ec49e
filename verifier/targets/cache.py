"""On-disk cache of forward-pass arrays, so no document is ever scored twice.

Keys hash everything the arrays depend on: the model's weight digest, the tokenizer's digest,
the numeric precision, the character cut and token limit, and the text's SHA-256. Rows are
committed after every batch (SQLite, WAL journal), so an interrupted run loses at most one
batch and the next run resumes where it stopped.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
from collections.abc import Mapping
from pathlib import Path

from verifier.targets.token_scores import TokenScores

# Bump when the meaning or layout of cached arrays changes, so stale rows are never reused.
CACHE_FORMAT = 1


def default_cache_dir() -> Path:
    """``$VERIFIER_CACHE_DIR``, else ``$XDG_CACHE_HOME/verifier``, else ``~/.cache/verifier``."""
    if env := os.environ.get("VERIFIER_CACHE_DIR"):
        return Path(env)
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "verifier"


def text_digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def cache_key(fingerprint: Mapping[str, object], text: str) -> str:
    """Key of one document under one scoring configuration (``fingerprint``)."""
    payload = json.dumps({"format": CACHE_FORMAT, **fingerprint, "text": text_digest(text)}, sort_keys=True)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


class ScoreCache:
    """A key -> ``TokenScores`` store in one SQLite file."""

    def __init__(self, folder: str | Path | None = None) -> None:
        folder = Path(folder) if folder is not None else default_cache_dir()
        folder.mkdir(parents=True, exist_ok=True)
        self.path = folder / "token_scores.sqlite"
        self._db = sqlite3.connect(self.path)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("CREATE TABLE IF NOT EXISTS scores (key TEXT PRIMARY KEY, blob BLOB NOT NULL)")
        self._db.commit()

    def get_many(self, keys: list[str]) -> dict[str, TokenScores]:
        found: dict[str, TokenScores] = {}
        for start in range(0, len(keys), 500):  # SQLite caps the number of bound parameters
            chunk = keys[start : start + 500]
            marks = ",".join("?" * len(chunk))
            for key, blob in self._db.execute(f"SELECT key, blob FROM scores WHERE key IN ({marks})", chunk):
                found[key] = TokenScores.from_bytes(blob)
        return found

    def put_many(self, items: Mapping[str, TokenScores]) -> None:
        with self._db:  # one transaction per batch: all rows land or none do
            self._db.executemany(
                "INSERT OR REPLACE INTO scores (key, blob) VALUES (?, ?)",
                [(key, scores.to_bytes()) for key, scores in items.items()],
            )

    def close(self) -> None:
        self._db.close()
