"""Scoring on Ray Data: the same scorer as a pool of actors, for document sets that outgrow one process.

Why it is shaped this way:
- Ray Data reads the file (JSONL or Parquet), hands batches of texts to ``DocumentScorer`` - a
  callable class, so each actor loads the model once - through ``map_batches`` with an actor
  pool, and writes each scored batch as a Parquet part. The actor runs ``score_documents``: the
  same batching, cache and signals as ``verifier score`` in one process.
- Parts hold digests and numbers, never texts. The driver then streams the input once more and
  writes the ordinary score table (one row per document in file order, with texts and labels),
  so ``evaluate`` and audits read it as any other.
- Resumable: parts are kept under ``.<out>.parts/<run key>`` until the table is written, and a
  rerun with the same options skips the documents they hold; documents in the forward-pass cache
  are served from it. Parts of other weights under the same name are never reused, and every
  part row carries an HMAC under the cache secret, as cache rows do: a row altered on disk is
  dropped and its document scored again.
- The input is validated by the driver before any actor starts, with the row named, as every
  other command does; a bad row never surfaces as a worker traceback.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import math
import re
import shutil
import sys
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.json as pajson
import pyarrow.parquet as pq

from verifier import __version__
from verifier.boundary.atomic import atomic_output
from verifier.claims import LoadedClaim, claim_model_spec, claim_scoring_options
from verifier.data import FORMATS, Documents, iter_documents
from verifier.errors import VerifierError
from verifier.scoring.table import FAILURE_PREFIX, METADATA_KEY, SIGNAL_PREFIX, score_documents
from verifier.signals import REFERENCE, make_signals
from verifier.signals.base import QueryingSignal
from verifier.targets import ScoreCache, ScoringOptions, kind_of, load_target
from verifier.targets.cache import cache_secret, default_cache_dir, default_secret_path, text_digest
from verifier.targets.kinds.causal_lm import CausalLMTarget
from verifier.targets.model_source import resolve_model
from verifier.trust.tags import tag

SCORER = "scorer"  # a part's column naming the model, reference and signals that scored it (JSON)
TAG = "tag"  # a part's column authenticating each row (see row_tags)


@dataclass(frozen=True)
class RayOptions:
    """Where and how wide to run. On 2 cores, actors at 0.5 CPU leave room for reading and writing
    (actors at a whole CPU each starved the read tasks into a deadlock)."""

    address: str | None = None  # None: a local Ray; "auto" or ray://host:port: an existing cluster
    actors: int = 1
    actor_cpus: float = 0.5
    actor_gpus: float = 0.0
    batch_docs: int = 512  # documents per Ray batch: the unit of a part, and of what a crash loses

    def __post_init__(self) -> None:
        if self.actors < 1 or self.batch_docs < 1:
            raise VerifierError("--actors and --ray-batch-docs must be >= 1")
        if not (0 < self.actor_cpus < math.inf and 0 <= self.actor_gpus < math.inf):
            raise VerifierError("--actor-cpus must be a number > 0 and --actor-gpus a number >= 0")

    def check_fits(self, resources: dict[str, float], device: str) -> None:
        """Refuse a pool the cluster cannot hold: Ray would wait for it forever. Read and write tasks
        need a whole CPU beside the actors (actors at a whole CPU each on 2 cores deadlocked)."""
        if self.actor_gpus and not device.startswith("cuda"):
            raise VerifierError("--actor-gpus: the model runs on the CPU; pass --device cuda to give actors GPUs")
        cpus, gpus = resources.get("CPU", 0.0), resources.get("GPU", 0.0)
        if self.actors * self.actor_cpus > cpus - 1:
            raise VerifierError(
                f"--actors {self.actors} x --actor-cpus {self.actor_cpus} needs {self.actors * self.actor_cpus:g} CPUs "
                f"besides one for reading and writing; the Ray cluster has {cpus:g}"
            )
        if self.actors * self.actor_gpus > gpus:
            raise VerifierError(
                f"--actors {self.actors} x --actor-gpus {self.actor_gpus} needs {self.actors * self.actor_gpus:g} "
                "GPUs; "
                f"the Ray cluster has {gpus:g}"
            )


class DocumentScorer:
    """The callable class each actor runs: loads the target (and reference) once, scores batches."""

    def __init__(
        self,
        model: str,
        options: ScoringOptions,
        reference: str | None,
        signal_names: list[str] | None,
        signal_params: dict[str, dict[str, object]],
        cache_dir: str,
        secret: str,
        text_field: str,
        done: frozenset[str],
    ) -> None:
        if not Path(secret).is_file():  # never create one here: the driver could not verify this node's parts
            raise VerifierError(
                f"no cache secret at {secret} on this node: give every node the driver's secret "
                "($VERIFIER_CACHE_SECRET) and cache folder"
            )
        self.target = load_target(model, options)
        self.reference = load_target(reference, options) if reference else None
        self.signal_names, self.signal_params, self.text_field, self.done = (
            signal_names,
            signal_params,
            text_field,
            done,
        )
        self.cache = ScoreCache(cache_dir, secret_path=Path(secret))
        self.secret = cache_secret(Path(secret))
        offered = self.target.capabilities | ({REFERENCE} if self.reference is not None else set())
        self.columns = [s.name for s in make_signals(signal_names, offered, signal_params)]

    def __call__(self, batch: pd.DataFrame) -> pd.DataFrame:
        texts = [text.decode("utf-8") if isinstance(text, bytes) else text for text in batch[self.text_field].tolist()]
        texts = [text for text in texts if text_digest(text) not in self.done]
        if not texts:
            return self._frame(
                pd.DataFrame({"text_sha256": pd.Series([], dtype="string"), "n_tokens": np.zeros(0, np.int64)}), ""
            )
        docs = Documents(texts=texts, labels=None, source="ray batch")
        table = score_documents(
            docs,
            self.target,
            reference=self.reference,
            signal_names=self.signal_names,
            cache=self.cache,
            signal_params=self.signal_params,
        )
        scorer = json.dumps({key: table.metadata[key] for key in ("target", "reference", "signals")}, sort_keys=True)
        return self._frame(table.frame.drop(columns=["doc", "text", "label"]).drop_duplicates("text_sha256"), scorer)

    def _frame(self, frame: pd.DataFrame, scorer: str) -> pd.DataFrame:
        """Every part has the same columns: each signal's value and failure reason, and the scorer."""
        for name in self.columns:
            if SIGNAL_PREFIX + name not in frame:
                frame[SIGNAL_PREFIX + name] = np.full(len(frame), np.nan)
            if FAILURE_PREFIX + name not in frame:
                frame[FAILURE_PREFIX + name] = pd.array([None] * len(frame), dtype="string")
        frame[SCORER] = pd.array([scorer] * len(frame), dtype="string")
        frame = frame[
            ["text_sha256", "n_tokens", *(p + n for n in self.columns for p in (SIGNAL_PREFIX, FAILURE_PREFIX)), SCORER]
        ]
        frame = frame.reset_index(drop=True)
        frame[TAG] = pd.array(row_tags(frame, self.secret), dtype="string")
        return frame


def row_tags(frame: pd.DataFrame, secret: bytes) -> list[str]:
    """HMAC-SHA256 of each part row under the cache secret: parts are a cache too, and a row forged
    on disk (a raised log-prob) must not reach a table and a signed verdict."""
    columns = [
        c
        for c in frame.columns
        if c in ("text_sha256", "n_tokens", SCORER) or c.startswith((SIGNAL_PREFIX, FAILURE_PREFIX))
    ]
    rows = frame[columns].astype(object).where(frame[columns].notna(), None).itertuples(index=False, name=None)
    return [tag(secret, _row_message(columns, row)) for row in rows]


def _row_message(columns: list[str], row: tuple) -> bytes:
    return json.dumps(
        [columns, [float(v) if isinstance(v, (float, np.floating)) else v for v in row]], default=int
    ).encode()


def authentic(frame: pd.DataFrame, secret: bytes) -> pd.Series:
    """Which rows of a part carry a valid tag."""
    if TAG not in frame or frame.empty:
        return pd.Series(False, index=frame.index)
    return pd.Series(
        [isinstance(a, str) and hmac.compare_digest(a, b) for a, b in zip(frame[TAG], row_tags(frame, secret))],
        index=frame.index,
    )


def score_file_ray(
    model: str,
    data: str | Path,
    out: str | Path,
    options: ScoringOptions,
    ray_options: RayOptions,
    text_field: str = "text",
    label_field: str | None = "label",
    reference: str | None = None,
    signal_names: list[str] | None = None,
    cache_dir: Path | None = None,
    signal_params: dict[str, dict[str, object]] | None = None,
) -> int:
    """Score ``data`` with ``model`` on Ray and write the score table to ``out``; returns the document count."""
    ray = _import_ray()
    data, out = Path(data), Path(out)
    if FORMATS.get(data.suffix.lower()) not in ("jsonl", "parquet"):
        raise VerifierError(f"{data}: --engine ray reads .jsonl or .parquet files")
    for spec in (model, reference):
        if spec and kind_of(spec).remote:
            raise VerifierError(
                f"{spec}: --engine ray scores open-weight models; an API target is queried from one process "
                "with --concurrency"
            )
    offered = CausalLMTarget.capabilities | ({REFERENCE} if reference else set())
    signals = make_signals(signal_names, offered, signal_params)
    if querying := [s.name for s in signals if isinstance(s, QueryingSignal)]:
        raise VerifierError(f"--engine ray computes gray-box signals only; {', '.join(querying)} queries the model")
    parts = (
        out.parent / f".{out.name}.parts" / _run_key(model, reference, options, signal_names, signal_params, text_field)
    )
    secret = cache_secret(default_secret_path())
    done = set(_read_parts(parts, secret)["text_sha256"])
    scorer = {
        "model": model,
        "options": options,
        "reference": reference,
        "signal_names": signal_names,
        "signal_params": signal_params or {},
        "cache_dir": str((cache_dir or default_cache_dir()).resolve()),
        "secret": str(default_secret_path().resolve()),
        "text_field": text_field,
        "done": frozenset(done),
    }
    count, todo = 0, 0
    for docs in iter_documents(data, text_field, label_field):  # every row checked before Ray starts
        count += len(docs)
        todo += sum(text_digest(text) not in done for text in docs.texts)
    started_here = not ray.is_initialized()
    try:
        if started_here:
            ray.init(
                address=ray_options.address, include_dashboard=False, log_to_driver=False, logging_level=logging.WARNING
            )
        # Ray Data's progress bars on a terminal; its log lines nowhere (an error is said once, below,
        # and Ray's own error records name its session folder).
        ray.data.DataContext.get_current().enable_progress_bars = sys.stderr.isatty()
        logging.getLogger("ray.data").setLevel(logging.CRITICAL + 1)
        ray_options.check_fits(ray.cluster_resources(), options.device)
        if todo:
            # About one block per batch, so each batch is written as a part the moment it is scored.
            texts = _read_texts(ray, data, text_field, blocks=max(1, -(-count // ray_options.batch_docs)))
            scored = texts.map_batches(
                DocumentScorer,
                fn_constructor_kwargs=scorer,
                batch_size=ray_options.batch_docs,
                batch_format="pandas",
                compute=ray.data.ActorPoolStrategy(size=ray_options.actors),
                num_cpus=ray_options.actor_cpus,
                num_gpus=ray_options.actor_gpus or None,
            )
            scored.write_parquet(str(parts), max_rows_per_file=ray_options.batch_docs)
    except Exception as exc:  # noqa: BLE001 - a worker's error arrives wrapped; say it in one line
        raise VerifierError(
            f"ray: scoring failed ({_first_line(exc)}); the batches already written are kept and a rerun "
            "resumes from them"
        ) from None
    finally:
        if started_here:
            ray.shutdown()
    _write_table(data, text_field, label_field, _read_parts(parts, secret), out, ray_options, ray.__version__)
    shutil.rmtree(parts, ignore_errors=True)
    if parts.parent.is_dir() and not any(parts.parent.iterdir()):
        parts.parent.rmdir()
    return count


def _run_key(
    model: str,
    reference: str | None,
    options: ScoringOptions,
    signal_names: list[str] | None,
    signal_params: dict[str, dict[str, object]] | None,
    text_field: str,
) -> str:
    """What a run's parts depend on: parts of an interrupted run are reused only by a run with the
    same key (for local models, the same weights: digested here; the same library versions)."""
    import torch
    from transformers import __version__ as transformers_version

    weights = {
        spec: source.digest() if source.is_local else None
        for spec in (model, reference)
        if spec
        for source in [resolve_model(spec)]
    }
    run = {
        "model": model,
        "reference": reference,
        "weights": weights,
        "options": asdict(options),
        "signals": signal_names,
        "params": signal_params or {},
        "text_field": text_field,
        "verifier": __version__,
        "torch": torch.__version__,
        "transformers": transformers_version,
    }
    return hashlib.sha256(json.dumps(run, sort_keys=True, default=str).encode()).hexdigest()[:16]


def _read_texts(ray, data: Path, text_field: str, blocks: int):  # noqa: ANN001, ANN202 - Ray's module and Dataset
    """The text column only, read as text: the driver checked every row, so other fields (a number
    too large, a mixed type) are not Ray's to parse."""
    if data.suffix.lower() == ".parquet":
        return ray.data.read_parquet(str(data), columns=[text_field], override_num_blocks=blocks)
    parse = pajson.ParseOptions(
        explicit_schema=pa.schema([(text_field, pa.string())]), unexpected_field_behavior="ignore"
    )
    return ray.data.read_json(str(data), parse_options=parse, override_num_blocks=blocks).select_columns([text_field])


def _read_parts(parts: Path, secret: bytes) -> pd.DataFrame:
    """The authentic rows of the parts written so far, one per document. A part cut short by a crash
    is removed and a row whose tag does not verify is dropped: their documents are scored again."""
    frames = []
    for part in sorted(parts.glob("*.parquet")) if parts.is_dir() else []:
        try:
            frame = pq.read_table(part).to_pandas()
            if "text_sha256" not in frame:
                raise ValueError("not a part")
        except (pa.ArrowException, OSError, ValueError):
            shutil.rmtree(part) if part.is_dir() and not part.is_symlink() else part.unlink()
            continue
        frames.append(frame[authentic(frame, secret) & frame[SCORER].ne("")] if SCORER in frame else frame.iloc[:0])
    return pd.concat(frames).drop_duplicates("text_sha256") if frames else pd.DataFrame({"text_sha256": []})


def _write_table(
    data: Path,
    text_field: str,
    label_field: str | None,
    scored: pd.DataFrame,
    out: Path,
    ray_options: RayOptions,
    ray_version: str,
) -> None:
    """Stream the input once more and write the score table: texts and labels in file order beside the parts'
    numbers."""
    scorers = set(scored[SCORER]) if SCORER in scored else set()
    if len(scorers) != 1:
        raise VerifierError(
            f"{data}: the Ray run's parts were scored by {len(scorers)} different models or settings; remove "
            f".{out.name}.parts and run again"
        )
    scored = scored.set_index("text_sha256")
    identity = json.loads(scorers.pop())
    # The columns of the signals the scorer ran, and only those (a part may carry others).
    values = [SIGNAL_PREFIX + name for name in identity["signals"]]
    failures = [FAILURE_PREFIX + name for name in identity["signals"] if scored[FAILURE_PREFIX + name].notna().any()]
    metadata = {
        "verifier_version": __version__,
        "data": data.name,
        **identity,
        "signal_counts": {},
        "signal_models": {},
        "engine": {
            "name": "ray",
            "ray": ray_version,
            "actors": ray_options.actors,
            "actor_cpus": ray_options.actor_cpus,
            "actor_gpus": ray_options.actor_gpus,
            "batch_docs": ray_options.batch_docs,
        },
    }
    start = 0
    with atomic_output(out) as tmp:
        writer = None
        try:
            for docs in iter_documents(data, text_field, label_field):
                digests = [text_digest(text) for text in docs.texts]
                missing = sum(d not in scored.index for d in digests)
                if missing:
                    raise VerifierError(
                        f"{data}: {missing} documents were not scored by the Ray run; run again to resume"
                    )
                rows = scored.loc[digests]
                frame = pd.DataFrame(
                    {
                        "doc": np.arange(start, start + len(docs), dtype=np.int64),
                        "text": docs.texts,
                        "text_sha256": digests,
                        "label": pd.array(docs.labels if docs.labels is not None else [None] * len(docs), dtype="Int8"),
                        "n_tokens": rows["n_tokens"].to_numpy(dtype=np.int64),
                        **{c: rows[c].to_numpy(dtype=np.float64) for c in values},
                        **{c: pd.array(rows[c].to_numpy(), dtype="string") for c in failures},
                    }
                )
                start += len(docs)
                table = pa.Table.from_pandas(frame, preserve_index=False)
                if writer is None:
                    meta = {
                        **(table.schema.metadata or {}),
                        METADATA_KEY: json.dumps(metadata, sort_keys=True).encode(),
                    }
                    writer = pq.ParquetWriter(tmp, table.schema.with_metadata(meta))
                writer.write_table(table.replace_schema_metadata(writer.schema.metadata))
        finally:
            if writer is not None:
                writer.close()


def _import_ray():  # noqa: ANN202 - the optional module itself
    try:
        import ray
        import ray.data
    except ImportError:
        raise VerifierError("--engine ray needs Ray: pip install 'verifier[ray]'") from None
    return ray


def _first_line(exc: BaseException) -> str:
    """The root cause of a (possibly Ray-wrapped) error, on one line: Ray carries a worker's error
    as the text of its traceback, whose first ``Name: message`` line is the original error."""
    for line in str(exc).splitlines():
        if match := re.match(r"^(?:[A-Za-z_][\w.]*\.)?([A-Za-z_]\w*(?:Error|Exception|Interrupt)): (.*)$", line):
            return (match.group(2) if match.group(1) == "VerifierError" else f"{match.group(1)}: {match.group(2)}")[
                :300
            ]
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return (lines[0] if lines else type(exc).__name__)[:300]


def prescore_claim(loaded: LoadedClaim, cache_dir: Path | None, ray_options: RayOptions) -> dict[str, object]:
    """Score every document set of a claim with its target on Ray into the forward-pass cache, so the
    audit that follows reads the arrays from the cache instead of computing them in one process.

    The actors run with the audit's own options and thread count, so their cache keys are the
    audit's; the audit still checks every row's tag, and anything it does not find (a lowercased
    pass, a reference model, a route's derived texts) it scores itself.
    """
    import tempfile

    import torch

    claim, base = loaded.manifest, loaded.base
    spec = claim_model_spec(claim, base)
    if kind_of(spec).remote:
        return {"engine": "ray", "documents": 0, "note": "an API target is queried by the audit itself"}
    texts: dict[str, str] = {}
    for ref in claim.evidence.documents().values():
        docs = loaded.files.documents(ref)
        texts.update((text_digest(t), t) for t in docs.texts)
    options = replace(claim_scoring_options(claim), threads=torch.get_num_threads())
    with tempfile.TemporaryDirectory() as work:
        listing = Path(work) / "documents.jsonl"
        listing.write_text("".join(json.dumps({"text": t}) + "\n" for t in texts.values()), encoding="utf-8")
        score_file_ray(
            spec,
            listing,
            Path(work) / "scores.parquet",
            options,
            ray_options,
            label_field=None,
            signal_names=["loss"],
            cache_dir=cache_dir,
        )
    return {"engine": "ray", "documents": len(texts), "actors": ray_options.actors}
