"""``verifier corpus``: build, digest, check, query, attribute and serve corpus indexes (``index`` is its old name, kept
for a release)."""

from __future__ import annotations

import json
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Annotated

import typer

from verifier.cli.options import ALLOW_HTTP, DEVICE, DTYPE, precision
from verifier.cli.output import err, out, progress_bars, say
from verifier.errors import VerifierError

app = typer.Typer(
    no_args_is_help=True,
    help="Corpus indexes: build, digest, check, query and serve a published training corpus, "
    "and attribute a model's outputs to it.",
)


EXCLUDE = typer.Option(
    help="Leave out files under the folders given whose path, or a part of it, matches this glob (repeatable; "
    "recorded in the index and the report). Every other file, dot-files included, is read."
)


@app.command("build")
def build(
    inputs: Annotated[
        list[Path], typer.Argument(help="Corpus files or folders: JSONL (.gz, .zst), Parquet, plain text.")
    ],
    out_dir: Annotated[Path, typer.Option("--out", help="Index folder to create.")],
    text_field: Annotated[str, typer.Option(help="Field or column holding the text (JSONL, Parquet).")] = "text",
    shard_bytes: Annotated[
        int, typer.Option(help="Text bytes per shard (about 5 bytes of RAM each while building).")
    ] = 512 << 20,
    minhash: Annotated[
        bool,
        typer.Option(
            "--minhash/--no-minhash", help="Store MinHash signatures for near-duplicate queries (slower build)."
        ),
    ] = False,
    force: Annotated[bool, typer.Option("--force", help="Replace an existing index folder.")] = False,
    max_document_mb: Annotated[
        float,
        typer.Option(
            help="Largest record (a JSONL line, a Parquet value, a plain-text file), in MiB; "
            "a larger one stops the build naming it."
        ),
    ] = 32,
    max_expansion: Annotated[
        int,
        typer.Option(
            help="Most decompressed bytes per byte of a .gz or .zst file (files under 64 MiB "
            "decompressed always pass); a compression bomb stops the build."
        ),
    ] = 100,
    exclude: Annotated[list[str] | None, EXCLUDE] = None,
) -> None:
    """Build a suffix-array index of a corpus; prints the corpus digest a developer declares."""
    from verifier.corpus import build_index
    from verifier.corpus.sources import ReadLimits

    if not 0.001 <= max_document_mb <= 4096:
        raise VerifierError(f"--max-document-mb {max_document_mb}: from 0.001 to 4096")
    limits = ReadLimits(max_document_bytes=int(max_document_mb * (1 << 20)), max_expansion=max_expansion)
    with progress_bars() as progress:
        report = build_index(
            inputs,
            out_dir,
            text_field=text_field,
            shard_bytes=shard_bytes,
            minhash=minhash,
            force=force,
            progress=progress,
            limits=limits,
            exclude=tuple(exclude or ()),
        )
    empty = sum(s.empty_documents for s in report.sources)
    say(
        err,
        f"indexed {report.documents} documents ({report.input_bytes / 1e6:.1f} MB of files, "
        f"{report.text_bytes / 1e6:.1f} MB of text) "
        f"in {report.shards} shard(s), {report.seconds:.1f} s"
        + (f"; {empty} empty documents not indexed" if empty else ""),
    )
    say(out, f"corpus sha256 {report.corpus_sha256}")
    say(out, f"index  sha256 {report.index_sha256}  {report.folder}")


@app.command("digest")
def digest(
    inputs: Annotated[list[Path], typer.Argument(help="Corpus files or folders, in the order they are indexed.")],
    exclude: Annotated[list[str] | None, EXCLUDE] = None,
) -> None:
    """The corpus digest of files (what a claim's evidence.corpus.sha256 declares), without indexing."""
    from verifier.corpus import digest_files

    digest, files = digest_files(inputs, tuple(exclude or ()))
    for name, sha in files:
        say(out, f"{sha}  {name}")
    say(out, f"corpus sha256 {digest}")


@app.command("check")
def check(
    index: Annotated[Path, typer.Argument(help="Index folder to check.")],
    corpus: Annotated[
        list[Path] | None,
        typer.Option(
            help="The corpus files or folders it was built from (repeatable, in "
            "order): rebuild and compare the text too."
        ),
    ] = None,
) -> None:
    """Check an index someone else built: digests, every suffix array recomputed, and with --corpus its text against the
    files."""
    import time

    from verifier.corpus import CorpusIndex

    started = time.perf_counter()
    opened = CorpusIndex.open(index, structure="full")
    say(err, f"digests and suffix arrays of {len(opened.shards)} shard(s) hold ({time.perf_counter() - started:.1f} s)")
    if corpus:
        started = time.perf_counter()
        opened.check_text(corpus)
        say(err, f"the corpus files rebuild the same index ({time.perf_counter() - started:.1f} s)")
    say(
        out,
        f"OK: index sha256 {opened.sha256}; corpus sha256 {opened.corpus_sha256}"
        + ("" if corpus else " (as its manifest declares: give --corpus to check the text against the files)"),
    )


@app.command("query")
def query(
    index: Annotated[str, typer.Argument(help="Index folder, or http(s)://HOST/#NAME for an infini-gram-style API.")],
    text: Annotated[str | None, typer.Argument(help="The text to look up (or --file).")] = None,
    file: Annotated[Path | None, typer.Option(help="Read the text from this file.")] = None,
    ngram: Annotated[int, typer.Option(help="Word n-gram length of the overlap.")] = 13,
    min_span_words: Annotated[int, typer.Option(help="Shortest verbatim span reported, in words.")] = 8,
    documents: Annotated[int, typer.Option(help="Documents listed per match.")] = 5,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    allow_http: Annotated[bool, ALLOW_HTTP] = False,
) -> None:
    """Count, documents, n-gram overlap, 50-character rule and longest verbatim spans of a text."""
    from verifier.boundary.peers import PeerAccess
    from verifier.corpus.backends import open_backend, query_report

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


@app.command("attribution")
def attribution(
    index: Annotated[str, typer.Argument(help="Index folder, or http(s)://HOST/#NAME.")],
    model: Annotated[str, typer.Option(help="Model SPEC that generates.")],
    prompts: Annotated[Path, typer.Option(help="Prompts: .jsonl, .csv or .parquet.")],
    text_field: Annotated[str, typer.Option(help="Field holding each prompt.")] = "text",
    max_new_tokens: Annotated[int, typer.Option(help="Tokens generated per prompt (greedy).")] = 64,
    min_span_words: Annotated[int, typer.Option(help="Shortest verbatim span reported, in words.")] = 8,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    allow_http: Annotated[bool, ALLOW_HTTP] = False,
    device: Annotated[str, DEVICE] = "auto",
    dtype: Annotated[str, DTYPE] = "fp32",
) -> None:
    """Generate from a model and attribute the long verbatim spans of its outputs to corpus documents."""
    from verifier.boundary.peers import PeerAccess
    from verifier.corpus.attribution import attribute_outputs
    from verifier.corpus.backends import open_backend
    from verifier.data import load_documents
    from verifier.targets import ScoringOptions, load_target
    from verifier.targets.base import generating

    if not 1 <= max_new_tokens <= 4096:
        raise VerifierError(f"--max-new-tokens {max_new_tokens}: from 1 to 4096")
    texts = load_documents(prompts, text_field=text_field).texts
    backend = open_backend(index, access=PeerAccess(allow_http=allow_http))
    outputs = generating(load_target(model, ScoringOptions(device=device, dtype=precision(dtype)))).generate(
        texts, max_new_tokens
    )
    found = attribute_outputs(backend, texts, outputs, min_span_words=min_span_words)
    if as_json:
        json.dump([asdict(t) for t in found], sys.stdout, indent=1, ensure_ascii=False)
        sys.stdout.write("\n")
        return
    for i, t in enumerate(found, 1):
        say(
            out,
            f"prompt {i}: {len(t.lookup.spans)} span(s) of at least {min_span_words} words; longest "
            f"{t.lookup.longest_words} words",
        )
        for span in t.lookup.spans:
            docs = ", ".join(str(h.meta.get("id", h.document)) for h in span.documents)
            say(out, f"  {span.words} words, {span.count}x in corpus ({docs}): {t.lookup.text[span.start : span.end]}")


@app.command("serve")
def serve(
    index: Annotated[Path, typer.Argument(help="Index folder to serve.")],
    name: Annotated[str | None, typer.Option(help="Index name clients ask for (default: the folder name).")] = None,
    host: Annotated[str, typer.Option(help="Address to bind (127.0.0.1: this machine only).")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port.")] = 8000,
    workers: Annotated[
        int, typer.Option(min=1, max=64, help="Queries computed at once (CPU-bound: one per core).")
    ] = 2,
    max_connections: Annotated[
        int, typer.Option(min=1, max=100_000, help="Open connections; beyond them requests get 503.")
    ] = 256,
) -> None:
    """Answer infini-gram-style JSON queries (count, search_docs, attribution) over HTTP, with limits for exposure."""
    from verifier.corpus import CorpusIndex
    from verifier.corpus.server import Limits, make_server

    opened = CorpusIndex.open(index)
    server = make_server(opened, name or opened.name, host, port, Limits(workers=workers, connections=max_connections))
    say(
        err,
        f"serving index {name or opened.name} (corpus sha256 {opened.corpus_sha256}) on "
        f"http://{host}:{server.server_port}/",
    )
    server.serve_forever()  # uvicorn stops cleanly on SIGINT and SIGTERM


app.command("trace", hidden=True, help="Old name of 'attribution', kept for a release.")(attribution)
