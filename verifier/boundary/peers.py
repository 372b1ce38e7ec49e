"""One HTTP client for every other party's server: API targets, judges and remote corpus indexes.

Why one: an audit sends the claim's documents to servers the claimant may run, and reads back
answers that decide verdicts. Whatever such a server does - redirect the query elsewhere, send a
byte a minute, send a gigabyte, ask for a pause of a day - must cost the auditor a bounded time
and memory and leave the findings naming the server that really answered. So every request is
sent without following redirects (a redirect is refused, naming where it points), within a
deadline for the whole answer - status line and headers included: a watchdog shuts the socket
of a request still unanswered at its deadline, since socket timeouts are per read and a byte
every second never trips them - with the body read in pieces under a size cap, and retried after
transient failures with a bounded backoff, all attempts of one request within one budget (a
server's ``Retry-After`` pauses every worker, but the pauses of one request add up to at most
``MAX_RETRY_AFTER_S``). Answers are parsed strictly (``read_json``): a key given twice, NaN, or
a number too long to read is a malformed answer, never one reading chosen silently. TLS certificates are verified; plain
http is
allowed only to this machine (loopback) unless the auditor passes ``--allow-http``.

Secrets are the auditor's: ``PeerAccess`` carries the names of the environment variables the
auditor gave on the command line. Nothing a claim or a policy file says can choose which of the
auditor's variables is read or where it is sent. A key is sent in the Authorization header only,
and scrubbed from every message that may quote a server.
"""

from __future__ import annotations

import ipaddress
import json
import os
import random
import re
import socket
import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TypeVar
from urllib.parse import urlsplit

import requests
import urllib3

from verifier.errors import VerifierError

RETRIED_STATUS = frozenset(
    {408, 409, 425, 429, 500, 502, 503, 504, *range(520, 530)}
)  # 52x: proxies' and providers' "overloaded"
MAX_RETRY_AFTER_S = 120.0
WATCHDOG_GRACE_S = 0.5
KEY_VARIABLE = r"^[A-Za-z_][A-Za-z0-9_]{0,99}$"
T = TypeVar("T")


def _unique(pairs: list[tuple[str, object]]) -> dict[str, object]:
    keys = [k for k, _ in pairs]
    if len(set(keys)) != len(keys):
        raise ValueError("a key given twice")
    return dict(pairs)


def _no_constant(name: str) -> None:
    raise ValueError(f"{name} is not JSON")


def read_json(body: bytes) -> object:
    """A peer's JSON, strictly: raises ``ValueError`` for malformed JSON, a key given twice
    (readers disagree on which value counts), NaN or Infinity, numbers too long to read, or
    nesting deeper than the parser holds."""
    try:
        return json.loads(body, object_pairs_hook=_unique, parse_constant=_no_constant)
    except RecursionError:
        raise ValueError("nested too deeply") from None


class ItemFailed(Exception):
    """A request that failed after every retry, or whose answer was too large or too slow as a
    whole: the caller records the item as failed (an API query) or the peer as unavailable."""


class Retry(Exception):
    """Raised by an answer's reader: the answer is unusable in a way another attempt may mend."""


@dataclass(frozen=True)
class PeerAccess:
    """What the auditor allows on its own machine: which environment variables hold the keys of
    the audited endpoint and of a separate judge, and whether plain http may leave this machine.
    Built from the command line only, never from a claim or a policy."""

    api_key_env: str | None = None
    judge_api_key_env: str | None = None
    allow_http: bool = False

    def __post_init__(self) -> None:
        for name in (self.api_key_env, self.judge_api_key_env):
            if name is not None and not re.match(KEY_VARIABLE, name):
                raise VerifierError(
                    f"--api-key-env {name!r}: the name of an environment variable (letters, digits, _), never the key"
                )


@dataclass
class Usage:
    """What the run cost: requests sent (with retries), failures by kind, tokens billed, seconds."""

    requests: int = 0
    retries: int = 0
    cached: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    failures: Counter = field(default_factory=Counter)
    wall_s: float = 0.0
    probes: int = 0  # requests asking the server what it offers (not answers: never cached, counted apart)

    def as_finding(self) -> dict[str, object]:
        return {
            "requests_sent": self.requests,
            "retries": self.retries,
            "answers_from_cache": self.cached,
            "probe_requests": self.probes,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "failures": dict(sorted(self.failures.items())),
            "wall_s": round(self.wall_s, 2),
        }


@dataclass(frozen=True)
class Answer:
    """One HTTP answer, read whole within the deadline and the size cap."""

    status: int
    headers: Mapping[str, str]  # case-insensitive, as requests reads them
    body: bytes
    reason: str = ""


def is_loopback(host: str) -> bool:
    """Is ``host`` this machine (``localhost``, 127.0.0.0/8, ::1)? Names other than localhost are
    not resolved: a name that resolves to loopback today may not tomorrow."""
    if host.lower().rstrip(".") == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_endpoint(url: str, what: str, access: PeerAccess) -> None:
    """Refuse a URL an audit must not send documents or keys to: not http(s), carrying
    credentials, or plain http to another machine without the auditor's ``--allow-http``."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - a port that is not a number raises here, not mid-request
    except ValueError as exc:
        raise VerifierError(f"{what} {url}: not a URL ({exc})") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise VerifierError(f"{what} {url}: not an http(s) URL")
    if parts.username or parts.password:
        raise VerifierError(f"{what}: the URL must not carry credentials")
    if parts.scheme == "http" and not is_loopback(parts.hostname) and not access.allow_http:
        raise VerifierError(
            f"{what} {url}: plain http to another machine (anyone on the way reads the documents and any key); "
            "use https, or pass --allow-http if the network between is yours"
        )


class PeerClient:
    """POSTs JSON to one server; thread-safe (one session per thread, one shared limiter)."""

    def __init__(
        self,
        base_url: str,
        *,
        what: str,
        access: PeerAccess,
        key_env: str | None = None,
        timeout_s: float = 30.0,
        retries: int = 4,
        max_body: int = 8 << 20,
        rate_limit: float | None = None,
        backoff_s: float = 0.5,
        max_backoff_s: float = 30.0,
        budget_s: float | None = None,
        content_type: str = "application/json",
    ) -> None:
        check_endpoint(base_url, what, access)
        self.content_type = (
            content_type  # a bytes body is sent as it is, under this type (a timestamp query); others as JSON
        )
        self.base_url = base_url.rstrip("/")
        self.what = what
        self.key_env = key_env
        self.timeout_s, self.retries, self.max_body, self.rate_limit = timeout_s, retries, max_body, rate_limit
        # Every attempt of one request, its backoffs and pauses: bounded together.
        self.budget_s = budget_s if budget_s is not None else 2 * timeout_s + MAX_RETRY_AFTER_S
        self.backoff_s, self.max_backoff_s = backoff_s, max_backoff_s
        self.usage = Usage()
        self._local = threading.local()
        self._lock = threading.Lock()
        self._next_start = 0.0
        if key_env and not os.environ.get(key_env):
            raise VerifierError(f"API key: the environment variable {key_env} is not set")

    def _key(self) -> str | None:
        return os.environ.get(self.key_env) if self.key_env else None

    def scrub(self, text: str) -> str:
        """``text`` with the key (if any) replaced, for messages that may quote a server."""
        key = self._key()
        return text.replace(key, "[API key]") if key else text

    def _session(self) -> requests.Session:
        if not hasattr(self._local, "session"):
            session = requests.Session()
            session.trust_env = False  # no proxy or netrc credentials picked up behind the auditor's back
            session.verify = (
                os.environ.get("REQUESTS_CA_BUNDLE") or os.environ.get("SSL_CERT_FILE") or True
            )  # a private CA still works
            for adapter in session.adapters.values():  # connections are registered so the watchdog can shut them
                adapter.poolmanager.pool_classes_by_scheme = {"http": _WatchedHTTPPool, "https": _WatchedHTTPSPool}
            self._local.session = session
        return self._local.session

    def _headers(self, has_body: bool) -> dict[str, str]:
        headers = {"Content-Type": self.content_type} if has_body else {}
        if key := self._key():
            headers["Authorization"] = f"Bearer {key}"
        return headers

    def send(self, method: str, path: str, body: object = None, deadline: float | None = None) -> Answer:
        """One attempt, no retries: the whole answer within ``timeout_s`` (and ``deadline``, a
        ``time.monotonic()`` the whole request must end by) and the size cap.
        Raises ``requests`` errors for timeouts and dropped connections, ``ItemFailed`` for an
        answer too large or too slow, ``VerifierError`` for a redirect."""
        seconds = self.timeout_s if deadline is None else max(0.01, min(self.timeout_s, deadline - time.monotonic()))
        ends = time.monotonic() + seconds
        session = self._session()
        # Just after the socket timeout: a silent server times out (and is tried again); one that
        # keeps a request alive a byte at a time is shut (and is not).
        fired = threading.Event()
        watchdog = threading.Timer(seconds + WATCHDOG_GRACE_S, _shut, (threading.get_ident(), fired))
        watchdog.daemon = True
        watchdog.start()
        try:
            content = {"data": body} if isinstance(body, bytes) else {"json": body}
            response = session.request(
                method,
                f"{self.base_url}{path}",
                **content,
                headers=self._headers(body is not None),
                timeout=seconds,
                allow_redirects=False,
                stream=True,
            )
            raw = _read_body(response, ends, self.max_body)
        except requests.RequestException:
            if fired.is_set():  # the watchdog shut it: the answer was too slow as a whole
                raise ItemFailed("response not complete within the timeout") from None
            raise
        finally:
            watchdog.cancel()
            _CONNECTIONS.pop(threading.get_ident(), None)
        if fired.is_set():  # shut mid-headers, a parser may still make an (empty) answer of what came
            raise ItemFailed("response not complete within the timeout")
        if 300 <= response.status_code < 400:  # the answers would come from somewhere the findings do not name
            where = self.scrub(response.headers.get("Location", "elsewhere"))[:200]
            raise VerifierError(
                f"{self.what} {self.base_url}: the server redirects ({response.status_code}) to {where}; "
                "name the final endpoint"
            )
        return Answer(response.status_code, response.headers, raw, response.reason or "")

    def _wait_turn(self) -> None:
        """At most ``rate_limit`` request starts per second across all threads, and none before a
        server's Retry-After has passed."""
        with self._lock:
            now = time.monotonic()
            start = max(now, self._next_start)
            self._next_start = start + (1.0 / self.rate_limit if self.rate_limit else 0.0)
        if start > now:
            time.sleep(start - now)

    def _pause_all(self, seconds: float) -> None:
        with self._lock:
            self._next_start = max(self._next_start, time.monotonic() + min(seconds, MAX_RETRY_AFTER_S))

    def count(self, **kwargs: int) -> None:
        with self._lock:
            for name, value in kwargs.items():
                setattr(self.usage, name, getattr(self.usage, name) + value)

    def fail(self, kind: str) -> None:
        with self._lock:
            self.usage.failures[kind] += 1

    def post(self, path: str, body: object, read: Callable[[Answer], T]) -> T:
        """``read(answer)`` of the first usable answer to ``body``. Timeouts, dropped connections,
        the retried statuses and answers ``read`` rejects with ``Retry`` are tried again; ``read``
        decides every other status. Raises ``ItemFailed`` when every attempt failed."""
        last = "no attempt"
        deadline = time.monotonic() + self.budget_s
        paused = 0.0
        for attempt in range(self.retries + 1):
            if attempt:
                self.count(retries=1)
                time.sleep(min(self._delay(attempt), max(0.0, deadline - time.monotonic())))
            self._wait_turn()
            if time.monotonic() >= deadline:
                last = f"{last}; no time left of the {self.budget_s:.0f} s all attempts may take"
                break
            self.count(requests=1)
            try:
                answer = self.send("POST", path, body, deadline)
            except requests.Timeout:
                last = "timeout"
                continue
            except requests.ConnectionError:
                last = "connection failed or dropped"
                continue
            except requests.RequestException as exc:
                last = f"request error ({type(exc).__name__})"
                continue
            except ItemFailed as exc:  # too large or too slow as a whole: the same server would do it again
                self.fail(str(exc))
                raise
            if answer.status in RETRIED_STATUS:
                last = f"HTTP {answer.status}"
                if (wait := _retry_after(answer)) is not None and attempt < self.retries:
                    if paused + wait > MAX_RETRY_AFTER_S or time.monotonic() + wait > deadline:
                        last = (
                            f"HTTP {answer.status}, asked to wait {wait:.0f} s more (at most "
                            f"{MAX_RETRY_AFTER_S:.0f} s in all)"
                        )
                        break
                    paused += wait
                    self._pause_all(wait)
                continue
            try:
                return read(answer)
            except Retry as exc:
                last = str(exc)
        self.fail(last)
        raise ItemFailed(f"{last} after {attempt + 1} attempt{'s' if attempt else ''}")

    def _delay(self, attempt: int) -> float:
        """Exponential backoff with jitter (a server's Retry-After is honoured by ``_wait_turn``)."""
        return min(self.max_backoff_s, self.backoff_s * 2 ** (attempt - 1)) * (0.5 + random.random() / 2)


# The connection each thread's request is using, so its watchdog can shut it.
_CONNECTIONS: dict[int, object] = {}


class _Registered:
    def _get_conn(self, timeout: float | None = None):  # noqa: ANN202 - urllib3's connection
        conn = super()._get_conn(timeout)  # type: ignore[misc]
        _CONNECTIONS[threading.get_ident()] = conn
        return conn


class _WatchedHTTPPool(_Registered, urllib3.HTTPConnectionPool):
    pass


class _WatchedHTTPSPool(_Registered, urllib3.HTTPSConnectionPool):
    pass


def _shut(thread: int, fired: threading.Event) -> None:
    """The watchdog: shut the socket the request of ``thread`` is blocked on."""
    fired.set()
    conn = _CONNECTIONS.get(thread)
    sock = getattr(conn, "sock", None)
    if sock is not None:
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


def _read_body(response: requests.Response, deadline: float, limit: int) -> bytes:
    """The whole body, within ``deadline`` (the per-read timeout alone lets a server that sends a
    byte now and then hold a worker forever) and ``limit`` bytes (counted as they arrive, after
    any content encoding is undone: a small gzip body cannot expand past it)."""
    chunks, size = [], 0
    try:
        declared = response.headers.get("Content-Length", "")
        if declared.isdigit() and int(declared) > limit:
            raise ItemFailed(f"response larger than {limit >> 20} MiB")
        # read1: whatever has arrived (at most one read of the socket), so the clock is looked at
        # as bytes trickle in; urllib3 still undoes any content encoding.
        while chunk := response.raw.read1(64 << 10, decode_content=True):
            size += len(chunk)
            if size > limit:
                raise ItemFailed(f"response larger than {limit >> 20} MiB")
            if time.monotonic() > deadline:
                raise ItemFailed("response not complete within the timeout")
            chunks.append(chunk)
    except urllib3.exceptions.ReadTimeoutError as exc:
        raise requests.Timeout(str(exc)) from None  # as requests words them: both retried
    except (urllib3.exceptions.HTTPError, OSError) as exc:
        raise requests.ConnectionError(str(exc)) from None
    finally:
        response.close()
    return b"".join(chunks)


def _retry_after(answer: Answer) -> float | None:
    try:
        wait = float(answer.headers.get("Retry-After", ""))
    except ValueError:
        return None
    return max(0.0, wait) if wait == wait else None  # NaN is no pause; the caller bounds the total
