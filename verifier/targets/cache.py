"""On-disk cache of forward-pass arrays and API responses, so nothing is scored or paid for twice -
and never trusted blindly.

Keys hash everything the arrays depend on: the model's weight digest, the tokenizer's digest,
the numeric precision, the character cut, token limit and batch shape, and the text's SHA-256.
Rows are committed after every batch (SQLite, WAL journal), so an interrupted run loses at most
one batch and the next run resumes where it stopped.

Anyone who can write the cache folder could otherwise forge evidence: raise the cached log-probs
of the suspect documents and the auditor signs a SUPPORTED the model never gave. Every row is
therefore stored with an HMAC-SHA256 over its key and bytes under a per-user secret kept outside
the cache folder (mode 0600). A row whose tag does not verify is treated as absent - the
document is scored again and the row replaced - and counted, so the bundle can say how many
documents came from the cache and how many cached rows were refused.

API responses live in a second table of the same file, under the same secret: one row per
(endpoint, model, request body, sample index), committed the moment it arrives, so an
interrupted run of paid queries resumes where it stopped. A row holds the response body only
(never a request header, so never an API key).
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import sqlite3
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from verifier.errors import VerifierError
from verifier.targets.token_scores import TokenScores
from verifier.trust.private_files import check_private
from verifier.trust.tags import holds, tag

# Bump when the meaning or layout of cached arrays changes, so stale rows are never reused.
CACHE_FORMAT = 2
TABLE = "token_scores_v2"
RESPONSES = "api_responses_v1"


def default_cache_dir() -> Path:
    """``$VERIFIER_CACHE_DIR``, else ``$XDG_CACHE_HOME/verifier``, else ``~/.cache/verifier``."""
    if env := os.environ.get("VERIFIER_CACHE_DIR"):
        return Path(env)
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "verifier"


def default_secret_path() -> Path:
    """``$VERIFIER_CACHE_SECRET``, else ``~/.config/verifier/cache.secret``: outside the cache folder."""
    if env := os.environ.get("VERIFIER_CACHE_SECRET"):
        return Path(env)
    return Path.home() / ".config" / "verifier" / "cache.secret"


def cache_secret(path: Path) -> bytes:
    """The per-user HMAC secret, created (32 random bytes, mode 0600) on first use."""
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{secrets.token_hex(8)}")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as handle:
            handle.write(secrets.token_bytes(32))
        try:
            os.link(tmp, path)  # only if absent: two first runs agree on one secret
        except FileExistsError:
            pass
        finally:
            tmp.unlink()
    check_private(path, "cache secret")
    secret = path.read_bytes()
    if len(secret) < 32:
        raise VerifierError(f"{path}: not a cache secret (fewer than 32 bytes)")
    return secret


def text_digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def cache_key(fingerprint: Mapping[str, object], text: str) -> str:
    """Key of one document under one scoring configuration (``fingerprint``)."""
    payload = json.dumps({"format": CACHE_FORMAT, **fingerprint, "text": text_digest(text)}, sort_keys=True)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


@dataclass
class CacheCounts:
    """What the cache did in one run: rows served, rows refused (tag or bytes wrong), rows stored."""

    served: int = 0
    refused: int = 0
    stored: int = 0


class ScoreCache:
    """A key -> ``TokenScores`` store in one SQLite file, every row authenticated."""

    def __init__(self, folder: str | Path | None = None, secret_path: Path | None = None) -> None:
        folder = Path(folder) if folder is not None else default_cache_dir()
        self._secret = cache_secret(secret_path or default_secret_path())
        self.counts = CacheCounts()
        self.responses = CacheCounts()
        try:
            folder.mkdir(parents=True, exist_ok=True)
            self.path = folder / "token_scores.sqlite"
            # One user at a time, but not always one thread: a Ray actor runs its batches in a thread of its own.
            self._db = sqlite3.connect(self.path, timeout=30, check_same_thread=False)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute(
                f"CREATE TABLE IF NOT EXISTS {TABLE} (key TEXT PRIMARY KEY, blob BLOB NOT NULL, tag TEXT NOT NULL)"
            )
            self._db.execute(
                f"CREATE TABLE IF NOT EXISTS {RESPONSES} (key TEXT PRIMARY KEY, blob BLOB NOT NULL, tag TEXT NOT NULL)"
            )
            self._db.commit()
        except (OSError, sqlite3.Error) as exc:
            raise VerifierError(
                f"{folder}: cannot use as a score cache ({exc}); pass another --cache-dir or remove it"
            ) from None

    @property
    def secret(self) -> bytes:
        """The HMAC secret the cache's rows are tagged under (a batch tags its part files with it too)."""
        return self._secret

    def _tag(self, key: str, blob: bytes) -> str:
        return tag(self._secret, key.encode() + b"\0" + blob)

    def get_many(self, keys: list[str]) -> dict[str, TokenScores]:
        found: dict[str, TokenScores] = {}
        try:
            for start in range(0, len(keys), 500):  # SQLite caps the number of bound parameters
                chunk = keys[start : start + 500]
                marks = ",".join("?" * len(chunk))
                for key, blob, stored in self._db.execute(
                    f"SELECT key, blob, tag FROM {TABLE} WHERE key IN ({marks})", chunk
                ):
                    if not isinstance(blob, bytes) or not holds(stored, self._secret, key.encode() + b"\0" + blob):
                        self.counts.refused += 1
                        continue
                    try:
                        found[key] = TokenScores.from_bytes(blob)
                    except (ValueError, KeyError, OSError):
                        self.counts.refused += 1
        except sqlite3.Error as exc:
            raise VerifierError(
                f"{self.path}: score cache unreadable ({exc}); pass another --cache-dir or remove it"
            ) from None
        self.counts.served += len(found)
        return found

    def put_many(self, items: Mapping[str, TokenScores]) -> None:
        rows = []
        for key, scores in items.items():
            blob = scores.to_bytes()
            rows.append((key, blob, self._tag(key, blob)))
        try:
            with self._db:  # one transaction per batch: all rows land or none do
                self._db.executemany(f"INSERT OR REPLACE INTO {TABLE} (key, blob, tag) VALUES (?, ?, ?)", rows)
        except sqlite3.Error as exc:
            raise VerifierError(f"{self.path}: cannot write the score cache ({exc})") from None
        self.counts.stored += len(rows)

    def get_response(self, key: str) -> dict | None:
        """The cached response body under ``key``, or None (absent, or refused as altered)."""
        try:
            row = self._db.execute(f"SELECT blob, tag FROM {RESPONSES} WHERE key = ?", (key,)).fetchone()
        except sqlite3.Error as exc:
            raise VerifierError(
                f"{self.path}: response cache unreadable ({exc}); pass another --cache-dir or remove it"
            ) from None
        if row is None:
            return None
        blob, stored = row
        if not isinstance(blob, bytes) or not holds(stored, self._secret, (RESPONSES + key).encode() + b"\0" + blob):
            self.responses.refused += 1
            return None
        try:
            body = json.loads(blob)
        except ValueError:
            self.responses.refused += 1
            return None
        self.responses.served += 1
        return body

    def put_response(self, key: str, body: dict) -> None:
        """Store one response body, committed at once (one paid query is never lost)."""
        blob = json.dumps(body, sort_keys=True).encode()
        try:
            with self._db:
                self._db.execute(
                    f"INSERT OR REPLACE INTO {RESPONSES} (key, blob, tag) VALUES (?, ?, ?)",
                    (key, blob, self._tag(RESPONSES + key, blob)),
                )
        except sqlite3.Error as exc:
            raise VerifierError(f"{self.path}: cannot write the response cache ({exc})") from None
        self.responses.stored += 1

    def close(self) -> None:
        self._db.close()
