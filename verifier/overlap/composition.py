"""What a corpus index says about the corpus as a whole: the facts an EU AI Act public summary
declares and a corpus can check.

- Section 2.3: the most relevant crawled domain names, the top 10% of domains by size of
  content (5% or 1,000 domains, whichever is fewer, for SMEs), here by bytes of text per domain
  from the documents' URLs.
- Section 1.3: the text size band (under 1B, 1B-10T, over 10T tokens) and the latest date of
  data collection. Tokens depend on a tokenizer the corpus does not fix, so the size is a range:
  at least one token per word, at most two per byte of compared text; a band is confirmed or
  refuted only when the whole range falls inside or outside it.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from verifier.overlap.index import CorpusIndex

BANDS = {"<1B": (0, 1e9), "1B-10T": (1e9, 1e13), ">10T": (1e13, math.inf)}
_DATE = re.compile(r"^(\d{4})(?:-(\d{2}))?")


@dataclass
class Composition:
    documents: int
    words: int
    text_bytes: int
    tokens_low: int
    tokens_high: int
    domains: list[tuple[str, int]] = field(default_factory=list)  # (domain, bytes of text), largest first
    documents_with_url: int = 0
    latest: str | None = None  # YYYY-MM of the latest dated document
    dated_documents: int = 0

    def required_domains(self, sme: bool) -> list[str]:
        """The domains a summary must list: top 10% by size (SME: 5% or 1,000, whichever is fewer)."""
        n = len(self.domains)
        k = min(math.ceil(0.05 * n), 1000) if sme else math.ceil(0.10 * n)
        return [d for d, _ in self.domains[:k]]

    def bands(self) -> list[str]:
        """The size bands the token range overlaps (one band: the size band is established)."""
        return [name for name, (lo, hi) in BANDS.items() if self.tokens_low < hi and self.tokens_high >= lo]


def composition(index: CorpusIndex) -> Composition:
    sizes: Counter[str] = Counter()
    with_url = dated = words = 0
    latest: tuple[int, int] | None = None
    for shard in index.shards:
        text = np.asarray(shard.text)
        words += int(np.count_nonzero(text == 0x20)) - shard.entry.documents  # a framed document of n words has n + 1 spaces
        lengths = np.diff(shard.starts) - 1
        raw = bytes(shard.meta)
        for local, line in enumerate(raw.splitlines()):
            meta = json.loads(line)
            if "domain" in meta:
                with_url += 1
                sizes[meta["domain"].lower()] += int(lengths[local])
            match = _DATE.match(str(meta.get("date", "")))
            if match:
                dated += 1
                # a year alone is read as its January: a date is only ever taken as late as it must be
                when = (int(match.group(1)), int(match.group(2) or 1))
                latest = when if latest is None or when > latest else latest
    text_bytes = index.manifest.text_bytes - 3 * index.manifest.documents  # frame spaces and separators
    return Composition(index.manifest.documents, words, text_bytes, words, 2 * text_bytes,
                       sorted(sizes.items(), key=lambda kv: (-kv[1], kv[0])), with_url,
                       None if latest is None else f"{latest[0]:04d}-{latest[1]:02d}", dated)
