"""Corpus backends behind one interface: a local index folder, or an infini-gram-style HTTP API.

The route and the CLI ask a backend for counts, documents and per-document lookups and never
know which one answers. A remote index that cannot be reached after retries raises
``IndexUnavailable``: the caller reports "not available", never "absent".
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import urlsplit

import numpy as np

from verifier.boundary.peers import Answer, ItemFailed, PeerAccess, PeerClient, Retry, read_json
from verifier.corpus import queries, wire
from verifier.corpus.forms import read_form
from verifier.corpus.index import CorpusIndex, Found
from verifier.corpus.normalise import normalise
from verifier.corpus.queries import Lookup, Span, covered_from_spans, summarise
from verifier.errors import VerifierError

MAX_RESPONSE = 32 << 20


class IndexUnavailable(VerifierError):
    """A remote index did not answer usably after every retry."""


class CorpusBackend(Protocol):
    def describe(self) -> dict[str, Any]: ...
    def count(self, text: str) -> int: ...
    def find(self, text: str, limit: int = 10) -> Found: ...
    def lookup(
        self,
        texts: list[str],
        *,
        ngram: int = 13,
        min_span_words: int = 8,
        spans: int = 10,
        span_documents: int = 3,
        characters: bool = False,
        near_duplicates: float | None = None,
        shared_documents: int | None = None,
    ) -> list[Lookup]: ...


class LocalBackend:
    """A built index folder, opened and checked against its manifest."""

    def __init__(self, index: CorpusIndex) -> None:
        self.index = index

    def describe(self) -> dict[str, Any]:
        m = self.index.manifest
        return {
            "kind": "local index",
            "name": self.index.name,
            "index_sha256": self.index.sha256,
            "corpus_sha256": m.corpus_sha256,
            "documents": m.documents,
            "text_bytes": m.text_bytes,
            "shards": len(m.shards),
            "normalisation": m.normalisation,
            "minhash": m.minhash is not None,
            "sources": [{"name": s.name, "sha256": s.sha256} for s in m.sources],
        }

    def count(self, text: str) -> int:
        return queries.count(self.index, text)

    def find(self, text: str, limit: int = 10) -> Found:
        return queries.find(self.index, text, limit)

    def lookup(self, texts: list[str], **options: Any) -> list[Lookup]:
        return queries.lookup(self.index, texts, **options)


class RemoteBackend:
    """An index behind the infini-gram JSON protocol (POST {"index", "query_type", "query"}).

    Uses ``count``, ``search_docs`` and ``attribution`` (maximal spans with their documents, as
    OLMoTrace attributes model output); spans are read as word offsets of the compared text, as
    ``verifier corpus serve`` returns them. Sent through the shared peer client (no redirects, a
    deadline for the whole answer, a streamed size cap, bounded retries; plain http only to this
    machine unless the auditor allows it); requests are spaced by ``min_interval`` seconds to
    stay polite."""

    def __init__(
        self,
        url: str,
        name: str,
        *,
        access: PeerAccess | None = None,
        timeout: float = 10.0,
        retries: int = 3,
        backoff: float = 0.5,
        min_interval: float = 0.05,
    ) -> None:
        parts = urlsplit(url)  # scheme, host and credentials are checked by the peer client
        self.url = f"{parts.scheme}://{parts.netloc}{parts.path or '/'}"
        self.name = name
        self.client = PeerClient(
            self.url,
            what="index API",
            access=access or PeerAccess(),
            timeout_s=timeout,
            retries=retries,
            max_body=MAX_RESPONSE,
            rate_limit=1.0 / min_interval if min_interval > 0 else None,
            backoff_s=backoff,
        )

    def describe(self) -> dict[str, Any]:
        usage = self.client.usage
        return {
            "kind": "remote index",
            "name": self.name,
            "endpoint": self.url,
            "requests": usage.requests,
            "retried_failures": usage.retries,
        }

    def _read(self, answer: Answer) -> dict[str, Any]:
        try:
            data = read_json(answer.body)
        except ValueError:  # malformed, a key given twice, NaN, too deep
            raise Retry("malformed JSON") from None
        if not isinstance(data, dict):
            raise Retry("an answer that is not a JSON object")
        if "error" in data or answer.status >= 400:
            raise VerifierError(
                f"index API {self.url}, index {self.name}: "
                f"{' '.join(str(data.get('error', answer.status)).split())[:200]}"
            )
        return data

    def _post(self, payload: dict[str, Any]) -> dict[str, Any]:
        try:
            return self.client.post("", {"index": self.name, **payload}, self._read)
        except ItemFailed as exc:
            raise IndexUnavailable(f"index API {self.url}, index {self.name}: not available ({exc})") from None

    def count(self, text: str) -> int:
        with _answer(self.url, "count"):
            return wire.read(wire.CountAnswer, self._post({"query_type": "count", "query": text}), "count").count

    def find(self, text: str, limit: int = 10) -> Found:
        data = self._post({"query_type": "search_docs", "query": text, "maxnum": limit})
        with _answer(self.url, "search_docs"):
            answer = wire.read(wire.SearchAnswer, data, "search_docs")
            docs = [d.hit() for d in answer.documents][:limit]
            total = len(answer.documents) if answer.documents_total is None else answer.documents_total
            if len(docs) < min(limit, total):  # fewer listed than asked for while more hold it
                raise ValueError(f"{answer.cnt} occurrence(s) in {total} document(s) with {len(docs)} listed")
            return Found(answer.cnt, docs, total, answer.approx is False)

    def lookup(
        self,
        texts: list[str],
        *,
        ngram: int = 13,
        min_span_words: int = 8,
        spans: int = 10,
        span_documents: int = 3,
        characters: bool = False,
        near_duplicates: float | None = None,
        shared_documents: int | None = None,
    ) -> list[Lookup]:
        """Per text, one attribution request for every maximal span of at least ``min(ngram,
        min_span_words)`` words; n-gram overlap and verbatim presence follow from the spans. The
        50-character rule and near-duplicates need the index itself: None here. Shared text is
        judged by a span's occurrences (the server does not count distinct documents), which
        sets aside at least what the local index would: it can only weaken a finding of presence."""
        results = []
        shortest = min(ngram, min_span_words)
        for text in texts:
            reading = read_form(text)
            norm = normalise(reading.text)
            words = len(norm.split())
            data = self._post(
                {"query_type": "attribution", "query": reading.text, "min_len": shortest, "max_cnt": span_documents}
            )
            with _answer(self.url, "attribution"):
                raw = wire.read(wire.AttributionAnswer, data, "attribution").spans
                for span in raw:  # each span occurs somewhere, in documents the answer names (when any were asked for)
                    if span_documents and not span.docs:
                        raise ValueError(f"a span found {span.count} time(s) with 0 document(s) named")
                bounds = [(span.l, span.r - span.l) for span in raw]
                if any(first + k > words for first, k in bounds):
                    raise ValueError("attribution spans outside the text (another normalisation?)")
                shared = None
                if shared_documents is not None:
                    shared = np.zeros(words, dtype=bool)
                    for span, (first, k) in zip(raw, bounds):
                        if k >= ngram and span.count >= shared_documents:
                            shared[first : first + k] = True
                result = summarise(
                    norm, covered_from_spans(words, bounds), ngram, min_span_words, spans, None, None, shared=shared
                )
                by_first = {span.l: span for span in raw}
                result.spans[:] = [
                    Span(
                        sp.start,
                        sp.end,
                        sp.words,
                        by_first[sp.start_word].count,
                        [d.hit() for d in by_first[sp.start_word].docs][:span_documents],
                        sp.start_word,
                    )
                    for sp in result.spans
                ]
            results.append(replace(result, form=reading.form, unread=reading.unread))
        return results


@contextmanager
def _answer(url: str, query_type: str) -> Iterator[None]:
    """An answer of the wrong shape is the API's error, named in one line."""
    try:
        yield
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise VerifierError(
            f"index API {url}: a {query_type} answer of the wrong shape ({type(exc).__name__}: {str(exc)[:80]})"
        ) from None


def open_backend(spec: str, *, verify: bool = True, access: PeerAccess | None = None) -> CorpusBackend:
    """``http(s)://HOST/PATH#NAME`` for an API, anything else a local index folder."""
    if spec.startswith(("http://", "https://")):
        url, _, name = spec.partition("#")
        if not name:
            raise VerifierError(f"{spec}: name the index after '#', e.g. http://127.0.0.1:8000/#demo")
        return RemoteBackend(url, name, access=access)
    return LocalBackend(CorpusIndex.open(Path(spec), verify=verify))


def query_report(
    backend: CorpusBackend, text: str, *, ngram: int, min_span_words: int, documents: int
) -> dict[str, Any]:
    """Everything ``verifier corpus query`` prints, as data, with the printed lines."""
    found = backend.find(text, documents)
    result = backend.lookup(
        [text],
        ngram=ngram,
        min_span_words=min_span_words,
        span_documents=documents,
        characters=isinstance(backend, LocalBackend),
    )[0]
    lines = [
        f"index: {backend.describe()['name']}",
        f"count (whole words, compared form): {found.count} in "
        f"{found.documents_total}{'' if found.documents_exact else '+'} document(s)",
    ]
    lines += [
        f"  document {h.document} {json.dumps(h.meta, ensure_ascii=False)}: ...{h.snippet}..." for h in found.documents
    ]
    lines.append(
        f"{result.ngram}-gram overlap: {result.ngrams_found}/{result.ngrams} ({result.ngram_share:.1%}); "
        f"verbatim: {'yes' if result.verbatim else 'no'}; longest span: {result.longest_words} words"
        + (
            ""
            if result.fifty_char is None
            else f"; 50-character rule: {'yes' if result.fifty_char else 'no'} (longest {result.longest_chars} "
            "characters)"
        )
    )
    for span in result.spans:
        lines.append(
            f"span words {span.start_word}-{span.start_word + span.words} ({span.words} words, {span.count} in "
            f"corpus): {result.text[span.start : span.end]}"
        )
        lines += [f"  document {h.document} {json.dumps(h.meta, ensure_ascii=False)}" for h in span.documents]
    return {"index": backend.describe(), "found": asdict(found), "lookup": asdict(result), "lines": lines}
