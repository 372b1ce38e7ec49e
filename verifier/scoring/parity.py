"""Parity evidence: does an API serve the weights it is declared to be?

Why: an API audit attests to what the endpoint returned, under the name the provider gave it. When
the auditor also holds the weights the served model is declared to be (``model.weights`` beside an
``openai-compatible:`` target), the server's prompt log-probs can be compared with local scoring
of those weights: the same weights give the same numbers (SmolLM2-135M served by vLLM in float32:
at most 1.6e-5 nats per document over WikiMIA-64), other weights - another model, a fine-tune -
give differences of tenths of a nat or more.

What is compared: a fixed sample of the claim's documents (``SAMPLE`` distinct texts, drawn by the
claim's seed from the texts sorted by digest, cut to ``CHARS`` characters so both cuts agree), each
scored by the server and by the local weights: the same number of scored tokens (another tokenizer
differs here), then the largest difference of a token's log-prob and of a document's mean
log-prob. Beyond ``TOLERANCE`` on a document's mean, the API target is refused in one line. The
tolerance admits a server computing in bfloat16 (local bf16 against fp32 scoring of SmolLM2-135M
differs by about 0.01 nats per document) and refuses other weights. Where no weights are held, or
the server returns no prompt log-probs, nothing is compared, and the report says the served
model's identity rests on the provider's word.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np

from verifier.errors import VerifierError
from verifier.targets import ScoreCache, Target
from verifier.targets.base import PROMPT_LOGPROBS

SAMPLE = 16
CHARS = 1000
TOLERANCE = 0.05  # nats, on a document's mean log-prob


@dataclass(frozen=True)
class Parity:
    """What the comparison found (plain data, for the findings)."""

    weights: dict[str, object]  # the local weights' identity (spec and digests; never a path)
    documents: int  # compared (scored both ways)
    seed: int
    max_token_difference: float
    max_document_difference: float
    tolerance: float

    def as_finding(self) -> dict[str, object]:
        """The record, differences to three significant digits (what a report shows)."""
        record = asdict(self)
        for key in ("max_token_difference", "max_document_difference"):
            record[key] = float(f"{record[key]:.3g}")
        return record


def sample_texts(texts: Sequence[str], seed: int, size: int = SAMPLE) -> list[str]:
    """``size`` distinct texts drawn by ``seed`` from ``texts`` in digest order (so the draw depends
    on the documents and the seed, never on the order the files list them), each cut to ``CHARS``."""
    distinct = sorted({t[:CHARS] for t in texts if t.strip()}, key=lambda t: hashlib.sha256(t.encode()).hexdigest())
    if not distinct:
        return []
    chosen = np.random.default_rng(seed).choice(len(distinct), size=min(size, len(distinct)), replace=False)
    return [distinct[i] for i in sorted(chosen)]


def check_parity(served: Target, weights: Target, texts: Sequence[str], seed: int, cache: ScoreCache) -> Parity | None:
    """Compare the server's prompt log-probs with the weights' on a seeded sample of ``texts``;
    None when the server returns no prompt log-probs (nothing to compare). Raises, in one line,
    when they differ beyond ``TOLERANCE`` or tokenize the sample differently."""
    if PROMPT_LOGPROBS not in served.capabilities:
        return None
    sample = sample_texts(texts, seed)
    if not sample:
        raise VerifierError("model.weights: the claim's documents hold no text to compare the server with")
    remote, local = served.score(sample, cache=cache), weights.score(sample, cache=cache)
    compared = [(i, a, b) for i, (a, b) in enumerate(zip(remote, local)) if a.n_scored and b.n_scored]
    if len(compared) * 2 < len(sample):  # a request the server failed or refused compares nothing
        raise VerifierError(
            f"model.weights: the server scored only {len(compared)} of the {len(sample)} documents of the parity "
            "sample: its weights could not be compared with the declared ones"
        )
    token_gap = document_gap = 0.0
    for index, a, b in compared:
        if a.n_scored != b.n_scored:
            raise VerifierError(
                f"model.weights: the server does not serve the declared weights (document {index + 1} of the parity "
                f"sample: {a.n_scored} scored tokens through the API, {b.n_scored} locally: another tokenizer)"
            )
        token_gap = max(token_gap, float(np.max(np.abs(a.logprob - b.logprob))))
        document_gap = max(document_gap, abs(float(np.mean(a.logprob)) - float(np.mean(b.logprob))))
    if document_gap > TOLERANCE:
        raise VerifierError(
            f"model.weights: the server does not serve the declared weights (a document's mean log-prob differs by "
            f"{document_gap:.3g} nats, beyond the tolerance of {TOLERANCE})"
        )
    identity = weights.identity.as_finding()
    return Parity(
        {k: identity[k] for k in ("kind", "spec", "digests") if k in identity},
        len(compared),
        seed,
        token_gap,
        document_gap,
        TOLERANCE,
    )
