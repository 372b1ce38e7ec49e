"""``verifier testbed``: ground-truth testbeds, small models with known training membership."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Annotated

import typer

from verifier.cli.output import err, out, progress_bars, say

app = typer.Typer(no_args_is_help=True, help="Ground-truth testbeds: small models with known training membership.")


@app.command("build")
def build(
    preset: Annotated[
        str,
        typer.Option(
            help="small (about a minute), standard (the full pool, 6 epochs), light (2 epochs), faint (1), "
            "finetune / finetune-small (SmolLM2-135M-Instruct fine-tuned one epoch on post-2023 texts), "
            "pretrain-like / pretrain-like-small (SmolLM2-135M-Instruct continued-pretrained one pass over the "
            "members among real background text: about 35 minutes on 2 cores with AMX), outputs "
            "(SmolLM2-135M-Instruct fine-tuned 3 epochs with the bundled output-only marks inserted 1, 4 and 16 "
            "times: the marks route through answers-only APIs)."
        ),
    ] = "small",
    seed: Annotated[int | None, typer.Option(help="Seed of the membership draw, identifiers and training.")] = None,
    epochs: Annotated[int | None, typer.Option(help="Training epochs (overrides the preset).")] = None,
    out_dir: Annotated[Path | None, typer.Option("--out", help="Folder to build into (default: the cache).")] = None,
    marks: Annotated[
        str | None,
        typer.Option(
            help="Marked documents to insert: a folder made by 'verifier marks make', "
            "'example' (the bundled one, the default) or 'none'."
        ),
    ] = None,
) -> None:
    """Train a testbed model on a seeded member half of the bundled text pool (cached by config)."""
    from verifier.testbed.build import build_testbed, preset_config

    config = preset_config(preset, seed=seed, epochs=epochs)
    if marks is not None:
        config = config.model_copy(
            update={"marks": None if marks == "none" else marks if marks == "example" else str(Path(marks).resolve())}
        )
    with progress_bars() as progress:
        bar: list[Callable[[int], None]] = []

        def on_batch(total: int) -> None:
            if not bar:  # the number of batches is known once the stream is prepared
                bar.append(progress("training (batches)", total))
            bar[0](1)

        testbed = build_testbed(config, out=out_dir, on_batch=on_batch)
    m = testbed.manifest
    members = sum(d["member"] for d in m["documents"])
    say(
        err,
        f"testbed {m['digest']}: {members} members / {len(m['documents'])} texts, {m['parameters'] / 1e6:.1f}M "
        f"parameters, built in {m['build_seconds']} s",
    )
    say(out, str(testbed.folder))
    say(
        err,
        f"score it: verifier score --model {testbed.model_dir} --data {testbed.documents} --label-field member "
        f"--max-tokens {config.seq_len}",
    )
