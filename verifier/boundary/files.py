"""Files the auditor names, or that lie beside them, read within stated limits.

One reader for every small file verifier trusts nothing about (claims, policies, plans,
registrations, certificates, keys, timestamp tokens): it reads a plain file only - a folder, FIFO or
device, which could block or never end, is one line - and at most ``limit`` bytes, so a file of
any size costs bounded memory. A link is refused unless the caller follows links (a file the
auditor names directly may be a link; one found beside another file, or inside a bundle, may not).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from verifier.errors import VerifierError


def read_plain(path: Path, limit: int, what: str, label: Path | str | None = None, follow_links: bool = False) -> bytes:
    """The bytes of the plain file at ``path``, at most ``limit``; else one line naming ``what`` and
    the file (as ``label``, by default the path)."""
    shown = f"{what} {label if label is not None else path}"
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | (0 if follow_links else os.O_NOFOLLOW))
    except FileNotFoundError:
        raise VerifierError(f"{shown}: not found") from None
    except OSError as exc:
        raise VerifierError(f"{shown}: cannot be read as a plain file ({exc.strerror})") from None
    if not stat.S_ISREG(os.fstat(descriptor).st_mode):
        os.close(descriptor)
        raise VerifierError(f"{shown}: not a plain file")
    with os.fdopen(descriptor, "rb") as handle:
        data = handle.read(limit + 1)
    if len(data) > limit:
        size = (
            f"{limit >> 20} MiB"
            if limit > 1 << 20 and limit % (1 << 20) == 0
            else f"{limit >> 10} KiB"
            if limit % 1024 == 0
            else f"{limit} bytes"
        )
        raise VerifierError(f"{shown}: larger than {size}")
    return data


def excluded(relative: str, patterns: tuple[str, ...]) -> bool:
    """Whether a path inside a corpus folder matches one of the auditor's --exclude patterns
    (the whole path, or one of its parts: ``.git`` leaves out the folder and all it holds)."""
    from fnmatch import fnmatchcase

    parts = relative.split("/")
    return any(fnmatchcase(relative, p) or any(fnmatchcase(part, p) for part in parts) for p in patterns)


def check_exclude(patterns: list[str] | tuple[str, ...], where: str = "--exclude") -> tuple[str, ...]:
    """The auditor's exclusion patterns, checked: relative globs, never empty or a parent."""
    for p in patterns:
        if not p.strip() or p.startswith("/") or ".." in p.split("/") or p in ("*", "**"):
            raise VerifierError(
                f"{where} {p!r}: a glob of file or folder names inside the corpus (not empty, '*', absolute or '..')"
            )
    return tuple(patterns)
