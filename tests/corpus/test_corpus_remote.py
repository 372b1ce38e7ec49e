"""The HTTP backend against a real server started here on 127.0.0.1 (``verifier corpus serve``'s
server over the real demo index), and against a local proxy that produces the faults a hosted
API produces: 429, 5xx, malformed JSON, dropped connections, timeouts."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import requests

from verifier.corpus import CorpusIndex, lookup
from verifier.corpus.backends import IndexUnavailable, LocalBackend, RemoteBackend, open_backend
from verifier.corpus.server import IndexServer, make_server
from verifier.errors import VerifierError


def serve(server: ThreadingHTTPServer | IndexServer) -> Iterator[str]:
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/"
    finally:
        server.shutdown()
        thread.join(10)
        if isinstance(server, ThreadingHTTPServer):
            server.server_close()


@pytest.fixture(scope="module")
def api(demo_index: CorpusIndex) -> Iterator[str]:
    yield from serve(make_server(demo_index, "demo"))


def texts(demo_index: CorpusIndex) -> list[str]:
    shard = demo_index.shards[0]
    return [
        shard.words_of(3),
        shard.words_of(40)[:300] + " plus words never seen zzqx",
        "nothing of this is in it zzqx qqq",
    ]


def test_remote_answers_equal_local(api: str, demo_index: CorpusIndex) -> None:
    remote = open_backend(api + "#demo")
    local = LocalBackend(demo_index)
    sample = texts(demo_index)
    for text in sample + ["of the", "project gutenberg"]:
        assert remote.count(text) == local.count(text)
        r, loc = remote.find(text, 5), local.find(text, 5)
        # whole hits: the document, its metadata (the ids a report names; the remote answers once lost them), offset and
        # snippet
        assert (r.count, r.documents, r.documents_total) == (loc.count, loc.documents, loc.documents_total)
    got = remote.lookup(sample, ngram=13, min_span_words=8)
    want = lookup(demo_index, sample, ngram=13, min_span_words=8)
    for g, w in zip(got, want):
        assert (g.ngrams, g.ngrams_found, g.verbatim) == (w.ngrams, w.ngrams_found, w.verbatim)
        assert [(s.start, s.end, s.words, s.count, s.documents) for s in g.spans] == [
            (s.start, s.end, s.words, s.count, s.documents) for s in w.spans
        ]
        assert g.fifty_char is None and g.near_duplicates is None  # need the index itself: not claimed remotely
    assert got[0].verbatim and got[2].ngrams_found == 0


def test_server_refuses_bad_requests(api: str) -> None:
    for body in (
        {"index": "other", "query_type": "count", "query": "x"},
        {"index": "demo", "query_type": "drop", "query": "x"},
        {"index": "demo", "query_type": "count", "query": 5},
        {"index": "demo", "query_type": "search_docs", "query": "x", "maxnum": 10**9},
        [1, 2],
    ):
        response = requests.post(api, json=body, timeout=5)
        assert response.status_code == 400 and "error" in response.json()
    assert requests.post(api, data=b"{nope", timeout=5).status_code == 400
    assert (
        requests.post(api, json={"index": "demo", "query_type": "count", "query": "x " * 20_000}, timeout=5).status_code
        == 400
    )
    import socket

    with socket.create_connection(("127.0.0.1", int(api.rsplit(":", 1)[1].strip("/")))) as raw:  # a malformed header
        raw.sendall(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n")
        assert b" 400 " in raw.recv(4096).split(b"\r\n")[0] + b" "
    with pytest.raises(VerifierError, match="unknown index") as info:
        RemoteBackend(api, "other", retries=0).count("x")
    assert not isinstance(info.value, IndexUnavailable)  # a refusal is not an outage


class Faults:
    """A proxy in front of the real server: the first requests get faults, the rest are forwarded."""

    def __init__(self, upstream: str, plan: list[str]) -> None:
        self.upstream, self.plan, self.seen = upstream, list(plan), []

    def handler(self) -> type[BaseHTTPRequestHandler]:
        faults = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                fault = faults.plan.pop(0) if faults.plan else "forward"
                faults.seen.append(fault)
                if fault == "slow":
                    time.sleep(1.0)
                if fault in ("429", "503"):
                    self.send_response(int(fault))
                    self.send_header("Retry-After", "0")
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                if fault == "garbled":
                    data = b'{"count": 12'
                elif fault == "nan":
                    data = b'{"count": NaN}'
                elif fault == "deep":
                    data = b"[" * 100_000 + b"]" * 100_000
                elif fault == "dropped":
                    self.send_response(200)
                    self.send_header("Content-Length", "1000")
                    self.end_headers()
                    self.wfile.write(b'{"count"')
                    self.wfile.flush()
                    self.close_connection = True
                    return
                else:
                    data = requests.post(
                        faults.upstream, data=body, headers={"Content-Type": "application/json"}, timeout=5
                    ).content
                self.send_response(200)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: object) -> None:
                return

        return Handler


def test_faults_are_retried_then_answered(api: str, demo_index: CorpusIndex) -> None:
    faults = Faults(api, ["429", "503", "garbled", "nan", "deep", "dropped", "slow"])
    for url in serve(ThreadingHTTPServer(("127.0.0.1", 0), faults.handler())):
        client = RemoteBackend(url, "demo", timeout=0.5, retries=7, backoff=0.01, min_interval=0.0)
        assert client.count("of the") == LocalBackend(demo_index).count("of the")
        assert faults.seen == ["429", "503", "garbled", "nan", "deep", "dropped", "slow", "forward"]
        assert (client.client.usage.retries, client.client.usage.requests) == (7, 8)


def test_unreachable_index_is_not_available_never_absent(api: str) -> None:
    faults = Faults(api, ["503"] * 10)
    for url in serve(ThreadingHTTPServer(("127.0.0.1", 0), faults.handler())):
        client = RemoteBackend(url, "demo", timeout=0.5, retries=2, backoff=0.01, min_interval=0.0)
        with pytest.raises(IndexUnavailable, match="not available .*after 3 attempts") as info:
            client.lookup(["any text at all"])
        assert "\n" not in str(info.value)
    closed = RemoteBackend("http://127.0.0.1:9/", "demo", timeout=0.5, retries=1, backoff=0.01)
    with pytest.raises(IndexUnavailable):
        closed.count("x")


def test_rate_limit_spaces_requests(api: str) -> None:
    client = RemoteBackend(api, "demo", min_interval=0.1)
    started = time.monotonic()
    for _ in range(4):
        client.count("the")
    assert time.monotonic() - started >= 0.3
