"""zlib ratio (Carlini et al. 2021): mean log-prob divided by the zlib-compressed length.

Compression discounts text that is predictable for any model (lists, repetition), so what is
left is the model's own familiarity. The compressed length is taken over the characters the
scored tokens cover, so numerator and denominator describe the same span.
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
        span = doc.text[: doc.target.char_end].encode("utf-8")
        return float(doc.target.logprob.mean()) / len(zlib.compress(span))
