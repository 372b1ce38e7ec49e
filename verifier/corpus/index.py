"""A built corpus index, opened memory-mapped and checked against its manifest, and the queries
it answers: count, find, matching statistics, near-duplicates.

Opening checks every file's SHA-256 and size against the manifest, so a corrupt, truncated or
edited index stops with one line naming the file; the index's own digest is the SHA-256 of its
manifest, which names every file's digest.

Digests do not stop an index edited consistently (a suffix array rewritten and the manifest
hashed again), so opening also checks the structure the queries depend on: ``structure="sampled"``
(the default) checks that every suffix-array entry lies inside the text, and that 4,096 pairs of
neighbouring entries, drawn afresh from the system's randomness each time, are in sorted order
(an edit the draw can miss changes at most the counts of the strings it moved); ``"full"`` (what
audits of a prebuilt index and ``verifier corpus check`` use) recomputes each shard's suffix array
from its text and compares it entry by entry, at about the cost of building it. That the text is
the declared corpus's text can be checked only against the corpus files:
``verifier corpus check INDEX --corpus FILES`` rebuilds the index and compares.
"""

from __future__ import annotations

import hashlib
import json
import mmap
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from verifier.corpus.build import (
    DEFAULT_SHARD_BYTES,
    FORMAT,
    MINHASH_PERM,
    MINHASH_SCHEME,
    MINHASH_SEED,
    MINHASH_SHINGLE,
    SEPARATOR,
    build_index,
    corpus_digest,
    minhash_signature,
)
from verifier.corpus.normalise import NORMALISATION
from verifier.corpus.search import count_range, matching_lengths
from verifier.errors import VerifierError, first_validation_error
from verifier.trust.digests import file_sha256

MAX_MANIFEST = 64 << 20
MAX_OCCURRENCES = 100_000  # positions mapped to documents per query; counts stay exact beyond
PROBES, PROBE_WORDS, PROBE_OCCURRENCES, NEAR_CANDIDATES, NEAR_WINDOWS = 24, 3, 2_000, 64, 16
SNIPPET = 80
SORT_SAMPLES, SORT_PREFIX = 4096, 64  # neighbouring suffix-array pairs checked on open, bytes compared of each
STRUCTURE_CHECKS = ("sampled", "full")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ShardEntry(_Strict):
    name: str = Field(pattern=r"^shard-\d{5}$")
    documents: int = Field(ge=1)
    slots: int = Field(ge=1)  # a document's main reading, and each of its other readings
    first_document: int = Field(ge=0)
    bytes: int = Field(ge=1)
    sa_dtype: str = Field(pattern=r"^int(32|64)$")
    files: dict[str, str]


class SourceEntry(_Strict):
    name: str
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    bytes: int = Field(ge=0)
    documents: int = Field(ge=0)
    empty_documents: int = Field(ge=0)
    text_bytes: int = Field(ge=0)
    short_records: int = Field(ge=0)
    short_record_bytes: int = Field(ge=0)
    not_compared: dict[str, int]  # bytes no reading turned into comparable text, by kind (corpus.forms.not_compared)


class Manifest(_Strict):
    format: str
    normalisation: str
    corpus_sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    documents: int = Field(ge=1)
    text_bytes: int = Field(ge=1)  # the index's text: every reading of every document, framed
    read_bytes: int = Field(ge=0)  # the documents' main readings, framed: the corpus's size as compared
    read_words: int = Field(ge=0)
    readings: dict[str, int]  # documents with each other reading, by its label (build.frames_of)
    sources: list[SourceEntry] = Field(min_length=1)
    shards: list[ShardEntry] = Field(min_length=1)
    minhash: dict[str, int | str] | None
    text_field: str
    excluded: list[str]  # the auditor's --exclude patterns: files under the folders given that were left out
    built_with: str
    shard_bytes: int | None = Field(
        None, ge=1 << 16
    )  # the build's shard size, so the files can rebuild the same shards


REQUIRED_FILES = ("text.bin", "sa.bin", "docs.bin", "owners.bin", "meta.jsonl", "meta.idx")


@dataclass
class Shard:
    entry: ShardEntry
    text: np.ndarray
    sa: np.ndarray
    slots: np.ndarray  # where each slot starts (a document's main reading, or another reading of it)
    owners: np.ndarray  # the document of each slot
    meta_offsets: np.ndarray
    meta: np.ndarray
    minhash: np.ndarray | None
    scalar: tuple[mmap.mmap, memoryview]  # the text and suffix array for one-by-one bisection
    starts: np.ndarray = field(init=False)
    lengths: np.ndarray = field(init=False)

    def __post_init__(self) -> None:
        first = np.unique(self.owners, return_index=True)[1]  # each document's main reading comes first
        self.starts = self.slots[first]  # where each document's main reading starts
        self.lengths = self.slots[first + 1] - self.starts  # its bytes, with one framing space and the separator

    def document_of(self, positions: np.ndarray) -> np.ndarray:
        """The documents holding text positions, whichever of their readings a position is in."""
        return self.owners[np.searchsorted(self.slots, positions, side="right") - 1]

    def meta_of(self, local: int) -> dict[str, Any]:
        raw = bytes(self.meta[self.meta_offsets[local] : self.meta_offsets[local + 1]])
        return json.loads(raw)

    def words_of(self, local: int) -> str:
        """A document's main reading, in compared form."""
        begin = int(self.starts[local])
        return bytes(self.text[begin : begin + int(self.lengths[local])]).rstrip(SEPARATOR).decode("utf-8").strip()

    def stream_bounds(self, position: int, reach: int) -> tuple[int, int]:
        """[begin, end) of the run of joined records (one corpus file's records in this shard)
        around a text position, looked for at most ``reach`` bytes either side (a corpus of one
        file is one run: searching the whole shard for its ends cost a scan per hit)."""
        raw = self.scalar[0]
        low, high = max(0, position - reach), min(len(raw), position + reach)
        begin = raw.rfind(SEPARATOR, low, position)
        end = raw.find(SEPARATOR, position, high)
        return (low if begin < 0 else begin + 1), (high if end < 0 else end)


@dataclass(frozen=True)
class Hit:
    """One corpus document holding a match: its number in the corpus, its metadata, and the
    match in context (compared form)."""

    document: int
    meta: dict[str, Any]
    offset: int
    snippet: str


@dataclass(frozen=True)
class Found:
    count: int
    documents: list[Hit] = field(default_factory=list)
    documents_total: int = 0
    documents_exact: bool = True


def check_structure(shard: Shard, label: str, how: str) -> None:
    """Refuse a shard whose suffix array is not the sorted suffixes of its text (see the module)."""
    sa, n = shard.sa, shard.entry.bytes
    # One pass: as unsigned integers, negative entries are larger than any text length.
    if int(sa.view(np.uint32 if sa.dtype == np.int32 else np.uint64).max()) >= n:
        raise VerifierError(f"{label}/sa.bin: entries outside the text (corrupt or altered index)")
    if how == "full":
        import pydivsufsort

        expected = pydivsufsort.divsufsort(
            np.array(shard.text)
        )  # a writable copy: the library refuses read-only memory
        if not np.array_equal(expected, sa):
            first = int(np.argmax(expected != sa))
            raise VerifierError(f"{label}/sa.bin: entry {first} is not the suffix array of the text (altered index)")
        return
    if n < 2:
        return
    # Neighbouring pairs compared on their first SORT_PREFIX bytes, all at once: a suffix that ends
    # first is the smaller (bytes past the end read as -1, below every byte value).
    draws = np.random.default_rng(np.random.SeedSequence()).integers(0, n - 1, size=min(SORT_SAMPLES, n - 1))
    pairs = np.stack([sa[draws], sa[draws + 1]]).astype(np.int64)
    positions = pairs[:, :, None] + np.arange(SORT_PREFIX)
    read = np.where(positions < n, shard.text[np.minimum(positions, n - 1)].astype(np.int16), np.int16(-1))
    differs = read[0] != read[1]
    first = differs.argmax(axis=1)
    rows = np.arange(draws.size)
    wrong = (differs.any(axis=1) & (read[0, rows, first] > read[1, rows, first])) | (pairs[0] == pairs[1])
    if wrong.any():
        i = int(draws[wrong.argmax()])
        raise VerifierError(f"{label}/sa.bin: entries {i} and {i + 1} are not in sorted order (altered index)")


def _map(path: Path) -> mmap.mmap:
    """A read-only memory map of a (non-empty) index file."""
    with open(path, "rb") as handle:
        return mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)


class CorpusIndex:
    """A local suffix-array index (one or more shards), read-only and memory-mapped."""

    def __init__(self, folder: Path, manifest: Manifest, digest: str, shards: list[Shard]) -> None:
        self.folder = folder
        self.manifest = manifest
        self.sha256 = digest
        self.shards = shards
        self._lsh: dict[float, Any] = {}

    @property
    def corpus_sha256(self) -> str:
        return self.manifest.corpus_sha256

    @property
    def name(self) -> str:
        return self.folder.name

    @classmethod
    def open(cls, folder: str | Path, verify: bool = True, structure: str = "sampled") -> CorpusIndex:
        """Open and check an index folder: digests (``verify``) and structure (see the module)."""
        if structure not in STRUCTURE_CHECKS:
            raise ValueError(f"structure {structure!r}: one of {STRUCTURE_CHECKS}")
        folder = Path(folder)
        label = folder.name
        path = folder / "manifest.json"
        if not path.is_file():
            raise VerifierError(
                f"{label}: not a corpus index (no manifest.json; build one with 'verifier corpus build')"
            )
        if path.stat().st_size > MAX_MANIFEST:
            raise VerifierError(f"{label}/manifest.json: larger than {MAX_MANIFEST >> 20} MiB")
        body = path.read_bytes()
        try:
            manifest = Manifest.model_validate(json.loads(body))
        except (json.JSONDecodeError, UnicodeDecodeError, RecursionError):
            raise VerifierError(f"{label}/manifest.json: not JSON (corrupt index)") from None
        except ValidationError as exc:
            raise VerifierError(f"{label}/manifest.json: {first_validation_error(exc)}") from None
        if manifest.format != FORMAT:
            raise VerifierError(f"{label}/manifest.json: format {manifest.format!r}; this verifier reads {FORMAT!r}")
        if manifest.minhash is not None and manifest.minhash != {
            "num_perm": MINHASH_PERM,
            "shingle_words": MINHASH_SHINGLE,
            "seed": MINHASH_SEED,
            "scheme": MINHASH_SCHEME,
        }:
            raise VerifierError(
                f"{label}/manifest.json: minhash {manifest.minhash}: not the signatures this verifier computes"
            )
        if manifest.normalisation != NORMALISATION:
            raise VerifierError(
                f"{label}/manifest.json: normalisation {manifest.normalisation!r}; this verifier compares in "
                f"{NORMALISATION!r}"
            )
        if sum(src.documents for src in manifest.sources) != manifest.documents:
            raise VerifierError(
                f"{label}/manifest.json: the sources list {sum(src.documents for src in manifest.sources)} documents, "
                f"the index {manifest.documents} (altered manifest)"
            )
        if corpus_digest([src.sha256 for src in manifest.sources]) != manifest.corpus_sha256:
            raise VerifierError(
                f"{label}/manifest.json: corpus_sha256 is not the digest of the listed source files (altered manifest)"
            )
        shards = [cls._open_shard(folder, entry, manifest, verify) for entry in manifest.shards]
        for shard in shards:
            check_structure(shard, f"{label}/{shard.entry.name}", structure)
        expected_first = 0
        for shard in shards:
            if shard.entry.first_document != expected_first:
                raise VerifierError(
                    f"{label}/manifest.json: shards: {shard.entry.name} starts at document "
                    f"{shard.entry.first_document}, expected {expected_first}"
                )
            expected_first += shard.entry.documents
        if expected_first != manifest.documents or sum(s.entry.bytes for s in shards) != manifest.text_bytes:
            raise VerifierError(f"{label}/manifest.json: documents or text_bytes disagree with the shards")
        return cls(folder, manifest, hashlib.sha256(body).hexdigest(), shards)

    @staticmethod
    def _open_shard(folder: Path, entry: ShardEntry, manifest: Manifest, verify: bool) -> Shard:
        where = folder / entry.name
        label = f"{folder.name}/{entry.name}"
        names = set(REQUIRED_FILES) | ({"minhash.bin"} if manifest.minhash else set())
        if set(entry.files) != names:
            raise VerifierError(
                f"{folder.name}/manifest.json: {entry.name}: files {sorted(entry.files)}, expected {sorted(names)}"
            )
        itemsize = 4 if entry.sa_dtype == "int32" else 8
        perm = MINHASH_PERM
        sizes = {
            "text.bin": entry.bytes,
            "sa.bin": entry.bytes * itemsize,
            "docs.bin": (entry.slots + 1) * 8,
            "owners.bin": entry.slots * 8,
            "meta.idx": (entry.documents + 1) * 8,
            "minhash.bin": entry.documents * perm * 8,
        }
        for name in sorted(names):
            path = where / name
            if not path.is_file() or path.is_symlink():
                raise VerifierError(f"{label}/{name}: missing (corrupt or incomplete index)")
            if name in sizes and path.stat().st_size != sizes[name]:
                raise VerifierError(
                    f"{label}/{name}: {path.stat().st_size} bytes, the manifest implies {sizes[name]} (truncated or "
                    "corrupt index)"
                )
            if verify and file_sha256(path) != entry.files[name]:
                raise VerifierError(f"{label}/{name}: SHA-256 differs from the manifest (corrupt or altered index)")
        starts = np.fromfile(where / "docs.bin", dtype=np.int64)
        owners = np.fromfile(where / "owners.bin", dtype=np.int64)
        offsets = np.fromfile(where / "meta.idx", dtype=np.int64)
        meta_size = (where / "meta.jsonl").stat().st_size
        documents, first = np.unique(owners, return_index=True)
        if (
            starts[0] != 0
            or starts[-1] != entry.bytes
            or np.any(np.diff(starts) <= 0)
            or not np.array_equal(documents, np.arange(entry.documents))
            or np.any(np.diff(first) <= 0)
            or offsets[0] != 0
            or offsets[-1] != meta_size
            or np.any(np.diff(offsets) <= 0)
        ):
            raise VerifierError(f"{label}: document boundaries are inconsistent (corrupt index)")
        maps = {name: _map(where / name) for name in names}
        minhash = (
            np.frombuffer(maps["minhash.bin"], np.uint64).reshape(entry.documents, perm) if manifest.minhash else None
        )
        return Shard(
            entry,
            np.frombuffer(maps["text.bin"], np.uint8),
            np.frombuffer(maps["sa.bin"], np.dtype(entry.sa_dtype)),
            starts,
            owners,
            offsets,
            np.frombuffer(maps["meta.jsonl"], np.uint8),
            minhash,
            (maps["text.bin"], memoryview(maps["sa.bin"]).cast("i" if entry.sa_dtype == "int32" else "q")),
        )

    def check_text(self, inputs: list[Path], *, text_field: str | None = None) -> None:
        """Rebuild the index from the corpus files ``inputs`` and compare every shard's text,
        suffix array, boundaries and metadata: the one check that the index holds the corpus it
        declares. Raises ``VerifierError`` naming the first difference."""
        import tempfile

        shard_bytes = self.manifest.shard_bytes or DEFAULT_SHARD_BYTES
        with tempfile.TemporaryDirectory(prefix="verifier-check-") as tmp:
            rebuilt = build_index(
                inputs,
                Path(tmp) / "index",
                text_field=text_field or self.manifest.text_field,
                shard_bytes=shard_bytes,
                minhash=self.manifest.minhash is not None,
                exclude=tuple(self.manifest.excluded),
            )
            again = json.loads((rebuilt.folder / "manifest.json").read_bytes())
        if again["corpus_sha256"] != self.corpus_sha256:
            raise VerifierError(
                f"{self.name}: the corpus files' digest {again['corpus_sha256'][:16]}... is not the index's "
                f"{self.corpus_sha256[:16]}... (other files, or another order)"
            )
        if len(again["shards"]) != len(self.shards):
            raise VerifierError(
                f"{self.name}: the files make {len(again['shards'])} shard(s), the index has {len(self.shards)}"
            )
        for mine, theirs in zip(self.shards, again["shards"]):
            for name, digest in sorted(theirs["files"].items()):
                if mine.entry.files.get(name) != digest:
                    raise VerifierError(
                        f"{self.name}/{mine.entry.name}/{name}: differs from the one the corpus files make "
                        "(the index does not hold the declared corpus as verifier builds it)"
                    )

    # -- queries -----------------------------------------------------------------------------
    def count_frames(self, frames: list[bytes]) -> np.ndarray:
        """Occurrences of each framed string (`` words ``) in the whole corpus."""
        total = np.zeros(len(frames), dtype=np.int64)
        if not frames:
            return total
        for shard in self.shards:
            lo, hi = count_range(shard.text, shard.sa, frames, shard.scalar)
            total += hi - lo
        return total

    def find_frame(self, frame: bytes, limit: int = 10) -> Found:
        """Occurrences of a framed string and the first ``limit`` documents holding it."""
        count = 0
        hits: list[Hit] = []
        total_docs = 0
        exact = True
        for shard in self.shards:
            lo, hi = count_range(shard.text, shard.sa, [frame], shard.scalar)
            n = int(hi[0] - lo[0])
            count += n
            if not n:
                continue
            exact &= n <= MAX_OCCURRENCES
            positions = np.sort(np.asarray(shard.sa[lo[0] : lo[0] + min(n, MAX_OCCURRENCES)]).astype(np.int64))
            docs, first = np.unique(shard.document_of(positions), return_index=True)
            total_docs += docs.size
            for local, pos in zip(docs[: max(limit - len(hits), 0)], positions[first]):
                hits.append(self._hit(shard, int(local), int(pos), len(frame)))
        return Found(count, hits, total_docs, exact)

    def occurrences(self, frame: bytes, cap: int) -> list[tuple[int, int]]:
        """(document, offset) of every occurrence of a framed string; none when it occurs more than
        ``cap`` times (too common to point anywhere)."""
        found: list[tuple[int, int]] = []
        ranges = [(shard, count_range(shard.text, shard.sa, [frame], shard.scalar)) for shard in self.shards]
        if sum(int(hi[0] - lo[0]) for _, (lo, hi) in ranges) > cap:
            return []
        for shard, (lo, hi) in ranges:
            positions = np.asarray(shard.sa[lo[0] : hi[0]]).astype(np.int64)
            local = shard.document_of(positions)
            found += [(shard.entry.first_document + int(d), int(p - shard.starts[d])) for d, p in zip(local, positions)]
        return found

    def _hit(self, shard: Shard, local: int, pos: int, length: int) -> Hit:
        begin = int(shard.starts[local])
        stream_begin, stream_end = shard.stream_bounds(pos, length + SNIPPET)
        lo, hi = max(stream_begin, pos - SNIPPET), min(stream_end, pos + length + SNIPPET)
        snippet = bytes(shard.text[lo:hi]).decode("utf-8", errors="ignore").strip()
        return Hit(shard.entry.first_document + local, shard.meta_of(local), pos - begin, snippet)

    def matching(self, query: np.ndarray, positions: np.ndarray, ends: np.ndarray) -> np.ndarray:
        """Matching statistics over all shards: per position, the longest prefix of
        ``query[position:end]`` found in the corpus."""
        best = np.zeros(positions.size, dtype=np.int64)
        for shard in self.shards:
            best = np.maximum(best, matching_lengths(shard.text, shard.sa, query, positions, ends))
        return best

    def near_duplicates(self, words: str, threshold: float = 0.8, limit: int = 5) -> list[tuple[Hit, float, float]]:
        """Corpus documents holding an edited copy of ``words`` (compared form), each with its
        containment and its closeness. Containment: the share of the text's words found in order
        in the corpus around the match (rapidfuzz's LCSseq over words), at least ``threshold``;
        words inserted into the copy cost nothing, words deleted or changed cost their share.
        Closeness: the best Indel similarity of the text and a corpus stretch of its length
        (rapidfuzz's partial_ratio over words), so inserted words count too - a copy with a few
        words changed is close, the text's words scattered through a longer stretch (pieces of
        neighbouring documents, a word inserted after every word) are contained but not close.

        Candidates come from three places, so neither edits that break every n-gram (a word
        inserted after every word or two, adjacent words swapped) nor edits spread thinly escape:
        the documents holding several of the text's rarest words (single words survive any
        insertion), those holding several of its word 3-grams (probes spread over the text), both
        found through the suffix array, and, where the index holds MinHash signatures, the LSH
        neighbours of its 5-word shingles. The corpus around a match is the run of joined records
        holding it, so a copy split over neighbouring records is compared whole."""
        from rapidfuzz import fuzz
        from rapidfuzz.distance import LCSseq

        tokens = words.split()
        if not tokens:
            return []
        size = len(words.encode("utf-8"))
        starts = (
            sorted({round(i * (len(tokens) - PROBE_WORDS) / max(PROBES - 1, 1)) for i in range(PROBES)})
            if len(tokens) > PROBE_WORDS
            else [0]
        )
        grams = [f" {' '.join(tokens[i : i + PROBE_WORDS])} ".encode() for i in starts]
        distinct = sorted(set(tokens))
        counts = self.count_frames([f" {w} ".encode() for w in distinct])
        rare = [f" {w} ".encode() for c, w in sorted(zip(counts.tolist(), distinct)) if 0 < c <= PROBE_OCCURRENCES][
            :PROBES
        ]
        # Probes are counted by place in the corpus, not by document: a copy split over short
        # joined records (a few words each, other records between them) is one place.
        width = max(size, 64)
        positions: dict[tuple[int, int], list[int]] = {}  # (shard, bucket of width bytes) -> probe positions
        chosen: list[tuple[int, int]] = []
        for probes in (grams, rare):
            hits: Counter[tuple[int, int]] = Counter()
            for probe in probes:
                where = self.occurrences(probe, PROBE_OCCURRENCES)
                buckets = set()
                for document, offset in where:
                    shard_no, shard = self._shard_of(document)
                    at = int(shard.starts[document - shard.entry.first_document]) + offset
                    buckets.add((shard_no, at // width))
                    positions.setdefault((shard_no, at // width), []).append(at)
                hits.update(buckets)
            place = Counter({key: hits[key] + hits[(key[0], key[1] + 1)] for key in hits})  # a window of two buckets
            needed = 2 if len(probes) > 2 else 1
            chosen += [
                k for k in sorted(place, key=lambda k: (-place[k], k)) if place[k] >= needed and k not in chosen
            ][:NEAR_CANDIDATES]
        for document in self._lsh_neighbours(words, threshold)[:NEAR_CANDIDATES]:
            shard_no, shard = self._shard_of(document)
            at = int(shard.starts[document - shard.entry.first_document])
            if (shard_no, at // width) not in chosen:
                chosen.append((shard_no, at // width))
                positions.setdefault((shard_no, at // width), []).append(at)
        found_docs: list[tuple[Hit, float, float]] = []
        seen_documents: set[int] = set()
        for shard_no, bucket in chosen:
            shard = self.shards[shard_no]
            hits_at = sorted(positions.get((shard_no, bucket), []) + positions.get((shard_no, bucket + 1), []))
            anchors: list[int] = []
            for offset in hits_at:  # one window per separate place the probes hit
                if not anchors or offset > anchors[-1] + size:
                    anchors.append(offset)
            anchors.sort(key=lambda a: -sum(a - size <= o <= a + 2 * size for o in hits_at))  # densest first
            windows = [self._window(shard, a, size).split() for a in anchors[:NEAR_WINDOWS]]
            scored = [(LCSseq.similarity(tokens, window), i) for i, window in enumerate(windows)]
            common, best = max(scored, key=lambda item: (item[0], -item[1]))
            local = int(shard.document_of(np.array([anchors[best]]))[0])
            document = shard.entry.first_document + local
            if common / len(tokens) >= threshold and document not in seen_documents:
                seen_documents.add(document)
                closeness = fuzz.partial_ratio(tokens, windows[best]) / 100
                found_docs.append(
                    (
                        self._hit(shard, local, int(shard.starts[local]), 0),
                        round(common / len(tokens), 4),
                        round(closeness, 4),
                    )
                )
        found_docs.sort(key=lambda item: (-item[1], item[0].document))
        return found_docs[:limit]

    def _shard_of(self, document: int) -> tuple[int, Shard]:
        return next(
            (i, s)
            for i, s in enumerate(self.shards)
            if s.entry.first_document <= document < s.entry.first_document + s.entry.documents
        )

    @staticmethod
    def _window(shard: Shard, anchor: int, size: int) -> str:
        """The compared text from ``size`` bytes before ``anchor`` to twice that after, within the
        run of joined records holding it: an edited copy split over neighbouring records is
        compared whole."""
        begin, end = shard.stream_bounds(anchor, 2 * size)
        return bytes(shard.text[max(begin, anchor - size) : min(end, anchor + 2 * size)]).decode(
            "utf-8", errors="ignore"
        )

    def _lsh_neighbours(self, words: str, threshold: float) -> list[int]:
        """Documents whose MinHash signatures the LSH puts near ``words`` (none without signatures)."""
        if self.manifest.minhash is None:
            return []
        from datasketch import LeanMinHash, MinHashLSH

        lsh = self._lsh.get(threshold)
        if lsh is None:
            lsh = MinHashLSH(threshold=threshold, num_perm=MINHASH_PERM)
            with lsh.insertion_session() as session:
                for shard in self.shards:
                    for local, row in enumerate(np.asarray(shard.minhash)):
                        session.insert(
                            shard.entry.first_document + local,
                            LeanMinHash(seed=MINHASH_SEED, hashvalues=row, scheme=MINHASH_SCHEME),
                        )
            self._lsh[threshold] = lsh
        query = LeanMinHash(
            seed=MINHASH_SEED, hashvalues=minhash_signature(f" {words} ".encode()), scheme=MINHASH_SCHEME
        )
        return sorted(lsh.query(query))
