"""Building a corpus index: normalised text, a suffix array per shard, document boundaries and
metadata, and a manifest of digests.

A shard holds up to ``shard_bytes`` of text (the suffix array of a shard is built in memory:
about 5 bytes of RAM per text byte), so corpora larger than memory are built shard by shard and
queried as one. Nothing is visible under ``out`` until the whole index is written: it is built in
a temporary sibling folder and renamed into place.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from verifier import __version__
from verifier.boundary.files import check_exclude
from verifier.corpus.forms import Reading, not_compared, readings
from verifier.corpus.normalise import NORMALISATION, framed
from verifier.corpus.sources import (
    Document,
    ReadLimits,
    Source,
    SourceStats,
    list_sources,
    read_documents,
)
from verifier.corpus.vocabulary import NOT_LANGUAGE, language_share
from verifier.errors import VerifierError
from verifier.trust.digests import canonical_json, file_sha256

FORMAT = "verifier-corpus-index/4"
# Records of fewer words than this hold no default n-gram of their own: a file made mostly of them
# is compared only in file order, so text it stores out of order cannot be shown absent.
SHORT_RECORD_WORDS = 13
# Never in UTF-8: no match crosses it. It ends each corpus file's run of records in a shard; the
# records of one file are joined by a single space, in file order, as a training pipeline
# concatenates them into sequences, so text split over neighbouring records is found.
SEPARATOR = b"\xff"
DEFAULT_SHARD_BYTES = 512 << 20
PARALLEL_BYTES, MAX_WORKERS, BATCH_CHARS = 32 << 20, 4, 4 << 20
MINHASH_PERM = 64
MINHASH_SHINGLE = 5
MINHASH_SEED = 1
MINHASH_SCHEME = "affine32"  # datasketch >= 2 names its hashing scheme; recorded so signatures stay comparable

Progress = Callable[[str, int], Callable[[int], None]]


@dataclass
class BuildReport:
    folder: Path
    corpus_sha256: str
    index_sha256: str
    documents: int
    text_bytes: int
    input_bytes: int
    shards: int
    seconds: float
    sources: list[SourceStats]


def corpus_digest(source_digests: list[str]) -> str:
    """The corpus's digest: SHA-256 of the ordered list of its files' SHA-256 (names and the
    index's own format left out, so a developer can declare it from the files alone)."""
    return hashlib.sha256(canonical_json({"corpus_files_sha256": source_digests})).hexdigest()


def digest_files(paths: list[Path], exclude: tuple[str, ...] = ()) -> tuple[str, list[tuple[str, str]]]:
    """The corpus digest of files and folders (less the files ``exclude`` leaves out), and each
    file's name and SHA-256."""
    rows = [(s.name, file_sha256(s.path)) for s in list_sources(paths, exclude=check_exclude(exclude))]
    return corpus_digest([sha for _, sha in rows]), rows


class _ShardWriter:
    """A shard's text as slots: each document's main reading in its file's run of joined records,
    and its other readings after the run, each a slot of its own (``owners`` maps every slot to
    its document, so a match in any reading names the document it reads)."""

    def __init__(self, folder: Path, minhash: bool) -> None:
        self.folder = folder
        self.minhash = minhash
        self.shards: list[dict] = []
        self._reset()

    def _reset(self) -> None:
        self.text = bytearray()
        self.starts: list[int] = []  # slot starts
        self.owners: list[int] = []  # the document of each slot
        self.meta: list[bytes] = []
        self.hashes: list[np.ndarray] = []
        self.extras: list[tuple[int, bytes]] = []
        self.pending = 0

    def size_with(self, frame: bytes, extras: list[bytes]) -> int:
        """The shard's bytes once a document and its readings are added."""
        return len(self.text) + self.pending + len(frame) + 1 + sum(len(e) + 1 for e in extras)

    def add(self, frame: bytes, extras: list[bytes], meta: dict[str, str], joined: bool) -> None:
        """Append a document; ``joined``: it follows the previous one in the same corpus file,
        and shares its framing space (the document starts at that space). ``extras``: its other
        readings, written when the run ends (``end_run``)."""
        document = len(self.meta)
        if joined and self.starts:
            del self.text[-1:]  # the previous document's separator
            self.starts.append(len(self.text) - 1)
            self.text += frame[1:]
        else:
            self.starts.append(len(self.text))
            self.text += frame
        self.text += SEPARATOR
        self.owners.append(document)
        self.extras += [(document, extra) for extra in extras]
        self.pending += sum(len(e) + 1 for e in extras)
        self.meta.append(json.dumps(meta, ensure_ascii=False, sort_keys=True).encode("utf-8") + b"\n")
        if self.minhash:
            self.hashes.append(minhash_signature(frame))

    def end_run(self) -> None:
        """After a file's run of records: their other readings, a slot each."""
        for document, extra in self.extras:
            self.starts.append(len(self.text))
            self.owners.append(document)
            self.text += extra + SEPARATOR
        self.extras, self.pending = [], 0

    def flush(self, first_document: int) -> None:
        self.end_run()
        if not self.starts:
            return
        import pydivsufsort

        name = f"shard-{len(self.shards):05d}"
        folder = self.folder / name
        folder.mkdir()
        text = np.frombuffer(bytes(self.text), dtype=np.uint8).copy()
        sa = pydivsufsort.divsufsort(text)
        sa_dtype = "int32" if len(text) < 2**31 - 1 else "int64"
        text.tofile(folder / "text.bin")
        sa.astype(sa_dtype, copy=False).tofile(folder / "sa.bin")
        np.asarray(self.starts + [len(text)], dtype=np.int64).tofile(folder / "docs.bin")
        np.asarray(self.owners, dtype=np.int64).tofile(folder / "owners.bin")
        offsets = np.cumsum([0] + [len(m) for m in self.meta], dtype=np.int64)
        (folder / "meta.jsonl").write_bytes(b"".join(self.meta))
        offsets.tofile(folder / "meta.idx")
        if self.minhash:
            np.stack(self.hashes).astype(np.uint64).tofile(folder / "minhash.bin")
        files = {p.name: file_sha256(p) for p in sorted(folder.iterdir())}
        self.shards.append(
            {
                "name": name,
                "documents": len(self.meta),
                "slots": len(self.starts),
                "first_document": first_document,
                "bytes": int(len(text)),
                "sa_dtype": sa_dtype,
                "files": files,
            }
        )
        self._reset()


def minhash_signature(frame: bytes) -> np.ndarray:
    """MinHash of a framed text's word 5-shingles (one shingle for shorter texts)."""
    from datasketch import MinHash

    words = frame.split()
    shingles = [b" ".join(words[i : i + MINHASH_SHINGLE]) for i in range(max(1, len(words) - MINHASH_SHINGLE + 1))]
    mh = MinHash(num_perm=MINHASH_PERM, seed=MINHASH_SEED, scheme=MINHASH_SCHEME)
    mh.update_batch(shingles)
    return mh.hashvalues


MARKED = " (other script)"  # the label of a romanised reading compared in its own namespace


def frames_of(read: list[Reading], frames: list[bytes]) -> list[tuple[bytes, str]]:
    """The frames the index stores of a text's readings (``frames``: each reading framed), the
    main reading first (empty when it has no words), then each other reading's that differs from
    those before, with its label (a romanised reading of another script in upper case: its own
    namespace, since compared text is case-folded)."""
    out: list[tuple[bytes, str]] = []
    for number, (reading, frame) in enumerate(zip(read, frames)):
        frame = frame.upper() if reading.marked else frame
        if number == 0 or frame and all(frame != kept for kept, _ in out):
            out.append((frame, reading.form + (MARKED if reading.marked else "")))
    return out


Compared = tuple[bytes, list[bytes], int, dict[str, int], list[str]]


def document_frames(text: str) -> tuple[bytes, list[tuple[bytes, str]], list[Reading], list[bytes]]:
    """What the index stores of one document: its main reading framed (joined with its file's
    other records), the frames of its other readings with their labels (slots of their own,
    after the run), its readings, and each reading framed."""
    read = readings(text, look_for_unread=False)
    frames = [framed(reading.text) for reading in read]
    stored = frames_of(read, frames)
    return stored[0][0], stored[1:], read, frames


def record_frames(text: str, fields: str = "") -> tuple[bytes, list[tuple[bytes, str]], list[Reading], list[bytes]]:
    """``document_frames`` of a record's text, its other fields' readings added to its other
    readings (each stored once, none repeating the main reading)."""
    main, extras, read, frames = document_frames(text)
    if fields:
        fields_main, fields_more, fields_read, _ = document_frames(fields)
        kept: list[tuple[bytes, str]] = []
        labelled = [(fields_main, fields_read[0].form), *fields_more]
        for frame, label in [*extras, *((frame, f"other fields {label}") for frame, label in labelled)]:
            if frame and frame != main and all(frame != seen for seen, _ in kept):
                kept.append((frame, label))
        extras = kept
    return main, extras, read, frames


def _compared(texts: list[tuple[str, str]]) -> list[Compared]:
    """Each record's frames for the index (its text's and its other fields'), its main reading's
    words, the bytes no reading turned into comparable text, by kind, and its other readings'
    labels: the per-document work of a build, run in worker processes for large corpora."""
    out = []
    for text, fields in texts:
        main, extras, read, frames = record_frames(text, fields)
        hidden = not_compared(text, read)
        if not hidden and (share := language_share(read, frames)) < 1.0:
            hidden[NOT_LANGUAGE] = round((1.0 - share) * len(text.encode("utf-8", errors="surrogatepass")))
        out.append(
            (
                main,
                [frame for frame, _ in extras],
                main.count(b" ") - 1 if main else 0,
                hidden,
                [label for _, label in extras],
            )
        )
    return out


def _quiet_worker() -> None:
    """Workers leave Ctrl-C and SIGTERM to the building process, which stops them and cleans up."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def _prepared(
    sources: list[Source], stats: list[SourceStats], text_field: str, limits: ReadLimits, workers: int
) -> Iterator[tuple[int, Document | None, bytes, list[bytes], int, dict[str, int], list[str]]]:
    """(file number, document, main frame, other frames, main words, bytes not compared) of every document in file
    order, and (file number, None, ...) after each file's last. Files are read here; with ``workers`` > 1 the
    per-document work runs in that many processes on batches, a few batches ahead (memory stays
    bounded), and results come back in order, so the index is the same for any ``workers``."""

    def documents() -> Iterator[tuple[int, Document | None]]:
        for number, source in enumerate(sources):
            for doc in read_documents(source, stats[number], text_field, limits):
                yield number, doc
            yield number, None

    def batches() -> Iterator[list[tuple[int, Document | None]]]:
        batch: list[tuple[int, Document | None]] = []
        size = 0
        for item in documents():
            batch.append(item)
            size += len(item[1].text) if item[1] is not None else 0
            if size >= BATCH_CHARS:
                yield batch
                batch, size = [], 0
        if batch:
            yield batch

    def matched(batch: list[tuple[int, Document | None]], results: list[Compared]) -> Iterator[Any]:
        found = iter(results)
        for number, doc in batch:
            yield (number, doc, *next(found)) if doc is not None else (number, None, b"", [], 0, {}, [])

    if workers <= 1:
        for batch in batches():
            yield from matched(batch, _compared([(doc.text, doc.fields) for _, doc in batch if doc is not None]))
        return
    import multiprocessing
    from collections import deque
    from concurrent.futures import ProcessPoolExecutor

    pool = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"), initializer=_quiet_worker)
    try:
        pending: deque = deque()
        for batch in batches():
            pending.append(
                (batch, pool.submit(_compared, [(doc.text, doc.fields) for _, doc in batch if doc is not None]))
            )
            if len(pending) > 2 * workers:
                batch, future = pending.popleft()
                yield from matched(batch, future.result())
        while pending:
            batch, future = pending.popleft()
            yield from matched(batch, future.result())
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def build_index(
    paths: list[Path],
    out: Path,
    *,
    text_field: str = "text",
    shard_bytes: int = DEFAULT_SHARD_BYTES,
    minhash: bool = False,
    force: bool = False,
    progress: Progress | None = None,
    follow_links: bool = True,
    limits: ReadLimits = ReadLimits(),
    workers: int | None = None,
    exclude: tuple[str, ...] = (),
) -> BuildReport:
    """Index the documents of ``paths`` (files or folders) into the folder ``out``. ``force``
    replaces an existing corpus index there, never any other folder. Every file is read within
    ``limits``; an interrupt (Ctrl-C, or SIGTERM through the CLI) removes the unfinished folder.
    ``workers``: processes reading documents' forms (default: every core, up to 4, for inputs of
    at least 32 MB; one below, where starting processes costs more than it saves). ``exclude``:
    glob patterns of files under the folders given to leave out (recorded in the manifest)."""
    if shard_bytes < 1 << 16:
        raise VerifierError(f"--shard-bytes {shard_bytes}: at least 65536")
    out = Path(out)
    if out.exists() and not force:
        raise VerifierError(f"{out}: exists (use --force to replace it)")
    if out.is_symlink():
        raise VerifierError(f"{out}: a link; the index goes in a folder of its own (not replaced)")
    if out.exists() and not (out.is_dir() and (out / "manifest.json").is_file()):
        raise VerifierError(f"{out}: exists and is not a corpus index; not replaced (choose another --out)")
    for path in paths:
        inside = Path(path).resolve()
        if inside == out.resolve() or inside.is_relative_to(out.resolve()) or out.resolve().is_relative_to(inside):
            raise VerifierError(f"{out}: overlaps the input {Path(path).name}; the index goes in a folder of its own")
    sources = list_sources(paths, follow_links, check_exclude(exclude))
    started = time.perf_counter()
    out.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".partial", dir=out.parent))
    try:
        writer = _ShardWriter(work, minhash)
        stats_list: list[SourceStats] = []
        documents = read_bytes = read_words = 0
        reading_counts: dict[str, int] = {}
        shard_first = 0
        advance = progress("indexing corpus files", len(sources)) if progress else None
        all_stats = [SourceStats(s.name, sha256=file_sha256(s.path), bytes=s.path.stat().st_size) for s in sources]
        if workers is None:
            workers = min(os.cpu_count() or 1, MAX_WORKERS) if sum(s.bytes for s in all_stats) >= PARALLEL_BYTES else 1
        previous_in_shard = False
        for number, doc, frame, extras, words, hidden, labels in _prepared(
            sources, all_stats, text_field, limits, workers
        ):
            source, stats = sources[number], all_stats[number]
            if doc is None:  # the end of a file
                if stats.documents == 0:
                    raise VerifierError(f"{source.name}: no document with words to index")
                stats_list.append(stats)
                writer.end_run()
                previous_in_shard = False
                if advance:
                    advance(1)
                continue
            for label in labels:
                reading_counts[label] = reading_counts.get(label, 0) + 1
            for kind, size in hidden.items():
                stats.not_compared[kind] = stats.not_compared.get(kind, 0) + size
            if not frame and not extras:  # punctuation only: nothing a word-level lookup could match
                stats.documents -= 1
                stats.empty_documents += 1
                continue
            if writer.starts and writer.size_with(frame, extras) > shard_bytes:
                writer.flush(shard_first)
                shard_first = documents
                previous_in_shard = False
            if not frame:  # nothing in the main reading: the document is its other readings
                writer.end_run()
                frame, extras, previous_in_shard = extras[0], extras[1:], False
            writer.add(frame, extras, {**doc.meta, "file": source.name}, joined=previous_in_shard)
            previous_in_shard = True
            size = len(doc.text.encode("utf-8", errors="surrogatepass"))
            if words < SHORT_RECORD_WORDS:
                stats.short_records += 1
                stats.short_record_bytes += size
            stats.text_bytes += size
            read_bytes += len(frame)
            read_words += words
            documents += 1
        writer.flush(shard_first)
        manifest = {
            "format": FORMAT,
            "normalisation": NORMALISATION,
            "corpus_sha256": corpus_digest([s.sha256 for s in stats_list]),
            "documents": documents,
            "text_bytes": sum(s["bytes"] for s in writer.shards),
            "read_bytes": read_bytes,
            "read_words": read_words,
            "readings": dict(sorted(reading_counts.items())),
            "sources": [asdict(s) for s in stats_list],
            "shards": writer.shards,
            "minhash": {
                "num_perm": MINHASH_PERM,
                "shingle_words": MINHASH_SHINGLE,
                "seed": MINHASH_SEED,
                "scheme": MINHASH_SCHEME,
            }
            if minhash
            else None,
            "text_field": text_field,
            "excluded": list(exclude),
            "built_with": f"verifier {__version__}",
            "shard_bytes": shard_bytes,
        }
        body = json.dumps(manifest, indent=1, ensure_ascii=False).encode("utf-8") + b"\n"
        (work / "manifest.json").write_bytes(body)
        mask = os.umask(0)
        os.umask(mask)
        os.chmod(work, 0o777 & ~mask)  # mkdtemp made it private; the index is shared like any output
        if out.exists():
            shutil.rmtree(out)
        os.replace(work, out)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    return BuildReport(
        out,
        manifest["corpus_sha256"],
        hashlib.sha256(body).hexdigest(),
        documents,
        manifest["text_bytes"],
        sum(s.bytes for s in stats_list),
        len(writer.shards),
        time.perf_counter() - started,
        stats_list,
    )
