"""``verifier marks`` (mark documents before release, test a model against them) and ``verifier identifiers``
(test a model against the natural identifiers in documents): the two rank-test subsystems."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from verifier.cli.options import ALLOW_HTTP, DEVICE, DTYPE, CacheDir, checked, precision
from verifier.cli.output import err, out, progress_bars, say
from verifier.errors import VerifierError

app = typer.Typer(
    no_args_is_help=True,
    help="Marks made before release (canaries, traps, rephrasings, cue/reply and co-occurrence marks) and tests of a "
    "model against them.",
)


@app.command("make")
def make(
    documents: Annotated[Path, typer.Argument(help="Documents to mark (.jsonl, .csv or .parquet); one mark each.")],
    out_dir: Annotated[
        Path,
        typer.Option(
            "--out",
            help="Folder for published.jsonl, registration.dsse.json, registrant.pub and private/siblings.json.",
        ),
    ],
    kinds: Annotated[
        list[str] | None,
        typer.Option(
            "--kind",
            help="canary, trap, rephrasing (tested through log-probs), cue_reply or cooccurrence (tested from "
            "generated text only); given more than once, "
            "the documents are split into equal blocks in file order, one kind each (each with its default length).",
        ),
    ] = None,
    fmt: Annotated[str | None, typer.Option("--format", help="Canaries: words, hex, base32 or sentence.")] = None,
    length: Annotated[
        int,
        typer.Option(
            help="Words (words, trap, a cue_reply's reply), characters (hex, base32) or pairs (cooccurrence); 0: the "
            "kind's default."
        ),
    ] = 0,
    siblings: Annotated[
        int, typer.Option(help="Unpublished siblings per mark: the smallest p-value of one mark is 1/(siblings+1).")
    ] = 99,
    repeats: Annotated[int, typer.Option(help="Traps: copies inside each published document.")] = 1,
    rephraser: Annotated[
        str, typer.Option(help="Rephrasings: 'offline' or 'model:SPEC' (never the model to be tested).")
    ] = "offline",
    name: Annotated[
        str | None, typer.Option(help="Name of the registration (default: the documents' file name).")
    ] = None,
    text_field: Annotated[str, typer.Option(help="Text field of the documents.")] = "text",
    id_field: Annotated[str, typer.Option(help="Id field of the documents (default: row numbers).")] = "id",
    sign_key: Annotated[
        Path | None,
        typer.Option(
            help="Ed25519 private key that signs the registration (default ~/.config/verifier/signing.key, created if "
            "missing)."
        ),
    ] = None,
    seed: Annotated[
        int | None, typer.Option(help="Secret seed of the generator (default: drawn from the system).")
    ] = None,
    force: Annotated[bool, typer.Option("--force", help="Replace marks already in OUT.")] = False,
    tsa: Annotated[
        list[str] | None,
        typer.Option(
            "--tsa",
            help="A time-stamping authority (RFC 3161) that dates the registration "
            "(registration.timestamp-<n>.tsr, published beside it); repeatable. A TSA "
            "that fails writes nothing.",
        ),
    ] = None,
    allow_http: Annotated[bool, ALLOW_HTTP] = False,
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
        specs = [
            MarkSpec(
                kind=kind,
                format=(fmt or "words") if kind == "canary" else None,
                length=length,
                siblings=siblings,
                repeats=repeats if kind == "trap" else 1,
            )
            for kind in kinds
        ]
    except ValidationError as exc:
        raise VerifierError(f"marks make: {first_validation_error(exc, top='options')}") from None
    from verifier.boundary.peers import PeerAccess
    from verifier.trust.timestamps import check_tsa

    access = PeerAccess(allow_http=allow_http)
    check_tsa(tsa, access=access)
    paths, created, warnings = make_files(
        documents,
        out_dir,
        specs,
        sign_key,
        name or documents.stem,
        text_field,
        id_field,
        rephraser,
        seed,
        force,
        tsa,
        access,
    )
    if created:
        say(err, f"created signing key {created} (public key {created}.pub)")
    for warning in warnings:
        say(err, f"warning: {warning}")
    say(out, f"publish:  {paths['published.jsonl']}")
    say(out, f"register: {paths['registration.dsse.json']} (signed; public key {paths['registrant.pub']})")
    for token in sorted(p for n, p in paths.items() if n.endswith(".tsr")):
        say(out, f"timestamp: {token} (publish it with the registration)")
    say(out, f"keep private: {paths['private/siblings.json']} (the siblings: needed to test, never to be published)")


def _print_rank_test(finding, what: str) -> None:  # noqa: ANN001 - a marks.evaluate.RankFinding
    table = Table("kind", "marks", "combined p", "share at level", "mean standardised score", title="Rank test by kind")
    for row in finding.by_kind:
        table.add_row(
            row["kind"],
            str(row["marks"]),
            f"{row['combined_p']:.3g}",
            f"{row['share_at_level']:.2f}",
            f"{row['mean_standardised']:.2f}",
        )
    out.print(table)
    for mark, why in finding.excluded.items():
        say(err, f"not tested: {mark}: {why}")
    if finding.p_value is None:
        say(
            out,
            f"{finding.status}: the design cannot reach alpha {finding.alpha} (smallest p {finding.smallest_p:.3g})",
        )
        return
    say(
        out,
        f"{finding.status}: combined p = {finding.p_value:.3g} ({finding.method}, {finding.n_marks} {what}; H0: "
        f"{finding.null_hypothesis}); "
        f"effect size {finding.effect_size:.2f}; {what} needed for power 80%: "
        f"{finding.marks_needed or 'none (no member-like effect)'}",
    )


@app.command("test")
def test(
    model: Annotated[str, typer.Option(help="Model SPEC to test.")],
    registration: Annotated[Path, typer.Option(help="The signed registration (registration.dsse.json).")],
    siblings: Annotated[Path, typer.Option(help="The private siblings file the registration commits to.")],
    published: Annotated[Path, typer.Option(help="The published documents.")],
    released: Annotated[str | None, typer.Option(help="The model's declared release date, YYYY-MM-DD.")] = None,
    cutoff: Annotated[int | None, typer.Option(help="The model's declared training-cutoff year.")] = None,
    alpha: Annotated[float, typer.Option(help="Significance level of the combined test.")] = 0.05,
    combine: Annotated[str, typer.Option(help="fisher or binomial.")] = "fisher",
    level: Annotated[float, typer.Option(help="binomial: the per-mark level.")] = 0.05,
    context_words: Annotated[
        int, typer.Option(help="Published words before a mark, scored with it and with each sibling.")
    ] = 32,
    seed: Annotated[int, typer.Option(help="Seed of the planning resamples.")] = 0,
    trust_dir: Annotated[
        Path | None,
        typer.Option(help="Trust store holding the registrant's key (default ~/.config/verifier/trusted)."),
    ] = None,
    cache_dir: CacheDir = None,
    device: Annotated[str, DEVICE] = "auto",
    dtype: Annotated[str, DTYPE] = "fp32",
    rephraser: Annotated[
        str | None, typer.Option(help="The rephrasing model, when not where the registration names it.")
    ] = None,
    samples: Annotated[int, typer.Option(help="Output-only marks: generations per cue.")] = 8,
    temperature: Annotated[float, typer.Option(help="Output-only marks: sampling temperature.")] = 1.0,
    max_tokens: Annotated[int, typer.Option(help="Output-only marks: tokens per generation.")] = 48,
    mode: Annotated[str, typer.Option(help="Output-only marks: text (continue the cue) or chat.")] = "text",
    prompt: Annotated[
        str, typer.Option(help="Output-only marks: context (the cue after its published context) or cue (alone).")
    ] = "context",
) -> None:
    """Rank each published mark among its siblings under MODEL; exact p-values, combined."""
    from datetime import date

    from verifier.marks.run import test_registered
    from verifier.routes.marks import MarksParams
    from verifier.scoring.table import TargetScorer
    from verifier.targets import ScoringOptions

    params = checked(
        MarksParams,
        alpha=alpha,
        combine=combine,
        level=level,
        context_words=context_words,
        samples=samples,
        temperature=temperature,
        max_tokens=max_tokens,
        mode=mode,
        prompt=prompt,
    )  # the marks route's own bounds
    try:
        day = date.fromisoformat(released) if released else None
    except ValueError:
        raise VerifierError(f"--released {released!r}: not a date (YYYY-MM-DD)") from None
    with progress_bars() as progress:
        finding = test_registered(
            TargetScorer(model, ScoringOptions(device=device, dtype=precision(dtype)), cache_dir, progress),
            registration,
            siblings,
            published,
            day,
            cutoff,
            alpha,
            combine,
            level,
            context_words,
            seed,
            trust_dir,
            rephraser=rephraser,
            protocol=params.protocol(),
        )
    _print_rank_test(finding, "marks")


def identifiers(
    documents: Annotated[Path, typer.Argument(help="Suspect documents (.jsonl, .csv or .parquet).")],
    model: Annotated[str, typer.Option(help="Model SPEC to test.")],
    samples: Annotated[int, typer.Option(help="Fresh identifiers per real one.")] = 99,
    alpha: Annotated[float, typer.Option(help="Significance level of the combined test.")] = 0.05,
    combine: Annotated[str, typer.Option(help="fisher or binomial.")] = "fisher",
    level: Annotated[float, typer.Option(help="binomial: the per-mark level.")] = 0.05,
    context_words: Annotated[
        int, typer.Option(help="Published words before a mark, scored with it and with each sibling.")
    ] = 32,
    max_identifiers: Annotated[int, typer.Option(help="The first identifiers tested.")] = 500,
    seed: Annotated[
        int, typer.Option(help="Seed of the planning resamples (each identifier seeds its own fresh draws).")
    ] = 0,
    text_field: Annotated[str, typer.Option()] = "text",
    cache_dir: CacheDir = None,
    device: Annotated[str, DEVICE] = "auto",
    dtype: Annotated[str, DTYPE] = "fp32",
) -> None:
    """Test the natural identifiers (hashes, UUIDs, short links, keys) in DOCUMENTS against fresh draws of their
    formats."""
    from verifier.identifiers.run import test_identifiers
    from verifier.routes.identifiers import IdentifierParams
    from verifier.scoring.table import TargetScorer
    from verifier.targets import ScoringOptions

    checked(
        IdentifierParams,
        alpha=alpha,
        combine=combine,
        level=level,
        context_words=context_words,
        samples=samples,
        max_identifiers=max_identifiers,
    )  # the identifiers route's own bounds
    with progress_bars() as progress:
        finding = test_identifiers(
            TargetScorer(model, ScoringOptions(device=device, dtype=precision(dtype)), cache_dir, progress),
            documents,
            samples,
            alpha,
            combine,
            level,
            context_words,
            max_identifiers,
            seed,
            text_field,
        )
    _print_rank_test(finding, "identifiers")


identifiers_app = typer.Typer(
    no_args_is_help=True,
    help="Natural identifiers (hashes, UUIDs, short links, keys) in documents, "
    "tested against fresh draws of their formats.",
)
identifiers_app.command("test")(identifiers)
app.command("identifiers", hidden=True, help="Old name of 'verifier identifiers test', kept for a release.")(
    identifiers
)
