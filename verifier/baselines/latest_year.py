"""Blind latest-year baseline: the most recent four-digit year a text mentions.

Post-hoc benchmarks take members from before a cutoff and non-members from after it, so the
date a text talks about predicts its label with no model at all. Members are assumed to be the
older set, so the score is the negated year (higher = older = more member-like). Texts that
mention no year get the median of the years found, a neutral rank.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

YEAR = re.compile(r"(?<!\d)(1[5-9]\d\d|20\d\d)(?!\d)")


def latest_year(text: str) -> int | None:
    years = [int(match) for match in YEAR.findall(text)]
    return max(years) if years else None


def latest_year_scores(texts: Sequence[str]) -> np.ndarray:
    years = np.array([latest_year(text) or np.nan for text in texts], dtype=np.float64)
    fill = np.nanmedian(years) if np.isfinite(years).any() else 0.0
    return -np.where(np.isfinite(years), years, fill)
