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
from datetime import UTC, date, datetime
from email.utils import parsedate_to_datetime

from verifier.claims import hostname
from verifier.corpus.index import CorpusIndex

BANDS = {"<1B": (0, 1e9), "1B-10T": (1e9, 1e13), ">10T": (1e13, math.inf)}
Month = tuple[int, int]
_MONTHS = {
    m: i for i, m in enumerate(("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"), 1)
}
_YEAR = re.compile(r"^(\d{4})$")
_YEAR_MONTH = re.compile(r"^(\d{4})[-/.](0?[1-9]|1[0-2])$")
_ISO_DAY = re.compile(r"^(\d{4})[-/.](0?[1-9]|1[0-2])[-/.](\d{1,2})$")
_DAY_FIRST = re.compile(r"^(\d{1,2})\.(\d{1,2})\.(\d{4})$")  # 04.07.2023: day, month, year (European)
_SLASHED = re.compile(r"^(\d{1,2})/(\d{1,2})/(\d{4})$")  # 07/04/2023: month/day or day/month - only the year is sure
_COMPACT = re.compile(
    r"^(\d{4})(0[1-9]|1[0-2])(\d{2})(?:\d{2}(?:\d{2}(?:\d{2})?)?)?$"
)  # 20230704, Wayback 20230704120000
_WORDS = re.compile(
    r"^(?:[a-z]+,?\s+)?(?:(\d{1,2})\s+([a-z]+)\.?|([a-z]+)\.?\s+(\d{1,2})(?:st|nd|rd|th)?,?)\s+(\d{4})$"
)
_DUMP = re.compile(r"^CC-MAIN-(\d{4})-(\d{2})$")  # a Common Crawl dump: year and ISO week


def _month(year: int, month: int) -> tuple[Month, Month]:
    return (year, month), (year, month)


def parse_date(value: str) -> tuple[Month, Month] | None:
    """The (earliest, latest) month a date as crawls write it can mean: ISO dates and timestamps
    (offsets taken to UTC, as WARC dates are), ``2023/07/04``, ``04.07.2023``, ``20230704`` and
    Wayback-style ``20230704120000``, ``July 4, 2023``, HTTP dates, a year alone (January to
    December), ``07/04/2023`` (month or day first: only the year), a Common Crawl dump (the weeks
    its crawl ran). None for anything else: a Unix timestamp or free text is no calendar date."""
    value = value.strip()
    low = value.lower()
    for pattern, year in ((_YEAR, 1), (_SLASHED, 3)):  # only the year is sure
        if match := pattern.match(value):
            return (int(match.group(year)), 1), (int(match.group(year)), 12)
    for pattern, year, month in ((_YEAR_MONTH, 1, 2), (_ISO_DAY, 1, 2), (_COMPACT, 1, 2), (_DAY_FIRST, 3, 2)):
        if match := pattern.match(value):
            return (
                _month(int(match.group(year)), int(match.group(month))) if 1 <= int(match.group(month)) <= 12 else None
            )
    if match := _DUMP.match(value):
        year, week = int(match.group(1)), int(match.group(2))
        try:  # named by a week of its crawl, which runs about two weeks: from two weeks before to that week's end
            first, last = date.fromisocalendar(year, max(week - 2, 1), 1), date.fromisocalendar(year, week, 7)
        except ValueError:
            return None
        return (first.year, first.month), (last.year, last.month)
    if match := _WORDS.match(low):
        name = (match.group(2) or match.group(3))[:3]
        return _month(int(match.group(5)), _MONTHS[name]) if name in _MONTHS else None
    if re.match(r"^[A-Za-z]{3}, \d", value):
        try:
            when = parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        when = when.astimezone(UTC) if when.tzinfo else when
        return _month(when.year, when.month)
    if re.match(r"^\d{4}-\d{2}-\d{2}[T ]\d", value):
        try:
            when = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return None
        when = when.astimezone(UTC) if when.tzinfo else when
        return _month(when.year, when.month)
    return None


@dataclass
class Dates:
    """One kind of date over the corpus: per document with such dates, the earliest and latest
    month its dates can mean (the latest of its fields), and the documents whose fields could not
    all be read (a date field holding a timestamp or free text)."""

    spans: list[tuple[Month, Month]] = field(default_factory=list)
    unreadable: int = 0

    def add(self, values: list[str]) -> None:
        if not values:
            return
        parsed = [parse_date(v) for v in values]
        if any(p is None for p in parsed):
            self.unreadable += 1
        readable = [p for p in parsed if p is not None]
        if readable:
            self.spans.append((max(lo for lo, _ in readable), max(hi for _, hi in readable)))

    def certainly_after(self, declared: Month) -> Month | None:
        """The latest month some document is certainly dated after ``declared`` (None: none is)."""
        later = [lo for lo, _ in self.spans if lo > declared]
        return max(later) if later else None

    def possibly_after(self, declared: Month) -> bool:
        return any(hi > declared for _, hi in self.spans)


def _shown(month: Month | None) -> str | None:
    return None if month is None else f"{month[0]:04d}-{month[1]:02d}"


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
    collected: Dates = field(default_factory=Dates)  # collection dates: they can confirm and contradict
    published: Dates = field(default_factory=Dates)  # publication dates: they can only contradict
    no_url_bytes: int = 0  # text of documents with no URL in any field read: their domains are unknown
    no_url_documents: int = 0
    fields: dict[str, dict[str, int]] = field(default_factory=dict)  # url / collected / published: field -> documents

    def _required_count(self, sme: bool) -> int:
        n = len(self.domains)
        return min(math.ceil(0.05 * n), 1000) if sme else math.ceil(0.10 * n)

    def unknown_could_change_the_cut(self, sme: bool) -> bool:
        """Whether the text of documents with no URL could change which domains must be listed:
        added to the first domain below the cut it could lift that one past the last one above
        it (or, as a domain of its own, enter), and as documents of new domains it could raise
        the number of domains the top share holds."""
        if not self.no_url_documents:
            return False
        k = self._required_count(sme)
        edge = self.domains[k - 1][1]
        below = self.domains[k][1] if k < len(self.domains) else 0
        grown = len(self.domains) + self.no_url_documents
        more = (min(math.ceil(0.05 * grown), 1000) if sme else math.ceil(0.10 * grown)) > k
        return below + self.no_url_bytes >= edge or more

    def required_domains(self, sme: bool) -> tuple[list[str], list[str], int]:
        """The domains a summary must list - top 10% by size (SME: 5% or 1,000, whichever is
        fewer) - as (certain, tied, slots): the domains certainly in the top share, and the
        domains tied at the cut, of which any ``slots`` complete it."""
        k = self._required_count(sme)
        edge = self.domains[k - 1][1]
        certain = [d for d, size in self.domains if size > edge]
        tied = [d for d, size in self.domains if size == edge]
        return certain, tied, k - len(certain)

    @property
    def dated_documents(self) -> int:
        """Documents with a readable collection date."""
        return len(self.collected.spans)

    @property
    def latest_collected(self) -> tuple[str | None, str | None]:
        """(earliest, latest) month the latest collection dates can mean, for the report."""
        spans = self.collected.spans
        return (_shown(max(lo for lo, _ in spans)), _shown(max(hi for _, hi in spans))) if spans else (None, None)

    def after(self, declared: str) -> str | None:
        """A collection or publication date certainly after the declared YYYY-MM, if any."""
        month = (int(declared[:4]), int(declared[5:7]))
        if (later := self.collected.certainly_after(month)) is not None:
            return _shown(later)
        if (later := self.published.certainly_after(month)) is not None:
            return f"{_shown(later)} (a publication date)"
        return None

    def uncertain(self, declared: str) -> bool:
        """Whether some document could have been collected after the declared YYYY-MM without
        being known to be: one without a readable collection date (a publication date does not
        say when it was collected), or one whose date could mean a later month."""
        month = (int(declared[:4]), int(declared[5:7]))
        return (
            len(self.collected.spans) < self.documents
            or self.collected.unreadable > 0
            or self.collected.possibly_after(month)
            or self.published.possibly_after(month)
        )

    def bands(self) -> list[str]:
        """The size bands the token range overlaps (one band: the size band is established)."""
        return [name for name, (lo, hi) in BANDS.items() if self.tokens_low < hi and self.tokens_high >= lo]


def composition(index: CorpusIndex) -> Composition:
    sizes: Counter[str] = Counter()
    with_url = words = no_host = no_url = no_url_docs = 0
    collected, published = Dates(), Dates()
    fields: dict[str, Counter[str]] = {"url": Counter(), "collected": Counter(), "published": Counter()}
    for shard in index.shards:
        lengths = shard.lengths - 1
        raw = bytes(shard.meta)
        for local, line in enumerate(raw.splitlines()):
            meta = json.loads(line)
            for kind, counter in fields.items():
                paths = meta.get(f"{kind}_field", [])
                counter.update(dict.fromkeys([paths] if isinstance(paths, str) else paths, 1))
            if "url" in meta:
                with_url += 1
                if meta.get("domain"):
                    sizes[hostname(meta["domain"])] += int(lengths[local])
                else:
                    no_host += 1
            else:
                no_url += int(lengths[local])
                no_url_docs += 1
            collected.add(meta.get("collected", []))
            published.add(meta.get("published", []))
    words = index.manifest.read_words
    compared = max(0, index.manifest.read_bytes - 2 * index.manifest.documents)  # frame spaces left out
    raw = sum(src.text_bytes for src in index.manifest.sources)
    # Tokens: at least one per 8 bytes of compared text (English runs about 4-5 bytes a token,
    # Chinese about 4), at most two per byte of the text as read (punctuation and markup included).
    return Composition(
        index.manifest.documents,
        words,
        compared,
        compared // 8,
        2 * raw,
        sorted(sizes.items(), key=lambda kv: (-kv[1], kv[0])),
        with_url,
        no_host,
        collected,
        published,
        no_url,
        no_url_docs,
        {k: dict(sorted(v.items())) for k, v in fields.items()},
    )
