"""Token frequency tables: how often each token of a tokenizer occurs in a reference corpus (DC-PDD).

DC-PDD (Zhang et al. 2024) calibrates a model's token probabilities by the tokens' frequencies
in a large public corpus (the paper counts C4). Counts are token-level numbers: they mean
something only in the tokenizer they were counted with, so a table carries its tokenizer's
fingerprint (``targets.base.tokenizer_fingerprint``) and is used only with a target whose
fingerprint is the same; any other pairing is refused, never silently mixed.

A table is a ``.npz`` file: ``counts`` (int64, one per token id) and ``meta`` (JSON: the
tokenizer fingerprint, where the text came from, how many documents and tokens were counted).
Files are read at the boundary: a damaged or altered file is one line naming it. The package
bundles one, counted with SmolLM2's tokenizer over the bundled PG-19 book openings
(``examples/data/frequencies``, with its provenance); a claim or the CLI may name another.
"""

from __future__ import annotations

import hashlib
import io
import json
import zipfile
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from verifier.errors import VerifierError

BUNDLED = Path(__file__).resolve().parent.parent / "examples" / "data" / "frequencies"
MAX_BYTES = 64 << 20  # a vocabulary of 8M tokens: anything larger is not a frequency table
MAX_COUNT = 2**53  # tokens counted in all: past this, float64 arithmetic on the counts is inexact
MAX_TOKENS_PER_TEXT = 1024  # as the paper's code counts: each reference text truncated to 1,024 tokens


@dataclass(frozen=True)
class FrequencyTable:
    """Token counts of a reference corpus in one tokenizer."""

    counts: np.ndarray  # int64 [vocabulary]
    tokenizer: str  # the fingerprint of the tokenizer the counts were made with
    source: str  # what was counted (a name and its provenance, never a private path)
    documents: int
    sha256: str  # of the file's bytes (or of the counts, for a table built in memory)

    def probabilities(self, ids: np.ndarray) -> np.ndarray:
        """Laplace-smoothed frequency of each token id, (1 + count) / (total + vocabulary), as
        the paper's code computes it; an id beyond the table counts 0."""
        ids = np.asarray(ids, dtype=np.int64)
        counts = np.where((ids >= 0) & (ids < len(self.counts)), self.counts[np.clip(ids, 0, len(self.counts) - 1)], 0)
        return (1.0 + counts) / (float(self.counts.sum()) + len(self.counts))

    def as_finding(self) -> dict[str, object]:
        return {
            "source": self.source,
            "documents": self.documents,
            "tokens": int(self.counts.sum()),
            "vocabulary": len(self.counts),
            "tokenizer": self.tokenizer,
            "sha256": self.sha256,
        }

    def to_bytes(self) -> bytes:
        buffer = io.BytesIO()
        meta = {"tokenizer": self.tokenizer, "source": self.source, "documents": self.documents}
        np.savez_compressed(
            buffer, counts=self.counts.astype(np.int64), meta=np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)
        )
        return buffer.getvalue()


def build_table(
    encode: Callable[[Sequence[str]], list[list[int]]],
    vocabulary: int,
    texts: Sequence[str],
    tokenizer: str,
    source: str,
) -> FrequencyTable:
    """Count the tokens of ``texts`` (each cut to ``MAX_TOKENS_PER_TEXT`` tokens) with ``encode``."""
    counts = np.zeros(vocabulary, dtype=np.int64)
    for ids in encode(list(texts)):
        np.add.at(counts, np.asarray(ids[:MAX_TOKENS_PER_TEXT], dtype=np.int64), 1)
    return FrequencyTable(counts, tokenizer, source, len(texts), hashlib.sha256(counts.tobytes()).hexdigest())


def read_table(path: Path, raw: bytes | None = None) -> FrequencyTable:
    """A table from its file (or from ``raw``, the bytes read from it and digested by the caller);
    one line naming the file on anything wrong with it."""
    try:
        if raw is None:
            if not path.is_file():
                raise VerifierError(f"{path.name}: token frequency table not found")
            if path.stat().st_size > MAX_BYTES:
                raise VerifierError(f"{path.name}: larger than {MAX_BYTES >> 20} MiB, not a token frequency table")
            raw = path.read_bytes()
        if len(raw) > MAX_BYTES:
            raise VerifierError(f"{path.name}: larger than {MAX_BYTES >> 20} MiB, not a token frequency table")
        with zipfile.ZipFile(
            io.BytesIO(raw)
        ) as archive:  # expanded sizes first: a small file must not inflate to gigabytes
            if sum(member.file_size for member in archive.infolist()) > 4 * MAX_BYTES:
                raise VerifierError(f"{path.name}: expands past {4 * MAX_BYTES >> 20} MiB, not a token frequency table")
        with np.load(io.BytesIO(raw), allow_pickle=False) as data:
            counts, meta = data["counts"], data["meta"]
            if not (
                isinstance(counts, np.ndarray) and isinstance(meta, np.ndarray)
            ):  # a zip member that is no .npy array reads as bytes
                raise VerifierError(
                    f"{path.name}: counts and meta must be arrays (.npy members), not a token frequency table"
                )
            meta = json.loads(meta.tobytes().decode())
    except VerifierError:
        raise
    except (
        OSError,
        ValueError,
        KeyError,
        EOFError,
        RecursionError,
        zipfile.BadZipFile,
        zlib.error,
        UnicodeDecodeError,
    ) as exc:
        raise VerifierError(f"{path.name}: not a readable token frequency table ({type(exc).__name__})") from None
    # Checked before any cast: a uint64 count above 2**63 would wrap negative, a sum past 2**62 overflow.
    if (
        counts.ndim != 1
        or counts.dtype.kind not in "iu"
        or len(counts) < 2
        or (counts < 0).any()
        or counts.max() > MAX_COUNT
        or float(counts.astype(np.float64).sum()) > MAX_COUNT
        or not counts.any()
    ):
        raise VerifierError(
            f"{path.name}: counts must be one non-negative integer per token id, at least 1 and {MAX_COUNT} in all at "
            "most"
        )
    if not isinstance(meta, dict) or not all(
        isinstance(meta.get(k), t) for k, t in (("tokenizer", str), ("source", str), ("documents", int))
    ):
        raise VerifierError(f"{path.name}: meta must name the tokenizer, the source and the documents counted")
    return FrequencyTable(
        counts.astype(np.int64),
        meta["tokenizer"],
        meta["source"][:300],
        meta["documents"],
        hashlib.sha256(raw).hexdigest(),
    )


def bundled_table(tokenizer: str | None) -> FrequencyTable | None:
    """The bundled table counted with the tokenizer of this fingerprint, if there is one."""
    if tokenizer is None:
        return None
    for path in sorted(BUNDLED.glob("*.npz")):
        table = read_table(path)
        if table.tokenizer == tokenizer:
            return table
    return None


def table_for(target: object, path: Path | None = None, raw: bytes | None = None) -> FrequencyTable | None:
    """The table DC-PDD reads for ``target``: the one named (``raw``: its bytes, as the caller read
    them; refused if counted with another tokenizer), else the bundled one of its tokenizer, else
    None (DC-PDD is then not computable)."""
    fingerprint = getattr(target, "tokenizer_fingerprint", None)
    if path is None:
        return bundled_table(fingerprint)
    table = read_table(path, raw)
    if fingerprint is None:
        raise VerifierError(
            f"{path.name}: the target does not say which tokenizer it uses, so token counts cannot be matched to it"
        )
    if table.tokenizer != fingerprint:
        raise VerifierError(
            f"{path.name}: counted with another tokenizer than the target's (fingerprint {table.tokenizer[:12]} "
            f"vs {fingerprint[:12]}): token-level numbers of two tokenizers are never mixed"
        )
    tokenizer = getattr(target, "tokenizer", None)  # a local model's: its vocabulary is known (a server's is not)
    if tokenizer is not None and len(table.counts) != len(tokenizer):
        raise VerifierError(
            f"{path.name}: counts {len(table.counts)} token ids, the target's tokenizer has {len(tokenizer)}: "
            "not counted with this tokenizer"
        )
    return table
