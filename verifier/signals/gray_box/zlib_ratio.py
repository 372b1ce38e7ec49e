"""zlib ratio (Carlini et al. 2021): mean log-prob divided by the zlib-compressed length.

Compression discounts text that is predictable for any model (lists, repetition), so what is
left is the model's own familiarity. As published (Carlini et al.; the Min-K% and Min-K%++ code:
``ll / len(zlib.compress(bytes(text, "utf-8")))``), the compressed length is that of the whole
text given to the model - here after the character cut - even where the token cut scores only
its beginning.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

from verifier.signals.base import ScoredDocument, Signal, register


@register
@dataclass(frozen=True)
class ZlibRatio(Signal):
    name = "zlib"

    def score(self, doc: ScoredDocument) -> float:
        return float(doc.scores.logprob.mean()) / len(zlib.compress(doc.text.encode("utf-8")))
