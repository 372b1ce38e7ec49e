"""What every command prints through: the two consoles, one-line user data, progress bars."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from verifier.boundary.display import visible

err = Console(stderr=True)
out = Console(width=None if sys.stdout.isatty() else 120)


def say(console: Console, text: str) -> None:
    """Print one line that may hold user data (paths, names, claim fields, bundle contents): no
    markup or emoji codes, nothing invisible, and no newline that could start a fake line."""
    console.print(visible(text, single_line=True), markup=False, highlight=False, emoji=False, soft_wrap=True)


@contextmanager
def progress_bars() -> Iterator[Callable[[str, int], Callable[[int], None]]]:
    """Rich progress bars with items/s and ETA, shaped as the library's ``Progress`` callback."""
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[rate]}"),
        TimeElapsedColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
        console=err,
        transient=False,
    ) as bars:

        def start(description: str, total: int) -> Callable[[int], None]:
            task = bars.add_task(description, total=total, rate="")

            def advance(k: int) -> None:
                bars.advance(task, k)
                speed = bars.tasks[task].speed
                bars.update(task, rate=f"{speed:.1f}/s" if speed else "")

            return advance

        yield start
