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

import hashlib
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import torch

from verifier.errors import VerifierError
from verifier.targets.cache import ScoreCache, cache_key
from verifier.targets.model_source import ModelSource, resolve_model
from verifier.targets.token_scores import TokenScores

DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16}
# Rows of the [positions, vocabulary] log-prob matrix reduced at once: bounds peak memory to
# about ROW_CHUNK * vocab * 4 bytes * 3 temporaries (~600 MB for a 49k vocabulary).
ROW_CHUNK = 1024


@dataclass(frozen=True)
class ScoringOptions:
    """How documents are cut and how the model runs. Everything here that changes the numbers
    (``dtype``, ``max_tokens``, ``max_chars``) is part of the cache key."""

    device: str = "cpu"
    dtype: Literal["fp32", "bf16"] = "fp32"
    batch_size: int = 16
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


class CausalLMTarget:
    """A transformers causal LM loaded from a SPEC (see ``model_source``)."""

    def __init__(self, spec: str, options: ScoringOptions | None = None) -> None:
        self.options = options or ScoringOptions()
        self.source: ModelSource = resolve_model(spec)
        if self.options.threads:
            torch.set_num_threads(self.options.threads)
        self.model, self.tokenizer = _load(self.source)
        self.model.to(device=self.options.device, dtype=DTYPES[self.options.dtype]).eval()
        self.model_digest = (
            self.source.digest()
            if self.source.is_local
            else f"{self.source.location}@{getattr(self.model.config, '_commit_hash', None) or 'unknown'}"
        )
        self.tokenizer_digest = hashlib.sha256(self.tokenizer.backend_tokenizer.to_str().encode()).hexdigest()

    @property
    def fingerprint(self) -> dict[str, object]:
        """Everything the cached arrays depend on besides the text."""
        return {
            "model": self.model_digest,
            "tokenizer": self.tokenizer_digest,
            "dtype": self.options.dtype,
            "max_tokens": self.options.max_tokens,
            "max_chars": self.options.max_chars,
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
        keys = [cache_key(self.fingerprint, text) for text in texts]
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
        order = sorted(encoded, key=lambda key: len(encoded[key].ids), reverse=True)
        for start in range(0, len(order), self.options.batch_size):
            batch = order[start : start + self.options.batch_size]
            results = dict(zip(batch, self.forward([encoded[key] for key in batch])))
            if cache is not None:
                cache.put_many(results)
            found.update(results)
            if on_progress:
                on_progress(sum(1 for key in keys if key in results))
        return [found[key] for key in keys]

    @torch.inference_mode()
    def forward(self, batch: Sequence[Encoded]) -> list[TokenScores]:
        """One padded forward pass over ``batch``, reduced on the device to per-position arrays."""
        device = self.options.device
        lengths = torch.tensor([len(enc.ids) for enc in batch])
        width = int(lengths.max())
        ids = torch.zeros((len(batch), width), dtype=torch.long)
        for row, enc in enumerate(batch):
            ids[row, : len(enc.ids)] = torch.tensor(enc.ids)
        mask = (torch.arange(width)[None, :] < lengths[:, None]).long()
        logits = self.model(input_ids=ids.to(device), attention_mask=mask.to(device)).logits
        # Position t predicts token t+1; keep positions whose target token is real, not padding.
        keep = mask[:, 1:].bool().to(device)
        rows = logits[:, :-1][keep]
        targets = ids[:, 1:].to(device)[keep]
        stats = torch.cat(
            [_position_stats(rows[i : i + ROW_CHUNK], targets[i : i + ROW_CHUNK]) for i in range(0, len(rows), ROW_CHUNK)]
        ).cpu().numpy()
        out, offset = [], 0
        for enc in batch:
            n = len(enc.ids) - 1
            part = stats[offset : offset + n].astype(np.float64)
            offset += n
            out.append(
                TokenScores(
                    token_ids=np.asarray(enc.ids, dtype=np.int32),
                    logprob=part[:, 0],
                    mu=part[:, 1],
                    sigma=part[:, 2],
                    top1=part[:, 3],
                    char_start=enc.char_start,
                    char_end=enc.char_end,
                )
            )
        return out


def _position_stats(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """[rows, vocab] logits -> [rows, 4] float32: log p(target), mu, sigma, log p(top-1)."""
    logp = torch.log_softmax(logits.float(), dim=-1)
    p = logp.exp()
    mu = (p * logp).sum(-1)
    sigma = (p * (logp - mu[:, None]).square()).sum(-1).sqrt()
    actual = logp.gather(-1, targets[:, None]).squeeze(-1)
    return torch.stack([actual, mu, sigma, logp.max(-1).values], dim=-1)


def _load(source: ModelSource):  # noqa: ANN202 - transformers' own types
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    os.environ.setdefault("TQDM_DISABLE", "1")  # GGUF de-quantisation draws its own tqdm bar
    kwargs = {"gguf_file": source.gguf_file} if source.gguf_file else {}
    try:
        tokenizer = AutoTokenizer.from_pretrained(source.location, **kwargs)
        model = AutoModelForCausalLM.from_pretrained(source.location, dtype=torch.float32, **kwargs)
    except (OSError, ValueError, RuntimeError, KeyError) as exc:
        first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise VerifierError(f"model {source.spec}: cannot load ({first_line})") from None
    if not getattr(tokenizer, "is_fast", False):
        raise VerifierError(f"model {source.spec}: needs a fast tokenizer (character offsets); none was found")
    return model, tokenizer
