"""Atomic file output.

Outputs are evidence: a crash must never leave a half-written file that looks complete. Every
writer goes through ``atomic_output``, which writes to a temporary file in the destination's
folder and renames it into place only after the writer finished without error.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from verifier.errors import VerifierError


@contextmanager
def atomic_output(path: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a temporary path; on success, fsync it and rename it onto ``path``. Errors name
    ``path`` as given, never the temporary file (whose name says where the auditor works)."""
    target = Path(path)
    if target.is_dir():
        raise VerifierError(f"{target}: a folder; give the name of a file to write")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".partial", dir=target.parent)
    except OSError as exc:
        raise VerifierError(f"{target}: cannot be written ({exc.strerror})") from None
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        yield tmp
        with open(tmp, "rb") as handle:
            os.fsync(handle.fileno())
        try:
            os.replace(tmp, target)
        except OSError as exc:
            raise VerifierError(f"{target}: cannot be written ({exc.strerror})") from None
    finally:
        tmp.unlink(missing_ok=True)
