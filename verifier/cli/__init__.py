"""Command-line interface: each command parses, calls one library function, prints.

The table below is the whole CLI: top-level commands and command groups, one module each
(``init``, ``audit``, ``plan``, ``trust``, ``scoring``, ``corpus``, ``marks`` with ``identifiers``,
``testbed``, ``summary``); shared options are declared once in ``options``, printing goes through ``output``.

One error handler serves the whole app (``HandledGroup``): a user error (``VerifierError``, or
an unreadable file) prints one line to stderr and exits 2; a mistyped command or option is the
user's too (click's usage line, exit 2); any other exception is a bug and prints one line naming
it, exit 1 (``VERIFIER_DEBUG=1`` shows the traceback). No traceback reaches a user.
"""

from __future__ import annotations

import os
import sys
import warnings

import click
import typer
from rich.markup import escape

from verifier import __version__
from verifier.boundary.display import visible
from verifier.cli import audit, corpus, init, marks, plan, scoring, summary, testbed, trust
from verifier.cli.output import err
from verifier.errors import Interrupted, VerifierError
from verifier.verdicts import EXIT_INPUT, EXIT_INTERNAL, EXIT_INTERRUPTED, EXIT_TERMINATED


def _usage_errors() -> tuple[type[BaseException], ...]:
    """What click raises for a mistyped command, a missing argument or an exit - and typer's own
    copy of click, which recent typer ships (its errors derive from ``typer.TyperException``): the
    user's errors, printed by the framework with the usage line and exit 2, never called a bug."""
    found: list[type[BaseException]] = [click.exceptions.Exit, click.exceptions.Abort, click.ClickException]
    return tuple(found + [getattr(typer, name) for name in ("Exit", "Abort", "TyperException") if hasattr(typer, name)])


USAGE_ERRORS = _usage_errors()


class HandledGroup(typer.core.TyperGroup):
    """The app's one error handler: every command runs inside ``invoke``."""

    def invoke(self, ctx: click.Context):  # noqa: ANN201 - click's own signature
        _stop_cleanly_on_sigterm()
        if not os.environ.get("VERIFIER_DEBUG"):
            # No warning reaches the terminal: verifier says what matters in one line or in the
            # findings (every NaN numpy would flag is named there with its reason), and third-party
            # warnings (pyhanko's import of a deprecated cryptography name, numpy's numerical
            # ones) name files by absolute path and concern their authors, not the user.
            warnings.simplefilter("ignore")
            # transformers speaks through its own logger, not warnings ("We strongly recommend passing
            # in an `attention_mask`...", read at its import): only its errors reach the user.
            os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
            if "transformers" in sys.modules:
                sys.modules["transformers"].logging.set_verbosity_error()
        try:
            return super().invoke(ctx)
        except USAGE_ERRORS:
            raise
        except Terminated:
            err.print("stopped by SIGTERM; nothing half-written was kept", highlight=False)
            raise typer.Exit(EXIT_TERMINATED) from None
        except KeyboardInterrupt as exc:
            said = str(exc) if isinstance(exc, Interrupted) else "nothing half-written was kept"
            err.print(f"stopped by Ctrl-C; {escape(said)}", highlight=False, soft_wrap=True)
            raise typer.Exit(EXIT_INTERRUPTED) from None
        except VerifierError as exc:
            err.print(
                f"[red]error:[/red] {escape(visible(str(exc), single_line=True))}",
                highlight=False,
                emoji=False,
                soft_wrap=True,
            )
            raise typer.Exit(EXIT_INPUT) from None
        except OSError as exc:
            where = f"{exc.filename}: " if exc.filename else ""
            err.print(
                f"[red]error:[/red] {escape(visible(where + (exc.strerror or type(exc).__name__), single_line=True))}",
                highlight=False,
                emoji=False,
                soft_wrap=True,
            )
            raise typer.Exit(EXIT_INPUT) from None
        except Exception as exc:
            if os.environ.get("VERIFIER_DEBUG"):
                raise
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
            err.print(
                f"[red]internal error:[/red] {escape(type(exc).__name__)}: {escape(visible(first, single_line=True))} "
                "(a bug in verifier; VERIFIER_DEBUG=1 shows the traceback)",
                highlight=False,
                soft_wrap=True,
            )
            raise typer.Exit(EXIT_INTERNAL) from None


class Terminated(BaseException):
    """SIGTERM (``timeout``, systemd, ``docker stop``), raised like Ctrl-C so that every cleanup
    that removes half-written output (an index build's folder, a bundle's temporary) runs."""


def _terminate(signum: int, frame: object) -> None:
    raise Terminated()


def _stop_cleanly_on_sigterm() -> None:
    import signal
    import threading

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _terminate)


app = typer.Typer(
    cls=HandledGroup,
    add_completion=False,
    no_args_is_help=True,
    help="Check claims about the training data of language models.",
)


def _version(shown: bool) -> None:
    if shown:
        typer.echo(f"verifier {__version__}")
        raise typer.Exit()


@app.callback()
def _options(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version and exit."
    ),
) -> None:
    """Check claims about the training data of language models.

    Exit status of 'audit': 0 VERIFIED or SUPPORTED, 3 CONTRADICTED, 4 INCONCLUSIVE, REJECTED-METHOD
    or UNVERIFIABLE (a batch: its worst claim); every command: 2 bad input, 1 a bug in verifier,
    130 Ctrl-C, 143 SIGTERM."""


COMMANDS = {
    "init": init.init,
    "audit": audit.audit,
    "plan": plan.plan,
    "reproduce": audit.reproduce,
    "verify": trust.verify,
    "score": scoring.score,
    "evaluate": scoring.evaluate,
    "power": scoring.power,
    "serve": scoring.serve,
    "frequencies": scoring.frequencies,
}
GROUPS = {
    "corpus": corpus.app,
    "marks": marks.app,
    "identifiers": marks.identifiers_app,
    "keys": trust.keys,
    "testbed": testbed.app,
    "summary": summary.app,
}
ALIASES = {"index": "corpus"}  # old group names, kept for a release (hidden from the help)

for _name, _command in COMMANDS.items():
    app.command(_name)(_command)
for _name, _group in GROUPS.items():
    app.add_typer(_group, name=_name)
for _old, _new in ALIASES.items():
    app.add_typer(GROUPS[_new], name=_old, hidden=True, help=f"Old name of '{_new}', kept for a release.")
