"""User-facing errors.

Anything the user can fix (a missing file, a bad field, an unreadable model) is raised as a
``VerifierError`` whose message is one line naming the file, field or row. The CLI prints that
line and exits non-zero; every other exception is a bug and keeps its traceback.
"""


class VerifierError(Exception):
    """An input problem the user can fix, described in one line."""
