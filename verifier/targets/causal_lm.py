"""A causal language model as an audit target: batched, cached forward passes.

Why it is shaped this way:
- One forward pass per document gives every gray-box signal. Documents are cut to
  ``max_chars`` characters and then ``max_tokens`` tokens (2,500 and 256, as the seed study did),
  sorted by length and padded to the longest in each batch, so padding waste stays small.
- The full-vocabulary arrays never leave the device: per scored position we reduce the
  log-softmax to five numbers (see ``token_scores``) in row chunks of bounded size.
- Statistics over the vocabulary are taken in float32 even when the model runs in bf16, so a
  bf16 run differs from fp32 only through its logits.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal

import numpy as np
import torch

from verifier.errors import VerifierError, redact_paths
from verifier.targets.base import GENERATE, PROMPT_LOGPROBS, VOCAB_STATS, TargetIdentity
from verifier.targets.cache import ScoreCache, cache_key
from verifier.targets.model_source import ModelSource, resolve_model
from verifier.targets.token_scores import TokenScores

DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16}
# Bytes of one [rows, vocabulary] float32 chunk of logits reduced at once. Small enough that the
# allocator reuses memory instead of mapping fresh pages for every temporary (page faults cost
# more than the arithmetic), large enough to keep each kernel busy.
CHUNK_BYTES = 16 << 20
# Documents are padded to a multiple of this many tokens: their width depends on their own length only.
WIDTH_STEP = 32


@dataclass(frozen=True)
class ScoringOptions:
    """How documents are cut and how the model runs. Everything here that changes the numbers
    (``dtype``, ``max_tokens``, ``max_chars``) is part of the cache key."""

    device: str = "cpu"
    dtype: Literal["fp32", "bf16"] = "fp32"
    batch_size: int = 4  # rows of every pass at a width; small, so partial passes waste little (see forward)
    max_tokens: int = 256
    max_chars: int = 2500
    threads: int | None = None

    def __post_init__(self) -> None:
        if self.dtype not in DTYPES:
            raise VerifierError(f"dtype {self.dtype!r}: use one of {sorted(DTYPES)}")
        if self.batch_size < 1 or self.max_tokens < 2 or self.max_chars < 1:
            raise VerifierError("batch size must be >= 1, max tokens >= 2 and max chars >= 1")
        if self.device.startswith("cuda") and not torch.cuda.is_available():
            raise VerifierError(f"device {self.device!r}: no CUDA device is available")


@dataclass(frozen=True)
class Encoded:
    """A document cut and tokenized: ids plus the character span the scored tokens cover."""

    ids: list[int]
    char_start: int
    char_end: int


@contextlib.contextmanager
def torch_threads(count: int | None) -> Iterator[None]:
    """Run with ``count`` torch threads and restore the caller's setting after (it is process-wide)."""
    if not count:
        yield
        return
    before = torch.get_num_threads()
    torch.set_num_threads(count)
    try:
        yield
    finally:
        torch.set_num_threads(before)


class CausalLMTarget:
    """A transformers causal LM loaded from a SPEC (see ``model_source``)."""

    capabilities = frozenset({PROMPT_LOGPROBS, VOCAB_STATS, GENERATE})
    kind = "causal_lm"

    def __init__(self, spec: str, options: ScoringOptions | None = None) -> None:
        self.options = options or ScoringOptions()
        self.source: ModelSource = resolve_model(spec)
        with torch_threads(self.options.threads):
            self.model, self.tokenizer = _load(self.source)
        self.model.to(device=self.options.device, dtype=DTYPES[self.options.dtype]).eval()
        # A model cannot score past its context window (e.g. a testbed trained on 128 tokens).
        limit = getattr(self.model.config, "max_position_embeddings", None)
        if limit and self.options.max_tokens > limit:
            self.options = replace(self.options, max_tokens=limit)
        self.model_digest = self.source.digest() if self.source.is_local else self._hub_digest()
        self.tokenizer_digest = hashlib.sha256(self.tokenizer.backend_tokenizer.to_str().encode()).hexdigest()
        head = self.model.get_output_embeddings()
        self.row_chunk = max(8, CHUNK_BYTES // (4 * head.out_features))
        self.head_from_hidden = self._head_matches_logits()

    @torch.inference_mode()
    def _head_matches_logits(self) -> bool:
        """Whether logits = output layer(last hidden state), as for GPT-2 and Llama.

        Then the output layer runs only on real (unpadded) positions, chunk by chunk, and the full
        [batch, length, vocabulary] logits never exist. Models that transform their logits further
        (soft-capping, scaling) fail this check and take the plain path.
        """
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
    def identity(self) -> TargetIdentity:
        return TargetIdentity(self.kind, self.source.public_name, {"weights": self.model_digest, "tokenizer": self.tokenizer_digest},
                              {"revision": self.source.revision, "dtype": self.options.dtype, "max_tokens": self.options.max_tokens,
                               "max_chars": self.options.max_chars, "batch_size": self.options.batch_size})

    @property
    def fingerprint(self) -> dict[str, object]:
        """Everything the cached arrays depend on besides the text."""
        return {
            "model": self.model_digest,
            "tokenizer": self.tokenizer_digest,
            "dtype": self.options.dtype,
            "max_tokens": self.options.max_tokens,
            "max_chars": self.options.max_chars,
            "batch_size": self.options.batch_size,  # the shape of every forward pass, so part of the numbers
            # Kernels, and so the last bits, differ by device, thread count and library version.
            "device": self.options.device,
            "threads": self.options.threads or torch.get_num_threads(),
            "torch": torch.__version__,
            "transformers": _transformers_version(),
        }

    def encode(self, text: str) -> Encoded:
        cut = text[: self.options.max_chars]
        enc = self.tokenizer(cut, truncation=True, max_length=self.options.max_tokens, return_offsets_mapping=True)
        ids, offsets = enc["input_ids"], enc["offset_mapping"]
        return Encoded(ids=ids, char_start=offsets[1][0] if len(ids) > 1 else 0, char_end=offsets[-1][1] if ids else 0)

    def score(
        self,
        texts: Sequence[str],
        cache: ScoreCache | None = None,
        on_progress: Callable[[int], None] | None = None,
    ) -> list[TokenScores]:
        """Score every text, reading and filling ``cache``; ``on_progress(k)`` after each k documents."""
        with torch_threads(self.options.threads):
            return self._score(texts, cache, on_progress)

    def _score(self, texts: Sequence[str], cache: ScoreCache | None, on_progress: Callable[[int], None] | None) -> list[TokenScores]:
        fingerprint = self.fingerprint  # once: the property builds a dict and asks torch for its thread count
        keys = [cache_key(fingerprint, text) for text in texts]
        found = cache.get_many(list(set(keys))) if cache is not None else {}
        if on_progress:
            on_progress(sum(key in found for key in keys))
        todo: dict[str, str] = {}
        for key, text in zip(keys, texts):
            if key not in found:
                todo.setdefault(key, text)
        encoded = {key: self.encode(text) for key, text in todo.items()}
        for key, enc in encoded.items():
            if len(enc.ids) < 2:
                where = keys.index(key) + 1
                raise VerifierError(f"document {where}: fewer than 2 tokens, nothing to score")
        by_width: dict[int, list[str]] = {}
        for key in sorted(encoded, key=lambda key: (len(encoded[key].ids), key), reverse=True):
            by_width.setdefault(self.width_of(encoded[key]), []).append(key)
        for width, group in by_width.items():
            for start in range(0, len(group), self.options.batch_size):
                batch = group[start : start + self.options.batch_size]
                results = dict(zip(batch, self.forward([encoded[key] for key in batch], width)))
                if cache is not None:
                    cache.put_many(results)
                found.update(results)
                if on_progress:
                    on_progress(sum(1 for key in keys if key in results))
        return [found[key] for key in keys]

    @torch.inference_mode()
    def generate(self, prompts: Sequence[str], max_new_tokens: int = 64) -> list[str]:
        """Greedy continuations, one prompt at a time (no padding, so each is what the model gives
        that prompt alone; greedy, so the same model and prompt give the same text)."""
        outputs = []
        pad = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else self.tokenizer.eos_token_id
        with torch_threads(self.options.threads):
            for prompt in prompts:
                ids = self.tokenizer(prompt, return_tensors="pt").input_ids[:, -self.options.max_tokens:].to(self.options.device)
                out = self.model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=max_new_tokens, do_sample=False,
                                          pad_token_id=pad)
                outputs.append(self.tokenizer.decode(out[0, ids.shape[1]:], skip_special_tokens=True))
        return outputs

    def width_of(self, enc: Encoded) -> int:
        """The padded width a document is scored at: a function of its own length only."""
        return min(self.options.max_tokens, -(-len(enc.ids) // WIDTH_STEP) * WIDTH_STEP)

    @torch.inference_mode()
    def forward(self, batch: Sequence[Encoded], width: int) -> list[TokenScores]:
        """One forward pass of shape [batch_size, width], reduced on the device to per-position arrays.

        Batch-invariant: every pass has the same shape for a given width (missing rows are filled
        with a one-token dummy that is never read), and the output layer and statistics run per
        document over all ``width - 1`` positions in fixed chunks. So no arithmetic depends on which
        other documents share the batch or where a document sits in it, and a document's numbers
        are the same whatever the cache held before (checked bitwise in the tests).
        """
        device, rows = self.options.device, self.options.batch_size
        ids = torch.zeros((rows, width), dtype=torch.long)
        mask = torch.zeros((rows, width), dtype=torch.long)
        for row, enc in enumerate(batch):
            ids[row, : len(enc.ids)] = torch.tensor(enc.ids)
            mask[row, : len(enc.ids)] = 1
        mask[len(batch) :, 0] = 1
        ids, mask = ids.to(device), mask.to(device)
        if self.head_from_hidden:
            states = self.model.base_model(input_ids=ids, attention_mask=mask).last_hidden_state
            head = self.model.get_output_embeddings()
        else:
            states = self.model(input_ids=ids, attention_mask=mask).logits
            head = torch.nn.Identity()
        chunk = self.row_chunk
        out = []
        for row, enc in enumerate(batch):
            # Position t predicts token t+1: all width - 1 positions, the padded ones dropped after.
            positions, targets = states[row, :-1], ids[row, 1:]
            stats = torch.cat([_position_stats(head(positions[i : i + chunk]), targets[i : i + chunk])
                               for i in range(0, width - 1, chunk)])
            part = stats[: len(enc.ids) - 1].cpu().numpy().astype(np.float64)
            out.append(TokenScores(token_ids=np.asarray(enc.ids, dtype=np.int32), logprob=part[:, 0], mu=part[:, 1],
                                   sigma=part[:, 2], top1=part[:, 3], char_start=enc.char_start, char_end=enc.char_end))
        return out


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
    return model, tokenizer
