"""Options shared by several commands, declared once, and the one way a command checks its values.

Bounds live in the models that hold them (route parameters, ``ApiOptions``): a command builds the
model from its options with ``checked``, so the CLI and a policy refuse the same values with the
same words (``--alpha: Input should be less than or equal to 0.2`` beside a policy's
``routes[1].params.alpha: Input should be less than or equal to 0.2``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Literal, TypeVar

import typer
from pydantic import BaseModel, ValidationError

from verifier.errors import VerifierError

# Who may be sent what: the auditor's own choices, never a claim's (see verifier.boundary.peers).
API_KEY_ENV = typer.Option(
    help="API targets: the environment variable holding the audited endpoint's key (never the key itself)."
)
JUDGE_API_KEY_ENV = typer.Option(
    help="trace_judge with a separate judge endpoint: the environment variable holding its key."
)
ALLOW_HTTP = typer.Option(
    "--allow-http", help="Allow plain http to servers on other machines (documents and keys travel unencrypted)."
)
CACHE_DIR = typer.Option(help="Forward-pass and response cache folder (default ~/.cache/verifier).")
CacheDir = Annotated[Path | None, CACHE_DIR]
DEVICE = typer.Option(
    help="Where an open-weight model runs: auto (CUDA when present, else the CPU), cpu, cuda or cuda:N."
)
DTYPE = typer.Option(help="Numeric precision of an open-weight model: fp32 or bf16.")

Model = TypeVar("Model", bound=BaseModel)


def checked(model: type[Model], **values: object) -> Model:
    """``model`` made from a command's option values; a bad one is one line naming its option."""
    try:
        return model(**values)
    except ValidationError as exc:
        error = exc.errors()[0]
        option = "--" + str(error["loc"][0]).replace("_", "-") if error["loc"] else "options"
        raise VerifierError(f"{option}: {error['msg']}") from None


def parse_signal_params(items: list[str]) -> dict[str, dict[str, object]]:
    """``SIGNAL.KEY=VALUE`` options as {signal: {key: value}}. A value that is a JSON number,
    ``true``, ``false`` or ``null`` is that (5, 0.8, false); anything else is the text as given
    (``scoring_lm=smollm2-135m``; quote a number meant as text: ``'"2024"'``). The signal's own
    annotations then check it strictly. A key given twice is refused: which one was meant?"""
    params: dict[str, dict[str, object]] = {}
    for item in items:
        head, sep, raw = item.partition("=")
        name, dot, key = head.partition(".")
        if not (sep and dot and name and key):
            raise VerifierError(f"--signal-param {item!r}: expected SIGNAL.KEY=VALUE, e.g. blackspectrum.k=5")
        if key in params.get(name, {}):
            raise VerifierError(f"--signal-param {name}.{key}: given twice")
        try:
            value = json.loads(raw, parse_constant=str)  # NaN and Infinity stay text
        except ValueError:
            value = raw
        params.setdefault(name, {})[key] = value if isinstance(value, (str, int, float, bool)) or value is None else raw
    return params


def precision(dtype: str) -> Literal["fp32", "bf16"]:
    """``--dtype`` checked: one line naming the option, not a traceback from deep in a model load."""
    if dtype == "fp32":
        return "fp32"
    if dtype == "bf16":
        return "bf16"
    raise VerifierError(f"--dtype {dtype}: use fp32 or bf16")
