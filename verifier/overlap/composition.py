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
Only collection dates (a crawl's fetch date, WARC-Date, a Common Crawl dump) can confirm a
latest collection date; a publication date can contradict one (nothing is collected before it is
published) but never confirm it. The fields read for URLs and dates are counted in the findings.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from dataclasses import dataclass, field
from datetime import date
from email.utils import parsedate_to_datetime

import numpy as np

from verifier.claims import hostname
from verifier.overlap.index import CorpusIndex

BANDS = {"<1B": (0, 1e9), "1B-10T": (1e9, 1e13), ">10T": (1e13, math.inf)}
_DATE = re.compile(r"^(\d{4})(?:-(0[1-9]|1[0-2])(?:-\d{2}(?:[T ].*)?)?)?$")
_DUMP = re.compile(r"^CC-MAIN-(\d{4})-(\d{2})$")  # a Common Crawl dump: year and ISO week


def parse_date(value: str) -> tuple[int, int | None] | None:
    """(year, month or None) of a calendar date as crawls write them (ISO, HTTP dates, Common
    Crawl dump names); None for anything else (timestamps, free text)."""
    value = value.strip()
    if match := _DATE.match(value):
        return int(match.group(1)), int(match.group(2)) if match.group(2) else None
    if match := _DUMP.match(value):
        try:
            return int(match.group(1)), date.fromisocalendar(int(match.group(1)), int(match.group(2)), 7).month
        except ValueError:
            return None
    if re.match(r"^[A-Z][a-z]{2}, \d", value):
        try:
            when = parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        return when.year, when.month
    return None


@dataclass
class Latest:
    """The latest of a kind of date over the corpus: month-precise and year-only dates apart."""

    month: tuple[int, int] | None = None
    year: int | None = None
    dated: int = 0

    def add(self, when: tuple[int, int | None] | None) -> None:
        if when is None:
            return
        self.dated += 1
        year, month = when
        if month is not None:
            self.month = (year, month) if self.month is None or (year, month) > self.month else self.month
        else:
            self.year = year if self.year is None or year > self.year else self.year

    def after(self, year: int, month: int) -> str | None:
        if self.month is not None and self.month > (year, month):
            return f"{self.month[0]:04d}-{self.month[1]:02d}"
        if self.year is not None and self.year > year:
            return str(self.year)
        return None


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
    latest_month: str | None = None  # YYYY-MM of the latest document whose collection date is known to the month
    latest_year: int | None = None  # the latest collection year of a document dated to the year only
    dated_documents: int = 0  # documents with a collection date
    no_url_bytes: int = 0  # text of documents with no URL in any field read: their domains are unknown
    published: Latest = field(default_factory=Latest)  # publication dates: they can only contradict
    fields: dict[str, dict[str, int]] = field(default_factory=dict)  # url / collected / published: field -> documents

    def _required_count(self, sme: bool) -> int:
        n = len(self.domains)
        return min(math.ceil(0.05 * n), 1000) if sme else math.ceil(0.10 * n)

    def cut_size(self, sme: bool) -> int:
        """Bytes of text of the smallest domain a summary must list."""
        return self.domains[self._required_count(sme) - 1][1]

    def required_domains(self, sme: bool) -> tuple[list[str], list[str], int]:
        """The domains a summary must list - top 10% by size (SME: 5% or 1,000, whichever is
        fewer) - as (certain, tied, slots): the domains certainly in the top share, and the
        domains tied at the cut, of which any ``slots`` complete it."""
        k = self._required_count(sme)
        edge = self.domains[k - 1][1]
        certain = [d for d, size in self.domains if size > edge]
        tied = [d for d, size in self.domains if size == edge]
        return certain, tied, k - len(certain)

    def after(self, declared: str) -> str | None:
        """The latest collection or publication date certainly after the declared YYYY-MM, if any."""
        year, month = int(declared[:4]), int(declared[5:7])
        if self.latest_month is not None and self.latest_month > declared:
            return self.latest_month
        if self.latest_year is not None and self.latest_year > year:
            return str(self.latest_year)
        later = self.published.after(year, month)
        return None if later is None else f"{later} (a publication date)"

    def uncertain(self, declared: str) -> bool:
        """Whether some document could have been collected after the declared YYYY-MM without
        being known to be: one without a collection date (a publication date does not say when
        it was collected), or one collected in the declared year with no month."""
        return self.dated_documents < self.documents or (self.latest_year is not None and self.latest_year >= int(declared[:4]))

    def bands(self) -> list[str]:
        """The size bands the token range overlaps (one band: the size band is established)."""
        return [name for name, (lo, hi) in BANDS.items() if self.tokens_low < hi and self.tokens_high >= lo]


def composition(index: CorpusIndex) -> Composition:
    sizes: Counter[str] = Counter()
    with_url = words = no_host = no_url = 0
    collected, published = Latest(), Latest()
    fields: dict[str, Counter[str]] = {"url": Counter(), "collected": Counter(), "published": Counter()}
    for shard in index.shards:
        text = np.asarray(shard.text)
        # A run of joined records (a file's documents in a shard) of n words has n + 1 spaces and one separator.
        words += int(np.count_nonzero(text == 0x20)) - int(np.count_nonzero(text == 0xFF))
        lengths = np.diff(shard.starts) - 1
        raw = bytes(shard.meta)
        for local, line in enumerate(raw.splitlines()):
            meta = json.loads(line)
            for kind, counter in fields.items():
                if f"{kind}_field" in meta:
                    counter[meta[f"{kind}_field"]] += 1
            if "url" in meta:
                with_url += 1
                if meta.get("domain"):
                    sizes[hostname(meta["domain"])] += int(lengths[local])
                else:
                    no_host += 1
            else:
                no_url += int(lengths[local])
            collected.add(parse_date(str(meta.get("collected", ""))))
            published.add(parse_date(str(meta.get("published", ""))))
    compared = index.manifest.text_bytes - 3 * index.manifest.documents  # frame spaces and separators left out
    raw = sum(src.text_bytes for src in index.manifest.sources)
    # Tokens: at least one per 8 bytes of compared text (English runs about 4-5 bytes a token,
    # Chinese about 4), at most two per byte of the text as read (punctuation and markup included).
    return Composition(index.manifest.documents, words, compared, compared // 8, 2 * raw,
                       sorted(sizes.items(), key=lambda kv: (-kv[1], kv[0])), with_url, no_host,
                       None if collected.month is None else f"{collected.month[0]:04d}-{collected.month[1]:02d}", collected.year,
                       collected.dated, no_url, published, {k: dict(sorted(v.items())) for k, v in fields.items()})
