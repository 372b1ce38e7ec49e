"""User-facing errors.

Anything the user can fix (a missing file, a bad field, an unreadable model) is raised as a
``VerifierError`` whose message is one line naming the file, field or row. The CLI prints that
line and exits non-zero; every other exception is a bug and keeps its traceback.
"""

import difflib
from pathlib import Path
from typing import Any, get_args

from pydantic import BaseModel, ValidationError


class VerifierError(Exception):
    """An input problem the user can fix, described in one line."""


class Interrupted(KeyboardInterrupt):
    """Ctrl-C during a long job, carrying what the user needs next: what was kept and how to resume."""


def redact_paths(text: str, *folders: Path, label: str = "<claim folder>") -> str:
    """``text`` with each folder's absolute path replaced by a placeholder and the home folder by
    ``~``: error messages name files, and findings must not carry where a user keeps them."""
    for folder in folders:
        form = str(folder.resolve())  # absolute only: a relative name like "m" would match inside words
        if form != "/":
            text = text.replace(form + "/", f"{label}/").replace(form, label)
    return text.replace(str(Path.home()) + "/", "~/")


def first_validation_error(exc: ValidationError, top: str = "(top level)", model: type[BaseModel] | None = None) -> str:
    """``key.path: message`` of a pydantic error's first problem, for one-line messages; with the
    ``model`` validated, a mistyped key gets the nearest key that model takes there."""
    errors = exc.errors()
    # A mistyped key is reported as two errors (the key it meant is missing, the one given is not a
    # key): the mistyped one, which did-you-mean can name, is the one a user fixes.
    error = next((e for e in errors if e["type"] == "extra_forbidden"), errors[0]) if model is not None else errors[0]
    message = error["msg"].removeprefix("Value error, ")  # pydantic's prefix for a validator's own ValueError
    loc = [str(part) for part in error["loc"]]
    if error["type"] == "extra_forbidden" and model is not None and loc:
        known = _keys_at(model, loc[:-1])
        close = difflib.get_close_matches(loc[-1], known, n=1, cutoff=0.8)
        message = (
            f"not a key here; did you mean {close[0]!r}?" if close else f"not a key here (keys: {', '.join(known)})"
        )
    return f"{'.'.join(loc) or top}: {message}"


def _keys_at(model: type[BaseModel], path: list[str]) -> list[str]:
    """The keys the model nested at ``path`` takes (a dict's key or a list's index is stepped over)."""
    current: Any = model
    for part in path:
        fields = current.model_fields if isinstance(current, type) and issubclass(current, BaseModel) else {}
        field = fields.get(part) or next((f for f in fields.values() if f.alias == part), None)
        if field is not None:  # else a list's index or a dict's key: the model stays the one it holds
            current = _model_in(field.annotation) or field.annotation
    if isinstance(current, type) and issubclass(current, BaseModel):
        return sorted(f.alias or name for name, f in current.model_fields.items())
    return []


def _model_in(annotation: Any) -> type[BaseModel] | None:
    """The pydantic model an annotation holds: itself, or inside Optional, a union, a list or a dict."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in get_args(annotation):
        if found := _model_in(arg):
            return found
    return None
