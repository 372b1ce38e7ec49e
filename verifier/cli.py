"""Command-line interface: each command parses, calls one library function, prints.

One error handler serves the whole app (``HandledGroup``): a user error (``VerifierError``, or
an unreadable file) prints one line to stderr and exits 2; any other exception is a bug and
prints one line naming it, exit 1 (``VERIFIER_DEBUG=1`` shows the traceback). No traceback
reaches a user.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict
from pathlib import Path
from typing import Annotated, Optional

import click
import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.table import Table

from verifier.display import visible
from verifier.errors import VerifierError

err = Console(stderr=True)
out = Console(width=None if sys.stdout.isatty() else 120)


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
        try:
            return super().invoke(ctx)
        except USAGE_ERRORS:
            raise
        except Terminated:
            err.print("stopped by SIGTERM; nothing half-written was kept", highlight=False)
            raise typer.Exit(143) from None
        except VerifierError as exc:
            err.print(f"[red]error:[/red] {escape(visible(str(exc), single_line=True))}", highlight=False, emoji=False, soft_wrap=True)
            raise typer.Exit(2) from None
        except OSError as exc:
            where = f"{exc.filename}: " if exc.filename else ""
            err.print(f"[red]error:[/red] {escape(visible(where + (exc.strerror or type(exc).__name__), single_line=True))}",
                      highlight=False, emoji=False, soft_wrap=True)
            raise typer.Exit(2) from None
        except Exception as exc:
            if os.environ.get("VERIFIER_DEBUG"):
                raise
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
            err.print(f"[red]internal error:[/red] {escape(type(exc).__name__)}: {escape(visible(first, single_line=True))} "
                      "(a bug in verifier; VERIFIER_DEBUG=1 shows the traceback)", highlight=False, soft_wrap=True)
            raise typer.Exit(1) from None


# Who may be sent what: the auditor's own choices, never a claim's (see verifier.peers).
API_KEY_ENV = typer.Option(help="API targets: the environment variable holding the audited endpoint's key (never the key itself).")
JUDGE_API_KEY_ENV = typer.Option(help="trace_judge with a separate judge endpoint: the environment variable holding its key.")
ALLOW_HTTP = typer.Option("--allow-http", help="Allow plain http to servers on other machines (documents and keys travel unencrypted).")


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


def say(console: Console, text: str) -> None:
    """Print one line that may hold user data (paths, names, claim fields, bundle contents): no
    markup or emoji codes, nothing invisible, and no newline that could start a fake line."""
    console.print(visible(text, single_line=True), markup=False, highlight=False, emoji=False, soft_wrap=True)


app = typer.Typer(cls=HandledGroup, add_completion=False, no_args_is_help=True, help="Check claims about the training data of language models.")
testbed_app = typer.Typer(no_args_is_help=True, help="Ground-truth testbeds: small models with known training membership.")
app.add_typer(testbed_app, name="testbed")


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


@app.command()
def score(
    model: Annotated[str, typer.Option(help="Model SPEC: smollm2-135m, a .gguf file, a model folder, a hub id, or "
                                       "openai-compatible:URL#MODEL for a model behind an API.")],
    data: Annotated[Path, typer.Option(help="Documents: .jsonl, .csv or .parquet.")],
    out_path: Annotated[Path, typer.Option("--out", help="Score table to write (.parquet).")] = Path("scores.parquet"),
    text_field: Annotated[str, typer.Option(help="Field holding the text.")] = "text",
    label_field: Annotated[str, typer.Option(help="Field holding the 0/1 label (1 = member); '' for unlabelled data.")] = "label",
    reference: Annotated[Optional[str], typer.Option(help="Reference model SPEC for the reference-difference signal.")] = None,
    signal: Annotated[Optional[list[str]], typer.Option(help="Signals to compute (repeatable); default: all available.")] = None,
    device: Annotated[str, typer.Option(help="cpu or cuda.")] = "cpu",
    dtype: Annotated[str, typer.Option(help="fp32 or bf16.")] = "fp32",
    batch_tokens: Annotated[Optional[int], typer.Option(help="Tokens of every forward pass (rows x width; fixed per width, for "
                                                        "batch-invariant numbers; part of the cache key). Default: 1024 on cpu, "
                                                        "32768 on cuda.")] = None,
    max_tokens: Annotated[int, typer.Option(help="Tokens scored per document, or per window with --stride.")] = 256,
    max_chars: Annotated[int, typer.Option(help="Characters of each document given to the model.")] = 2500,
    stride: Annotated[Optional[int], typer.Option(help="Score whole documents (up to --max-chars) in windows of --max-tokens "
                                                  "advancing by STRIDE tokens, stitched; default: cut at --max-tokens.")] = None,
    threads: Annotated[Optional[int], typer.Option(help="CPU threads for torch.")] = None,
    cache_dir: Annotated[Optional[Path], typer.Option(help="Forward-pass and response cache folder (default ~/.cache/verifier).")] = None,
    api_key_env: Annotated[Optional[str], API_KEY_ENV] = None,
    judge_api_key_env: Annotated[Optional[str], JUDGE_API_KEY_ENV] = None,
    allow_http: Annotated[bool, ALLOW_HTTP] = False,
    concurrency: Annotated[int, typer.Option(help="API targets: requests in flight at once.")] = 4,
    signal_param: Annotated[Optional[list[str]], typer.Option(help="A signal's parameter, SIGNAL.KEY=VALUE (repeatable), "
                                                              "e.g. blackspectrum.k=5 or trace_judge.judge=openai-compatible:URL#MODEL.")] = None,
    engine: Annotated[str, typer.Option(help="inprocess, or ray: the same scorer on a Ray Data actor pool (pip install "
                                        "'verifier\\[ray]'), resumable, for large sets.")] = "inprocess",
    address: Annotated[Optional[str], typer.Option(help="--engine ray: a cluster's address ('auto' for the one this machine "
                                                   "belongs to); default: a local Ray.")] = None,
    actors: Annotated[int, typer.Option(help="--engine ray: scoring actors (each loads the model once).")] = 1,
    actor_cpus: Annotated[float, typer.Option(help="--engine ray: CPUs per actor (0.5 leaves room to read and write on 2 cores).")] = 0.5,
    actor_gpus: Annotated[Optional[float], typer.Option(help="--engine ray: GPUs per actor (default 1 with --device cuda, else 0).")] = None,
    ray_batch_docs: Annotated[int, typer.Option(help="--engine ray: documents per Ray batch (one output part each).")] = 512,
) -> None:
    """Score documents with a model: one row per document, one column per membership signal."""
    from pydantic import ValidationError

    from verifier.errors import first_validation_error
    from verifier.peers import PeerAccess
    from verifier.scoring import score_file
    from verifier.targets import ApiOptions, ScoringOptions

    options = ScoringOptions(device=device, dtype=dtype, batch_tokens=batch_tokens, max_tokens=max_tokens, max_chars=max_chars,  # type: ignore[arg-type]
                             stride=stride, threads=threads)
    try:
        api = ApiOptions(concurrency=concurrency)
    except ValidationError as exc:
        raise VerifierError(f"--concurrency: {first_validation_error(exc)}") from None
    access = PeerAccess(api_key_env, judge_api_key_env, allow_http)
    params = parse_signal_params(signal_param or [])
    if unnamed := sorted(set(params) - set(signal or [])):
        raise VerifierError(f"--signal-param for {', '.join(unnamed)}: name the signal with --signal too (a parameter of a signal "
                            "not computed would be ignored)")
    if engine == "ray":
        from verifier.ray_scoring import RayOptions, score_file_ray

        gpus = actor_gpus if actor_gpus is not None else (1.0 if device.startswith("cuda") else 0.0)
        ray_options = RayOptions(address=address, actors=actors, actor_cpus=actor_cpus, actor_gpus=gpus, batch_docs=ray_batch_docs)
        count = score_file_ray(model, data, out_path, options, ray_options, text_field=text_field, label_field=label_field or None,
                               reference=reference, signal_names=signal, cache_dir=cache_dir, signal_params=params)
        say(err, f"wrote {out_path} ({count} documents, on Ray)")
        return
    if engine != "inprocess":
        raise VerifierError(f"--engine {engine!r}: use inprocess or ray")
    with progress_bars() as progress:
        table = score_file(model, data, out_path, options, text_field=text_field, label_field=label_field or None, reference=reference,
                           signal_names=signal, cache_dir=cache_dir, progress=progress, api=api, access=access, signal_params=params)
    say(err, f"wrote {out_path} ({len(table.frame)} documents, signals: {', '.join(table.signal_names)})")


def parse_signal_params(items: list[str]) -> dict[str, dict[str, object]]:
    """``SIGNAL.KEY=VALUE`` options as {signal: {key: value}}, values read as YAML scalars (5, 0.8, false, text)."""
    import yaml

    params: dict[str, dict[str, object]] = {}
    for item in items:
        head, sep, raw = item.partition("=")
        name, dot, key = head.partition(".")
        if not (sep and dot and name and key):
            raise VerifierError(f"--signal-param {item!r}: expected SIGNAL.KEY=VALUE, e.g. blackspectrum.k=5")
        try:
            value = yaml.safe_load(raw)
        except yaml.YAMLError:
            value = raw
        params.setdefault(name, {})[key] = value if isinstance(value, (str, int, float, bool)) else raw
    return params


@app.command()
def evaluate(
    scores: Annotated[Path, typer.Argument(help="Score table written by 'verifier score'.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")] = False,
    seed: Annotated[int, typer.Option(help="Seed of the bootstrap and the cross-validation folds.")] = 0,
) -> None:
    """AUC [95% CI], TPR at 1% and 5% FPR for every signal, beside the model-free blind baselines."""
    from verifier.evaluation import evaluate_table
    from verifier.scoring import ScoreTable

    rows = evaluate_table(ScoreTable.read(scores), seed=seed)
    if as_json:
        json.dump([{"kind": r.kind, "name": r.name, **(asdict(r.metrics) if r.metrics else {"metrics": None}),
                    **({"unscored": r.unscored} if r.unscored else {})} for r in rows], sys.stdout, indent=2)
        sys.stdout.write("\n")
        return
    first = next(r.metrics for r in rows if r.metrics)  # the blind rows always have metrics
    table = Table(title=escape(visible(f"{scores.name}: {first.n_members} members, {first.n_nonmembers} non-members")))
    for column in ("signal", "AUC", "95% CI", "TPR@1%FPR", "TPR@5%FPR", "best bal. acc."):
        table.add_column(column, justify="left" if column == "signal" else "right", no_wrap=True)
    for row, following in zip(rows, rows[1:] + [None]):
        m = row.metrics
        name = escape(visible(row.name if row.kind == "signal" else f"{row.name} (blind, no model)"))
        if m is None:
            table.add_row(name, "not computed", "", "", "", "", end_section=following is not None and following.kind != row.kind)
            continue
        table.add_row(
            name + (f" ({m.n_members + m.n_nonmembers} scored)" if row.unscored else ""),
            f"{m.auc:.4f}",
            f"[{m.auc_ci_low:.3f}, {m.auc_ci_high:.3f}]",
            f"{m.tpr_at_1_fpr:.3f}",
            f"{m.tpr_at_5_fpr:.3f}",
            f"{m.best_balanced_accuracy:.3f}",
            end_section=following is not None and following.kind != row.kind,
        )
    out.print(table)
    for row in rows:
        if row.unscored:
            out.print(escape(visible(f"{row.name}: {row.note}")))
    out.print(
        f"Null hypothesis per row: AUC = 0.5 (no separation). CI: stratified bootstrap, {first.n_bootstrap} resamples, seed {first.seed}. "
        "If a blind row separates the sets, the signal rows measure a distribution shift, not training."
    )



@testbed_app.command("build")
def testbed_build(
    preset: Annotated[str, typer.Option(help="small (about a minute), standard (the full pool, 6 epochs), light (2 epochs), faint (1), "
                                          "finetune / finetune-small (SmolLM2-135M-Instruct fine-tuned one epoch on post-2023 texts).")] = "small",
    seed: Annotated[Optional[int], typer.Option(help="Seed of the membership draw, identifiers and training.")] = None,
    epochs: Annotated[Optional[int], typer.Option(help="Training epochs (overrides the preset).")] = None,
    out_dir: Annotated[Optional[Path], typer.Option("--out", help="Folder to build into (default: the cache).")] = None,
    marks: Annotated[Optional[str], typer.Option(help="Marked documents to insert: a folder made by 'verifier marks make', "
                                                 "'example' (the bundled one, the default) or 'none'.")] = None,
) -> None:
    """Train a testbed model on a seeded member half of the bundled text pool (cached by config)."""
    from verifier.testbed import build_testbed, preset_config

    config = preset_config(preset, seed=seed, epochs=epochs)
    if marks is not None:
        config = config.model_copy(update={"marks": None if marks == "none" else marks if marks == "example" else str(Path(marks).resolve())})
    with progress_bars() as progress:
        advance = progress("training", config.epochs)
        testbed = build_testbed(config, out=out_dir, on_epoch=lambda epoch, loss: advance(1))
    m = testbed.manifest
    members = sum(d["member"] for d in m["documents"])
    say(err, f"testbed {m['digest']}: {members} members / {len(m['documents'])} texts, {m['parameters'] / 1e6:.1f}M parameters, built in {m['build_seconds']} s")
    say(out, str(testbed.folder))
    say(err, f"score it: verifier score --model {testbed.model_dir} --data {testbed.documents} --label-field member --max-tokens {config.seq_len}")


@app.command()
def power(
    scores: Annotated[Path, typer.Argument(help="Labelled score table (1 = member), e.g. of a testbed.")],
    sizes: Annotated[str, typer.Option(help="Comma-separated set sizes.")] = "25,50,100,200,500,1000",
    trials: Annotated[int, typer.Option(help="Trials per set size.")] = 500,
    alpha: Annotated[float, typer.Option(help="Significance level.")] = 0.05,
    method: Annotated[str, typer.Option(help="permutation (exact, cross-fitted) or split_median (2 x median of split p-values).")] = "permutation",
    permutations: Annotated[int, typer.Option(help="Relabellings per trial (permutation method); p-values are exact for any count.")] = 199,
    signal: Annotated[Optional[list[str]], typer.Option(help="Signals used as features (default: all in the table).")] = None,
    seed: Annotated[int, typer.Option(help="Seed of the draws and splits.")] = 0,
    out_path: Annotated[Optional[Path], typer.Option("--out", help="Write the table as JSON (data for a plot).")] = None,
) -> None:
    """Power and false-positive rate of dataset inference at each set size, with Wilson CIs."""
    from verifier.atomic import atomic_output
    from verifier.stats.power import power_from_table

    try:
        size_list = [int(v) for v in sizes.split(",")]
    except ValueError:
        raise VerifierError(f"--sizes {sizes!r}: expected comma-separated integers") from None
    result, names = power_from_table(scores, signal, size_list, trials=trials, alpha=alpha, method=method,
                                     n_permutations=permutations, seed=seed)
    view = Table(title=escape(visible(f"dataset inference ({method}), {result.trials} trials per size, alpha {alpha}, features: {', '.join(names)}")))
    for column in ("n per set", "power", "95% CI", "FPR (member-free)", "95% CI "):
        view.add_column(column, justify="right", no_wrap=True)
    cell = lambda r: ("-", "-") if r is None else (f"{r.value:.3f}", f"[{r.ci_low:.3f}, {r.ci_high:.3f}]")  # noqa: E731
    for row in result.rows:
        view.add_row(str(row.n), *cell(row.power), *cell(row.fpr))
    out.print(view)
    if result.skipped_sizes:
        out.print(f"skipped (pools of {result.n_members} members, {result.n_nonmembers} non-members too small): {result.skipped_sizes}")
    if out_path:
        with atomic_output(out_path) as tmp:
            tmp.write_text(json.dumps(asdict(result), indent=1))


index_app = typer.Typer(no_args_is_help=True, help="Corpus indexes: build, digest, query and serve a published training corpus.")
app.add_typer(index_app, name="index")


@index_app.command("build")
def index_build(
    inputs: Annotated[list[Path], typer.Argument(help="Corpus files or folders: JSONL (.gz, .zst), Parquet, plain text.")],
    out_dir: Annotated[Path, typer.Option("--out", help="Index folder to create.")],
    text_field: Annotated[str, typer.Option(help="Field or column holding the text (JSONL, Parquet).")] = "text",
    shard_bytes: Annotated[int, typer.Option(help="Text bytes per shard (about 5 bytes of RAM each while building).")] = 512 << 20,
    minhash: Annotated[bool, typer.Option("--minhash/--no-minhash", help="Store MinHash signatures for near-duplicate queries (slower build).")] = False,
    force: Annotated[bool, typer.Option("--force", help="Replace an existing index folder.")] = False,
    max_document_mb: Annotated[float, typer.Option(help="Largest record (a JSONL line, a Parquet value, a plain-text file), in MiB; "
                                                   "a larger one stops the build naming it.")] = 32,
    max_expansion: Annotated[int, typer.Option(help="Most decompressed bytes per byte of a .gz or .zst file (files under 64 MiB "
                                               "decompressed always pass); a compression bomb stops the build.")] = 100,
) -> None:
    """Build a suffix-array index of a corpus; prints the corpus digest a developer declares."""
    from verifier.overlap import build_index
    from verifier.overlap.sources import ReadLimits

    if not 0.001 <= max_document_mb <= 4096:
        raise VerifierError(f"--max-document-mb {max_document_mb}: from 0.001 to 4096")
    limits = ReadLimits(max_document_bytes=int(max_document_mb * (1 << 20)), max_expansion=max_expansion)
    with progress_bars() as progress:
        report = build_index(inputs, out_dir, text_field=text_field, shard_bytes=shard_bytes, minhash=minhash, force=force, progress=progress,
                             limits=limits)
    empty = sum(s.empty_documents for s in report.sources)
    say(err, f"indexed {report.documents} documents ({report.input_bytes / 1e6:.1f} MB of files, {report.text_bytes / 1e6:.1f} MB of text) "
             f"in {report.shards} shard(s), {report.seconds:.1f} s" + (f"; {empty} empty documents not indexed" if empty else ""))
    say(out, f"corpus sha256 {report.corpus_sha256}")
    say(out, f"index  sha256 {report.index_sha256}  {report.folder}")


@index_app.command("digest")
def index_digest(
    inputs: Annotated[list[Path], typer.Argument(help="Corpus files or folders, in the order they are indexed.")],
) -> None:
    """The corpus digest of files (what a claim's evidence.corpus.sha256 declares), without indexing."""
    from verifier.overlap import digest_files

    digest, files = digest_files(inputs)
    for name, sha in files:
        say(out, f"{sha}  {name}")
    say(out, f"corpus sha256 {digest}")


@index_app.command("check")
def index_check(
    index: Annotated[Path, typer.Argument(help="Index folder to check.")],
    corpus: Annotated[Optional[list[Path]], typer.Option(help="The corpus files or folders it was built from (repeatable, in "
                                                         "order): rebuild and compare the text too.")] = None,
) -> None:
    """Check an index someone else built: digests, every suffix array recomputed, and with --corpus its text against the files."""
    import time

    from verifier.overlap import CorpusIndex

    started = time.perf_counter()
    opened = CorpusIndex.open(index, structure="full")
    say(err, f"digests and suffix arrays of {len(opened.shards)} shard(s) hold ({time.perf_counter() - started:.1f} s)")
    if corpus:
        started = time.perf_counter()
        opened.check_text(corpus)
        say(err, f"the corpus files rebuild the same index ({time.perf_counter() - started:.1f} s)")
    say(out, f"OK: index sha256 {opened.sha256}; corpus sha256 {opened.corpus_sha256}"
             + ("" if corpus else " (as its manifest declares: give --corpus to check the text against the files)"))


@index_app.command("query")
def index_query(
    index: Annotated[str, typer.Argument(help="Index folder, or http(s)://HOST/#NAME for an infini-gram-style API.")],
    text: Annotated[Optional[str], typer.Argument(help="The text to look up (or --file).")] = None,
    file: Annotated[Optional[Path], typer.Option(help="Read the text from this file.")] = None,
    ngram: Annotated[int, typer.Option(help="Word n-gram length of the overlap.")] = 13,
    min_span_words: Annotated[int, typer.Option(help="Shortest verbatim span reported, in words.")] = 8,
    documents: Annotated[int, typer.Option(help="Documents listed per match.")] = 5,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    allow_http: Annotated[bool, ALLOW_HTTP] = False,
) -> None:
    """Count, documents, n-gram overlap, 50-character rule and longest verbatim spans of a text."""
    from verifier.overlap.backends import open_backend, query_report
    from verifier.peers import PeerAccess

    if (text is None) == (file is None):
        raise VerifierError("give the text as an argument or with --file (one of them)")
    if file is not None:
        try:
            text = file.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            raise VerifierError(f"{file.name}: not UTF-8 text") from None
    backend = open_backend(index, access=PeerAccess(allow_http=allow_http))
    result = query_report(backend, text or "", ngram=ngram, min_span_words=min_span_words, documents=documents)
    if as_json:
        json.dump(result, sys.stdout, indent=1, ensure_ascii=False)
        sys.stdout.write("\n")
        return
    for line in result["lines"]:
        say(out, line)


@index_app.command("trace")
def index_trace(
    index: Annotated[str, typer.Argument(help="Index folder, or http(s)://HOST/#NAME.")],
    model: Annotated[str, typer.Option(help="Model SPEC that generates.")],
    prompts: Annotated[Path, typer.Option(help="Prompts: .jsonl, .csv or .parquet.")],
    text_field: Annotated[str, typer.Option(help="Field holding each prompt.")] = "text",
    max_new_tokens: Annotated[int, typer.Option(help="Tokens generated per prompt (greedy).")] = 64,
    min_span_words: Annotated[int, typer.Option(help="Shortest verbatim span reported, in words.")] = 8,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    allow_http: Annotated[bool, ALLOW_HTTP] = False,
) -> None:
    """Generate from a model and attribute the long verbatim spans of its outputs to corpus documents."""
    from verifier.data import load_documents
    from verifier.overlap.backends import open_backend
    from verifier.overlap.trace import trace_outputs
    from verifier.peers import PeerAccess
    from verifier.targets import load_target

    texts = load_documents(prompts, text_field=text_field).texts
    traces = trace_outputs(open_backend(index, access=PeerAccess(allow_http=allow_http)), load_target(model), texts, max_new_tokens=max_new_tokens, min_span_words=min_span_words)
    if as_json:
        json.dump([asdict(t) for t in traces], sys.stdout, indent=1, ensure_ascii=False)
        sys.stdout.write("\n")
        return
    for i, t in enumerate(traces, 1):
        say(out, f"prompt {i}: {len(t.lookup.spans)} span(s) of at least {min_span_words} words; longest {t.lookup.longest_words} words")
        for span in t.lookup.spans:
            docs = ", ".join(str(h.meta.get("id", h.document)) for h in span.documents)
            say(out, f"  {span.words} words, {span.count}x in corpus ({docs}): {t.lookup.text[span.start:span.end]}")


@index_app.command("serve")
def index_serve(
    index: Annotated[Path, typer.Argument(help="Index folder to serve.")],
    name: Annotated[Optional[str], typer.Option(help="Index name clients ask for (default: the folder name).")] = None,
    host: Annotated[str, typer.Option(help="Address to bind (127.0.0.1: this machine only).")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port.")] = 8000,
    workers: Annotated[int, typer.Option(min=1, max=64, help="Queries computed at once (CPU-bound: one per core).")] = 2,
    max_connections: Annotated[int, typer.Option(min=1, max=100_000, help="Open connections; beyond them requests get 503.")] = 256,
) -> None:
    """Answer infini-gram-style JSON queries (count, search_docs, attribution) over HTTP, with limits for exposure."""
    from verifier.overlap import CorpusIndex
    from verifier.overlap.server import Limits, make_server

    opened = CorpusIndex.open(index)
    server = make_server(opened, name or opened.name, host, port, Limits(workers=workers, connections=max_connections))
    say(err, f"serving index {name or opened.name} (corpus sha256 {opened.corpus_sha256}) on http://{host}:{server.server_port}/")
    server.serve_forever()  # uvicorn stops cleanly on SIGINT and SIGTERM


@app.command()
def serve(
    model: Annotated[str, typer.Argument(help="Model SPEC to serve: smollm2-135m, a .gguf file or a model folder.")] = "smollm2-135m",
    port: Annotated[int, typer.Option(help="Port on 127.0.0.1.")] = 8765,
    cache_dir: Annotated[Optional[Path], typer.Option(help="Where a GGUF is converted once for the server.")] = None,
) -> None:
    """Serve a local model behind an OpenAI-compatible API (transformers serve), for API audits
    of a model you hold: the examples' and tests' server. Prints the target SPEC to audit it by."""
    from verifier.serving import model_folder, start_server

    server = start_server(model_folder(model, cache_dir), port=port)
    say(err, f"serving {server.model}: audit it as target {server.spec} (Ctrl-C stops)")
    try:
        server.process.wait()
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()


marks_app = typer.Typer(no_args_is_help=True, help="Marks made before release (canaries, traps, rephrasings) and tests of a model against them.")
app.add_typer(marks_app, name="marks")


@marks_app.command("make")
def marks_make(
    documents: Annotated[Path, typer.Argument(help="Documents to mark (.jsonl, .csv or .parquet); one mark each.")],
    out_dir: Annotated[Path, typer.Option("--out", help="Folder for published.jsonl, registration.dsse.json, registrant.pub and private/siblings.json.")],
    kinds: Annotated[Optional[list[str]], typer.Option("--kind", help="canary, trap or rephrasing; given more than once, "
                                                      "the documents are split into equal blocks in file order, one kind each (each with its default length).")] = None,
    fmt: Annotated[Optional[str], typer.Option("--format", help="Canaries: words, hex, base32 or sentence.")] = None,
    length: Annotated[int, typer.Option(help="Words (words, trap) or characters (hex, base32); 0: the format's default.")] = 0,
    siblings: Annotated[int, typer.Option(help="Unpublished siblings per mark: the smallest p-value of one mark is 1/(siblings+1).")] = 99,
    repeats: Annotated[int, typer.Option(help="Traps: copies inside each published document.")] = 1,
    rephraser: Annotated[str, typer.Option(help="Rephrasings: 'offline' or 'model:SPEC' (never the model to be tested).")] = "offline",
    name: Annotated[Optional[str], typer.Option(help="Name of the registration (default: the documents' file name).")] = None,
    text_field: Annotated[str, typer.Option(help="Text field of the documents.")] = "text",
    id_field: Annotated[str, typer.Option(help="Id field of the documents (default: row numbers).")] = "id",
    sign_key: Annotated[Optional[Path], typer.Option(help="Ed25519 private key that signs the registration (default ~/.config/verifier/signing.key, created if missing).")] = None,
    seed: Annotated[Optional[int], typer.Option(help="Secret seed of the generator (default: drawn from the system).")] = None,
    force: Annotated[bool, typer.Option("--force", help="Replace marks already in OUT.")] = False,
) -> None:
    """Mark documents before release: the text to publish, and a signed registration of the marks and their siblings."""
    from pydantic import ValidationError

    from verifier.errors import first_validation_error
    from verifier.marks.generators import MarkSpec
    from verifier.marks.run import make_files

    kinds = kinds or ["canary"]
    if len(kinds) > 1 and length:
        raise VerifierError("marks make: --length applies to one --kind at a time")
    try:
        specs = [MarkSpec(kind=kind, format=(fmt or "words") if kind == "canary" else None, length=length,  # type: ignore[arg-type]
                          siblings=siblings, repeats=repeats if kind == "trap" else 1) for kind in kinds]
    except ValidationError as exc:
        raise VerifierError(f"marks make: {first_validation_error(exc, top='options')}") from None
    paths, created = make_files(documents, out_dir, specs, sign_key, name or documents.stem, text_field, id_field, rephraser, seed, force)
    if created:
        say(err, f"created signing key {created} (public key {created}.pub)")
    say(out, f"publish:  {paths['published.jsonl']}")
    say(out, f"register: {paths['registration.dsse.json']} (signed; public key {paths['registrant.pub']})")
    say(out, f"keep private: {paths['private/siblings.json']} (the siblings: needed to test, never to be published)")


def _print_rank_test(finding, what: str) -> None:  # noqa: ANN001 - a marks.evaluate.MarksFinding
    table = Table("kind", "marks", "combined p", "share at level", "mean standardised score", title="Rank test by kind")
    for row in finding.by_kind:
        table.add_row(row["kind"], str(row["marks"]), f"{row['combined_p']:.3g}", f"{row['share_at_level']:.2f}", f"{row['mean_standardised']:.2f}")
    out.print(table)
    for mark, why in finding.excluded.items():
        say(err, f"not tested: {mark}: {why}")
    if finding.p_value is None:
        say(out, f"{finding.status}: the design cannot reach alpha {finding.alpha} (smallest p {finding.smallest_p:.3g})")
        return
    say(out, f"{finding.status}: combined p = {finding.p_value:.3g} ({finding.method}, {finding.n_marks} {what}; H0: {finding.null_hypothesis}); "
             f"effect size {finding.effect_size:.2f}; {what} needed for power 80%: {finding.marks_needed or 'none (no member-like effect)'}")


@marks_app.command("test")
def marks_test(
    model: Annotated[str, typer.Option(help="Model SPEC to test.")],
    registration: Annotated[Path, typer.Option(help="The signed registration (registration.dsse.json).")],
    siblings: Annotated[Path, typer.Option(help="The private siblings file the registration commits to.")],
    published: Annotated[Path, typer.Option(help="The published documents.")],
    released: Annotated[Optional[str], typer.Option(help="The model's declared release date, YYYY-MM-DD.")] = None,
    cutoff: Annotated[Optional[int], typer.Option(help="The model's declared training-cutoff year.")] = None,
    alpha: Annotated[float, typer.Option(min=1e-6, max=0.2)] = 0.05,
    combine: Annotated[str, typer.Option(help="fisher or binomial.")] = "fisher",
    level: Annotated[float, typer.Option(min=1e-6, max=0.5, help="binomial: the per-mark level.")] = 0.05,
    context_words: Annotated[int, typer.Option(min=0, max=200)] = 32,
    seed: Annotated[int, typer.Option(help="Seed of the planning resamples.")] = 0,
    trust_dir: Annotated[Optional[Path], typer.Option(help="Trust store holding the registrant's key (default ~/.config/verifier/trusted).")] = None,
    cache_dir: Annotated[Optional[Path], typer.Option(help="Forward-pass cache folder.")] = None,
    rephraser: Annotated[Optional[str], typer.Option(help="The rephrasing model, when not where the registration names it.")] = None,
) -> None:
    """Rank each published mark among its siblings under MODEL; exact p-values, combined."""
    from datetime import date

    from verifier.marks.run import TargetScorer, test_registered
    from verifier.targets import ScoringOptions

    if combine not in ("fisher", "binomial"):
        raise VerifierError(f"--combine {combine!r}: use fisher or binomial")
    try:
        day = date.fromisoformat(released) if released else None
    except ValueError:
        raise VerifierError(f"--released {released!r}: not a date (YYYY-MM-DD)") from None
    with progress_bars() as progress:
        finding = test_registered(TargetScorer(model, ScoringOptions(), cache_dir, progress), registration, siblings, published,
                                  day, cutoff, alpha, combine, level, context_words, seed, trust_dir, rephraser=rephraser)
    _print_rank_test(finding, "marks")


@marks_app.command("identifiers")
def marks_identifiers(
    documents: Annotated[Path, typer.Argument(help="Suspect documents (.jsonl, .csv or .parquet).")],
    model: Annotated[str, typer.Option(help="Model SPEC to test.")],
    samples: Annotated[int, typer.Option(min=19, max=9999, help="Fresh identifiers per real one.")] = 99,
    alpha: Annotated[float, typer.Option(min=1e-6, max=0.2)] = 0.05,
    combine: Annotated[str, typer.Option(help="fisher or binomial.")] = "fisher",
    level: Annotated[float, typer.Option(min=1e-6, max=0.5)] = 0.05,
    context_words: Annotated[int, typer.Option(min=0, max=200)] = 32,
    max_identifiers: Annotated[int, typer.Option(min=1)] = 500,
    seed: Annotated[int, typer.Option(help="Seed of the planning resamples (each identifier seeds its own fresh draws).")] = 0,
    text_field: Annotated[str, typer.Option()] = "text",
    cache_dir: Annotated[Optional[Path], typer.Option(help="Forward-pass cache folder.")] = None,
) -> None:
    """Test the natural identifiers (hashes, UUIDs, short links, keys) in DOCUMENTS against fresh draws of their formats."""
    from verifier.marks.run import TargetScorer, test_identifiers
    from verifier.targets import ScoringOptions

    if combine not in ("fisher", "binomial"):
        raise VerifierError(f"--combine {combine!r}: use fisher or binomial")
    with progress_bars() as progress:
        finding = test_identifiers(TargetScorer(model, ScoringOptions(), cache_dir, progress), documents, samples, alpha, combine,
                                   level, context_words, max_identifiers, seed, text_field)
    _print_rank_test(finding, "identifiers")


keys_app = typer.Typer(no_args_is_help=True, help="Signing keys for evidence bundles.")
app.add_typer(keys_app, name="keys")


@keys_app.command("generate")
def keys_generate(
    out_path: Annotated[Optional[Path], typer.Option("--out", help="Private key file to create (mode 0600); the public key goes to OUT.pub.")] = None,
    force: Annotated[bool, typer.Option("--force", help="Replace an existing private or public key.")] = False,
) -> None:
    """Create an Ed25519 signing key pair."""
    from verifier.evidence import generate_key
    from verifier.job import default_key_path

    path = out_path or default_key_path()
    public = generate_key(path, force=force)
    say(err, f"private key: {path} (mode 0600)")
    say(err, f"public key:  {public}")


@keys_app.command("trust")
def keys_trust(
    public_key: Annotated[Path, typer.Argument(help="A signer's public key (PEM), obtained from the signer by a channel you trust.")],
    trust_dir: Annotated[Optional[Path], typer.Option(help="Trust store (default ~/.config/verifier/trusted).")] = None,
) -> None:
    """Pin a signer's public key: 'verify' then accepts bundles it signed without --key."""
    from verifier.evidence.signing import trust_key

    path, fingerprint = trust_key(public_key, trust_dir)
    say(err, f"pinned {fingerprint} as {path}")


@app.command()
def audit(
    claim: Annotated[str, typer.Argument(help="Claim manifest (YAML), or example:NAME.")],
    out_dir: Annotated[Path, typer.Option("--out", help="Folder the bundle is written under.")] = Path("evidence"),
    sign_key: Annotated[Optional[Path], typer.Option(help="Ed25519 private key (default ~/.config/verifier/signing.key, created if missing).")] = None,
    no_sign: Annotated[bool, typer.Option("--no-sign", help="Write an unsigned bundle ('verify' will refuse it).")] = False,
    cache_dir: Annotated[Optional[Path], typer.Option(help="Forward-pass cache folder.")] = None,
    force: Annotated[bool, typer.Option("--force", help="Replace an existing bundle of the same claim and findings.")] = False,
    engine: Annotated[str, typer.Option(help="inprocess, or ray: score the claim's document sets with its target on a Ray Data "
                                        "actor pool into the cache first (pip install 'verifier\\[ray]').")] = "inprocess",
    address: Annotated[Optional[str], typer.Option(help="--engine ray: a cluster's address; default: a local Ray.")] = None,
    actors: Annotated[int, typer.Option(help="--engine ray: scoring actors.")] = 1,
    actor_cpus: Annotated[float, typer.Option(help="--engine ray: CPUs per actor.")] = 0.5,
    api_key_env: Annotated[Optional[str], API_KEY_ENV] = None,
    judge_api_key_env: Annotated[Optional[str], JUDGE_API_KEY_ENV] = None,
    allow_http: Annotated[bool, ALLOW_HTTP] = False,
) -> None:
    """Walk the claim's policy, write HTML and PDF reports and a signed evidence bundle.

    CLAIM is a claim file, or example:NAME for a bundled example (example:wikimia-smollm2)."""
    from verifier.job import audit_to_bundle
    from verifier.peers import PeerAccess
    from verifier.ray_scoring import RayOptions

    if engine not in ("inprocess", "ray"):
        raise VerifierError(f"--engine {engine!r}: use inprocess or ray")
    ray = RayOptions(address=address, actors=actors, actor_cpus=actor_cpus) if engine == "ray" else None
    with progress_bars() as progress:
        result = audit_to_bundle(claim, out_dir, sign_key=sign_key, sign=not no_sign, cache_dir=cache_dir, progress=progress, force=force,
                                 ray=ray, access=PeerAccess(api_key_env, judge_api_key_env, allow_http))
    if result.created_key:
        say(err, f"created signing key {result.created_key} (public key {result.created_key}.pub)")
    err.print(f"rendered HTML in {result.html_seconds:.2f} s, PDF in {result.pdf_seconds:.2f} s")
    say(out, result.findings["verdict_sentence"])
    say(out, f"bundle: {result.folder}{'' if result.signed else ' (unsigned)'}")


@app.command()
def verify(
    bundle: Annotated[Path, typer.Argument(help="Evidence bundle folder.")],
    key: Annotated[Optional[Path], typer.Option(help="The signer's public key, pinned for this check.")] = None,
    trust_dir: Annotated[Optional[Path], typer.Option(help="Trust store of pinned public keys (default ~/.config/verifier/trusted).")] = None,
) -> None:
    """Exit 0 only if every entry, digest and the signature hold and the signer is pinned (--key or the
    trust store); 3 if all holds but the signer is not pinned; 2 naming the first entry that differs."""
    from verifier.evidence import verify_bundle

    pinned = None
    if key is not None and key.resolve().is_relative_to(bundle.resolve()):
        raise VerifierError(f"--key {key}: inside the bundle; a bundle cannot pin its own signer (use the signer's published key)")
    if key is not None:
        try:
            pinned = key.read_bytes()
        except OSError as exc:
            raise VerifierError(f"{key}: cannot read ({exc.strerror})") from None
    result = verify_bundle(bundle, pinned, trust_dir)
    p = result.predicate
    facts = (f"{result.files} files intact; signer {result.signer[:16]}; predicate {result.statement.get('predicateType')}; "
             f"claim {p.get('claim_id')}: {p.get('verdict')}; verifier {p.get('verifier')}")
    if result.pinned_by is None:
        say(out, f"signature valid but the signer is not pinned: {facts}. Pin the signer's published key with "
                 f"--key or 'verifier keys trust'.")
        raise typer.Exit(3)
    say(out, f"OK: {facts}; signer pinned by {result.pinned_by}")
