"""``verifier init``: a first claim for your own model and files, written complete and commented,
and checked on the spot as an audit would check it (files read, model found, sets large enough)."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path
from typing import Annotated

import typer

from verifier.cli.output import err, out, say
from verifier.errors import VerifierError


def init(
    claim: Annotated[Path, typer.Argument(help="The claim file to write (default: claim.yaml).")] = Path("claim.yaml"),
    model: Annotated[
        str | None,
        typer.Option(
            help="The model audited: a model folder, a .gguf file, smollm2-135m, a hub id, or "
            "openai-compatible:https://host/v1#model (asked for when not given)."
        ),
    ] = None,
    suspect: Annotated[
        Path | None,
        typer.Option(help="The documents the claim is about (JSONL, CSV or Parquet; asked for when not given)."),
    ] = None,
    heldout: Annotated[
        Path | None, typer.Option(help="Documents of the same kind and period, certainly not trained on.")
    ] = None,
    dated: Annotated[
        Path | None, typer.Option(help="A set of another date (the audit shows why it cannot serve).")
    ] = None,
    corpus: Annotated[
        Path | None,
        typer.Option(help="The corpus declared as training data: a folder of its files (its digest is computed)."),
    ] = None,
    kind: Annotated[str, typer.Option(help="trained_on, not_trained_on or decontaminated.")] = "trained_on",
    claim_id: Annotated[
        str | None, typer.Option("--id", help="The claim's id (default: the claim folder's name).")
    ] = None,
    statement: Annotated[
        str | None, typer.Option(help="The claim in one sentence (default: made from the options).")
    ] = None,
    made_by: Annotated[str | None, typer.Option(help="Who makes the claim (asked for when not given).")] = None,
    device: Annotated[str, typer.Option(help="auto, cpu or cuda.")] = "auto",
    force: Annotated[bool, typer.Option("--force", help="Replace an existing claim file.")] = False,
) -> None:
    """Write a complete, commented claim for your model and files, checked as an audit would check
    it (files read, model found, sets large enough); then 'verifier audit CLAIM'."""
    from verifier.audit import check_claim
    from verifier.claims import ClaimKind, Starter, starter_claim

    if claim.exists() and not force:
        raise VerifierError(f"{claim}: exists; not replaced (--force replaces it)")
    if not re.fullmatch(r"auto|cpu|cuda(:\d+)?", device):
        raise VerifierError(f"--device {device}: use auto, cpu, cuda or cuda:N")
    try:
        kind_value = ClaimKind(kind)
    except ValueError:
        raise VerifierError(f"--kind {kind}: use trained_on, not_trained_on or decontaminated") from None
    model = model or _ask("model (a folder, a .gguf file, smollm2-135m or openai-compatible:URL#name)", "--model")
    suspect = suspect or Path(_ask("suspect documents (a JSONL, CSV or Parquet file)", "--suspect"))
    made_by = made_by or _ask("who makes the claim", "--made-by")
    folder = Path(os.path.abspath(claim.parent))
    starter = Starter(
        claim_id=claim_id or re.sub(r"[^A-Za-z0-9._-]+", "-", folder.name).strip("-._") or "my-claim",
        kind=kind_value,
        made_by=made_by,
        model=_model_spec(model, folder),
        suspect=_inside(suspect, folder, "--suspect"),
        heldout=_inside(heldout, folder, "--heldout") if heldout else None,
        dated=_inside(dated, folder, "--dated") if dated else None,
        corpus=_inside(corpus, folder, "--corpus") if corpus else None,
        corpus_sha256=_corpus_digest(corpus) if corpus else None,
        statement=statement,
        device=device,
    )
    draft = claim.with_name(f".{claim.name}.init")  # checked where it will lie: its paths are relative to it
    draft.write_text(starter_claim(starter), encoding="utf-8")
    try:
        check_claim(draft)
    except VerifierError as exc:
        draft.unlink()
        raise VerifierError(f"{claim}: not written: {str(exc).replace(str(draft) + ': ', '')}") from None
    except BaseException:
        draft.unlink()
        raise
    try:
        os.replace(draft, claim)
    except OSError:
        draft.unlink()
        raise
    say(err, f"wrote {claim}: a complete claim, checked as the audit will check it (its files read, its model found)")
    say(out, f"verifier audit {claim}")


def _ask(what: str, option: str) -> str:
    """A value the user did not give: asked on a terminal, else an error naming the option."""
    if not sys.stdin.isatty():
        raise VerifierError(f"{option}: not given (and no terminal to ask on)")
    return str(typer.prompt(what)).strip()


def _model_spec(model: str, folder: Path) -> str:
    """A local model as the claim names it: relative to the claim's folder (a model, unlike
    evidence, may lie outside it; the findings name it by its file or folder name only)."""
    path = Path(model).expanduser()
    if not path.exists():
        return model  # a bundled name, a hub id or an API target: as given
    return Path(os.path.relpath(os.path.abspath(path), folder)).as_posix()  # as the user names it: links kept


def _inside(path: Path, folder: Path, option: str) -> str:
    """An evidence file as the claim names it; it must lie in the claim's folder (no private path
    enters a bundle, and a claim's folder is what an auditor receives)."""
    resolved = Path(os.path.abspath(path.expanduser()))
    if not resolved.exists():
        raise VerifierError(f"{option} {path}: not found")
    if not resolved.is_relative_to(folder):
        raise VerifierError(
            f"{option} {path}: outside the claim's folder {folder}; evidence must lie in it or below it: write the "
            f"claim next to your files (verifier init {resolved.parent / 'claim.yaml'} ...)"
        )
    return resolved.relative_to(folder).as_posix()


def _corpus_digest(corpus: Path) -> str:
    from verifier.corpus import digest_files

    return digest_files([corpus])[0]
