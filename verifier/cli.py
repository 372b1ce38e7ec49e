"""Command-line interface: each command parses, calls one library function, prints.

User errors (``VerifierError``) print one line to stderr and exit with status 2.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.table import Table

from verifier.errors import VerifierError

app = typer.Typer(add_completion=False, no_args_is_help=True, help="Check claims about the training data of language models.")
err = Console(stderr=True)
out = Console(width=None if sys.stdout.isatty() else 120)


@contextmanager
def progress_bars() -> Iterator[Callable[[str, int], Callable[[int], None]]]:
    """Rich progress bars with docs/s and ETA, shaped as the library's ``Progress`` callback."""
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
                bars.update(task, rate=f"{speed:.1f} docs/s" if speed else "")

            return advance

        yield start


def _fail(exc: VerifierError) -> None:
    err.print(f"[red]error:[/red] {exc}", highlight=False, markup=True, soft_wrap=True)
    raise typer.Exit(2)


@app.command()
def score(
    model: Annotated[str, typer.Option(help="Model SPEC: smollm2-135m, a .gguf file, a model folder or a hub id.")],
    data: Annotated[Path, typer.Option(help="Documents: .jsonl, .csv or .parquet.")],
    out_path: Annotated[Path, typer.Option("--out", help="Score table to write (.parquet).")] = Path("scores.parquet"),
    text_field: Annotated[str, typer.Option(help="Field holding the text.")] = "text",
    label_field: Annotated[str, typer.Option(help="Field holding the 0/1 label (1 = member); '' for unlabelled data.")] = "label",
    reference: Annotated[Optional[str], typer.Option(help="Reference model SPEC for the reference-difference signal.")] = None,
    signal: Annotated[Optional[list[str]], typer.Option(help="Signals to compute (repeatable); default: all available.")] = None,
    device: Annotated[str, typer.Option(help="cpu or cuda.")] = "cpu",
    dtype: Annotated[str, typer.Option(help="fp32 or bf16.")] = "fp32",
    batch_size: Annotated[int, typer.Option(help="Documents per forward pass.")] = 16,
    max_tokens: Annotated[int, typer.Option(help="Tokens scored per document.")] = 256,
    threads: Annotated[Optional[int], typer.Option(help="CPU threads for torch.")] = None,
    cache_dir: Annotated[Optional[Path], typer.Option(help="Forward-pass cache folder (default ~/.cache/verifier).")] = None,
) -> None:
    """Score documents with a model: one row per document, one column per membership signal."""
    from verifier.data import load_documents
    from verifier.scoring import score_documents
    from verifier.targets import CausalLMTarget, ScoreCache, ScoringOptions

    try:
        docs = load_documents(data, text_field=text_field, label_field=label_field or None)
        options = ScoringOptions(device=device, dtype=dtype, batch_size=batch_size, max_tokens=max_tokens, threads=threads)  # type: ignore[arg-type]
        with err.status(f"loading {model}"):
            target = CausalLMTarget(model, options)
            ref = CausalLMTarget(reference, options) if reference else None
        cache = ScoreCache(cache_dir)
        with progress_bars() as progress:
            table = score_documents(docs, target, reference=ref, signal_names=signal, cache=cache, progress=progress)
        table.write(out_path)
    except VerifierError as exc:
        _fail(exc)
    err.print(f"wrote {out_path} ({len(table.frame)} documents, signals: {', '.join(table.signal_names)})")


@app.command()
def evaluate(
    scores: Annotated[Path, typer.Argument(help="Score table written by 'verifier score'.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")] = False,
    seed: Annotated[int, typer.Option(help="Seed of the bootstrap and the cross-validation folds.")] = 0,
) -> None:
    """AUC [95% CI], TPR at 1% and 5% FPR for every signal, beside the model-free blind baselines."""
    from verifier.evaluation import evaluate_table
    from verifier.scoring import ScoreTable

    try:
        rows = evaluate_table(ScoreTable.read(scores), seed=seed)
    except VerifierError as exc:
        _fail(exc)
    if as_json:
        json.dump([{"kind": r.kind, **asdict(r.metrics)} for r in rows], sys.stdout, indent=2)
        sys.stdout.write("\n")
        return
    first = rows[0].metrics
    table = Table(title=f"{scores.name}: {first.n_members} members, {first.n_nonmembers} non-members")
    for column in ("signal", "AUC", "95% CI", "TPR@1%FPR", "TPR@5%FPR", "best bal. acc."):
        table.add_column(column, justify="left" if column == "signal" else "right", no_wrap=True)
    for row, following in zip(rows, rows[1:] + [None]):
        m = row.metrics
        table.add_row(
            m.name if row.kind == "signal" else f"{m.name} (blind, no model)",
            f"{m.auc:.4f}",
            f"[{m.auc_ci_low:.3f}, {m.auc_ci_high:.3f}]",
            f"{m.tpr_at_1_fpr:.3f}",
            f"{m.tpr_at_5_fpr:.3f}",
            f"{m.best_balanced_accuracy:.3f}",
            end_section=following is not None and following.kind != row.kind,
        )
    out.print(table)
    out.print(
        f"Null hypothesis per row: AUC = 0.5 (no separation). CI: stratified bootstrap, {first.n_bootstrap} resamples, seed {first.seed}. "
        "If a blind row separates the sets, the signal rows measure a distribution shift, not training."
    )

