"""An HTTP server speaking the infini-gram JSON protocol over a local index, made to be exposed.

``POST /`` with ``{"index": NAME, "query_type": "count" | "search_docs" | "attribution",
"query": TEXT, ...}``; answers are JSON objects, errors ``{"error": ...}`` with status 400 (413
for a body too large, 408 for one too slow, 503 when busy). It lets a corpus holder publish
lookups without publishing the corpus, and lets the tests exercise the HTTP client against a
real index.

Why it is built on uvicorn: the clients of a published index are anyone, so the server must
hold under clients that send half a request and wait, send a gigabyte, send a 5,000-digit
number, or hang up mid-answer. uvicorn serves connections from one event loop (a waiting client
holds a socket, not a thread) with a connection limit; on top of it, ``Limits`` bounds the time
a client may take to send its headers (``IndexProtocol``) and its body, the body's size, the
queries computed at once and those waiting, and every connection serves one request. Nothing a
client sends is logged (queries may be private text), and no error reaches the log as a traceback.
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass
from typing import Any

from uvicorn.protocols.http.h11_impl import H11Protocol

from verifier.boundary.peers import read_json
from verifier.corpus import queries, wire
from verifier.corpus.index import CorpusIndex
from verifier.corpus.normalise import framed
from verifier.errors import VerifierError

MAX_BODY = 1 << 20
DRAIN = 8  # an oversized body is read and dropped up to this many times max_body before the 413


@dataclass(frozen=True)
class Limits:
    """What one client may cost the server."""

    header_timeout_s: float = 5.0  # from connecting to the end of the request's headers
    body_timeout_s: float = 10.0  # to send the whole body
    max_body: int = MAX_BODY
    connections: int = (
        1024  # open connections (idle ones cost a socket, not a thread); beyond them new requests get 503
    )
    per_client: int = 32  # open connections from one address; beyond them new ones are closed at once
    workers: int = 2  # queries computed at once (CPU-bound; one per core)
    waiting: int = 64  # queries queued for a worker; beyond them 503


def answer(index: CorpusIndex, name: str, payload: Any) -> tuple[int, dict[str, Any]]:
    """The status and JSON answer to one request (plain function: the server only moves bytes)."""
    if not isinstance(payload, dict):
        return 400, {"error": "the request must be a JSON object"}
    if payload.get("index") != name:
        return 400, {"error": f"unknown index; this server serves {name!r}"}
    try:
        request = wire.read(wire.Request, payload, "request")
    except ValueError as exc:
        return 400, {"error": str(exc)}
    started = time.perf_counter()
    query = request.query
    result: wire.Wire
    if request.query_type == "count":
        result = wire.CountAnswer(count=queries.count(index, query))
    elif request.query_type == "search_docs":
        found = index.find_frame(framed(query), request.maxnum) if framed(query) else None
        result = wire.SearchAnswer(
            cnt=found.count if found else 0,
            approx=not (found.documents_exact if found else True),
            documents_total=found.documents_total if found else 0,
            documents=[wire.Document.of(h) for h in (found.documents if found else [])],
        )
    else:
        result = wire.AttributionAnswer(spans=attribution(index, query, request.min_len, request.max_cnt))
    return 200, result.model_dump() | {"latency": round((time.perf_counter() - started) * 1000, 3)}


def attribution(index: CorpusIndex, text: str, min_words: int, documents: int) -> list[wire.Span]:
    """Every maximal span of at least ``min_words`` words, as word offsets [l, r) of the compared
    text, with its corpus count and up to ``documents`` documents."""
    found = queries.lookup(
        index, [text], ngram=min_words, min_span_words=min_words, spans=10**6, span_documents=documents
    )[0]
    return [
        wire.Span(
            l=s.start_word,
            r=s.start_word + s.words,
            length=s.words,
            count=s.count,
            docs=[wire.Document.of(h) for h in s.documents],
        )
        for s in sorted(found.spans, key=lambda s: s.start_word)
    ]


def parse_body(body: bytes) -> Any:
    """The request's JSON, or None: malformed, nested past the parser, numbers too long to read,
    NaN, or a key given twice (which query was meant is not the server's to guess)."""
    try:
        return read_json(body)
    except ValueError:
        return None


class IndexApp:
    """The ASGI application: bounded body reading, computation on a bounded worker pool."""

    def __init__(self, index: CorpusIndex, name: str, limits: Limits = Limits()) -> None:
        self.index, self.name, self.limits = index, name, limits
        self._workers: asyncio.Semaphore | None = None
        self._waiting = 0

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        try:
            status, body = await self._handle(scope, receive)
        except Exception:  # noqa: BLE001 - a bug answers 500 in one line; the log never holds a query or a traceback
            status, body = 500, {"error": "internal error"}
        data = json.dumps(body, ensure_ascii=False).encode("utf-8")
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(data)).encode()),
                    (b"connection", b"close"),
                ],
            }
        )
        await send({"type": "http.response.body", "body": data})

    async def _handle(self, scope: dict, receive: Any) -> tuple[int, dict[str, Any]]:
        if scope["method"] != "POST" or scope["path"] != "/":
            return 405 if scope["path"] == "/" else 404, {"error": "POST a JSON query to /"}
        too_large = 413, {"error": f"body must be at most {self.limits.max_body} bytes of JSON"}
        declared = dict(scope["headers"]).get(b"content-length", b"")
        if declared and (not declared.isdigit() or int(declared) > DRAIN * self.limits.max_body):
            return too_large
        try:
            raw = await asyncio.wait_for(self._body(receive), self.limits.body_timeout_s)
        except TimeoutError:
            if declared and int(declared) > self.limits.max_body:
                return too_large
            return 408, {"error": f"body not received within {self.limits.body_timeout_s:.0f} s"}
        if raw is None:
            return too_large
        payload = parse_body(raw)
        if payload is None:
            return 400, {"error": "body is not JSON (or holds a number too long to read)"}
        if self._workers is None:
            self._workers = asyncio.Semaphore(self.limits.workers)
        if self._waiting >= self.limits.waiting:
            return 503, {"error": "busy; try again later"}
        self._waiting += 1
        try:
            async with self._workers:
                return await asyncio.to_thread(answer, self.index, self.name, payload)
        finally:
            self._waiting -= 1

    async def _body(self, receive: Any) -> bytes | None:
        """The body, or None when it is over ``max_body``. An oversized body is still read, and
        dropped, up to ``DRAIN`` times the limit: a server that answers 413 and closes with the
        client's bytes unread makes the kernel reset the connection, and the client then often
        loses the answer with it (its read fails with "connection broken")."""
        chunks, size = [], 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return b""
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > DRAIN * self.limits.max_body:
                return None
            if size <= self.limits.max_body:
                chunks.append(chunk)
            if not message.get("more_body", False):
                return b"".join(chunks) if size <= self.limits.max_body else None


class IndexProtocol(H11Protocol):
    """uvicorn's HTTP/1.1 protocol with a deadline for a request's headers - a client that
    connects and sends nothing, or a byte at a time, is disconnected after ``header_timeout_s``
    (uvicorn times only idle keep-alive connections; every connection here serves one request) -
    and at most ``per_client`` open connections per address, so one client holding half-sent
    requests cannot take every connection (clients behind one proxy share an address: a server
    exposed behind a proxy should set its per-client limits there)."""

    header_timeout_s = Limits.header_timeout_s
    per_client = Limits.per_client
    open_by_address: dict[str, int] = {}  # per bound subclass: one server's counts

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        peer = transport.get_extra_info("peername")
        self._address = str(peer[0]) if isinstance(peer, tuple) and peer else "?"
        self.open_by_address[self._address] = self.open_by_address.get(self._address, 0) + 1
        self._header_timer = self.loop.call_later(self.header_timeout_s, self._too_slow)
        if self.open_by_address[self._address] > self.per_client:
            transport.close()

    def _too_slow(self) -> None:
        if self.cycle is None and not self.transport.is_closing():
            self.transport.close()

    def connection_lost(self, exc: Exception | None) -> None:
        self._header_timer.cancel()
        left = self.open_by_address.get(self._address, 1) - 1
        if left > 0:
            self.open_by_address[self._address] = left
        else:
            self.open_by_address.pop(self._address, None)
        super().connection_lost(exc)


class IndexServer:
    """A uvicorn server for one index on a socket bound at creation (so its port is known)."""

    def __init__(
        self, index: CorpusIndex, name: str, host: str = "127.0.0.1", port: int = 0, limits: Limits = Limits()
    ) -> None:
        import socket

        import uvicorn

        protocol = type(
            "BoundIndexProtocol",
            (IndexProtocol,),
            {"header_timeout_s": limits.header_timeout_s, "per_client": limits.per_client, "open_by_address": {}},
        )
        config = uvicorn.Config(
            IndexApp(index, name, limits),
            host=host,
            port=port,
            http=protocol,
            lifespan="off",
            access_log=False,
            log_level="critical",
            limit_concurrency=limits.connections,
            timeout_keep_alive=1,
            h11_max_incomplete_event_size=16 << 10,
            server_header=False,
            date_header=False,
        )
        self.server = uvicorn.Server(config)
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self.socket = socket.socket(family, socket.SOCK_STREAM)
        self.socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            self.socket.bind((host, port))
        except OSError as exc:
            self.socket.close()
            raise VerifierError(f"cannot listen on {host}:{port} ({exc.strerror})") from None
        self.server_port: int = self.socket.getsockname()[1]

    def serve_forever(self) -> None:
        """Serve until SIGINT or SIGTERM (in the main thread) or ``shutdown()``."""
        self.server.run(sockets=[self.socket])

    def shutdown(self) -> None:
        self.server.should_exit = True


def make_server(
    index: CorpusIndex, name: str, host: str = "127.0.0.1", port: int = 0, limits: Limits = Limits()
) -> IndexServer:
    """A server for ``index`` bound to ``host:port`` (port 0: any free port); call ``serve_forever``."""
    return IndexServer(index, name, host, port, limits)
