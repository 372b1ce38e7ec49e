"""``verifier summary``: check a provider's EU training-content summary field by field (``check``),
and print the blank template (``template``)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Annotated

import typer

from verifier.cli.options import CacheDir
from verifier.cli.output import err, out, progress_bars, say

app = typer.Typer(
    no_args_is_help=True,
    help="A provider's EU training-content summary (AI Act Art. 53(1)(d)) checked field by field against the model and "
    "the evidence given.",
)


@app.command("check")
def check(
    summary: Annotated[Path, typer.Argument(help="The summary (YAML or JSON; 'verifier summary template').")],
    model: Annotated[str, typer.Option(help="The model the summary covers: a SPEC as in a claim's model.target.")],
    corpus: Annotated[
        Path | None,
        typer.Option(help="The training corpus (files or a folder), inside the summary's folder: tests 1.3, 2.1, 2.3."),
    ] = None,
    corpus_sha256: Annotated[
        str | None, typer.Option(help="The corpus digest the provider declared (default: the corpus as given).")
    ] = None,
    opted_out_marks: Annotated[
        Path | None,
        typer.Option(help="A marks folder ('verifier marks make') of content published with an opt-out: tests 3.1."),
    ] = None,
    user_data_marks: Annotated[
        Path | None,
        typer.Option(help="A marks folder of content submitted through the provider's service: tests 2.4."),
    ] = None,
    removed: Annotated[
        Path | None, typer.Option(help="Documents the provider says it removed (JSONL, CSV, Parquet): tests 3.2.")
    ] = None,
    out_dir: Annotated[Path, typer.Option("--out", help="Folder the check's bundle is written under.")] = Path(
        "evidence"
    ),
    policy: Annotated[str, typer.Option(help="The policy every derived claim runs under (a name or a file).")] = (
        "default"
    ),
    seed: Annotated[int, typer.Option(help="Seed of every derived claim.")] = 0,
    sign_key: Annotated[
        Path | None,
        typer.Option(help="Ed25519 private key (default ~/.config/verifier/signing.key, created if missing)."),
    ] = None,
    no_sign: Annotated[bool, typer.Option("--no-sign", help="Write an unsigned bundle.")] = False,
    cache_dir: CacheDir = None,
    force: Annotated[bool, typer.Option("--force", help="Replace an existing check of this summary.")] = False,
) -> None:
    """Every field of the template: tested (by which route, with what verdict) or not testable (and why);
    one signed bundle whose report opens with the template's table."""
    from verifier.summary.check import check_summary_file
    from verifier.summary.fields import SummaryEvidence
    from verifier.trust.keys import signing_key

    key, created = signing_key(sign_key) if not no_sign else (None, None)
    evidence = SummaryEvidence(
        model=model,
        corpus=corpus,
        corpus_sha256=corpus_sha256,
        opted_out_marks=opted_out_marks,
        user_data_marks=user_data_marks,
        removed=removed,
    )
    with progress_bars() as progress:
        result = check_summary_file(summary, evidence, out_dir, key, policy, seed, cache_dir, progress, force)
    if created:
        say(err, f"created signing key {created} (public key {created}.pub)")
    counts = Counter(row["verdict"] for row in result.findings["rows"])
    say(
        out,
        f"summary {result.findings['summary']['id']}: {len(result.findings['rows'])} fields; "
        + ", ".join(f"{verdict.lower() if ' ' in verdict else verdict} {n}" for verdict, n in sorted(counts.items())),
    )
    say(out, f"{'signed' if result.signed else 'unsigned'} bundle: {result.folder}")


@app.command("template")
def template() -> None:
    """Print the blank summary template (YAML) to fill in."""
    from verifier.boundary.resources import resource

    typer.echo(resource("examples", "summary", "template.yaml").read_text(encoding="utf-8"), nl=False)
