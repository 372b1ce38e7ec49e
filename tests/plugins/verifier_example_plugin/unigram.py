"""A target kind in one module: ``unigram:FILE``, a word-unigram model counted from a text file.

A toy model, but a real target: it offers ``prompt_logprobs`` (log p of every word after the
first, add-one smoothed), names itself by the digest of its counts, and so every gray-box signal
that needs only log p runs on it, through the score cache, like on a transformers model.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from verifier.errors import VerifierError
from verifier.targets.base import PROMPT_LOGPROBS, TargetIdentity
from verifier.targets.cache import ScoreCache
from verifier.targets.registry import register
from verifier.targets.token_scores import TokenScores

PREFIX = "unigram:"
WORD = re.compile(r"\w+")


@register(prefix=PREFIX)
class UnigramTarget:
    kind = "unigram"
    capabilities = frozenset({PROMPT_LOGPROBS})
    limitations = ()
    remote = False
    max_chars = 10_000

    def __init__(self, spec: str) -> None:
        self.check_spec(spec)
        self.path = Path(spec.removeprefix(PREFIX))
        try:
            text = self.path.read_text(encoding="utf-8")
        except OSError as exc:
            raise VerifierError(f"{self.path.name}: cannot read the unigram counts ({exc.strerror})") from None
        self.counts = Counter(w.lower() for w in WORD.findall(text))
        self.total = sum(self.counts.values())
        self.digest = hashlib.sha256(text.encode()).hexdigest()

    @classmethod
    def load(cls, spec: str, scoring: object, api: object, access: object) -> UnigramTarget:
        return cls(spec)

    @classmethod
    def check_spec(cls, spec: str) -> None:
        if not spec.removeprefix(PREFIX):
            raise VerifierError("unigram: name the text file to count, unigram:FILE")

    @classmethod
    def unloaded_identity(cls, spec: str, base: object) -> dict[str, object]:
        return {"kind": cls.kind, "spec": Path(spec.removeprefix(PREFIX)).name, "digests": {}, "loaded": False}

    @property
    def identity(self) -> TargetIdentity:
        return TargetIdentity(self.kind, self.path.name, {"counts": self.digest})

    @property
    def fingerprint(self) -> dict[str, object]:
        return {"kind": self.kind, "counts": self.digest}

    def score(
        self, texts: Sequence[str], cache: ScoreCache | None = None, on_progress: Callable[[int], None] | None = None
    ) -> list[TokenScores]:
        out = []
        vocabulary = len(self.counts) + 1
        for text in texts:
            words = [w.lower() for w in WORD.findall(text[: self.max_chars])]
            logprob = np.array([math.log((self.counts[w] + 1) / (self.total + vocabulary)) for w in words[1:]])
            ids = np.array([int(hashlib.sha256(w.encode()).hexdigest()[:6], 16) for w in words], dtype=np.int64)
            out.append(TokenScores(ids, logprob, None, None, None, 0, min(len(text), self.max_chars)))
            if on_progress:
                on_progress(1)
        return out
