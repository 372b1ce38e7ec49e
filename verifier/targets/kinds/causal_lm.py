"""A causal language model as an audit target: batched, cached forward passes.

Why it is shaped this way:
- One forward pass per document gives every gray-box signal. Documents are cut to
  ``max_chars`` characters and then ``max_tokens`` tokens (2,500 and 256, as the seed study did),
  or, with ``stride``, scored whole (up to ``max_chars``) in overlapping windows of ``max_tokens``
  whose per-token arrays are stitched, so every signal sees the whole document.
- Tokenization runs in large batched calls of the fast tokenizer, a wave of documents ahead of
  the model (in a worker thread; the tokenizer releases the GIL), never one document per call.
- Rows are sorted by length and padded to a width step; a pass holds ``batch_tokens`` tokens
  (rows = budget // width), so short documents fill wide batches and every pass at a width has
  the same shape (batch-invariant numbers).
- The full-vocabulary arrays never leave the device: per scored position the log-softmax is
  reduced to four numbers (see ``token_scores``) in row chunks sized for the device: a CPU cache
  (16 MB) on the CPU, a large slice of memory on a GPU, where thousands of small kernels would
  cost more than the model. On a GPU the reduced statistics are copied to pinned host memory
  asynchronously and the next batch is queued before the last one is read.
- Statistics over the vocabulary are taken in float32 even when the model runs in bf16, so a
  bf16 run differs from fp32 only through its logits.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from functools import cached_property, wraps
from pathlib import Path
from typing import TYPE_CHECKING, ParamSpec, TypeVar

import numpy as np

from verifier.errors import VerifierError, redact_paths
from verifier.targets.base import (
    GENERATE,
    PROMPT_LOGPROBS,
    TOKENIZER_PROBE,
    VOCAB_STATS,
    TargetIdentity,
    tokenizer_fingerprint,
)
from verifier.targets.cache import ScoreCache, cache_key
from verifier.targets.model_source import ModelSource, resolve_model
from verifier.targets.options import ScoringOptions
from verifier.targets.registry import register
from verifier.targets.token_scores import TokenScores

if TYPE_CHECKING:  # torch is imported when a model is loaded, so that kind_of(spec) and claims never import it
    import torch

# What batch invariance promises on every CPU this project supports: a document's per-token
# numbers (fp32) agree within this absolute tolerance whatever documents share its passes. Bit
# equality across batch compositions holds where the kernels compute a row the same way at any
# position of a pass (seen on CPUs with AMX), not on all (AVX2 and avx512_bf16-only CPUs differ in
# the last bit, 1.4e-6): it is not promised. The same documents in the same passes, on the same
# machine, thread count and library versions, give the same bits.
BATCH_TOLERANCE = 1e-5
# Bytes of one [rows, vocabulary] float32 chunk of logits reduced at once. On the CPU small enough
# that the allocator reuses memory instead of mapping fresh pages for every temporary (page faults
# cost more than the arithmetic); on a GPU large, so the reduction is a few big kernels.
CPU_CHUNK_BYTES = 16 << 20
GPU_CHUNK_BYTES = 1 << 30
# Documents are padded to a multiple of this many tokens: their width depends on their own length only.
WIDTH_STEP = 32
# Documents tokenized in one batched call; the next wave is tokenized while the model runs this one.
WAVE = 4096


@dataclass(frozen=True)
class Encoded:
    """A document cut and tokenized: ids plus the character span the scored tokens cover, and the
    tokens of a context it is scored after (none: scored alone)."""

    ids: list[int]
    char_start: int
    char_end: int
    context: tuple[int, ...] = ()


@dataclass(frozen=True)
class Window:
    """One row of a forward pass: tokens of one document, and the first position whose prediction
    it keeps (earlier positions are context already predicted by the window before)."""

    doc: str  # the document's cache key
    index: int
    start: int  # position of its first token in the document
    ids: list[int]
    keep_from: int


@dataclass
class _Pending:
    """A forward pass queued on the device whose reduced statistics are on their way to the host."""

    rows: Sequence[Window]
    stats: (
        torch.Tensor
    )  # [rows, width, 4] float32 (a row's last position is not a prediction), pinned host memory on a GPU
    ready: torch.cuda.Event | None = None


@dataclass
class _Stitching:
    """A document whose windows are being scored; done when every window has come back."""

    encoded: Encoded
    parts: dict[int, np.ndarray] = field(default_factory=dict)
    windows: int = 1


TORCH_DTYPES = {"fp32": "float32", "bf16": "bfloat16"}  # ScoringOptions.dtype -> the torch dtype's name
P = ParamSpec("P")
R = TypeVar("R")


def inference_mode(method: Callable[P, R]) -> Callable[P, R]:
    """``torch.inference_mode()`` around ``method``, with torch imported when it is first called."""

    @wraps(method)
    def run(*args: P.args, **kwargs: P.kwargs) -> R:
        import torch

        with torch.inference_mode():
            return method(*args, **kwargs)

    return run


@contextlib.contextmanager
def torch_threads(count: int | None) -> Iterator[None]:
    """Run with ``count`` torch threads and restore the caller's setting after (it is process-wide)."""
    if not count:
        yield
        return
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(count)
    try:
        yield
    finally:
        torch.set_num_threads(before)


@register(prefix=None)
class CausalLMTarget:
    """A transformers causal LM loaded from a SPEC (see ``model_source``): the default kind."""

    capabilities = frozenset({PROMPT_LOGPROBS, VOCAB_STATS, GENERATE})
    kind = "causal_lm"
    limitations = ()
    remote = False

    @classmethod
    def load(cls, spec: str, scoring: ScoringOptions | None, api: object, access: object) -> CausalLMTarget:
        return cls(spec, scoring)

    @classmethod
    def check_spec(cls, spec: str) -> None:
        """Any spec may name a folder, a file or a hub id: it is resolved when loaded."""

    @classmethod
    def unloaded_identity(cls, spec: str, base: Path) -> dict[str, object]:
        local = base / spec
        source = resolve_model(str(local) if local.exists() else spec)
        return {
            "kind": cls.kind,
            "spec": source.public_name,
            "digests": {"weights": source.digest()} if source.is_local else {},
            "loaded": False,
        }

    def __init__(self, spec: str, options: ScoringOptions | None = None) -> None:
        import torch

        self.options = options or ScoringOptions()
        self.source: ModelSource = resolve_model(spec)
        with torch_threads(self.options.threads):
            self.model, self.tokenizer = _load(self.source)
        self.model.to(device=self.options.device, dtype=getattr(torch, TORCH_DTYPES[self.options.dtype])).eval()
        # A model cannot score past its context window (e.g. a testbed trained on 128 tokens).
        limit = getattr(self.model.config, "max_position_embeddings", None)
        self.position_limit: int | None = limit
        if limit and self.options.max_tokens > limit:
            if self.options.stride is not None and self.options.stride >= limit:
                raise VerifierError(
                    f"stride {self.options.stride}: model {self.source.public_name} reads at most {limit} tokens at "
                    f"once, so its windows are {limit} tokens long; use a stride below {limit}"
                )
            self.options = replace(self.options, max_tokens=limit)
        self.model_digest = self.source.digest() if self.source.is_local else self._hub_digest()
        self.tokenizer_digest = hashlib.sha256(self.tokenizer.backend_tokenizer.to_str().encode()).hexdigest()
        self.tokenizer_fingerprint = tokenizer_fingerprint(
            self.tokenizer(TOKENIZER_PROBE, add_special_tokens=False).input_ids
        )
        head = self.model.get_output_embeddings()
        self.row_chunk = max(8, _chunk_bytes(self.options.device) // (4 * head.out_features))
        self.head_from_hidden = self._head_matches_logits()

    @inference_mode
    def _head_matches_logits(self) -> bool:
        """Whether logits = output layer(last hidden state), as for GPT-2 and Llama.

        Then the output layer runs only on real (unpadded) positions, chunk by chunk, and the full
        [batch, length, vocabulary] logits never exist. Models that transform their logits further
        (soft-capping, scaling) fail this check and take the plain path.
        """
        import torch

        ids = torch.tensor([[0, 1, 2, 3]], device=self.options.device) % self.model.config.vocab_size
        plain = self.model(input_ids=ids).logits
        via_head = self.model.get_output_embeddings()(self.model.base_model(input_ids=ids).last_hidden_state)
        return plain.shape == via_head.shape and torch.allclose(plain, via_head, atol=1e-4, rtol=1e-4)

    def _hub_digest(self) -> str:
        """A hub model at its resolved commit; without one, the SHA-256 of the loaded weights, so two
        revisions of one hub id never share cache rows."""
        commit = getattr(self.model.config, "_commit_hash", None)
        if commit:
            return f"{self.source.location}@{commit}"
        digest = hashlib.sha256()
        for name, tensor in sorted(self.model.state_dict().items()):
            digest.update(name.encode() + b"\0" + tensor.detach().float().cpu().numpy().tobytes())
        return digest.hexdigest()

    @property
    def max_chars(self) -> int:
        return self.options.max_chars

    @property
    def parameters(self) -> int:
        """The model's parameter count: which measured regime of the validation table is nearest it."""
        return int(self.model.num_parameters())

    @property
    def identity(self) -> TargetIdentity:
        return TargetIdentity(
            self.kind,
            self.source.public_name,
            {"weights": self.model_digest, "tokenizer": self.tokenizer_digest},
            {
                "revision": self.source.revision,
                "dtype": self.options.dtype,
                "max_tokens": self.options.max_tokens,
                "max_chars": self.options.max_chars,
                "stride": self.options.stride,
                "batch_tokens": self.options.tokens_per_pass,
                "device": self.options.device,
            },
        )

    @property
    def fingerprint(self) -> dict[str, object]:
        """Everything the cached arrays depend on besides the text."""
        import torch

        return {
            "model": self.model_digest,
            "tokenizer": self.tokenizer_digest,
            "dtype": self.options.dtype,
            "max_tokens": self.options.max_tokens,
            "max_chars": self.options.max_chars,
            "batch_tokens": self.options.tokens_per_pass,  # the shape of every forward pass, so part of the numbers
            "row_chunk": self.row_chunk,  # the shape of every reduction
            **({"stride": self.options.stride} if self.options.stride else {}),
            # Kernels, and so the last bits, differ by device, thread count and library version.
            "device": self.options.device,
            "threads": self.options.threads or torch.get_num_threads(),
            "torch": torch.__version__,
            "transformers": _transformers_version(),
        }

    def encode(self, text: str) -> Encoded:
        return self.encode_many([text])[0]

    def encode_many(self, texts: Sequence[str]) -> list[Encoded]:
        """Cut and tokenize ``texts`` in one batched call of the fast tokenizer (with offsets).

        With a stride the token cut is not applied: the whole text (up to ``max_chars``) is scored in windows.
        """
        cut = [text[: self.options.max_chars] for text in texts]
        whole = self.options.stride is not None
        enc = self.tokenizer(
            cut,
            truncation=not whole,
            max_length=None if whole else self.options.max_tokens,
            return_offsets_mapping=True,
            verbose=False,
        )
        return [
            Encoded(ids=ids, char_start=offsets[1][0] if len(ids) > 1 else 0, char_end=offsets[-1][1] if ids else 0)
            for ids, offsets in zip(enc["input_ids"], enc["offset_mapping"])
        ]

    def windows(self, key: str, enc: Encoded) -> list[Window]:
        """The rows a document is scored in: itself, or windows of ``max_tokens`` advancing by ``stride``.

        Window j > 0 starts ``stride`` tokens after window j-1 (the last one ends at the document's
        end, so every window is full and a document's windows share one width and finish together)
        and keeps only the predictions of tokens the window before did not reach: the stitched
        arrays have one entry per token after the first, each predicted with at least
        ``max_tokens - stride`` tokens of context.
        """
        size, stride, n = self.options.max_tokens, self.options.stride, len(enc.ids)
        if enc.context:  # the text after the context, keeping the predictions of the text's tokens after its first
            return [Window(key, 0, 0, [*enc.context, *enc.ids], len(enc.context))]
        if stride is None or n <= size:
            return [Window(key, 0, 0, enc.ids, 0)]
        starts = [0]
        while starts[-1] + size < n:
            starts.append(min(starts[-1] + stride, n - size))
        return [
            Window(key, j, start, enc.ids[start : start + size], 0 if j == 0 else starts[j - 1] + size - start - 1)
            for j, start in enumerate(starts)
        ]

    def score(
        self,
        texts: Sequence[str],
        cache: ScoreCache | None = None,
        on_progress: Callable[[int], None] | None = None,
        context: str | None = None,
    ) -> list[TokenScores]:
        """Score every text, reading and filling ``cache``; ``on_progress(k)`` after each k documents.

        With ``context`` (ReCaLL's prefix), the context and the cut text are tokenized as one
        string - as a server given the joined prompt tokenizes them, so a served model gives the
        same numbers - and the text's tokens are those from the one starting where the text does
        (its first ``max_tokens``); the predictions of its tokens after its first are kept. A
        context longer than the model's window leaves room for ``max_tokens`` keeps its last
        tokens. A text no token starts exactly at (a token spanning the join) has no scores."""
        if context is not None:
            if self.options.stride is not None:
                raise VerifierError(
                    "prefixed scoring (ReCaLL, Con-ReCall) reads a token cut, not windows: run it without --stride"
                )
            if self.position_limit is not None and self.position_limit <= self.options.max_tokens:
                raise VerifierError(
                    f"model {self.source.public_name} reads at most {self.position_limit} tokens, all taken by max "
                    f"tokens {self.options.max_tokens}: a prefix needs room (lower --max-tokens)"
                )
        with torch_threads(self.options.threads):
            return self._score(texts, cache, on_progress, context)

    def _score(
        self,
        texts: Sequence[str],
        cache: ScoreCache | None,
        on_progress: Callable[[int], None] | None,
        context: str | None,
    ) -> list[TokenScores]:
        fingerprint = self.fingerprint  # once: the property builds a dict and asks torch for its thread count
        if context is not None:
            fingerprint["context"] = hashlib.sha256(context.encode()).hexdigest()
        keys = [cache_key(fingerprint, text) for text in texts]
        copies = Counter(keys)
        found = cache.get_many(list(copies)) if cache is not None else {}
        if on_progress:
            on_progress(sum(copies[key] for key in found))
        todo: dict[str, str] = {}
        for key, text in zip(keys, texts):
            if key not in found:
                todo.setdefault(key, text)
        items = list(todo.items())
        waves = [items[start : start + WAVE] for start in range(0, len(items), WAVE)]
        with ThreadPoolExecutor(max_workers=1) as tokenizer_worker:
            upcoming = tokenizer_worker.submit(self._encode_wave, waves[0], keys, context) if waves else None
            for number in range(len(waves)):
                encoded = upcoming.result()
                if number + 1 < len(waves):
                    upcoming = tokenizer_worker.submit(self._encode_wave, waves[number + 1], keys, context)
                unscorable = {
                    key: _no_scores() for key, enc in encoded.items() if len(enc.ids) < 2
                }  # only after a context
                found.update(unscorable)
                for finished in self._run_wave({k: e for k, e in encoded.items() if k not in unscorable}):
                    if cache is not None:
                        cache.put_many(finished)
                    found.update(finished)
                    if on_progress:
                        on_progress(sum(copies[key] for key in finished))
        return [found[key] for key in keys]

    def _encode_wave(self, wave: list[tuple[str, str]], keys: list[str], context: str | None) -> dict[str, Encoded]:
        if context is not None:
            return dict(zip((key for key, _ in wave), self.encode_after(context, [text for _, text in wave])))
        encoded = dict(zip((key for key, _ in wave), self.encode_many([text for _, text in wave])))
        for key, enc in encoded.items():
            if len(enc.ids) < 2:
                raise VerifierError(f"document {keys.index(key) + 1}: fewer than 2 tokens, nothing to score")
        return encoded

    def encode_after(self, context: str, texts: Sequence[str]) -> list[Encoded]:
        """Each text cut to ``max_chars`` and tokenized after ``context`` as one string: its own
        first ``max_tokens`` tokens, and the context's tokens before them (at most the model's
        window less ``max_tokens``, the last ones). No ids where no token starts at the join."""
        room = (self.position_limit or 1 << 30) - self.options.max_tokens
        joined = [context + text[: self.options.max_chars] for text in texts]
        enc = self.tokenizer(joined, return_offsets_mapping=True, verbose=False)
        # A tokenizer that opens every text with a start token scores the text's first real token
        # alone (after the start token): after a context it is scored too, and the start token
        # counts among the max_tokens, so both views score the same positions.
        opens = self.opens_with_special
        out = []
        for ids, offsets, whole in zip(enc["input_ids"], enc["offset_mapping"], joined):
            starts = [start for start, end in offsets]
            if len(context) not in starts or len(whole) == len(context):
                out.append(Encoded(ids=[], char_start=0, char_end=0))
                continue
            first = starts.index(len(context)) - (
                1 if opens else 0
            )  # with a start token: the context's last token leads
            own = ids[first : first + self.options.max_tokens]
            kept = offsets[first : first + len(own)]
            out.append(
                Encoded(
                    ids=own,
                    char_start=(kept[1][0] if len(kept) > 1 else kept[0][1]) - len(context),
                    char_end=kept[-1][1] - len(context),
                    context=tuple(ids[:first][-room:]),
                )
            )
        return out

    @cached_property
    def opens_with_special(self) -> bool:
        """Whether the tokenizer puts a special token (BOS) before every text (asked once: the tokenizer is fixed)."""
        ids = self.tokenizer("a", verbose=False).input_ids
        return bool(ids) and ids[0] in set(self.tokenizer.all_special_ids)

    def _run_wave(self, encoded: dict[str, Encoded]) -> Iterator[dict[str, TokenScores]]:
        """Score one wave's windows longest first; yield the documents each batch completes.

        On a GPU the next batch is queued before the last one's statistics are read, so the device
        never waits for the host to unpack and cache a batch.
        """
        rows: list[Window] = []
        stitching: dict[str, _Stitching] = {}
        for key, enc in encoded.items():
            windows = self.windows(key, enc)
            rows += windows
            stitching[key] = _Stitching(enc, windows=len(windows))
        rows.sort(key=lambda w: (len(w.ids), w.doc, w.index), reverse=True)
        batches: list[tuple[int, list[Window]]] = []
        by_width: dict[int, list[Window]] = {}
        for row in rows:
            by_width.setdefault(self.width_of(row.ids), []).append(row)
        for width, group in by_width.items():
            per_pass = self.rows_at(width)
            batches += [(width, group[start : start + per_pass]) for start in range(0, len(group), per_pass)]
        pending: _Pending | None = None
        for width, batch in batches:
            try:
                launched = self._launch(batch, width)
            except BaseException:  # interrupted or out of memory: keep the pass the device already did
                if pending is not None:
                    yield self._finish(pending, stitching)
                raise
            if pending is not None:
                yield self._finish(pending, stitching)
            pending = launched
        if pending is not None:
            yield self._finish(pending, stitching)

    def _finish(self, pending: _Pending, stitching: dict[str, _Stitching]) -> dict[str, TokenScores]:
        """Read a pass's statistics and return the documents whose last window it held."""
        finished = {}
        for row, stats in zip(pending.rows, self._collect(pending)):
            doc = stitching[row.doc]
            doc.parts[row.index] = stats[row.keep_from :].copy()  # a copy: a view would hold the whole pass's buffer
            if len(doc.parts) == doc.windows:
                part = np.concatenate([doc.parts[j] for j in range(doc.windows)]).astype(np.float64)
                enc = stitching.pop(row.doc).encoded
                finished[row.doc] = TokenScores(
                    token_ids=np.asarray(enc.ids, dtype=np.int32),
                    logprob=part[:, 0],
                    mu=part[:, 1],
                    sigma=part[:, 2],
                    top1=part[:, 3],
                    char_start=enc.char_start,
                    char_end=enc.char_end,
                )
        return finished

    @inference_mode
    def generate(self, prompts: Sequence[str], max_new_tokens: int = 64) -> list[str]:
        """Greedy continuations, one prompt at a time (no padding, so each is what the model gives
        that prompt alone; greedy, so the same model and prompt give the same text)."""
        import torch

        outputs = []
        pad = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else self.tokenizer.eos_token_id
        with torch_threads(self.options.threads):
            for prompt in prompts:
                ids = (
                    self.tokenizer(prompt, return_tensors="pt")
                    .input_ids[:, -self.options.max_tokens :]
                    .to(self.options.device)
                )
                out = self.model.generate(
                    ids,
                    attention_mask=torch.ones_like(ids),
                    max_new_tokens=max_new_tokens,
                    do_sample=False,
                    pad_token_id=pad,
                )
                outputs.append(self.tokenizer.decode(out[0, ids.shape[1] :], skip_special_tokens=True))
        return outputs

    @inference_mode
    def sample(
        self, prompts: Sequence[str], samples: int, temperature: float, max_new_tokens: int, chat: bool = False
    ) -> list[list[str]]:
        """``samples`` continuations of each prompt at ``temperature`` (0: greedy, all alike), drawn
        SAMPLE_BATCH prompts at a time (left-padded) under a seed fixed by those prompts, so a re-run
        gives the same texts; ``chat``: each prompt as a user message under the model's chat
        template. Nothing else is read from the model (output-only marks see what an answers-only
        API would show)."""
        import torch

        if chat and getattr(self.tokenizer, "chat_template", None):
            prompts = [
                self.tokenizer.apply_chat_template(
                    [{"role": "user", "content": p}], tokenize=False, add_generation_prompt=True
                )
                for p in prompts
            ]
        pad = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else self.tokenizer.eos_token_id
        draws = samples if temperature > 0 else 1
        out: list[list[str]] = []
        for start in range(0, len(prompts), SAMPLE_BATCH):
            batch = list(prompts[start : start + SAMPLE_BATCH])
            encoded = [self.tokenizer(p).input_ids[-self.options.max_tokens :] for p in batch]
            width = max(map(len, encoded))
            ids = torch.tensor([[pad] * (width - len(e)) + e for e in encoded], device=self.options.device)
            mask = torch.tensor([[0] * (width - len(e)) + [1] * len(e) for e in encoded], device=self.options.device)
            seed = int(hashlib.sha256("\n".join(batch).encode()).hexdigest()[:8], 16)
            with torch_threads(self.options.threads), torch.random.fork_rng(devices=[]):
                torch.manual_seed(seed)
                rows = self.model.generate(
                    ids,
                    attention_mask=mask,
                    max_new_tokens=max_new_tokens,
                    do_sample=temperature > 0,
                    temperature=temperature if temperature > 0 else None,
                    top_k=None,
                    top_p=None,
                    num_return_sequences=draws,
                    pad_token_id=pad,
                )
            texts = [self.tokenizer.decode(row[width:], skip_special_tokens=True) for row in rows]
            out += [texts[i * draws : (i + 1) * draws] * (samples // draws) for i in range(len(batch))]
        return out

    def width_of(self, ids: Sequence[int]) -> int:
        """The padded width a row is scored at: a function of its own length only (a text after
        a context may be longer than ``max_tokens``)."""
        width = -(-len(ids) // WIDTH_STEP) * WIDTH_STEP
        return width if len(ids) > self.options.max_tokens else min(self.options.max_tokens, width)

    def rows_at(self, width: int) -> int:
        """Rows of every pass at ``width``: the token budget filled, a function of the width only."""
        return max(1, self.options.tokens_per_pass // width)

    @inference_mode
    def _launch(self, batch: Sequence[Window], width: int) -> _Pending:
        """Queue one forward pass of shape [rows_at(width), width] and its reduction on the device.

        Batch-invariant to ``BATCH_TOLERANCE``: every pass has the same shape for a given width
        (missing rows are filled with a one-token dummy that is never read), and the output layer
        and statistics run over all rows x width positions in chunks of one shape. So every kernel
        has the same shape whichever documents share the pass; what is left is a kernel computing
        a row differently at another position of its input, which moves the last bits on some CPUs
        (tested to the tolerance, with padded and full-width passes); on a GPU, run the same test.
        """
        import torch

        device, rows = self.options.device, self.rows_at(width)
        cuda = device.startswith("cuda")
        ids = torch.zeros((rows, width), dtype=torch.long, pin_memory=cuda)
        mask = torch.zeros((rows, width), dtype=torch.long, pin_memory=cuda)
        for row, window in enumerate(batch):
            ids[row, : len(window.ids)] = torch.as_tensor(window.ids)
            mask[row, : len(window.ids)] = 1
        mask[len(batch) :, 0] = 1
        ids, mask = ids.to(device, non_blocking=True), mask.to(device, non_blocking=True)
        if self.head_from_hidden:
            states = self.model.base_model(input_ids=ids, attention_mask=mask).last_hidden_state
            head = self.model.get_output_embeddings()
        else:
            states = self.model(input_ids=ids, attention_mask=mask).logits
            head = torch.nn.Identity()
        # Position t predicts token t+1. Statistics run over all rows x width positions of the
        # contiguous states (no copy of them), each row's last position against a dummy target and
        # dropped with the padding when read, in chunks of exactly ``row_chunk`` positions: the last
        # chunk is shifted back to end at the last position (overlapping the one before), so every
        # chunk of every pass at a width has one shape, wherever a document sits in its pass.
        positions = states.reshape(rows * width, -1)
        targets = torch.roll(ids, -1, dims=1).reshape(-1)
        total, chunk = rows * width, min(self.row_chunk, rows * width)
        starts = list(range(0, total - chunk, chunk)) + [total - chunk]
        parts = [_position_stats(head(positions[i : i + chunk]), targets[i : i + chunk]) for i in starts]
        kept = [
            part[max(0, end - start) :]
            for part, start, end in zip(parts, starts, [0, *(i + chunk for i in starts[:-1])])
        ]
        stats = torch.cat(kept).view(rows, width, 4)
        if not cuda:
            return _Pending(batch, stats)
        host = torch.empty(stats.shape, dtype=stats.dtype, pin_memory=True)
        host.copy_(stats, non_blocking=True)
        ready = torch.cuda.Event()
        ready.record(
            torch.cuda.current_stream(stats.device)
        )  # the stream of the model's device, not the current device's
        return _Pending(batch, host, ready)

    @staticmethod
    def _collect(pending: _Pending) -> list[np.ndarray]:
        if pending.ready is not None:
            pending.ready.synchronize()
        stats = pending.stats.numpy()
        return [stats[row, : len(window.ids) - 1] for row, window in enumerate(pending.rows)]


SAMPLE_BATCH = 8  # prompts sampled together (times their samples: the rows of one generate call)


def _no_scores() -> TokenScores:
    """A text with no scored positions (its signals are NaN, with the reason)."""
    return TokenScores(np.zeros(0, dtype=np.int32), np.zeros(0), np.zeros(0), np.zeros(0), np.zeros(0), 0, 0)


def _chunk_bytes(device: str) -> int:
    """Bytes of logits reduced at once by device: fixed, as the chunk shape is part of the numbers
    (about 3.5 GiB of temporaries on a GPU with the head's output and two float32 buffers)."""
    return GPU_CHUNK_BYTES if device.startswith("cuda") else CPU_CHUNK_BYTES


def _transformers_version() -> str:
    from transformers import __version__

    return __version__


def _position_stats(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """[rows, vocab] logits -> [rows, 4] float32: log p(target), mu, sigma, log p(top-1).

    With s = logits - max (so s <= 0 and exp cannot overflow), z = sum exp(s) and log p = s - log z:
    mu = E_p[log p] = E_p[s] - log z and sigma^2 = Var_p[log p] = E_p[s^2] - E_p[s]^2 (a shift does
    not change a variance; s is centred near the mass of p, so the difference loses no precision).
    Seven passes over the chunk instead of the fourteen a log-softmax-first formulation takes.
    """
    import torch

    logits = logits.float()
    top = logits.max(-1).values
    shifted = logits - top[:, None]
    weighted = shifted.exp()
    z = weighted.sum(-1)
    weighted.mul_(shifted)  # p * s, up to the factor 1 / z
    m1 = weighted.sum(-1) / z
    m2 = torch.linalg.vecdot(weighted, shifted) / z
    log_z = z.log()
    actual = shifted.gather(-1, targets[:, None]).squeeze(-1) - log_z
    return torch.stack([actual, m1 - log_z, (m2 - m1.square()).clamp_min(0).sqrt(), -log_z], dim=-1)


def _load(source: ModelSource):  # noqa: ANN202 - transformers' own types
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    kwargs: dict[str, str] = {"gguf_file": source.gguf_file} if source.gguf_file else {}
    if source.revision:
        kwargs["revision"] = source.revision
    try:
        # GGUF de-quantisation draws a tqdm bar of its own on stderr; keep the CLI's output clean.
        with contextlib.redirect_stderr(io.StringIO()):
            tokenizer = AutoTokenizer.from_pretrained(source.location, **kwargs)
            model = AutoModelForCausalLM.from_pretrained(source.location, dtype=torch.float32, **kwargs)
    except Exception as exc:  # noqa: BLE001 - a user's model files: truncated weights, no tokenizer, bad config
        first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        reason = redact_paths(first_line, Path(source.location), label="<model folder>")
        raise VerifierError(f"model {source.public_name}: cannot load ({reason})") from None
    if not getattr(tokenizer, "is_fast", False):
        raise VerifierError(f"model {source.public_name}: needs a fast tokenizer (character offsets); none was found")
    # transformers builds an empty tokenizer for a folder without tokenizer files: every document
    # would then be "too short", blamed on the data instead of the model.
    if len(tokenizer.get_vocab()) < 2 or len(tokenizer("a b c d").input_ids) < 2:
        raise VerifierError(
            f"model {source.public_name}: its tokenizer is empty (the folder holds no usable tokenizer files, "
            "e.g. tokenizer.json)"
        )
    return model, tokenizer
