"""A small HTTP server speaking the infini-gram JSON protocol over a local index.

``POST /`` with ``{"index": NAME, "query_type": "count" | "search_docs" | "attribution",
"query": TEXT, ...}``; answers are JSON objects, errors ``{"error": ...}`` with status 400. It
lets a corpus holder publish lookups without publishing the corpus, and lets the tests exercise
the HTTP client against a real index. Bodies are capped and every field is type-checked.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from verifier.overlap import queries
from verifier.overlap.index import CorpusIndex
from verifier.overlap.normalise import framed

MAX_BODY = 1 << 20
MAX_QUERY = 20_000  # characters: a query costs a search per word (and an attribution one per character)
MAX_DOCS = 100


def answer(index: CorpusIndex, name: str, payload: Any) -> tuple[int, dict[str, Any]]:
    """The status and JSON answer to one request (plain function: the handler only moves bytes)."""
    if not isinstance(payload, dict):
        return 400, {"error": "the request must be a JSON object"}
    if payload.get("index") != name:
        return 400, {"error": f"unknown index; this server serves {name!r}"}
    query = payload.get("query")
    if not isinstance(query, str) or not query.strip() or len(query) > MAX_QUERY:
        return 400, {"error": f"query must be a non-empty string of at most {MAX_QUERY} characters"}
    kind = payload.get("query_type")
    started = time.perf_counter()
    if kind == "count":
        result: dict[str, Any] = {"count": queries.count(index, query), "approx": False}
    elif kind == "search_docs":
        limit = payload.get("maxnum", 10)
        if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= MAX_DOCS:
            return 400, {"error": f"maxnum must be an integer from 1 to {MAX_DOCS}"}
        found = index.find_frame(framed(query), limit) if framed(query) else None
        result = {"cnt": found.count if found else 0, "approx": not (found.documents_exact if found else True),
                  "documents_total": found.documents_total if found else 0,
                  "documents": [asdict(h) | {"doc_ix": h.document} for h in (found.documents if found else [])]}
    elif kind == "attribution":
        min_len, max_cnt = payload.get("min_len", 8), payload.get("max_cnt", 3)
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in (min_len, max_cnt)) or not (1 <= min_len <= 1000 and 0 <= max_cnt <= MAX_DOCS):
            return 400, {"error": "min_len must be 1-1000 words and max_cnt 0-100"}
        result = {"spans": attribution(index, query, min_len, max_cnt)}
    else:
        return 400, {"error": "query_type must be count, search_docs or attribution"}
    result["latency"] = round((time.perf_counter() - started) * 1000, 3)
    return 200, result


def attribution(index: CorpusIndex, text: str, min_words: int, documents: int) -> list[dict[str, Any]]:
    """Every maximal span of at least ``min_words`` words, as word offsets [l, r) of the compared
    text, with its corpus count and up to ``documents`` documents."""
    found = queries.lookup(index, [text], ngram=min_words, min_span_words=min_words, spans=10**6, span_documents=documents)[0]
    return [{"l": s.start_word, "r": s.start_word + s.words, "length": s.words, "count": s.count,
             "docs": [asdict(h) | {"doc_ix": h.document} for h in s.documents]}
            for s in sorted(found.spans, key=lambda s: s.start_word)]


def make_server(index: CorpusIndex, name: str, host: str = "127.0.0.1", port: int = 0) -> ThreadingHTTPServer:
    """A server bound to ``host:port`` (port 0: any free port); call ``serve_forever``."""

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - http.server's name
            raw = self.headers.get("Content-Length") or "0"
            length = int(raw) if raw.isdigit() else -1
            if not 0 < length <= MAX_BODY:
                self.close_connection = True
                return self._send(413 if length > MAX_BODY else 400, {"error": f"body must be 1 byte to {MAX_BODY} bytes of JSON"})
            try:
                payload = json.loads(self.rfile.read(length))
            except (json.JSONDecodeError, UnicodeDecodeError, RecursionError):
                return self._send(400, {"error": "body is not JSON"})
            self._send(*answer(index, name, payload))

        def _send(self, status: int, body: dict[str, Any]) -> None:
            data = json.dumps(body, ensure_ascii=False).encode("utf-8")
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - quiet: queries may be private text
            return

    return ThreadingHTTPServer((host, port), Handler)
