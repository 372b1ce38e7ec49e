"""What other parties' servers, files and indexes can do to an auditor's machine and verdict.

Each test is a class of attack an outside red team found (issue 24), kept so it cannot return:
a claim choosing which secret is sent where, a remote index redirecting or dripping or flooding
its answers, hostile corpus files, consistently edited indexes, hostile clients of
``verifier corpus serve``, bundles pinning their own key, and unreachable peers turned into verdicts.
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
import pytest
import requests

from verifier.boundary.peers import PeerAccess, check_endpoint, is_loopback
from verifier.corpus import CorpusIndex, build_index
from verifier.corpus.backends import IndexUnavailable, RemoteBackend
from verifier.corpus.server import Limits, make_server
from verifier.corpus.sources import ReadLimits
from verifier.errors import VerifierError

ROOT = Path(__file__).resolve().parents[2]
CLI = [str(Path(sys.executable).parent / "verifier")]


# -- secrets and plain http ----------------------------------------------------------------


@pytest.mark.parametrize(
    "url, allowed",
    [
        ("http://127.0.0.1:8000/v1", True),
        ("http://localhost/v1", True),
        ("http://[::1]:9/", True),
        ("http://127.3.2.1/", True),
        ("https://api.example.com/v1", True),
        ("http://10.0.0.7:8000/v1", False),
        ("http://api.example.com/v1", False),
        ("http://localhost.example.com/", False),
        ("http://127.0.0.1.nip.io/", False),
    ],
)
def test_plain_http_leaves_this_machine_only_when_the_auditor_says_so(url, allowed):
    if allowed:
        check_endpoint(url, "API endpoint", PeerAccess())
    else:
        with pytest.raises(VerifierError, match="plain http to another machine .* --allow-http"):
            check_endpoint(url, "API endpoint", PeerAccess())
        check_endpoint(url, "API endpoint", PeerAccess(allow_http=True))
    assert is_loopback("127.0.0.1") and not is_loopback("0.0.0.0")


def test_a_claim_naming_a_key_variable_is_refused_and_no_key_is_sent_without_the_auditor(tmp_path, monkeypatch):
    """With ``api_key_env: HF_TOKEN`` in the claim, the auditor's token went to the claim's server."""
    from verifier.audit import run_audit

    seen: list[str | None] = []

    class Recorder(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            seen.append(self.headers.get("Authorization"))
            self._send({"data": [{"id": "m"}]})

        def do_POST(self) -> None:
            seen.append(self.headers.get("Authorization"))
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            self._send({"choices": [{"message": {"content": "a reply"}, "finish_reason": "stop"}]})

        def _send(self, body: dict) -> None:
            data = json.dumps(body).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: object) -> None:
            return

    monkeypatch.setenv("HF_TOKEN", "hf_auditors_own_token_0123456789")
    monkeypatch.setenv("VERIFIER_CACHE_SECRET", str(tmp_path / "secret"))
    server = ThreadingHTTPServer(("127.0.0.1", 0), Recorder)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        rows = [
            json.loads(line)
            for line in (ROOT / "verifier/examples/data/wikimia/length64.jsonl").read_text().splitlines()
        ]
        (tmp_path / "s.jsonl").write_text("".join(json.dumps({"text": r["text"]}) + "\n" for r in rows[:6]))
        claim = {
            "claim": {"id": "k", "statement": "s", "kind": "trained_on", "made_by": "m"},
            "model": {
                "target": f"openai-compatible:http://127.0.0.1:{server.server_address[1]}/v1#m",
                "api": {"api_key_env": "HF_TOKEN"},
            },
            "evidence": {"suspect": {"path": "s.jsonl"}},
        }
        import yaml

        (tmp_path / "claim.yaml").write_text(yaml.safe_dump(claim))
        with pytest.raises(VerifierError, match="cannot choose which of the auditor's secrets"):
            run_audit(tmp_path / "claim.yaml")
        assert seen == []
        from verifier.targets import OpenAICompatibleTarget
        from verifier.targets.queries import CHAT, Query

        target = OpenAICompatibleTarget(claim["model"]["target"])  # no key named by the auditor: none is sent
        target.answer([Query(CHAT, "hello")])
        assert seen and all(h is None for h in seen)
    finally:
        server.shutdown()
        server.server_close()


# -- a hostile remote index ------------------------------------------------------------------


class HostileIndex(BaseHTTPRequestHandler):
    mode = "redirect"
    elsewhere_seen: list[bytes] = []
    elsewhere_port = 0

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        if self.mode == "elsewhere":
            type(self).elsewhere_seen.append(body)
            return self._send(200, b'{"count": 0, "approx": false}')
        if self.mode == "redirect":
            self.send_response(307)
            self.send_header("Location", f"http://127.0.0.1:{self.elsewhere_port}/")
            self.send_header("Content-Length", "0")
            self.end_headers()
        elif self.mode == "drip":
            self.send_response(200)
            self.send_header("Content-Length", "1000")
            self.end_headers()
            try:
                for _ in range(1000):
                    self.wfile.write(b" ")
                    self.wfile.flush()
                    time.sleep(0.05)
            except OSError:
                pass
        elif self.mode == "drip_headers":  # the status line and headers a byte at a time: no per-read timeout trips
            try:
                for byte in b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nX-Padding: " + b"x" * 400:
                    self.wfile.write(bytes([byte]))
                    self.wfile.flush()
                    time.sleep(0.05)
            except OSError:
                pass
            self.close_connection = True
        elif self.mode == "retry_after_hours":
            self.send_response(429)
            self.send_header("Retry-After", "36000")
            self.send_header("Content-Length", "0")
            self.end_headers()
        elif self.mode in ("duplicate_keys", "spans_in_no_document", "found_nowhere"):
            data = {
                "duplicate_keys": b'{"count": 0, "count": 99, "approx": false}',
                "spans_in_no_document": json.dumps(
                    {"spans": [{"l": 0, "r": 4, "length": 4, "count": 7, "docs": []}]}
                ).encode(),
                "found_nowhere": json.dumps(
                    {"cnt": 12, "approx": False, "documents_total": 0, "documents": []}
                ).encode(),
            }[self.mode]
            self._send(200, data)
        elif self.mode == "declared_huge":
            self.send_response(200)
            self.send_header("Content-Length", str(300 << 20))
            self.end_headers()
        elif self.mode == "flood":  # no length: streamed until the client hangs up
            self.send_response(200)
            self.end_headers()
            chunk = b" " * (1 << 20)
            try:
                for _ in range(300):
                    self.wfile.write(chunk)
            except OSError:
                pass
            self.close_connection = True

    def _send(self, status: int, data: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        return


@contextmanager
def hostile(mode: str) -> Iterator[str]:
    """The URL of a loopback index server behaving as ``mode`` says, for the block's duration."""
    handler = type(f"Hostile{mode}", (HostileIndex,), {"mode": mode})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


def test_a_remote_index_that_redirects_is_refused_and_the_query_never_reaches_the_second_server():
    HostileIndex.elsewhere_seen.clear()
    with hostile("elsewhere") as elsewhere, hostile("redirect") as first:
        HostileIndex.elsewhere_port = int(elsewhere.rsplit(":", 1)[1].strip("/"))
        client = RemoteBackend(first, "demo", retries=0)
        with pytest.raises(VerifierError, match=r"redirects \(307\) to http://127.0.0.1:\d+/; name the final endpoint"):
            client.count("private suspect words")
        assert HostileIndex.elsewhere_seen == []


@pytest.mark.parametrize(
    "mode, why",
    [
        ("drip", "not complete within the timeout"),
        ("declared_huge", "larger than 32 MiB"),
        ("flood", "larger than 32 MiB"),
    ],
)
def test_a_remote_index_cannot_hold_the_auditor_for_hours_or_fill_its_memory(mode, why):
    """A 1 byte/s answer hung for hours and a 300 MB one took 682 MB: whole-answer deadline, streamed cap."""
    import resource

    with hostile(mode) as url:
        client = RemoteBackend(url, "demo", timeout=1.0, retries=0)
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        started = time.monotonic()
        with pytest.raises(IndexUnavailable, match=why):
            client.count("words")
        assert time.monotonic() - started < 5
        assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 200_000  # KiB: the cap, not the answer


def test_headers_dripped_a_byte_at_a_time_are_cut_at_the_deadline():
    """Socket timeouts are per read: a server sending its headers a byte every 50 ms held a query forever."""
    with hostile("drip_headers") as url:
        client = RemoteBackend(url, "demo", timeout=1.0, retries=2)
        started = time.monotonic()
        with pytest.raises(IndexUnavailable, match="not complete within the timeout"):
            client.count("words")
        assert time.monotonic() - started < 4


def test_retry_after_pauses_are_bounded_in_all_not_per_attempt():
    with hostile("retry_after_hours") as url:
        client = RemoteBackend(url, "demo", retries=4)
        started = time.monotonic()
        with pytest.raises(IndexUnavailable, match=r"asked to wait 36000 s more \(at most 120 s in all\)"):
            client.count("words")
        assert time.monotonic() - started < 5


@pytest.mark.parametrize(
    "mode, call, why",
    [
        ("duplicate_keys", lambda c: c.count("the words"), "malformed JSON"),
        (
            "spans_in_no_document",
            lambda c: c.lookup(["one two three four five"], ngram=2, min_span_words=2),
            "found 7 time.s. with 0 document",
        ),
        ("found_nowhere", lambda c: c.find("the words"), "12 occurrence.s. in 0 document"),
    ],
)
def test_index_answers_that_contradict_themselves_are_refused(mode, call, why):
    """A span found 7 times in no document gave a signed VERIFIED under trust_remote."""
    with hostile(mode) as url:
        client = RemoteBackend(url, "demo", retries=0)
        with pytest.raises(VerifierError, match=why):
            call(client)


def test_a_number_too_long_to_read_in_corpus_or_document_files_is_one_line(tmp_path):
    from verifier.data import load_documents

    (tmp_path / "big.jsonl").write_text('{"text": "hi there friend", "n": ' + "9" * 100_000 + "}\n")
    with pytest.raises(VerifierError, match=r"big.jsonl: line 1: holds a number too long to read"):
        build_index([tmp_path / "big.jsonl"], tmp_path / "index")
    with pytest.raises(VerifierError, match=r"big.jsonl line 1: holds a number too long to read"):
        load_documents(tmp_path / "big.jsonl")


def test_one_address_cannot_take_every_connection_of_index_serve(demo_index):
    server = make_server(demo_index, "demo", limits=Limits(header_timeout_s=5.0, per_client=8))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        time.sleep(0.5)
        held = [socket.create_connection(("127.0.0.1", server.server_port)) for _ in range(8)]
        for sock in held:
            sock.sendall(b"POST / HTTP/1.1\r\nHost: x\r\n")
        extra = socket.create_connection(("127.0.0.1", server.server_port))
        extra.settimeout(2)
        assert extra.recv(100) == b""  # closed at once: the ninth connection of one address
        for sock in held:
            sock.close()
        time.sleep(0.3)
        assert (
            ask(
                f"http://127.0.0.1:{server.server_port}/", {"index": "demo", "query_type": "count", "query": "of the"}
            ).status_code
            == 200
        )
    finally:
        server.shutdown()
        thread.join(10)


# -- hostile corpus files --------------------------------------------------------------------


def jsonl(texts: list[str]) -> bytes:
    return "".join(json.dumps({"text": t}) + "\n" for t in texts).encode()


def test_a_compression_bomb_stops_the_build_naming_the_file(tmp_path):
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "bomb.jsonl.gz").write_bytes(
        gzip.compress(jsonl(["word " * 2000] * 2000), 9)
    )  # 20 MB from ~40 KB
    limits = ReadLimits(max_expansion=10, min_decompressed_bytes=1 << 20)
    with pytest.raises(VerifierError, match=r"in/bomb.jsonl.gz: decompresses to more than 1,048,576 bytes"):
        build_index([tmp_path / "in"], tmp_path / "index", limits=limits)
    assert not (tmp_path / "index").exists() and not list(tmp_path.glob(".index*"))


def test_one_huge_line_is_refused_before_it_fills_memory(tmp_path):
    import zstandard

    line = b'{"text": "' + b"a " * (3 << 20) + b'"}\n'
    (tmp_path / "one.jsonl.zst").write_bytes(zstandard.ZstdCompressor(level=3).compress(line))
    with pytest.raises(VerifierError, match=r"one.jsonl.zst: line 1: longer than 1,048,576 characters"):
        build_index([tmp_path / "one.jsonl.zst"], tmp_path / "index", limits=ReadLimits(max_document_bytes=1 << 20))
    (tmp_path / "big.txt").write_bytes(b"word " * 300_000)
    with pytest.raises(VerifierError, match=r"big.txt: a plain-text document larger than 1,048,576 bytes"):
        build_index([tmp_path / "big.txt"], tmp_path / "index", limits=ReadLimits(max_document_bytes=1 << 20))


def test_a_corrupt_gzip_is_one_line_naming_the_file(tmp_path):
    data = bytearray(gzip.compress(jsonl([f"document number {i} with some words" for i in range(2000)])))
    for seed in range(6):  # garbage where the deflate stream was: invalid codes, distances, or text that is no JSON
        noisy = bytearray(data)
        noisy[len(data) // 3 : len(data) // 3 + 64] = (
            np.random.default_rng(seed).integers(0, 256, 64, dtype=np.uint8).tobytes()
        )
        (tmp_path / "broken.jsonl.gz").write_bytes(bytes(noisy))
        with pytest.raises(VerifierError, match=r"^broken.jsonl.gz: (cannot be read as compressed JSONL|line \d+: )"):
            build_index([tmp_path / "broken.jsonl.gz"], tmp_path / "index")
    (tmp_path / "broken.jsonl.gz").write_bytes(bytes(data[: len(data) // 2]))
    with pytest.raises(VerifierError, match=r"^broken.jsonl.gz: cannot be read as compressed JSONL"):
        build_index([tmp_path / "broken.jsonl.gz"], tmp_path / "index")


def test_links_and_devices_inside_a_corpus_folder_are_refused_by_index_build(tmp_path):
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.jsonl").write_bytes(jsonl(["some words in a document"]))
    (tmp_path / "in" / "passwd.txt").symlink_to("/etc/passwd")
    with pytest.raises(VerifierError, match="in/passwd.txt: a link"):
        build_index([tmp_path / "in"], tmp_path / "index")
    (tmp_path / "in" / "passwd.txt").unlink()
    os.mkfifo(tmp_path / "in" / "pipe.txt")
    with pytest.raises(VerifierError, match="in/pipe.txt: not a plain file"):
        build_index([tmp_path / "in"], tmp_path / "index")


def test_sigterm_during_index_build_leaves_nothing_half_written(tmp_path):
    rng = np.random.default_rng(0)
    words = np.array("the of river town ledger stone mill clerk harbour winter".split())
    (tmp_path / "in").mkdir()
    for k in range(6):
        (tmp_path / "in" / f"part{k}.jsonl").write_bytes(jsonl([" ".join(rng.choice(words, 400)) for _ in range(1500)]))
    process = subprocess.Popen(
        [*CLI, "index", "build", str(tmp_path / "in"), "--out", str(tmp_path / "index")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=tmp_path,
    )
    deadline = time.monotonic() + 60
    while not list(tmp_path.glob(".index.*.partial")) and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    process.send_signal(signal.SIGTERM)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode in (143, 0), stderr
    if process.returncode == 143:
        assert b"stopped by SIGTERM" in stderr and b"Traceback" not in stderr and not (tmp_path / "index").exists()
    assert not list(tmp_path.glob(".index.*")), "the hidden .partial folder was left behind"


# -- consistently edited indexes -------------------------------------------------------------


def rehash(folder: Path, shard: str, name: str) -> None:
    """Rewrite the manifest so every digest matches the edited file: what a forger does."""
    from verifier.trust.digests import file_sha256

    manifest = json.loads((folder / "manifest.json").read_text())
    entry = next(s for s in manifest["shards"] if s["name"] == shard)
    entry["files"][name] = file_sha256(folder / shard / name)
    (folder / "manifest.json").write_text(json.dumps(manifest))


@pytest.fixture()
def small_index(tmp_path: Path) -> tuple[Path, Path]:
    rows = [
        json.loads(line) for line in (ROOT / "verifier/examples/data/wikimia/length64.jsonl").read_text().splitlines()
    ]
    (tmp_path / "corpus").mkdir()
    (tmp_path / "corpus" / "c.jsonl").write_bytes(jsonl([r["text"] for r in rows[:150]]))
    build_index([tmp_path / "corpus"], tmp_path / "index")
    return tmp_path / "index", tmp_path / "corpus"


def test_suffix_entries_out_of_range_or_swapped_are_refused_even_when_rehashed(small_index):
    index, _ = small_index
    sa_path = index / "shard-00000" / "sa.bin"
    original = np.fromfile(sa_path, dtype=np.int32)
    edited = original.copy()
    edited[10] = len(edited) + 5
    edited.tofile(sa_path)
    rehash(index, "shard-00000", "sa.bin")
    with pytest.raises(VerifierError, match="sa.bin: entries outside the text"):
        CorpusIndex.open(index)
    edited = original.copy()
    edited[[100, 5000]] = edited[[5000, 100]]  # every entry in range; two suffixes moved
    edited.tofile(sa_path)
    rehash(index, "shard-00000", "sa.bin")
    with pytest.raises(VerifierError, match="sa.bin: entry 100 is not the suffix array of the text"):
        CorpusIndex.open(index, structure="full")
    shuffled = original.copy()
    np.random.default_rng(1).shuffle(shuffled[: len(shuffled) // 2])  # a wholesale edit: the sample always sees it
    shuffled.tofile(sa_path)
    rehash(index, "shard-00000", "sa.bin")
    with pytest.raises(VerifierError, match="not in sorted order"):
        CorpusIndex.open(index)


def test_the_sampled_order_check_passes_every_honest_pair(small_index, demo_index, monkeypatch):
    """Drawn many times over (every neighbouring pair, near the text's end included), an honest
    index is never called altered."""
    import verifier.corpus.index as index_module

    monkeypatch.setattr(index_module, "SORT_SAMPLES", 100_000)
    for shard in [*CorpusIndex.open(small_index[0]).shards, *demo_index.shards]:
        index_module.check_structure(shard, shard.entry.name, "sampled")


def test_rewritten_text_with_a_rebuilt_suffix_array_is_caught_against_the_corpus_files(small_index, tmp_path):
    index, corpus = small_index
    edited = tmp_path / "edited"
    edited.mkdir()
    lines = (corpus / "c.jsonl").read_text().splitlines()
    lines[7] = json.dumps({"text": "an entirely different document the forger wants found in the corpus"})
    (edited / "c.jsonl").write_text("\n".join(lines) + "\n")
    forged = build_index([edited], tmp_path / "forged")
    manifest = json.loads((tmp_path / "forged" / "manifest.json").read_text())
    manifest["sources"] = json.loads((index / "manifest.json").read_text())["sources"]
    manifest["corpus_sha256"] = json.loads((index / "manifest.json").read_text())["corpus_sha256"]
    manifest["documents"] = sum(s["documents"] for s in manifest["sources"])
    (tmp_path / "forged" / "manifest.json").write_text(json.dumps(manifest))
    opened = CorpusIndex.open(tmp_path / "forged", structure="full")  # consistent: structure and digests hold
    with pytest.raises(VerifierError, match="shard-00000/.*differs from the one the corpus files make"):
        opened.check_text([corpus])
    CorpusIndex.open(index).check_text([corpus])  # the honest index passes
    assert forged.documents == 150


def test_index_check_cli(small_index):
    index, corpus = small_index
    done = subprocess.run([*CLI, "index", "check", str(index), "--corpus", str(corpus)], capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout.startswith("OK: index sha256"), done.stderr
    (index / "shard-00000" / "text.bin").write_bytes(b"x" + (index / "shard-00000" / "text.bin").read_bytes()[1:])
    bad = subprocess.run([*CLI, "index", "check", str(index)], capture_output=True, text=True)
    assert bad.returncode == 2 and "text.bin: SHA-256 differs" in bad.stderr and "Traceback" not in bad.stderr


# -- hostile clients of index serve ----------------------------------------------------------


@pytest.fixture()
def served(demo_index):
    server = make_server(
        demo_index, "demo", limits=Limits(header_timeout_s=1.0, body_timeout_s=1.0, connections=96, per_client=64)
    )
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{server.server_port}/"
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", server.server_port), timeout=1).close()
            break
        except OSError:
            time.sleep(0.05)
    yield server, url
    server.shutdown()
    thread.join(10)


def ask(url: str, body: bytes | dict, timeout: float = 5) -> requests.Response:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    return requests.post(url, data=data, headers={"Content-Type": "application/json"}, timeout=timeout)


def test_half_sent_requests_are_dropped_and_others_are_still_answered(served, capfd):
    server, url = served
    port = server.server_port
    idle = []
    for i in range(40):
        sock = socket.create_connection(("127.0.0.1", port))
        sock.sendall(
            b"POST / HTTP/1.1\r\nHost: x\r\nContent-Len"
            if i % 2
            else b'POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{"in'
        )
        idle.append(sock)
    answer = ask(url, {"index": "demo", "query_type": "count", "query": "of the"})
    assert answer.status_code == 200 and answer.json()["count"] > 0
    time.sleep(2.5)
    closed = 0
    for sock in idle:
        sock.settimeout(2)
        try:
            data = sock.recv(4096)
            closed += data == b"" or b"408" in data
        except (TimeoutError, ConnectionResetError):
            closed += 1
        sock.close()
    assert closed == len(idle)
    assert "Traceback" not in capfd.readouterr().err


def test_hostile_bodies_get_json_errors_and_no_tracebacks(served, capfd):
    _, url = served
    huge_number = b'{"index": "demo", "query_type": "search_docs", "query": "x", "maxnum": ' + b"9" * 5000 + b"}"
    twice = b'{"index": "demo", "query_type": "count", "query": "x", "query": "of the"}'
    for body, status in [
        (huge_number, 400),
        (b"[" * 100_000, 400),
        (b"\xff\xfe", 400),
        (b'{"index": "demo"}', 400),
        (twice, 400),
        (json.dumps({"index": "demo", "query_type": "count", "query": "x" * 30_000}).encode(), 400),
        (b"x" * (2 << 20), 413),
    ]:
        answer = ask(url, body)
        assert answer.status_code == status and "error" in answer.json()
    assert requests.get(url, timeout=5).status_code == 405
    for _ in range(10):  # an oversized body, declared or chunked, gets its 413 (not a reset connection)
        assert ask(url, b"x" * (3 << 20)).status_code == 413
        chunked = requests.post(url, data=iter([b"x" * (1 << 18)] * 6), timeout=5)
        assert chunked.status_code == 413 and "error" in chunked.json()
    for _ in range(20):  # clients that hang up before the answer
        sock = socket.create_connection(("127.0.0.1", int(url.split(":")[2].strip("/"))))
        body = json.dumps({"index": "demo", "query_type": "attribution", "query": "of the river " * 500}).encode()
        sock.sendall(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
        sock.close()
    time.sleep(1)
    assert ask(url, {"index": "demo", "query_type": "count", "query": "of the"}).status_code == 200
    err = capfd.readouterr().err
    assert "Traceback" not in err and "Exception" not in err


# -- bundles and the auditor's own files -----------------------------------------------------


def test_world_readable_signing_key_is_refused(tmp_path):
    from verifier.trust.keys import generate_key, load_private_key

    path = tmp_path / "signing.key"
    generate_key(path)
    load_private_key(path)
    path.chmod(0o644)
    with pytest.raises(VerifierError, match="signing key must be owned and readable by you only"):
        load_private_key(path)


def test_atomic_output_onto_a_folder_names_no_temporary_file(tmp_path):
    from verifier.boundary.atomic import atomic_output

    (tmp_path / "out").mkdir()
    with pytest.raises(VerifierError, match=r"out: a folder; give the name of a file") as info:
        with atomic_output(tmp_path / "out") as tmp:
            tmp.write_bytes(b"x")
    assert ".partial" not in str(info.value)


def test_policy_errors_name_no_absolute_path(tmp_path, monkeypatch):
    from verifier.policy import load_policy

    (tmp_path / "p.yaml").write_text("name: x\nroutes: 7\n")
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    with pytest.raises(VerifierError) as info:
        load_policy(tmp_path / "p.yaml")
    assert str(info.value).startswith("p.yaml: ") and str(tmp_path) not in str(info.value)


def test_a_model_folder_without_tokenizer_files_is_blamed_on_the_model(tiny_model_dir, tmp_path):
    from verifier.targets.kinds.causal_lm import CausalLMTarget

    folder = tmp_path / "model"
    folder.mkdir()
    for path in tiny_model_dir.iterdir():
        if "token" not in path.name and path.name not in ("vocab.json", "merges.txt", "special_tokens_map.json"):
            shutil.copy(path, folder / path.name)
    with pytest.raises(VerifierError, match=r"^model model: (its tokenizer is empty|cannot load)"):
        CausalLMTarget(str(folder))
