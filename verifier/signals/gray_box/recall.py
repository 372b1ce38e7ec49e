"""ReCaLL (Xie et al. 2024, "ReCaLL: Membership Inference via Relative Conditional Log-Likelihoods").

A document's mean log-likelihood after a prefix of known non-members, relative to its own:
LL(x | P) / LL(x). Conditioning a member on non-member text lowers its likelihood more than it
lowers a non-member's, so the ratio is higher for members (the ReCaLL code scores the ratio as
is: higher = member-like).

Departures from the paper's code, each so that an audit's test stays sound:
- The prefix documents are not chosen by the signal: the run supplies them (``Auxiliary``): in an
  audit, documents of a set the claim names or a stated share of the held-out set, drawn by the
  route's seed, recorded by digest and excluded from every test; in an evaluation, labelled
  non-members left out of the evaluated rows. Every scored document gets the same prefix.
- The prefix and the text are tokenized as one string, as a server given the joined prompt
  tokenizes them (the code tokenizes them apart and joins the ids), so a model scored locally and
  through an API gives the same numbers; the text's tokens are those from the one starting where
  it does (a text no token starts at, a token spanning the join, has no score).
- Shots are joined by a blank line (the code joins them with nothing), each cut to ``shot_chars``
  characters; a prefix longer than the model's window keeps its last tokens (the code drops
  whole shots from the front).
- LL(x | P) is taken over the same positions as LL(x) - every token of x after its first - so the
  ratio compares like with like (the code also scores x's first token after the prefix).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

import numpy as np
from pydantic import Field

from verifier.signals.base import NONMEMBER_PREFIX, Auxiliary, ScoredDocument, Signal, View, register
from verifier.targets.base import PROMPT_LOGPROBS
from verifier.targets.token_scores import TokenScores


def prefix_text(documents: tuple[str, ...], shots: int, shot_chars: int) -> str:
    """The first ``shots`` documents, each cut to ``shot_chars`` characters, each ending in a blank line."""
    return "".join(doc[:shot_chars].strip() + "\n\n" for doc in documents[:shots])


def conditional_ratio(conditioned: TokenScores | None, alone: TokenScores) -> float:
    """LL(x | P) / LL(x) over the same positions; NaN when they are not the same positions
    (a server that tokenized x differently after the prefix) or LL(x) is 0."""
    if conditioned is None or conditioned.n_scored != alone.n_scored or alone.n_scored == 0:
        return float("nan")
    ll = float(np.mean(alone.logprob))
    return float(np.mean(conditioned.logprob)) / ll if ll != 0 else float("nan")


@dataclass(frozen=True)
class PrefixedSignal(Signal):
    """A signal reading the target's scores of a text after prefixes of known membership."""

    by_default = False  # needs documents of known membership, which only some runs have
    shots: Annotated[int, Field(ge=1, le=64)] = 5
    shot_chars: Annotated[int, Field(ge=16, le=20_000)] = 600

    def prefix(self, documents: tuple[str, ...]) -> str:
        return prefix_text(documents, self.shots, self.shot_chars)

    def why_not(self, doc: ScoredDocument) -> str:
        return "too few tokens, or the text was tokenized differently after the prefix"


@register
@dataclass(frozen=True)
class ReCaLL(PrefixedSignal):
    name = "recall"
    needs = frozenset({PROMPT_LOGPROBS, NONMEMBER_PREFIX})

    def views(self, text: str, aux: Auxiliary) -> list[View]:
        return [View(text, self.prefix(aux.nonmembers))]

    def score(self, doc: ScoredDocument) -> float:
        return conditional_ratio(doc.views.get(View(doc.text, self.prefix(doc.aux.nonmembers))), doc.scores)
