"""Loading document sets (JSONL, CSV, Parquet) with strict, row-precise validation.

Every later number rests on these texts and labels, so bad input is refused loudly: a missing
file or field, an empty text, a label other than 0/1, or bytes that are not UTF-8 raise a
``VerifierError`` naming the file and the row (1-based, as an editor shows it). A ``where``
filter compares values in a normalised text form, so a claim's ``year: 2016`` matches a CSV
cell "2016" as well as a Parquet int or float, and a filter that selects nothing is an error.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from verifier.errors import VerifierError

FORMATS = {".jsonl": "jsonl", ".ndjson": "jsonl", ".csv": "csv", ".parquet": "parquet", ".pq": "parquet"}


@dataclass(frozen=True)
class Documents:
    """Texts with optional 0/1 membership labels (1 = member), in file order."""

    texts: list[str]
    labels: np.ndarray | None
    source: str
    at: list[str] = field(default_factory=list)  # where each text is in its file ("line 3", "row 3")

    def __len__(self) -> int:
        return len(self.texts)


def load_documents(
    path: str | Path,
    text_field: str = "text",
    label_field: str | None = None,
    where: dict[str, Any] | None = None,
    offset: int = 0,
    limit: int | None = None,
) -> Documents:
    """Read a document set; ``label_field=None`` reads unlabelled data.

    ``where`` keeps only rows whose fields equal the given values (e.g. ``{"member": 0}``), then
    ``offset`` and ``limit`` take a slice of those, so a claim can point into one shared file.
    """
    path = Path(path)
    return select_documents(path, _rows(path), text_field, label_field, where, offset, limit)


Rows = list[tuple[str, dict[str, Any]]]  # (where in the file, e.g. "line 3", the row)


def select_documents(
    path: Path,
    rows: Rows,
    text_field: str = "text",
    label_field: str | None = None,
    where: dict[str, Any] | None = None,
    offset: int = 0,
    limit: int | None = None,
) -> Documents:
    """The documents of ``rows`` (read from ``path``, which errors name) that ``where``, ``offset``
    and ``limit`` select, validated row by row (see ``load_documents``)."""
    if where and rows:
        rows = _filter(path, rows, where)
    rows = rows[offset : offset + limit if limit is not None else None]
    if not rows:
        raise VerifierError(f"{path}: no rows" + (f" where {where}" if where else ""))
    texts: list[str] = []
    labels: list[int] = []
    for at, row in rows:
        texts.append(_text(path, at, row, text_field))
        if label_field is not None:
            labels.append(_label(path, at, row, label_field))
    return Documents(
        texts=texts,
        labels=np.asarray(labels, dtype=np.int8) if label_field is not None else None,
        source=str(path),
        at=[at for at, _ in rows],
    )


def _rows(path: Path) -> Rows:
    if not path.is_file():
        raise VerifierError(f"{path}: file not found")
    _format(path)
    return rows_of(path, path.read_bytes())


def _format(path: Path) -> str:
    fmt = FORMATS.get(path.suffix.lower())
    if fmt is None:
        raise VerifierError(f"{path}: unknown format {path.suffix!r}; use .jsonl, .csv or .parquet")
    return fmt


def rows_of(path: Path, raw: bytes) -> Rows:
    """The rows of a document file's bytes ``raw`` (its format from ``path``'s suffix): a caller that
    digests the file parses the very bytes it digested."""
    fmt = _format(path)
    if fmt == "jsonl":
        return list(_iter_jsonl(path, io.BytesIO(raw)))
    if fmt == "csv":
        return _read_csv(path, raw)
    return list(_iter_parquet(path, source=io.BytesIO(raw)))


def load_identified(path: str | Path, text_field: str = "text", id_field: str = "id") -> list[tuple[str, str]]:
    """(id, text) of every row; a row without ``id_field`` is named by its line or row number.
    Ids must be distinct (they name documents in a registration)."""
    path = Path(path)
    rows = _rows(path)
    if not rows:
        raise VerifierError(f"{path}: no rows")
    found = [
        (str(row[id_field]) if row.get(id_field) not in (None, "") else f"row-{i}", _text(path, where, row, text_field))
        for i, (where, row) in enumerate(rows)
    ]
    ids = [doc_id for doc_id, _ in found]
    if len(set(ids)) != len(ids):
        repeated = next(doc_id for doc_id in ids if ids.count(doc_id) > 1)
        raise VerifierError(f"{path}: {id_field} {repeated!r} appears more than once")
    return found


def _filter(
    path: Path, rows: list[tuple[str, dict[str, Any]]], where: dict[str, Any]
) -> list[tuple[str, dict[str, Any]]]:
    """The rows matching every ``where`` pair; a key that is no column, or a value no row holds, is refused by name."""
    columns = {key for _, row in rows for key in row}
    wanted = {key: normalised_value(value) for key, value in where.items()}
    for key, value in where.items():
        if key not in columns:
            raise VerifierError(f"{path}: where key {key!r} is not a column (columns: {', '.join(sorted(columns))})")
        if not any(key in row and normalised_value(row[key]) == wanted[key] for _, row in rows):
            raise VerifierError(f"{path}: no row has {key!r} equal to {value!r}")
    kept = [
        (at, row)
        for at, row in rows
        if all(key in row and normalised_value(row[key]) == value for key, value in wanted.items())
    ]
    if not kept:
        raise VerifierError(f"{path}: no row matches all of where {where}")
    return kept


def normalised_value(value: Any) -> Any:
    """One form for equal values whatever their type: CSV gives "2016", JSON 2016, Parquet 2016.0."""
    if value is None:
        return ""  # a missing CSV cell is empty text
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() else repr(value)
    if isinstance(value, str):
        text = value.strip()
        if text.lower() in ("true", "false"):
            return text.lower()
        try:
            number = float(text)
        except ValueError:
            return text
        if not math.isfinite(number):
            return text
        return str(int(text)) if text.lstrip("+-").isdigit() else normalised_value(number)  # int(): exact past 2**53
    return value


def _decode(path: Path, raw: bytes) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise VerifierError(f"{path} line {line}: bytes that are not UTF-8 (at byte {exc.start})") from None


def _iter_jsonl(path: Path, source: BinaryIO | None = None) -> Iterator[tuple[str, dict[str, Any]]]:
    """Rows one line at a time (of ``source``, else of the file), so a file of millions of documents streams."""
    offset = 0
    with source or path.open("rb") as handle:
        # Lines end at "\n" only: U+2028 and U+0085 may stand unescaped inside a JSON string.
        for number, raw in enumerate(handle, start=1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise VerifierError(
                    f"{path} line {number}: bytes that are not UTF-8 (at byte {offset + exc.start})"
                ) from None
            offset += len(raw)
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise VerifierError(f"{path} line {number}: not valid JSON ({exc.msg})") from None
            except RecursionError:
                raise VerifierError(f"{path} line {number}: JSON nested too deeply") from None
            except ValueError:  # "Exceeds the limit (4300 digits) for integer string conversion"
                raise VerifierError(f"{path} line {number}: holds a number too long to read") from None
            except ValueError as exc:  # noqa: B025 - e.g. an integer past Python's digit limit
                raise VerifierError(f"{path} line {number}: not valid JSON ({str(exc)[:200]})") from None
            if not isinstance(row, dict):
                raise VerifierError(f"{path} line {number}: expected a JSON object, got {type(row).__name__}")
            yield f"line {number}", row


def _read_csv(path: Path, raw: bytes | None = None) -> Rows:
    raw = path.read_bytes() if raw is None else raw
    reader = csv.DictReader(io.StringIO(_decode(path, raw), newline=""))
    # Data row N is reported as "row N"; the header is row 0. Fields may be as long as a document
    # is (csv's own limit, 128 KiB, is below some), up to the file's size.
    limit = csv.field_size_limit()
    csv.field_size_limit(max(limit, len(raw) + 1))
    try:
        return [(f"row {number}", row) for number, row in enumerate(reader, start=1)]
    except csv.Error as exc:
        raise VerifierError(f"{path} row {reader.line_num}: not valid CSV ({exc})") from None
    finally:
        csv.field_size_limit(limit)


def _iter_parquet(
    path: Path, columns: list[str] | None = None, source: BinaryIO | None = None
) -> Iterator[tuple[str, dict[str, Any]]]:
    """Rows a record batch at a time (of ``source``, else of the file; ``columns``: only those, where the file has
    them)."""
    try:
        handle = pq.ParquetFile(source or path)
        wanted = [c for c in columns if c in handle.schema_arrow.names] if columns is not None else None
        number = 0
        for batch in handle.iter_batches(batch_size=4096, columns=wanted):
            for row in batch.to_pylist():
                number += 1
                yield f"row {number}", row
    except (pa.ArrowInvalid, OSError) as exc:
        raise VerifierError(f"{path}: not a readable Parquet file ({exc})") from None


def iter_documents(
    path: str | Path, text_field: str = "text", label_field: str | None = None, rows: int = 8192
) -> Iterator[Documents]:
    """Read a JSONL or Parquet document set ``rows`` documents at a time, validated as ``load_documents``
    does, for sets too large to hold in memory (CSV is read whole)."""
    path = Path(path)
    if not path.is_file():
        raise VerifierError(f"{path}: file not found")
    fmt = _format(path)
    fields = [text_field] + ([label_field] if label_field is not None else [])
    stream = {"jsonl": _iter_jsonl, "csv": _read_csv, "parquet": lambda p: _iter_parquet(p, fields)}[fmt](path)
    texts: list[str] = []
    labels: list[int] = []
    seen = False
    for where, row in stream:
        seen = True
        texts.append(_text(path, where, row, text_field))
        if label_field is not None:
            labels.append(_label(path, where, row, label_field))
        if len(texts) == rows:
            yield Documents(texts, np.asarray(labels, dtype=np.int8) if label_field is not None else None, str(path))
            texts, labels = [], []
    if texts:
        yield Documents(texts, np.asarray(labels, dtype=np.int8) if label_field is not None else None, str(path))
    elif not seen:
        raise VerifierError(f"{path}: no rows")


def _text(path: Path, where: str, row: dict[str, Any], field: str) -> str:
    if field not in row:
        raise VerifierError(f"{path} {where}: missing text field {field!r}")
    value = row[field]
    if isinstance(value, bytes):
        try:
            value = value.decode("utf-8")
        except UnicodeDecodeError:
            raise VerifierError(f"{path} {where}: field {field!r} holds bytes that are not UTF-8") from None
    if not isinstance(value, str):
        raise VerifierError(f"{path} {where}: field {field!r} is {type(value).__name__}, expected text")
    if not value.strip():
        raise VerifierError(f"{path} {where}: empty text in field {field!r}")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:  # a lone surrogate, e.g. from a "\ud800" JSON escape
        raise VerifierError(
            f"{path} {where}: field {field!r} holds a lone surrogate (U+{ord(value[exc.start]):04X}), not text"
        ) from None
    return value


def _label(path: Path, where: str, row: dict[str, Any], field: str) -> int:
    if field not in row:
        raise VerifierError(f"{path} {where}: missing label field {field!r}")
    value = row[field]
    # CSV gives strings; JSON may give bools or 1.0. Accept exactly the values that mean 0 or 1.
    if isinstance(value, str):
        value = value.strip()
    if value in (0, 1) or value in ("0", "1"):
        return int(value)
    raise VerifierError(f"{path} {where}: label field {field!r} is {value!r}, expected 0 or 1")
