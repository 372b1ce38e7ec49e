"""``verifier score``, ``evaluate``, ``power`` and ``serve``: score tables and what they show."""

from __future__ import annotations

import json
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from verifier.boundary.display import visible
from verifier.cli.options import (
    ALLOW_HTTP,
    API_KEY_ENV,
    DEVICE,
    DTYPE,
    JUDGE_API_KEY_ENV,
    CacheDir,
    checked,
    parse_signal_params,
)
from verifier.cli.output import err, out, progress_bars, say
from verifier.errors import VerifierError


def score(
    model: Annotated[
        str,
        typer.Option(
            help="Model SPEC: smollm2-135m, a .gguf file, a model folder, a hub id, or "
            "openai-compatible:URL#MODEL for a model behind an API."
        ),
    ],
    data: Annotated[Path, typer.Option(help="Documents: .jsonl, .csv or .parquet.")],
    out_path: Annotated[Path, typer.Option("--out", help="Score table to write (.parquet).")] = Path("scores.parquet"),
    text_field: Annotated[str, typer.Option(help="Field holding the text.")] = "text",
    label_field: Annotated[
        str, typer.Option(help="Field holding the 0/1 label (1 = member); '' for unlabelled data.")
    ] = "label",
    reference: Annotated[
        str | None, typer.Option(help="Reference model SPEC for the reference-difference signal.")
    ] = None,
    signal: Annotated[
        list[str] | None, typer.Option(help="Signals to compute (repeatable); default: all available.")
    ] = None,
    device: Annotated[str, DEVICE] = "auto",
    dtype: Annotated[str, DTYPE] = "fp32",
    batch_tokens: Annotated[
        int | None,
        typer.Option(
            help="Tokens of every forward pass (rows x width; fixed per width, for "
            "batch-invariant numbers; part of the cache key). Default: 1024 on cpu, "
            "32768 on cuda."
        ),
    ] = None,
    max_tokens: Annotated[int, typer.Option(help="Tokens scored per document, or per window with --stride.")] = 256,
    max_chars: Annotated[int, typer.Option(help="Characters of each document given to the model.")] = 2500,
    stride: Annotated[
        int | None,
        typer.Option(
            help="Score whole documents (up to --max-chars) in windows of --max-tokens "
            "advancing by STRIDE tokens, stitched; default: cut at --max-tokens."
        ),
    ] = None,
    threads: Annotated[int | None, typer.Option(help="CPU threads for torch.")] = None,
    cache_dir: CacheDir = None,
    api_key_env: Annotated[str | None, API_KEY_ENV] = None,
    judge_api_key_env: Annotated[str | None, JUDGE_API_KEY_ENV] = None,
    allow_http: Annotated[bool, ALLOW_HTTP] = False,
    concurrency: Annotated[int, typer.Option(help="API targets: requests in flight at once.")] = 4,
    signal_param: Annotated[
        list[str] | None,
        typer.Option(
            help="A signal's parameter, SIGNAL.KEY=VALUE (repeatable), "
            "e.g. blackspectrum.k=5 or trace_judge.judge=openai-compatible:URL#MODEL."
        ),
    ] = None,
    engine: Annotated[
        str,
        typer.Option(
            help="inprocess, or ray: the same scorer on a Ray Data actor pool (pip install "
            "'verifier\\[ray]'), resumable, for large sets."
        ),
    ] = "inprocess",
    address: Annotated[
        str | None,
        typer.Option(
            help="--engine ray: a cluster's address ('auto' for the one this machine belongs to); default: a local Ray."
        ),
    ] = None,
    actors: Annotated[int, typer.Option(help="--engine ray: scoring actors (each loads the model once).")] = 1,
    actor_cpus: Annotated[
        float, typer.Option(help="--engine ray: CPUs per actor (0.5 leaves room to read and write on 2 cores).")
    ] = 0.5,
    actor_gpus: Annotated[
        float | None, typer.Option(help="--engine ray: GPUs per actor (default 1 with --device cuda, else 0).")
    ] = None,
    ray_batch_docs: Annotated[
        int, typer.Option(help="--engine ray: documents per Ray batch (one output part each).")
    ] = 512,
    prefix_documents: Annotated[
        int | None,
        typer.Option(
            min=1,
            max=1000,
            help="recall, con_recall: labelled non-members (and "
            "members) drawn as prefix documents and left out of the table; default: "
            "the signals' shots.",
        ),
    ] = None,
    prefix_seed: Annotated[int, typer.Option(help="Seed of the prefix documents' draw.")] = 0,
    token_frequencies: Annotated[
        Path | None,
        typer.Option(
            help="dc_pdd: a token frequency table of the target's tokenizer "
            "('verifier frequencies'); default: the bundled one, where it matches."
        ),
    ] = None,
) -> None:
    """Score documents with a model: one row per document, one column per membership signal."""

    from verifier.boundary.peers import PeerAccess
    from verifier.scoring.table import score_file
    from verifier.targets import ApiOptions, ScoringOptions

    options = ScoringOptions(
        device=device,
        dtype=dtype,
        batch_tokens=batch_tokens,
        max_tokens=max_tokens,
        max_chars=max_chars,
        stride=stride,
        threads=threads,
    )
    api = checked(ApiOptions, concurrency=concurrency)
    access = PeerAccess(api_key_env, judge_api_key_env, allow_http)
    params = parse_signal_params(signal_param or [])
    if unnamed := sorted(set(params) - set(signal or [])):
        raise VerifierError(
            f"--signal-param for {', '.join(unnamed)}: name the signal with --signal too (a parameter of a signal "
            "not computed would be ignored)"
        )
    if engine == "ray" and (prefix_documents or token_frequencies):
        raise VerifierError("--prefix-documents and --token-frequencies are read by the in-process engine only")
    if engine == "ray":
        from verifier.scoring.ray import RayOptions, score_file_ray

        gpus = actor_gpus if actor_gpus is not None else (1.0 if options.device.startswith("cuda") else 0.0)
        ray_options = RayOptions(
            address=address, actors=actors, actor_cpus=actor_cpus, actor_gpus=gpus, batch_docs=ray_batch_docs
        )
        count = score_file_ray(
            model,
            data,
            out_path,
            options,
            ray_options,
            text_field=text_field,
            label_field=label_field or None,
            reference=reference,
            signal_names=signal,
            cache_dir=cache_dir,
            signal_params=params,
        )
        say(err, f"wrote {out_path} ({count} documents, on Ray)")
        return
    if engine != "inprocess":
        raise VerifierError(f"--engine {engine!r}: use inprocess or ray")
    with progress_bars() as progress:
        table = score_file(
            model,
            data,
            out_path,
            options,
            text_field=text_field,
            label_field=label_field or None,
            reference=reference,
            signal_names=signal,
            cache_dir=cache_dir,
            progress=progress,
            api=api,
            access=access,
            signal_params=params,
            prefix_documents=prefix_documents,
            prefix_seed=prefix_seed,
            token_frequencies=token_frequencies,
        )
    say(err, f"wrote {out_path} ({len(table.frame)} documents, signals: {', '.join(table.signal_names)})")


def frequencies(
    model: Annotated[
        str, typer.Argument(help="Model SPEC whose tokenizer counts the tokens (only its tokenizer is loaded).")
    ],
    data: Annotated[
        Path, typer.Argument(help="Reference texts (.jsonl, .csv or .parquet): public text, not the documents audited.")
    ],
    out_path: Annotated[Path, typer.Option("--out", help="Table to write (.npz).")] = Path("frequencies.npz"),
    text_field: Annotated[str, typer.Option(help="Field holding the text.")] = "text",
    source: Annotated[
        str | None, typer.Option(help="What the texts are, recorded in the table (default: the file's name).")
    ] = None,
) -> None:
    """Count a reference corpus's tokens in a model's tokenizer: the frequency table DC-PDD reads."""
    from verifier.boundary.atomic import atomic_output
    from verifier.data import load_documents
    from verifier.signals.frequencies import build_table
    from verifier.targets.model_source import load_tokenizer

    docs = load_documents(data, text_field=text_field)
    tokenizer, fingerprint = load_tokenizer(model)
    table = build_table(
        lambda texts: tokenizer(texts, add_special_tokens=False, verbose=False).input_ids,
        len(tokenizer),
        docs.texts,
        fingerprint,
        visible(source or data.name)[:300],
    )
    with atomic_output(out_path) as tmp:
        tmp.write_bytes(table.to_bytes())
    say(
        err,
        f"wrote {out_path} ({table.documents} documents, {int(table.counts.sum())} tokens, vocabulary "
        f"{len(table.counts)}, "
        f"tokenizer {fingerprint[:12]})",
    )


def evaluate(
    scores: Annotated[Path, typer.Argument(help="Score table written by 'verifier score'.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")] = False,
    seed: Annotated[int, typer.Option(help="Seed of the bootstrap and the cross-validation folds.")] = 0,
) -> None:
    """AUC [95% CI], TPR at 1% and 5% FPR for every signal, beside the model-free blind baselines."""
    from verifier.scoring.evaluation import evaluate_table
    from verifier.scoring.table import ScoreTable

    rows = evaluate_table(ScoreTable.read(scores), seed=seed)
    if as_json:
        json.dump(
            [
                {
                    "kind": r.kind,
                    "name": r.name,
                    **(asdict(r.metrics) if r.metrics else {"metrics": None}),
                    **({"unscored": r.unscored} if r.unscored else {}),
                }
                for r in rows
            ],
            sys.stdout,
            indent=2,
        )
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
            table.add_row(
                name, "not computed", "", "", "", "", end_section=following is not None and following.kind != row.kind
            )
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
        f"Null hypothesis per row: AUC = 0.5 (no separation). CI: stratified bootstrap, {first.n_bootstrap} "
        f"resamples, seed {first.seed}; blind_classifier: its AUC re-centred on its permutation null with the "
        "null-calibrated interval, the number the audit's report gives. "
        "If a blind row separates the sets, the signal rows measure a distribution shift, not training."
    )


def power(
    scores: Annotated[Path, typer.Argument(help="Labelled score table (1 = member), e.g. of a testbed.")],
    sizes: Annotated[str, typer.Option(help="Comma-separated set sizes.")] = "25,50,100,200,500,1000",
    trials: Annotated[int, typer.Option(help="Trials per set size.")] = 500,
    alpha: Annotated[float, typer.Option(help="Significance level.")] = 0.05,
    method: Annotated[
        str, typer.Option(help="permutation (exact, cross-fitted) or split_median (2 x median of split p-values).")
    ] = "permutation",
    permutations: Annotated[
        int, typer.Option(help="Relabellings per trial (permutation method); p-values are exact for any count.")
    ] = 199,
    signal: Annotated[
        list[str] | None, typer.Option(help="Signals used as features (default: all in the table).")
    ] = None,
    seed: Annotated[int, typer.Option(help="Seed of the draws and splits.")] = 0,
    out_path: Annotated[Path | None, typer.Option("--out", help="Write the table as JSON (data for a plot).")] = None,
) -> None:
    """Power and false-positive rate of dataset inference at each set size, with Wilson CIs."""
    from verifier.boundary.atomic import atomic_output
    from verifier.dataset_inference.power import power_from_table

    try:
        size_list = [int(v) for v in sizes.split(",")]
    except ValueError:
        raise VerifierError(f"--sizes {sizes!r}: expected comma-separated integers") from None
    result, names = power_from_table(
        scores, signal, size_list, trials=trials, alpha=alpha, method=method, n_permutations=permutations, seed=seed
    )
    view = Table(
        title=escape(
            visible(
                f"dataset inference ({method}), {result.trials} trials per size, alpha {alpha}, features: "
                f"{', '.join(names)}"
            )
        )
    )
    for column in ("n per set", "power", "95% CI", "FPR (member-free)", "95% CI "):
        view.add_column(column, justify="right", no_wrap=True)

    def cell(r: Any) -> tuple[str, str]:  # a power row's rate with its interval, or None
        return ("-", "-") if r is None else (f"{r.value:.3f}", f"[{r.ci_low:.3f}, {r.ci_high:.3f}]")

    for row in result.rows:
        view.add_row(str(row.n), *cell(row.power), *cell(row.fpr))
    out.print(view)
    if result.skipped_sizes:
        out.print(
            f"skipped (pools of {result.n_members} members, {result.n_nonmembers} non-members too small): "
            f"{result.skipped_sizes}"
        )
    if out_path:
        with atomic_output(out_path) as tmp:
            tmp.write_text(json.dumps(asdict(result), indent=1))


def serve(
    model: Annotated[
        str, typer.Argument(help="Model SPEC to serve: smollm2-135m, a .gguf file or a model folder.")
    ] = "smollm2-135m",
    port: Annotated[int, typer.Option(help="Port on 127.0.0.1.")] = 8765,
    cache_dir: Annotated[Path | None, typer.Option(help="Where a GGUF is converted once for the server.")] = None,
    prompt_logprobs: Annotated[
        bool,
        typer.Option(
            "--prompt-logprobs",
            help="Serve with verifier's own server, which also returns "
            "prompt log-probs (legacy echo + logprobs, vLLM prompt_logprobs) and top-k log-probs in vLLM's shape, "
            "as many deployments do; the same as --engine verifier.",
        ),
    ] = False,
    engine: Annotated[
        str,
        typer.Option(
            help="transformers (transformers serve: an output-only API), verifier (see --prompt-logprobs) or vllm "
            "(a real vLLM server: 'make vllm' builds its venv, or set VERIFIER_VLLM_PYTHON)."
        ),
    ] = "transformers",
) -> None:
    """Serve a local model behind an OpenAI-compatible API, for API audits of a model you hold:
    the examples' and tests' server. Prints the target SPEC to audit it by."""
    from verifier.targets.serving import model_folder, start_server

    if prompt_logprobs and engine not in ("transformers", "verifier"):
        raise VerifierError(f"--prompt-logprobs is --engine verifier; it cannot be combined with --engine {engine}")
    chosen = "verifier" if prompt_logprobs else engine
    server = start_server(
        model_folder(model, cache_dir), port=port, engine=chosen, timeout_s=600 if chosen == "vllm" else 180
    )
    say(err, f"serving {server.model}: audit it as target {server.spec} (Ctrl-C stops)")
    try:
        server.process.wait()
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
