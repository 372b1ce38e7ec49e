"""Score a document set with a target model: the score table every later step reads.

The table keeps the texts and labels beside the signal columns, so evaluation (and the blind
baselines, which need only texts) runs from the table alone. What produced the numbers (model
digest, tokenizer, precision, cut, signal parameters, code version) travels in the Parquet
file's metadata.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from verifier import __version__
from verifier.boundary.atomic import atomic_output
from verifier.boundary.peers import PeerAccess
from verifier.data import Documents, load_documents
from verifier.errors import VerifierError
from verifier.signals import LOWER, REFERENCE, ScoredDocument, SignalTools, compute_signals, make_signals
from verifier.signals.base import (
    MEMBER_PREFIX,
    NONMEMBER_PREFIX,
    TOKEN_FREQUENCIES,
    Auxiliary,
    QueryingSignal,
    Signal,
    View,
)
from verifier.signals.frequencies import table_for
from verifier.targets import (
    ApiOptions,
    OpenAICompatibleTarget,
    ScoreCache,
    ScoringOptions,
    Target,
    kind_of,
    load_target,
)
from verifier.targets.base import PROMPT_LOGPROBS
from verifier.targets.cache import text_digest
from verifier.targets.queries import Answer, Query
from verifier.targets.token_scores import TokenScores

SIGNAL_PREFIX = "signal."
FAILURE_PREFIX = "failure."  # per document, why a signal has no score (absent when every document has one)
METADATA_KEY = b"verifier"
# What a run can supply besides the model, assumed offered when signal names are checked before loading.
AUXILIARY_NEEDS = frozenset({NONMEMBER_PREFIX, MEMBER_PREFIX, TOKEN_FREQUENCIES})

# progress(description, total) -> advance(k); the CLI passes a rich progress bar.
Progress = Callable[[str, int], Callable[[int], None]]


@dataclass
class ScoreTable:
    """Per-document rows (``doc``, ``text``, ``text_sha256``, ``label``, ``n_tokens``, signal columns)."""

    frame: pd.DataFrame
    metadata: dict[str, object] = field(default_factory=dict)

    @property
    def signal_names(self) -> list[str]:
        return [c.removeprefix(SIGNAL_PREFIX) for c in self.frame.columns if c.startswith(SIGNAL_PREFIX)]

    def signal(self, name: str) -> np.ndarray:
        return self.frame[SIGNAL_PREFIX + name].to_numpy(dtype=np.float64)

    @property
    def labels(self) -> np.ndarray | None:
        column = self.frame["label"]
        return None if column.isna().all() else column.to_numpy(dtype=np.int8)

    def write(self, path: str | Path) -> None:
        table = pa.Table.from_pandas(self.frame, preserve_index=False)
        meta = {**(table.schema.metadata or {}), METADATA_KEY: json.dumps(self.metadata, sort_keys=True).encode()}
        with atomic_output(path) as tmp:
            pq.write_table(table.replace_schema_metadata(meta), tmp)

    @classmethod
    def read(cls, path: str | Path) -> ScoreTable:
        path = Path(path)
        if not path.is_file():
            raise VerifierError(f"{path}: score table not found")
        try:
            table = pq.read_table(path)
        except (pa.ArrowInvalid, OSError) as exc:
            raise VerifierError(f"{path}: not a readable Parquet score table ({exc})") from None
        raw = (table.schema.metadata or {}).get(METADATA_KEY)
        needed = {"doc", "text", "text_sha256", "label", "n_tokens"}
        if raw is None or not needed <= set(table.column_names):
            raise VerifierError(f"{path}: not a score table written by 'verifier score'")
        try:
            metadata = json.loads(raw)
            frame = table.to_pandas()
            for column in (c for c in frame.columns if c.startswith(SIGNAL_PREFIX)):
                frame[column].to_numpy(dtype=np.float64)
        except (ValueError, TypeError, pa.ArrowException) as exc:
            raise VerifierError(
                f"{path}: score table altered or damaged "
                f"({str(exc).splitlines()[0] if str(exc) else type(exc).__name__})"
            ) from None
        if not isinstance(metadata, dict):
            raise VerifierError(f"{path}: score table metadata altered or damaged")
        return cls(frame=frame, metadata=metadata)


def score_documents(
    docs: Documents,
    target: Target,
    reference: Target | None = None,
    signal_names: Sequence[str] | None = None,
    cache: ScoreCache | None = None,
    progress: Progress | None = None,
    signal_params: dict[str, dict[str, object]] | None = None,
    aux: Auxiliary | None = None,
) -> ScoreTable:
    """Run the forward passes and queries each requested signal needs and compute every signal column.

    Default signals: all those the target's capabilities (and a reference model, if given) allow.
    The lowercase signal costs a second pass over lowercased text, so it runs only when asked for;
    output-only signals cost queries, so they too run only when named. ``aux`` supplies what
    prefixed and calibrated signals read besides the model (documents of known membership, a token
    frequency table); it is recorded by digest in the metadata.
    """
    aux = aux or Auxiliary()
    offered = target.capabilities | ({REFERENCE} if reference is not None else set()) | aux.offers
    signals = make_signals(signal_names, offered, signal_params)
    if not signals:
        raise VerifierError(
            f"target {target.identity.spec}: no signal is computed by default for it (output-only attacks cost "
            f"queries, so they run only when named, e.g. --signal prefix_lcs_token)"
        )
    needed = frozenset().union(*(s.needs for s in signals))
    texts = [text[: target.max_chars] for text in docs.texts]  # what the model is given, before any token cut

    def run(model: Target, texts: list[str], what: str) -> list[TokenScores]:
        advance = progress(what, len(texts)) if progress else None
        return model.score(texts, cache=cache, on_progress=advance)

    target_scores = run(target, docs.texts, "scoring") if PROMPT_LOGPROBS in needed else None
    lower_scores = run(target, [t.lower() for t in docs.texts], "scoring lowercased") if LOWER in needed else None
    reference_scores = (
        run(reference, docs.texts, "scoring with reference") if reference is not None and REFERENCE in needed else None
    )
    answers = _answers(target, texts, [s for s in signals if isinstance(s, QueryingSignal)], cache, progress)
    views = _views(target, texts, signals, aux, cache, progress)
    scored = [
        ScoredDocument(
            text=text,
            target=target_scores[i] if target_scores else None,
            lower=lower_scores[i] if lower_scores else None,
            reference=reference_scores[i] if reference_scores else None,
            answers=answers,
            views=views,
            aux=aux,
        )
        for i, text in enumerate(texts)
    ]
    tools = signal_tools(target, cache)
    columns = compute_signals(scored, signals, tools)
    frame = pd.DataFrame(
        {
            "doc": np.arange(len(docs), dtype=np.int64),
            "text": docs.texts,
            "text_sha256": [text_digest(t) for t in docs.texts],
            "label": pd.array(docs.labels if docs.labels is not None else [None] * len(docs), dtype="Int8"),
            "n_tokens": np.array(
                [s.n_scored + 1 for s in target_scores] if target_scores else [0] * len(docs), dtype=np.int64
            ),
            **{SIGNAL_PREFIX + name: column.values for name, column in columns.items()},
            **{
                FAILURE_PREFIX + name: pd.array(column.reasons, dtype="string")
                for name, column in columns.items()
                if any(column.reasons)
            },
        }
    )
    metadata = {
        "verifier_version": __version__,
        "data": Path(docs.source).name,  # a name, never a private path
        "target": target.identity.as_finding(),
        "reference": reference.identity.as_finding() if reference else None,
        "signals": {s.name: s.params() for s in signals},
        "signal_counts": {name: column.counts for name, column in columns.items() if column.counts},
        "signal_models": dict(tools.used),  # encoders, scoring LMs, judges the signals ran, with their digests
        **({"auxiliary": aux.as_finding()} if aux.offers else {}),
    }
    return ScoreTable(frame=frame, metadata=metadata)


def _views(
    target: Target,
    texts: list[str],
    signals: Sequence[Signal],
    aux: Auxiliary,
    cache: ScoreCache | None,
    progress: Progress | None,
) -> dict[View, TokenScores]:
    """Every extra forward pass the signals read (prefixed texts, perturbed copies), each distinct
    one once, in one scoring call per context."""
    by_context: dict[str | None, dict[str, None]] = {}
    for signal in signals:
        for text in texts:
            for view in signal.views(text, aux):
                by_context.setdefault(view.context, {})[view.text] = None
    views: dict[View, TokenScores] = {}
    for context, wanted in by_context.items():
        batch = list(wanted)
        what = "scoring after a prefix" if context is not None else "scoring perturbed copies"
        advance = progress(what, len(batch)) if progress else None
        scored = (
            target.score(batch, cache=cache, on_progress=advance, context=context)
            if context is not None
            else target.score(batch, cache=cache, on_progress=advance)
        )
        views.update({View(text, context): s for text, s in zip(batch, scored)})
    return views


def _answers(
    target: Target, texts: list[str], signals: list[QueryingSignal], cache: ScoreCache | None, progress: Progress | None
) -> dict[str, Answer]:
    """The target's answers to every query of the output-only ``signals``, each distinct query asked once."""
    if not signals:
        return {}
    queries = signal_queries(signals, texts)
    advance = progress("querying", len(queries)) if progress else None
    return dict(zip(queries, target.answer(list(queries.values()), cache=cache, on_progress=advance)))


def signal_queries(signals: Sequence[QueryingSignal], texts: Sequence[str]) -> dict[str, Query]:
    """Every distinct query of the output-only ``signals`` about ``texts`` (cut as the target is
    given them) and the ones they ask once per run, by key."""
    queries = {q.key: q for s in signals for q in s.shared_queries()}
    return queries | {q.key: q for s in signals for text in texts for q in s.queries(text)}


def signal_tools(target: Target, cache: ScoreCache | None) -> SignalTools:
    """What trace attacks may run besides the target: its answers, scoring LMs, other endpoints."""
    access = getattr(target, "access", None) or PeerAccess()  # the auditor's, as the target was loaded with it
    return SignalTools(
        ask_target=lambda queries: target.answer(queries, cache=cache),
        load_lm=_loaded_lm,
        load_api=lambda spec: OpenAICompatibleTarget(spec, access=access, key_env=access.judge_api_key_env),
        cache=cache,
    )


def _loaded_lm(spec: str) -> Target:
    """A scoring LM, loaded once per process (a trace attack may ask for it in every route)."""
    if spec not in _LMS:
        _LMS[spec] = load_target(spec, ScoringOptions())
    return _LMS[spec]


_LMS: dict[str, Target] = {}


def score_file(
    model: str,
    data: str | Path,
    out: str | Path,
    options: ScoringOptions,
    text_field: str = "text",
    label_field: str | None = "label",
    reference: str | None = None,
    signal_names: Sequence[str] | None = None,
    cache_dir: Path | None = None,
    progress: Progress | None = None,
    api: ApiOptions | None = None,
    access: PeerAccess | None = None,
    signal_params: dict[str, dict[str, object]] | None = None,
    prefix_documents: int | None = None,
    prefix_seed: int = 0,
    token_frequencies: Path | None = None,
) -> ScoreTable:
    """Score a document file with ``model`` (and a ``reference`` model) and write the score table.

    Prefixed signals (ReCaLL, Con-ReCall) get their prefixes from the labelled data itself:
    ``prefix_documents`` non-members (and as many members, for Con-ReCall) drawn with
    ``prefix_seed`` and left out of the table, so no scored document is in its own prefix
    (default: the largest ``shots`` of the prefixed signals asked for). DC-PDD reads
    ``token_frequencies`` or the bundled table of the target's tokenizer."""
    docs = load_documents(data, text_field=text_field, label_field=label_field)
    # Signal names and parameters are checked against what the model's kind offers before any model
    # loads: a typo costs a line, not a model load (or a download).
    wanted = make_signals(
        signal_names,
        kind_of(model).capabilities | ({REFERENCE} if reference else set()) | AUXILIARY_NEEDS,
        signal_params,
    )
    needs = frozenset().union(*(s.needs for s in wanted))
    docs, nonmembers, members = draw_prefix_documents(
        docs, needs, prefix_documents or max((getattr(s, "shots", 0) for s in wanted), default=0), prefix_seed
    )
    target = load_target(model, options, api, access)
    ref = load_target(reference, options) if reference else None
    frequencies = None
    if TOKEN_FREQUENCIES in needs and (frequencies := table_for(target, token_frequencies)) is None:
        raise VerifierError(
            f"signal dc_pdd needs token frequencies counted with the target's tokenizer; none is bundled for "
            f"{target.identity.spec}: name a table with --token-frequencies (verifier frequencies build)"
        )
    table = score_documents(
        docs,
        target,
        reference=ref,
        signal_names=signal_names,
        cache=ScoreCache(cache_dir),
        progress=progress,
        signal_params=signal_params,
        aux=Auxiliary(tuple(nonmembers), tuple(members), frequencies),
    )
    table.write(out)
    return table


def draw_prefix_documents(
    docs: Documents, needs: frozenset[str], count: int, seed: int
) -> tuple[Documents, list[str], list[str]]:
    """``count`` labelled non-members (and members, where a signal needs them) drawn by ``seed``
    as prefix documents, and the documents left to score: no document is scored after a prefix
    holding itself, and no prefix document is evaluated."""
    take = [label for label, need in ((0, NONMEMBER_PREFIX), (1, MEMBER_PREFIX)) if need in needs]
    if not take:
        return docs, [], []
    if docs.labels is None:
        raise VerifierError(
            "prefixed signals (recall, con_recall) draw their prefixes from labelled documents: score labelled data "
            "(--label-field)"
        )
    rng = np.random.default_rng(seed)
    drawn: dict[int, list[int]] = {}
    for label in take:
        pool = np.flatnonzero(docs.labels == label)
        if len(pool) < count + 2:
            raise VerifierError(
                f"{count} prefix documents of label {label} leave too few of them to evaluate ({len(pool)} in all)"
            )
        drawn[label] = sorted(int(i) for i in rng.choice(pool, size=count, replace=False))
    used = {i for rows in drawn.values() for i in rows}
    keep = [i for i in range(len(docs)) if i not in used]
    rest = Documents([docs.texts[i] for i in keep], docs.labels[keep], docs.source)
    return rest, [docs.texts[i] for i in drawn.get(0, [])], [docs.texts[i] for i in drawn.get(1, [])]


class TargetScorer:
    """Scores texts with a model through the forward-pass cache (a ``marks.evaluate.Scorer``)."""

    def __init__(self, model: str, options: ScoringOptions, cache_dir: Path | None, progress: Progress | None) -> None:
        self.target = load_target(model, options)
        self.cache = ScoreCache(cache_dir)
        self.progress = progress

    def __call__(self, role: str, texts: list[str], signal: str) -> np.ndarray:
        return score_documents(
            Documents(texts, None, role), self.target, signal_names=[signal], cache=self.cache, progress=self.progress
        ).signal(signal)
