"""The testbed's text pool: real Wikipedia event texts from two periods, each with its period.

Sources (copied into ``verifier/examples/data`` with their PROVENANCE.md):
- WikiMIA: one text per article, the longest split holding it (128, else 64, else 32 words);
  label 1 = events before 2017, label 0 = events from 2023 on.
- WikiMIA-24 (64 words): label 1 = events of 2015-2016, label 0 = events of 2024; rows flagged
  as duplicates are skipped, and so is any text whose first 20 words open a WikiMIA text.

The period is a property of the text, *not* of its membership: the testbed assigns membership by
a seeded draw independent of the period, so same-period held-out sets exist for both periods,
and a pre-2017-vs-post-2023 comparison of texts the model never saw is a pure date shift.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from verifier.boundary.resources import resource

DATA = resource("examples", "data")
OLD, NEW = "pre-2017", "post-2023"


@dataclass(frozen=True)
class PoolText:
    id: str
    text: str
    period: str  # OLD or NEW
    year: int  # latest year of an OLD text's period (2016); earliest year of a NEW text's (2023/2024)
    source: str


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _prefix(text: str, words: int) -> str:
    return " ".join(text.split()[:words])


def bundled_pool(data: Path = DATA) -> list[PoolText]:
    """The default pool (about 2,000 texts), in a fixed order."""
    wiki = data / "wikimia"
    if not wiki.is_dir():
        raise FileNotFoundError(f"{wiki}: the bundled WikiMIA data is missing; run from a source checkout")
    longer = {}
    for split in ("length64", "length128"):  # later splits overwrite: longest wins
        for row in _rows(wiki / f"{split}.jsonl"):
            longer[_prefix(row["text"], 32)] = (split, row)
    pool = []
    for row in _rows(wiki / "length32.jsonl"):
        split, best = longer.get(row["text"], ("length32", row))
        old = best["label"] == 1
        pool.append(
            PoolText(
                f"wikimia-{split}-{best['idx']}",
                best["text"],
                OLD if old else NEW,
                2016 if old else 2023,
                f"WikiMIA {split} row {best['idx']}",
            )
        )
    seen = {_prefix(p.text, 20) for p in pool}
    for row in _rows(data / "wikimia24" / "length64.jsonl"):
        key = _prefix(row["text"], 20)
        if row["dup_of_earlier_row"] or key in seen:
            continue
        seen.add(key)
        old = row["label"] == 1
        pool.append(
            PoolText(
                f"wikimia24-length64-{row['idx']}",
                row["text"],
                OLD if old else NEW,
                2016 if old else 2024,
                f"WikiMIA-24 length64 row {row['idx']}",
            )
        )
    return pool


def books_pool(data: Path = DATA) -> list[PoolText]:
    """A heterogeneous pool: the 500 PG-19 book openings of the demo corpus (many authors, genres and
    front-matter styles), all of one period - for measuring how the verdict rules fare on text far
    less uniform than Wikipedia event summaries."""
    path = data / "corpus" / "demo-v1" / "pg19-openings.jsonl"
    return [
        PoolText(f"pg19-{i}", row["text"], OLD, 2016, f"PG-19 opening {row['id']}") for i, row in enumerate(_rows(path))
    ]


def background_texts(data: Path = DATA) -> list[tuple[str, str]]:
    """Real text of other domains for the training stream of a pretraining-like testbed, as (id, text) in a fixed
    order: 1,600 arXiv abstracts (``background/``) and the 500 PG-19 book openings of the demo corpus. Never scored,
    never a member or non-member: it only dilutes the members, as a pretraining corpus does."""
    rows = _rows(data / "background" / "arxiv-abstracts.jsonl")
    books = _rows(data / "corpus" / "demo-v1" / "pg19-openings.jsonl")
    return [(row["id"], row["text"]) for row in rows] + [(f"pg19-{row['id']}", row["text"]) for row in books]
