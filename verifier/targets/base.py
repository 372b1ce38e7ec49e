"""The target contract: what any audited model declares it can do, and how it is identified.

Routes and signals never ask what kind of model they face; they ask for capabilities:
- ``prompt_logprobs``: log p of every token of a given text (open weights; some APIs with echo);
- ``vocab_stats``: per position, the mean, spread and top-1 of log p over the whole vocabulary
  (open weights only: Min-K%++ and Gap-K% read them);
- ``top_k_logprobs``: the k most likely next tokens with their log p (many APIs);
- ``generate``: sample continuations;
- ``answers``: answer chat or text queries, greedy or sampled (``queries``; API models);
- ``reasoning_traces``: a reasoning model's trace beside its answer.

A signal states the capabilities it needs; an audit of a target that cannot supply them records
the signal as "not computable" instead of failing. The identity object replaces a bare weight
digest: weights and tokenizer digests for local models, endpoint, model name and a digest of the
response cache for API models; it is what the findings and every cache key name.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from verifier.errors import VerifierError
from verifier.targets.cache import ScoreCache
from verifier.targets.token_scores import TokenScores

PROMPT_LOGPROBS = "prompt_logprobs"
VOCAB_STATS = "vocab_stats"
TOP_K_LOGPROBS = "top_k_logprobs"
GENERATE = "generate"
ANSWERS = "answers"
REASONING_TRACES = "reasoning_traces"
CAPABILITIES = frozenset({PROMPT_LOGPROBS, VOCAB_STATS, TOP_K_LOGPROBS, GENERATE, ANSWERS, REASONING_TRACES})


# A text whose token ids tell tokenizers apart (words, casing, digits, accents, CJK, code, spacing):
# the SHA-256 of its ids is a target's tokenizer fingerprint. A server does not publish its
# tokenizer file, but it tokenizes this text when asked for its log-probs, so a local model and an
# API target are compared by the same test; token-level numbers (a frequency table's counts, token
# log-probs) are mixed only between targets whose fingerprints are equal.
TOKENIZER_PROBE = (
    "The Quick brown fox, 1,234.5 km/h; naïve café — déjà vu! 東京タワー 2024-12-04\n"
    "def f(x):\n    return x**2  # ünïcödé  \t tabs & emoji 🙂"
)


def tokenizer_fingerprint(ids: Sequence[int]) -> str:
    """SHA-256 of the probe's token ids (without special tokens) as a tokenizer gives them."""
    return hashlib.sha256(json.dumps([int(i) for i in ids]).encode()).hexdigest()


@dataclass(frozen=True)
class TargetIdentity:
    """What the findings name the model by; ``digests`` are SHA-256 hex strings by role."""

    kind: str  # "causal_lm", "openai_compatible", ...
    spec: str  # a name safe to publish: a bundled name, a file or folder name, a hub id, an endpoint's model
    digests: dict[str, str] = field(default_factory=dict)  # e.g. {"weights": ..., "tokenizer": ...}
    details: dict[str, object] = field(default_factory=dict)  # e.g. revision, dtype, max_tokens

    def as_finding(self) -> dict[str, object]:
        return {"kind": self.kind, "spec": self.spec, "digests": dict(self.digests), **self.details}


@runtime_checkable
class Target(Protocol):
    """An audited model. ``score`` is needed only for targets offering ``prompt_logprobs``;
    ``generate(prompts, max_new_tokens) -> list[str]`` (greedy continuations) only for targets
    offering ``generate``; ``answer(queries, cache, on_progress) -> list[Answer]`` (see
    ``queries``) only for targets offering ``answers``."""

    capabilities: frozenset[str]
    max_chars: int  # texts are cut to this many characters before scoring

    @property
    def identity(self) -> TargetIdentity: ...

    @property
    def fingerprint(self) -> dict[str, object]:
        """Everything the scored arrays depend on besides the text (part of every cache key)."""
        ...

    def score(
        self,
        texts: Sequence[str],
        cache: ScoreCache | None = None,
        on_progress: Callable[[int], None] | None = None,
        context: str | None = None,
    ) -> list[TokenScores]:
        """Per text, its token scores; with ``context``, the text's own tokens scored after the
        context (at the positions the unconditioned scores have: every token after the first)."""
        ...


@runtime_checkable
class Generates(Protocol):
    """A target offering ``generate``: greedy continuations, one per prompt."""

    def generate(self, prompts: Sequence[str], max_new_tokens: int = 64) -> list[str]: ...


@runtime_checkable
class Samples(Protocol):
    """A local target that samples continuations, ``samples`` per prompt (seeded: the same prompts
    give the same texts on the same machine); ``chat`` wraps each prompt in the model's chat template."""

    def sample(
        self, prompts: Sequence[str], samples: int, temperature: float, max_new_tokens: int, chat: bool = False
    ) -> list[list[str]]: ...


def generating(target: Target) -> Generates:
    """``target`` as a generator, or one line saying it cannot generate (a capability is probed or
    declared, so the check reads it before the method)."""
    if GENERATE not in target.capabilities or not isinstance(target, Generates):
        raise VerifierError(f"model {target.identity.spec}: cannot generate text")
    return target
