"""What a corpus index says about the corpus as a whole: the facts an EU AI Act public summary
declares and a corpus can check.

- Section 2.3: the most relevant crawled domain names, the top 10% of domains by size of
  content (5% or 1,000 domains, whichever is fewer, for SMEs), here by bytes of text per domain
  from the documents' URLs.
- Section 1.3: the text size band (under 1B, 1B-10T, over 10T tokens) and the latest date of
  data collection. Tokens depend on a tokenizer the corpus does not fix, so the size is a range:
  at least one token per 8 bytes of compared text, at most two per byte of the text as read; a
  band is confirmed or refuted only when the whole range falls inside or outside it.

Anything ambiguous counts against a confirmation, never for one: domains tied at the cut are not
required (either could be the one listed), a date known only to the year cannot confirm a
declared month in that year, and a date that is not a calendar date (a Unix timestamp) is undated.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from verifier.claims import hostname
from verifier.overlap.index import CorpusIndex

BANDS = {"<1B": (0, 1e9), "1B-10T": (1e9, 1e13), ">10T": (1e13, math.inf)}
_DATE = re.compile(r"^(\d{4})(?:-(0[1-9]|1[0-2])(?:-\d{2}(?:[T ].*)?)?)?$")


@dataclass
class Composition:
    documents: int
    words: int
    text_bytes: int
    tokens_low: int
    tokens_high: int
    domains: list[tuple[str, int]] = field(default_factory=list)  # (domain, bytes of text), largest first
    documents_with_url: int = 0
    urls_without_host: int = 0  # their domain is unknown: the domain list cannot be confirmed
    latest_month: str | None = None  # YYYY-MM of the latest document dated to the month
    latest_year: int | None = None  # the latest year of a document dated to the year only
    dated_documents: int = 0

    def required_domains(self, sme: bool) -> tuple[list[str], list[str], int]:
        """The domains a summary must list - top 10% by size (SME: 5% or 1,000, whichever is
        fewer) - as (certain, tied, slots): the domains certainly in the top share, and the
        domains tied at the cut, of which any ``slots`` complete it."""
        n = len(self.domains)
        k = min(math.ceil(0.05 * n), 1000) if sme else math.ceil(0.10 * n)
        edge = self.domains[k - 1][1]
        certain = [d for d, size in self.domains if size > edge]
        tied = [d for d, size in self.domains if size == edge]
        return certain, tied, k - len(certain)

    def after(self, declared: str) -> str | None:
        """The latest date certainly after the declared YYYY-MM, if any."""
        year = int(declared[:4])
        if self.latest_month is not None and self.latest_month > declared:
            return self.latest_month
        if self.latest_year is not None and self.latest_year > year:
            return str(self.latest_year)
        return None

    def uncertain(self, declared: str) -> bool:
        """Whether some document could be later than the declared YYYY-MM without being known to be."""
        return self.dated_documents < self.documents or (self.latest_year is not None and self.latest_year >= int(declared[:4]))

    def bands(self) -> list[str]:
        """The size bands the token range overlaps (one band: the size band is established)."""
        return [name for name, (lo, hi) in BANDS.items() if self.tokens_low < hi and self.tokens_high >= lo]


def composition(index: CorpusIndex) -> Composition:
    sizes: Counter[str] = Counter()
    with_url = dated = words = no_host = 0
    latest_month: tuple[int, int] | None = None
    latest_year: int | None = None
    for shard in index.shards:
        text = np.asarray(shard.text)
        # A run of joined records (a file's documents in a shard) of n words has n + 1 spaces and one separator.
        words += int(np.count_nonzero(text == 0x20)) - int(np.count_nonzero(text == 0xFF))
        lengths = np.diff(shard.starts) - 1
        raw = bytes(shard.meta)
        for local, line in enumerate(raw.splitlines()):
            meta = json.loads(line)
            if "url" in meta:
                with_url += 1
                if meta.get("domain"):
                    sizes[hostname(meta["domain"])] += int(lengths[local])
                else:
                    no_host += 1
            match = _DATE.match(str(meta.get("date", "")).strip())
            if match:
                dated += 1
                year = int(match.group(1))
                if match.group(2):
                    when = (year, int(match.group(2)))
                    latest_month = when if latest_month is None or when > latest_month else latest_month
                else:
                    latest_year = year if latest_year is None or year > latest_year else latest_year
    compared = index.manifest.text_bytes - 3 * index.manifest.documents  # frame spaces and separators left out
    raw = sum(src.text_bytes for src in index.manifest.sources)
    # Tokens: at least one per 8 bytes of compared text (English runs about 4-5 bytes a token,
    # Chinese about 4), at most two per byte of the text as read (punctuation and markup included).
    return Composition(index.manifest.documents, words, compared, compared // 8, 2 * raw,
                       sorted(sizes.items(), key=lambda kv: (-kv[1], kv[0])), with_url, no_host,
                       None if latest_month is None else f"{latest_month[0]:04d}-{latest_month[1]:02d}", latest_year, dated)

