"""Con-ReCall (Wang et al. 2024, "Con-ReCall: Detecting Pre-training Data in LLMs via Contrastive Decoding").

ReCaLL with two prefixes: one of known non-members, one of known members. A member's
likelihood falls after non-member text and rises after member text, so the contrast
(LL(x | P_non) - gamma * LL(x | P_mem)) / LL(x) is higher for members (as the published
implementation computes it with gamma = 1; the paper tunes gamma).

Known members exist only where the auditor has them - labelled evaluation data, marks the
auditor placed, a testbed - so this signal is not computable in an ordinary audit. The prefixes
come from the run, as for ``recall`` (see its departures, which apply here too).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

import numpy as np
from pydantic import Field

from verifier.signals.base import MEMBER_PREFIX, NONMEMBER_PREFIX, Auxiliary, ScoredDocument, View, register
from verifier.signals.gray_box.recall import PrefixedSignal
from verifier.targets.base import PROMPT_LOGPROBS


@register
@dataclass(frozen=True)
class ConReCaLL(PrefixedSignal):
    name = "con_recall"
    needs = frozenset({PROMPT_LOGPROBS, NONMEMBER_PREFIX, MEMBER_PREFIX})
    gamma: Annotated[float, Field(ge=0, le=10)] = 1.0

    def views(self, text: str, aux: Auxiliary) -> list[View]:
        return [View(text, self.prefix(aux.nonmembers)), View(text, self.prefix(aux.members))]

    def score(self, doc: ScoredDocument) -> float:
        non, mem = (doc.views.get(view) for view in self.views(doc.text, doc.aux))
        alone = doc.scores
        if non is None or mem is None or not non.n_scored == mem.n_scored == alone.n_scored > 0:
            return float("nan")
        ll = float(np.mean(alone.logprob))
        if ll == 0:
            return float("nan")
        return (float(np.mean(non.logprob)) - self.gamma * float(np.mean(mem.logprob))) / ll
