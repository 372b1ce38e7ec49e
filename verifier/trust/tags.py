"""HMAC-SHA256 tags: how verifier tells its own stored bytes from bytes someone else put there.

The score cache's rows and responses, Ray's part rows and the digests of secret siblings in a
bundle are tagged under a secret only the auditor holds (``targets.cache.cache_secret``, or a
registration's siblings key): a row forged on disk (a raised log-prob) is refused, not scored, and
nobody without the siblings can test guesses against a bundle.
"""

from __future__ import annotations

import hashlib
import hmac


def tag(secret: bytes, message: bytes) -> str:
    """The hex HMAC-SHA256 of ``message`` under ``secret``."""
    return hmac.new(secret, message, hashlib.sha256).hexdigest()


def holds(claimed: object, secret: bytes, message: bytes) -> bool:
    """Whether ``claimed`` is the tag of ``message`` (compared in constant time; anything not a str fails)."""
    return isinstance(claimed, str) and hmac.compare_digest(claimed, tag(secret, message))
