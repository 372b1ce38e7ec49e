"""User-facing errors.

Anything the user can fix (a missing file, a bad field, an unreadable model) is raised as a
``VerifierError`` whose message is one line naming the file, field or row. The CLI prints that
line and exits non-zero; every other exception is a bug and keeps its traceback.
"""

from pydantic import ValidationError


class VerifierError(Exception):
    """An input problem the user can fix, described in one line."""


def first_validation_error(exc: ValidationError, top: str = "(top level)") -> str:
    """``key.path: message`` of a pydantic error's first problem, for one-line messages."""
    error = exc.errors()[0]
    return f"{'.'.join(str(part) for part in error['loc']) or top}: {error['msg']}"
