"""Files that hold the auditor's secrets: owned by the user and readable by no one else.

A signing key or a cache secret that other accounts on the machine can read lets them sign
bundles in the auditor's name or forge cached scores; like ssh with a private key, verifier
refuses such a file instead of using it silently.
"""

from __future__ import annotations

import os
from pathlib import Path

from verifier.errors import VerifierError


def readable_by_others(path: Path) -> bool:
    """Can an account other than the owner read or change ``path``, or is it someone else's?"""
    info = path.stat()
    return bool(info.st_mode & 0o077) or info.st_uid != os.getuid()


def check_private(path: Path, what: str) -> None:
    """Refuse ``path`` (one line naming it) unless only its owner, this user, can read it."""
    if readable_by_others(path):
        raise VerifierError(f"{path}: the {what} must be owned and readable by you only (chmod 600 {path.name})")
