"""Parity evidence: does an API serve the weights it is declared to be?

Why: an API audit attests to what the endpoint returned, under the name the provider gave it. When
the auditor also holds the weights the served model is declared to be (``model.weights`` beside an
``openai-compatible:`` target), the server's prompt log-probs can be compared with local scoring
of those weights: the same weights give the same numbers (SmolLM2-135M served by vLLM in float32:
at most 1.6e-5 nats per document over WikiMIA-64), other weights - another model, a fine-tune -
give differences of tenths of a nat or more.

What is compared: after the routes ran, a sample of the documents they sent to the server
(``SAMPLE`` distinct texts from the texts sorted by digest, each cut as the server's target cut it,
drawn by a seed the session derives from the claim's seed and the digest of every answer the
server gave). The server's answers are the ones the routes read (from the response cache: the same
requests, nothing new is sent), so a server cannot answer the compared documents honestly and the
others not: it cannot tell them apart when it answers, and even knowing the claim it cannot
predict the draw, which any change of any answer changes. Each is scored from the
local weights too, over the same positions (every token after the first, up to the shorter of the
two cuts): the largest difference of a document's mean log-prob must stay within ``TOLERANCE``
and of the mean of its lowest fifth (what Min-K% reads) within ``LOW_TAIL_TOLERANCE``, or the API
target is refused in one line; the largest difference of a single token is recorded. Measured on
32 WikiMIA documents, SmolLM2-135M scored in bfloat16 against float32 differs by at most 0.016
nats in a document's mean (median 0.004) and 0.037 in its lowest fifth (median 0.012), a single
token by up to 0.54: the tolerances admit a server computing in bfloat16 and refuse other weights
(a tiny GPT-2 of other weights with the same tokenizer differs by tenths of a nat). Not detected:
weights whose log-probs differ from the declared ones by less than the tolerances (a change that
small moves a document's signals by less than a change of precision does). Another tokenizer
scores other tokens at the same positions and differs far beyond them. Where no weights are held,
or the server returns no prompt log-probs, nothing is compared, and the report says the served
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
TOLERANCE = 0.05  # nats, on a document's mean log-prob
LOW_TAIL_TOLERANCE = 0.1  # nats, on the mean of a document's lowest fifth of token log-probs


@dataclass(frozen=True)
class Parity:
    """What the comparison found (plain data, for the findings)."""

    weights: dict[str, object]  # the local weights' identity (spec and digests; never a path)
    documents: int  # compared (scored both ways)
    seed: int
    max_token_difference: float
    max_document_difference: float
    max_low_tail_difference: float
    tolerance: float
    low_tail_tolerance: float

    def as_finding(self) -> dict[str, object]:
        """The record, differences to three significant digits (what a report shows)."""
        record = asdict(self)
        for key in ("max_token_difference", "max_document_difference", "max_low_tail_difference"):
            record[key] = float(f"{record[key]:.3g}")
        return record


def low_tail(logprob: np.ndarray) -> float:
    """The mean of a document's lowest fifth of token log-probs (what Min-K% reads)."""
    return float(np.mean(np.sort(logprob)[: max(1, len(logprob) // 5)]))


def sample_texts(texts: Sequence[str], seed: int, size: int = SAMPLE) -> list[str]:
    """``size`` distinct texts drawn by ``seed`` from ``texts`` in digest order (so the draw depends
    on the documents and the seed, never on the order the routes sent them)."""
    distinct = sorted({t for t in texts if t.strip()}, key=lambda t: hashlib.sha256(t.encode()).hexdigest())
    if not distinct:
        return []
    chosen = np.random.default_rng(seed).choice(len(distinct), size=min(size, len(distinct)), replace=False)
    return [distinct[i] for i in sorted(chosen)]


def check_parity(served: Target, weights: Target, texts: Sequence[str], seed: int, cache: ScoreCache) -> Parity | None:
    """Compare the server's prompt log-probs with the weights' on a seeded sample of ``texts`` (the
    texts the routes sent; each cut to the served target's ``max_chars``, as its requests were);
    None when the server returns no prompt log-probs (nothing to compare). Raises, in one line,
    when they differ beyond ``TOLERANCE`` or tokenize the sample differently."""
    if PROMPT_LOGPROBS not in served.capabilities:
        return None
    cut = getattr(served, "max_chars", None)
    sample = sample_texts([t[:cut] if isinstance(cut, int) else t for t in texts], seed)
    if not sample:
        raise VerifierError("model.weights: the routes sent the server no document to compare its weights on")
    remote, local = served.score(sample, cache=cache), weights.score(sample, cache=cache)
    compared = [(a, b) for a, b in zip(remote, local) if a.n_scored and b.n_scored]
    if len(compared) * 2 < len(sample):  # a request the server failed or refused compares nothing
        raise VerifierError(
            f"model.weights: the server scored only {len(compared)} of the {len(sample)} documents of the parity "
            "sample: its weights could not be compared with the declared ones"
        )
    token_gap = document_gap = tail_gap = 0.0
    for a, b in compared:
        # The same positions: every token after the first, up to the shorter cut (the server's and
        # the weights' token limits may differ). Another tokenizer scores other tokens there.
        n = min(a.n_scored, b.n_scored)
        x, y = a.logprob[:n], b.logprob[:n]
        token_gap = max(token_gap, float(np.max(np.abs(x - y))))
        document_gap = max(document_gap, abs(float(np.mean(x)) - float(np.mean(y))))
        tail_gap = max(tail_gap, abs(low_tail(x) - low_tail(y)))
    if document_gap > TOLERANCE or tail_gap > LOW_TAIL_TOLERANCE:
        raise VerifierError(
            f"model.weights: the server does not serve the declared weights (a document's mean log-prob differs by "
            f"up to {document_gap:.3g} nats, the mean of its lowest fifth by up to {tail_gap:.3g}; tolerances "
            f"{TOLERANCE} and {LOW_TAIL_TOLERANCE})"
        )
    identity = weights.identity.as_finding()
    return Parity(
        {k: identity[k] for k in ("kind", "spec", "digests") if k in identity},
        len(compared),
        seed,
        token_gap,
        document_gap,
        tail_gap,
        TOLERANCE,
        LOW_TAIL_TOLERANCE,
    )
