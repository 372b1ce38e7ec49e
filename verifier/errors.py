"""User-facing errors.

Anything the user can fix (a missing file, a bad field, an unreadable model) is raised as a
``VerifierError`` whose message is one line naming the file, field or row. The CLI prints that
line and exits non-zero; every other exception is a bug and keeps its traceback.
"""

from pathlib import Path

from pydantic import ValidationError


class VerifierError(Exception):
    """An input problem the user can fix, described in one line."""


def redact_paths(text: str, *folders: Path, label: str = "<claim folder>") -> str:
    """``text`` with each folder's absolute path replaced by a placeholder and the home folder by
    ``~``: error messages name files, and findings must not carry where a user keeps them."""
    for folder in folders:
        form = str(folder.resolve())  # absolute only: a relative name like "m" would match inside words
        if form != "/":
            text = text.replace(form + "/", f"{label}/").replace(form, label)
    return text.replace(str(Path.home()) + "/", "~/")


def first_validation_error(exc: ValidationError, top: str = "(top level)") -> str:
    """``key.path: message`` of a pydantic error's first problem, for one-line messages."""
    error = exc.errors()[0]
    message = error["msg"].removeprefix("Value error, ")  # pydantic's prefix for a validator's own ValueError
    return f"{'.'.join(str(part) for part in error['loc']) or top}: {message}"
