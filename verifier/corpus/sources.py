"""Reading corpus files as documents, the way corpora ship.

JSONL (plain, ``.gz`` or ``.zst``), Parquet, and plain-text files (one document each), given as
files or folders. Every problem names the file: an empty, binary or non-UTF-8 input stops the
build rather than being skipped, since an index that silently lacks part of the declared corpus
would turn "absent" into a false finding. Only file names (relative to a folder given) are
recorded, never where the user keeps them.
"""

from __future__ import annotations

import gzip
import io
import json
import re
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from verifier.boundary.files import excluded
from verifier.claims import hostname
from verifier.errors import VerifierError

JSONL_SUFFIXES = (".jsonl", ".ndjson", ".jsonl.gz", ".ndjson.gz", ".jsonl.zst", ".ndjson.zst", ".json.gz", ".json.zst")
PARQUET_SUFFIXES = (".parquet",)
META_FIELDS = {"id": ("id", "doc_id", "document_id"), "source": ("source", "dataset")}
# Where real crawls keep a record's URL and dates, top level or nested (``metadata.url``,
# ``warc_headers.warc-target-uri``), compared lower-case with "-" read as "_". Collection dates
# (when the page was fetched) are kept apart from publication dates: a publication date after a
# declared collection date contradicts it, but only a collection date can confirm it. Processing
# dates ("added" to a dataset, "processed") are neither and are not read.
URL_KEYS = ("url", "uri", "link", "warc_target_uri", "target_uri", "source_url", "page_url")
COLLECTED_KEYS = (
    "crawl_date",
    "crawled",
    "crawled_at",
    "crawl_time",
    "crawl_timestamp",
    "fetch_time",
    "fetch_date",
    "fetched",
    "fetched_at",
    "retrieved",
    "retrieved_at",
    "retrieval_date",
    "date_download",
    "downloaded",
    "downloaded_at",
    "warc_date",
    "collected",
    "collected_at",
    "collection_date",
    "access_date",
    "accessed",
    "dump",
)
PUBLISHED_KEYS = (
    "date",
    "published",
    "published_at",
    "publication_date",
    "date_published",
    "date_publish",
    "created",
    "created_at",
    "year",
    "timestamp",
    "last_modified",
    "date_modified",
    "modified",
)
NESTED_DEPTH = 3


@dataclass(frozen=True)
class ReadLimits:
    """Bounds on what one corpus file may cost to read, stated and configurable (``verifier
    index build --max-document-mb --max-expansion``). Corpus files are other parties' bytes: a
    2 MB gzip can hold gigabytes, and one line can be larger than memory. A file past a bound
    stops the build with one line naming it, as every other bad input does; nothing is skipped."""

    max_document_bytes: int = 32 << 20  # one record's line, or one plain-text file (a long book is a few MB)
    max_expansion: int = 100  # decompressed bytes per compressed byte (text compresses 3-10x; 100x is a bomb)
    min_decompressed_bytes: int = 64 << 20  # the expansion bound never refuses less than this from a small file

    def __post_init__(self) -> None:
        if self.max_document_bytes < 1 << 10 or self.max_expansion < 2 or self.min_decompressed_bytes < 0:
            raise VerifierError("read limits: a document of at least 1 KiB and an expansion of at least 2 are needed")

    def decompressed_bound(self, compressed: int) -> int:
        return max(self.min_decompressed_bytes, self.max_expansion * compressed)


class _Bounded(io.RawIOBase):
    """A decompressed stream that stops with one line once it has given ``limit`` bytes."""

    def __init__(self, stream: io.BufferedIOBase, limit: int, name: str) -> None:
        self.stream, self.limit, self.name, self.given = stream, limit, name, 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:  # noqa: ANN001 - a writable buffer
        data = self.stream.read(len(buffer))
        self.given += len(data)
        if self.given > self.limit:
            raise VerifierError(
                f"{self.name}: decompresses to more than {self.limit:,} bytes (a compression bomb? "
                "raise --max-expansion if the file is real)"
            )
        buffer[: len(data)] = data
        return len(data)

    def close(self) -> None:
        self.stream.close()
        super().close()


@dataclass(frozen=True)
class Source:
    """One input file: the name recorded in the index, and where it is read from."""

    name: str
    path: Path


@dataclass
class SourceStats:
    name: str
    sha256: str = ""
    bytes: int = 0
    documents: int = 0
    empty_documents: int = field(default=0)
    text_bytes: int = 0  # UTF-8 bytes of the documents' text as read (before the compared form)
    short_records: int = 0  # documents of fewer than build.SHORT_RECORD_WORDS words
    short_record_bytes: int = 0  # their text's bytes
    not_compared: dict[str, int] = field(default_factory=dict)  # bytes no reading made comparable text, by kind


@dataclass(frozen=True)
class Document:
    text: str
    meta: dict[str, str]
    fields: str = ""  # the record's other text (every other string field, at any depth): read beside its text


def other_text(record: dict[str, Any], text_field: str) -> str:
    """Every string a record holds besides its text field, at any depth, one a line (bytes that
    decode as UTF-8 too): a reader that kept only the text field must not make the others
    invisible."""
    found: list[str] = []
    stack: list[Any] = [v for k, v in record.items() if k != text_field]
    while stack:
        item = stack.pop()
        if isinstance(item, bytes):
            item = item.decode("utf-8", errors="replace")
        if isinstance(item, str):
            if item.strip():
                found.append(item)
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return "\n".join(reversed(found))


def list_sources(paths: list[Path], follow_links: bool = True, exclude: tuple[str, ...] = ()) -> list[Source]:
    """Files to read, in a stable order: each file given, and every file under each folder given
    (sorted), dot-files and dot-folders included: a folder a developer publishes holds what the
    audit reads, nothing besides. ``exclude``: glob patterns the auditor chose (matched against a
    file's path inside its folder and against each part of it, ``.git`` or ``*.png``), recorded
    in the index. Refuses a missing path, a folder with no files, and a link anywhere in a folder
    (one could reach any file of the machine: a corpus folder is someone else's); with
    ``follow_links`` off (corpus evidence of a claim), a link given by name too."""
    sources: list[Source] = []
    for path in paths:
        if path.is_dir():
            entries = sorted(p for p in path.rglob("*") if not excluded(p.relative_to(path).as_posix(), exclude))
            if link := next((p for p in entries if p.is_symlink()), None):
                raise VerifierError(
                    f"{path.name}/{link.relative_to(path).as_posix()}: a link; corpus evidence must be plain files"
                )
            if odd := next((p for p in entries if not p.is_file() and not p.is_dir()), None):
                raise VerifierError(
                    f"{path.name}/{odd.relative_to(path).as_posix()}: not a plain file (a device, socket or pipe)"
                )
            files = [p for p in entries if p.is_file()]
            if not files:
                raise VerifierError(f"{path.name}: folder holds no files")
            sources += [Source(f"{path.name}/{p.relative_to(path).as_posix()}", p) for p in files]
        elif path.exists() and not path.is_file():
            raise VerifierError(f"{path.name}: not a plain file (a device, socket or pipe)")
        elif path.is_file():
            if not follow_links and path.is_symlink():
                raise VerifierError(f"{path.name}: a link; corpus evidence must be plain files")
            sources.append(Source(path.name, path))
        else:
            raise VerifierError(f"{path}: no such file or folder")
    names = [s.name for s in sources]
    if len(set(names)) != len(names):
        dup = next(n for n in names if names.count(n) > 1)
        raise VerifierError(f"{dup}: given twice (each corpus file may appear once)")
    return sources


def read_documents(
    source: Source, stats: SourceStats, text_field: str = "text", limits: ReadLimits = ReadLimits()
) -> Iterator[Document]:
    """Documents of one file; ``stats`` counts them as they go."""
    name = source.name.lower()
    if name.endswith(JSONL_SUFFIXES):
        yield from _jsonl(source, stats, text_field, limits)
    elif name.endswith(PARQUET_SUFFIXES):
        yield from _parquet(source, stats, text_field, limits)
    else:
        yield from _plain(source, stats, limits)
    if stats.documents == 0:
        raise VerifierError(f"{source.name}: empty (no document with text)")


def _text(source: Source, value: Any, where: str) -> str:
    if not isinstance(value, str):
        raise VerifierError(f"{source.name}: {where}: text is {type(value).__name__}, not a string")
    if "\x00" in value:
        raise VerifierError(f"{source.name}: {where}: holds NUL characters (binary data, not text)")
    return value


def _meta(record: dict[str, Any], fallback_id: str) -> dict[str, str]:
    meta: dict[str, str] = {}
    for key, names in META_FIELDS.items():
        for candidate in names:
            value = record.get(candidate)
            if _scalar(value):
                meta[key] = str(value)[:300]
                break
    meta.setdefault("id", fallback_id)
    if found := _nested(record, URL_KEYS):
        meta["url"], meta["url_field"] = found[0]
    for kind, keys in (("collected", COLLECTED_KEYS), ("published", PUBLISHED_KEYS)):
        if found := _nested(record, keys):  # every date field a record has: one unreadable or later one counts
            meta[kind] = [value for value, _ in found]
            meta[f"{kind}_field"] = [path for _, path in found]
    if "url" in meta:
        meta["domain"] = url_host(meta["url"])
    return meta


def _scalar(value: Any) -> bool:
    return isinstance(value, (str, int, float)) and not isinstance(value, bool) and bool(str(value).strip())


def _nested(record: dict[str, Any], keys: tuple[str, ...], most: int = 8) -> list[tuple[str, str]]:
    """Values of ``keys`` (compared lower-case, "-" as "_"), top level first, then nested objects
    breadth-first (up to three levels), at most ``most``: (value, the field's dotted path). A list
    holds a value only when every item is one (a list of dates is read as its dates)."""
    found: list[tuple[str, str]] = []
    level: list[tuple[str, dict[str, Any]]] = [("", record)]
    for _ in range(NESTED_DEPTH):
        below: list[tuple[str, dict[str, Any]]] = []
        for prefix, obj in level:
            named = {str(k).lower().replace("-", "_"): k for k in obj}
            for key in keys:
                if key not in named:
                    continue
                value = obj[named[key]]
                values = value if isinstance(value, list) else [value]
                if values and all(_scalar(v) for v in values):
                    found += [(str(v)[:300], prefix + str(named[key])) for v in values]
                elif value is not None:
                    found.append(("", prefix + str(named[key])))  # present but not a value: unreadable, never ignored
            below += [(f"{prefix}{k}.", v) for k, v in obj.items() if isinstance(v, dict)]
        level = below
    return found[:most]


def url_host(url: str) -> str:
    """The host a browser would contact for ``url`` ("" when there is none), parsed as the WHATWG
    URL standard says (ada-url) and put in ``claims.hostname``'s form: a missing scheme is read as
    a web address, backslashes as the path separators browsers take them for (so
    ``https://hidden.com\\@declared.com/`` is hidden.com, not declared.com), percent-encoding,
    IDNA and IPv4 in decimal, hex or octal read as the address they name."""
    import ada_url

    url = url.strip()
    if not url:
        return ""
    if not re.match(r"[A-Za-z][A-Za-z0-9+.-]*:[/\\]{2}", url):
        url = "http://" + url.lstrip("/\\")
    try:
        host = ada_url.URL(url).hostname
    except ValueError:
        return ""
    return hostname(host) if host else ""


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    keys = [k for k, _ in pairs]
    if len(set(keys)) != len(keys):
        raise KeyError(next(k for k in keys if keys.count(k) > 1))
    return dict(pairs)


def _open_text(source: Source, limits: ReadLimits) -> io.TextIOBase:
    name = source.name.lower()
    raw = open(source.path, "rb")
    if name.endswith((".gz", ".zst")):
        if name.endswith(".gz"):
            inner: io.BufferedIOBase = gzip.GzipFile(fileobj=raw)
        else:
            import zstandard

            inner = zstandard.ZstdDecompressor().stream_reader(raw, closefd=True)
        bound = limits.decompressed_bound(source.path.stat().st_size)
        stream: io.BufferedIOBase = io.BufferedReader(_Bounded(inner, bound, source.name), 1 << 16)
    else:
        stream = raw
    return io.TextIOWrapper(stream, encoding="utf-8", errors="strict", newline="\n")


def _lines(handle: io.TextIOBase, source: Source, limits: ReadLimits) -> Iterator[tuple[int, str]]:
    """Numbered lines, none longer than the limit (read in bounded pieces: a 2 GB line is refused
    after ``max_document_bytes`` characters, not after it has filled memory)."""
    line_no = 0
    while line := handle.readline(limits.max_document_bytes + 1):
        line_no += 1
        if len(line) > limits.max_document_bytes:
            raise VerifierError(
                f"{source.name}: line {line_no}: longer than {limits.max_document_bytes:,} characters "
                "(raise --max-document-mb if the record is real)"
            )
        yield line_no, line


def _jsonl(source: Source, stats: SourceStats, text_field: str, limits: ReadLimits) -> Iterator[Document]:
    line_no = 0
    try:
        with _open_text(source, limits) as handle:
            for line_no, line in _lines(handle, source, limits):
                if not line.strip():
                    continue
                try:
                    record = json.loads(line, object_pairs_hook=_unique_keys)
                except (json.JSONDecodeError, RecursionError):
                    raise VerifierError(
                        f"{source.name}: line {line_no}: not a JSON object (malformed, or nested too deeply)"
                    ) from None
                except ValueError:  # "Exceeds the limit (4300 digits) for integer string conversion"
                    raise VerifierError(f"{source.name}: line {line_no}: holds a number too long to read") from None
                except KeyError as exc:
                    raise VerifierError(
                        f"{source.name}: line {line_no}: key {exc.args[0]!r} given twice (readers disagree on which "
                        "counts)"
                    ) from None
                if not isinstance(record, dict) or text_field not in record:
                    raise VerifierError(f"{source.name}: line {line_no}: no {text_field!r} field")
                text = _text(source, record[text_field], f"line {line_no}")
                if not text.strip():
                    stats.empty_documents += 1
                    continue
                stats.documents += 1
                yield Document(text, _meta(record, f"{source.name}:{line_no}"), other_text(record, text_field))
    except UnicodeDecodeError:
        raise VerifierError(f"{source.name}: line {line_no + 1}: not UTF-8 text") from None
    except (
        OSError,
        EOFError,
        gzip.BadGzipFile,
        zlib.error,
    ) as exc:  # zlib.error: a corrupt deflate stream inside a gzip
        raise VerifierError(
            f"{source.name}: cannot be read as {'compressed ' if source.name.endswith(('.gz', '.zst')) else ''}JSONL "
            f"({exc})"
        ) from None
    except Exception as exc:  # zstandard raises its own error type for corrupt frames
        if type(exc).__module__.startswith("zstandard"):
            raise VerifierError(f"{source.name}: corrupt zstd data ({exc})") from None
        raise


def _parquet(source: Source, stats: SourceStats, text_field: str, limits: ReadLimits) -> Iterator[Document]:
    import pyarrow.parquet as pq

    try:
        table = pq.ParquetFile(source.path)
    except Exception as exc:  # noqa: BLE001 - pyarrow raises ArrowInvalid / OSError for a file that is not Parquet
        raise VerifierError(f"{source.name}: not a readable Parquet file ({str(exc).splitlines()[0]})") from None
    columns = set(table.schema_arrow.names)
    if text_field not in columns:
        raise VerifierError(f"{source.name}: no {text_field!r} column")
    row = 0
    for batch in table.iter_batches(batch_size=4096):  # every column: a text in another one is the record's too
        for record in batch.to_pylist():
            row += 1
            value = record[text_field]
            if value is None or (isinstance(value, str) and not value.strip()):
                stats.empty_documents += 1
                continue
            text = _text(source, value, f"row {row}")
            if len(text) > limits.max_document_bytes:
                raise VerifierError(
                    f"{source.name}: row {row}: longer than {limits.max_document_bytes:,} characters "
                    "(raise --max-document-mb if the record is real)"
                )
            stats.documents += 1
            yield Document(text, _meta(record, f"{source.name}:{row}"), other_text(record, text_field))


def _plain(source: Source, stats: SourceStats, limits: ReadLimits) -> Iterator[Document]:
    if source.path.stat().st_size > limits.max_document_bytes:
        raise VerifierError(
            f"{source.name}: a plain-text document larger than {limits.max_document_bytes:,} bytes "
            "(raise --max-document-mb if it is real)"
        )
    data = source.path.read_bytes()
    if b"\x00" in data:
        raise VerifierError(
            f"{source.name}: binary file (NUL bytes), not text; corpus inputs are JSONL, Parquet or plain text"
        )
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise VerifierError(f"{source.name}: not UTF-8 text (byte {exc.start})") from None
    if text.strip():
        stats.documents += 1
        yield Document(text, {"id": source.name, "source": source.name})
