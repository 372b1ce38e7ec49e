"""HTTP transport to an OpenAI-compatible server: retries, backoff, a rate limit, counters.

Why it is shaped this way: an audit of an API model may send thousands of paid requests. A
transient failure (timeout, dropped connection, 429, 5xx, a body that is not JSON) is retried
with exponential backoff (a server's ``Retry-After`` pauses every worker, not only the one told);
a request still failing after the retries, or refused for itself (400, 413, 422: too long, a
policy refusal of the input), is one failed item, recorded, never a crash that throws away what
was already paid for. Failures that no retry can mend (a rejected key, a path the server does not
have) stop the run at once with one line; every answer received before is cached by the caller.
(No server at the address, or a model it does not serve, is found by the target's preflight.)

The API key is read from the environment variable the config names, at the moment a request is
made; it is sent in the Authorization header only, and scrubbed from every message.
"""

from __future__ import annotations

import json
import os
import random
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

import requests
import urllib3

from verifier.errors import VerifierError

RETRIED_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504, *range(520, 530)})  # 52x: proxies' and providers' "overloaded"
FATAL_STATUS = {401: "the server rejected the API key", 403: "the server refused access (403)",
                404: "no such path on the server (is the base URL right? it usually ends in /v1)"}
MAX_RETRY_AFTER_S = 120.0
MAX_BODY_BYTES = 8 << 20  # an answer to a short query is kilobytes; a bigger body is a broken or hostile server
MAX_TOKENS_COUNTED = 10**7  # per response: a usage field beyond this is not a count


class ItemFailed(Exception):
    """A request that failed after every retry: the item is recorded as failed, the run goes on."""


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

    def as_finding(self) -> dict[str, object]:
        return {"requests_sent": self.requests, "retries": self.retries, "answers_from_cache": self.cached,
                "prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens,
                "failures": dict(sorted(self.failures.items())), "wall_s": round(self.wall_s, 2)}


class ApiClient:
    """POSTs JSON bodies to ``base_url``; thread-safe (one session per thread, one shared limiter)."""

    def __init__(self, base_url: str, api_key_env: str | None, timeout_s: float, retries: int, rate_limit: float | None,
                 backoff_s: float = 0.5, max_backoff_s: float = 30.0) -> None:
        self.base_url = base_url.rstrip("/")
        self.api_key_env = api_key_env
        self.timeout_s, self.retries, self.rate_limit = timeout_s, retries, rate_limit
        self.backoff_s, self.max_backoff_s = backoff_s, max_backoff_s
        self.usage = Usage()
        self._local = threading.local()
        self._lock = threading.Lock()
        self._next_start = 0.0
        if api_key_env and not os.environ.get(api_key_env):
            raise VerifierError(f"API key: the environment variable {api_key_env} is not set")

    def _key(self) -> str | None:
        return os.environ.get(self.api_key_env) if self.api_key_env else None

    def scrub(self, text: str) -> str:
        """``text`` with the API key (if any) replaced, for messages that may quote a server."""
        key = self._key()
        return text.replace(key, "[API key]") if key else text

    def _session(self) -> requests.Session:
        if not hasattr(self._local, "session"):
            session = requests.Session()
            session.trust_env = False  # no proxy or netrc credentials picked up behind the auditor's back
            session.verify = os.environ.get("REQUESTS_CA_BUNDLE") or os.environ.get("SSL_CERT_FILE") or True  # a private CA still works
            self._local.session = session
        return self._local.session

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

    def _count(self, **kwargs: int) -> None:
        with self._lock:
            for name, value in kwargs.items():
                setattr(self.usage, name, getattr(self.usage, name) + value)

    def _fail(self, kind: str) -> None:
        with self._lock:
            self.usage.failures[kind] += 1

    def get(self, path: str) -> requests.Response:
        """One GET without retries (the preflight check); connection errors are the caller's to word."""
        headers = {"Authorization": f"Bearer {key}"} if (key := self._key()) else {}
        return self._session().get(f"{self.base_url}{path}", headers=headers, timeout=self.timeout_s, allow_redirects=False)

    def post(self, path: str, body: dict) -> dict:
        """The JSON response to ``body``, retrying transient failures. Raises ``ItemFailed`` when
        every attempt failed and ``VerifierError`` when no retry can help."""
        headers = {"Content-Type": "application/json"}
        if key := self._key():
            headers["Authorization"] = f"Bearer {key}"
        last = "no attempt"
        for attempt in range(self.retries + 1):
            if attempt:
                self._count(retries=1)
                time.sleep(self._delay(attempt))
            self._wait_turn()
            self._count(requests=1)
            try:
                response = self._session().post(f"{self.base_url}{path}", json=body, headers=headers, timeout=self.timeout_s,
                                                allow_redirects=False, stream=True)
                raw = _read_body(response, time.monotonic() + self.timeout_s)
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
                self._fail(str(exc))
                raise
            status = response.status_code
            if status in FATAL_STATUS:
                raise VerifierError(f"API endpoint {self.base_url}: {FATAL_STATUS[status]}")
            if 300 <= status < 400:  # the answers would come from somewhere the findings do not name
                where = self.scrub(response.headers.get("Location", "elsewhere"))[:200]
                raise VerifierError(f"API endpoint {self.base_url}: the server redirects ({status}) to {where}; name the final endpoint in the claim")
            if status in RETRIED_STATUS:
                last = f"HTTP {status}"
                if (wait := _retry_after(response)) is not None and attempt < self.retries:
                    self._pause_all(wait)
                continue
            if status >= 400:  # this request refused for itself (too long, a policy refusal of the input): one failed item
                self._fail(f"HTTP {status}")
                raise ItemFailed(f"HTTP {status}: {_detail(raw, response.reason, self.scrub)}")
            try:
                payload = json.loads(raw)
            except (ValueError, RecursionError):  # not JSON, or nested past what the parser can hold
                last = "malformed response (not JSON)"
                continue
            if not isinstance(payload, dict) or not isinstance(payload.get("choices"), list) or not payload["choices"]:
                last = "malformed response (no choices)"
                continue
            usage = payload.get("usage") if isinstance(payload.get("usage"), dict) else {}
            self._count(prompt_tokens=_int(usage.get("prompt_tokens")), completion_tokens=_int(usage.get("completion_tokens")))
            return payload
        self._fail(last)
        raise ItemFailed(f"{last} after {self.retries + 1} attempts")

    def _delay(self, attempt: int) -> float:
        """Exponential backoff with jitter (a server's Retry-After is honoured by ``_wait_turn``)."""
        return min(self.max_backoff_s, self.backoff_s * 2 ** (attempt - 1)) * (0.5 + random.random() / 2)


def _read_body(response: requests.Response, deadline: float) -> bytes:
    """The whole body, within ``deadline`` (the per-read timeout alone lets a server that sends a
    byte now and then hold a worker forever) and ``MAX_BODY_BYTES``."""
    chunks, size = [], 0
    try:
        # read1: whatever has arrived (at most one read of the socket), so the clock is looked at
        # as bytes trickle in; urllib3 still undoes any content encoding.
        while chunk := response.raw.read1(64 << 10, decode_content=True):
            size += len(chunk)
            if size > MAX_BODY_BYTES:
                raise ItemFailed(f"response larger than {MAX_BODY_BYTES >> 20} MiB")
            if time.monotonic() > deadline:
                raise ItemFailed("response not complete within the timeout")
            chunks.append(chunk)
    except urllib3.exceptions.ReadTimeoutError as exc:
        raise requests.Timeout(str(exc)) from None  # as requests words them: both retried
    except (urllib3.exceptions.ProtocolError, OSError) as exc:
        raise requests.ConnectionError(str(exc)) from None
    finally:
        response.close()
    return b"".join(chunks)


def _retry_after(response: requests.Response) -> float | None:
    try:
        return max(0.0, float(response.headers.get("Retry-After", "")))
    except ValueError:
        return None


def _detail(raw: bytes, reason: str | None, scrub: Callable[[str], str]) -> str:
    """The server's error message on one line, scrubbed of the key before it is shortened (a key
    cut in two would escape the scrub)."""
    try:
        body = json.loads(raw)
        detail = body.get("detail") or body.get("error") or body if isinstance(body, dict) else body
        if isinstance(detail, dict):
            detail = detail.get("message") or json.dumps(detail)
        text = str(detail)
    except (ValueError, RecursionError):
        text = raw[:4096].decode("utf-8", "replace")
    return " ".join(scrub(text).split())[:200] or scrub(reason or "") or "no detail"


def _int(value: object) -> int:
    """A token count as the server gave it, or 0 when it is not a plausible count."""
    return value if type(value) is int and 0 <= value <= MAX_TOKENS_COUNTED else 0
