"""HTTP transport to an OpenAI-compatible server: retries, backoff, a rate limit, counters.

Why it is shaped this way: an audit of an API model may send thousands of paid requests. A
transient failure (timeout, dropped connection, 429, 5xx, a body that is not JSON) is retried
with exponential backoff (honouring ``Retry-After``); a request still failing after the retries
is one failed item, recorded, never a crash that throws away what was already paid for. Failures
that no retry can mend (no server at the address, a rejected key, an unknown model) stop the run
at once with one line: every answer received before is already in the cache.

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
from dataclasses import dataclass, field

import requests

from verifier.errors import VerifierError

RETRIED_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504})
FATAL_STATUS = {401: "the server rejected the API key", 403: "the server refused access (403)"}


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
        self._answered = False
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
            self._local.session = session
        return self._local.session

    def _wait_turn(self) -> None:
        """At most ``rate_limit`` request starts per second across all threads."""
        if not self.rate_limit:
            return
        with self._lock:
            now = time.monotonic()
            start = max(now, self._next_start)
            self._next_start = start + 1.0 / self.rate_limit
        if start > now:
            time.sleep(start - now)

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
        return self._session().get(f"{self.base_url}{path}", headers=headers, timeout=self.timeout_s)

    def post(self, path: str, body: dict) -> dict:
        """The JSON response to ``body``, retrying transient failures. Raises ``ItemFailed`` when
        every attempt failed and ``VerifierError`` when no retry can help."""
        headers = {"Content-Type": "application/json"}
        if key := self._key():
            headers["Authorization"] = f"Bearer {key}"
        last, last_retry_after = "no attempt", None
        for attempt in range(self.retries + 1):
            if attempt:
                self._count(retries=1)
                time.sleep(self._delay(attempt, last_retry_after))
            last_retry_after = None
            self._wait_turn()
            self._count(requests=1)
            try:
                response = self._session().post(f"{self.base_url}{path}", json=body, headers=headers, timeout=self.timeout_s)
            except requests.Timeout:
                last = "timeout"
                continue
            except requests.ConnectionError as exc:
                if attempt == 0 and _refused(exc):
                    raise VerifierError(f"API endpoint {self.base_url}: nothing answers there (connection refused)") from None
                last = "connection dropped"
                continue
            except requests.RequestException as exc:
                last = f"request error ({type(exc).__name__})"
                continue
            status = response.status_code
            if status in FATAL_STATUS:
                raise VerifierError(f"API endpoint {self.base_url}: {FATAL_STATUS[status]}")
            if status in RETRIED_STATUS:
                last = f"HTTP {status}"
                last_retry_after = _retry_after(response)
                continue
            if status >= 400:
                detail = self.scrub(_detail(response))
                if not self._answered:  # before any success, a refused request is a wrong model, path or body: all would fail
                    raise VerifierError(f"API endpoint {self.base_url}{path}: HTTP {status}: {detail}")
                self._fail(f"HTTP {status}")
                raise ItemFailed(f"HTTP {status}: {detail}")
            try:
                payload = response.json()
            except ValueError:
                last = "malformed response (not JSON)"
                continue
            if not isinstance(payload, dict) or not isinstance(payload.get("choices"), list) or not payload["choices"]:
                last = "malformed response (no choices)"
                continue
            self._answered = True
            usage = payload.get("usage") if isinstance(payload.get("usage"), dict) else {}
            self._count(prompt_tokens=_int(usage.get("prompt_tokens")), completion_tokens=_int(usage.get("completion_tokens")))
            return payload
        self._fail(last)
        raise ItemFailed(f"{last} after {self.retries + 1} attempts")

    def _delay(self, attempt: int, retry_after: float | None) -> float:
        """Exponential backoff with jitter; a server's Retry-After wins when it asks for longer."""
        wait = min(self.max_backoff_s, self.backoff_s * 2 ** (attempt - 1)) * (0.5 + random.random() / 2)
        return min(self.max_backoff_s, max(wait, retry_after or 0.0))


def _refused(exc: requests.ConnectionError) -> bool:
    text = str(exc)
    return "Connection refused" in text or "Name or service not known" in text or "nodename nor servname" in text


def _retry_after(response: requests.Response) -> float | None:
    try:
        return max(0.0, float(response.headers.get("Retry-After", "")))
    except ValueError:
        return None


def _detail(response: requests.Response) -> str:
    """The server's error message on one line, shortened."""
    try:
        body = response.json()
        detail = body.get("detail") or body.get("error") or body if isinstance(body, dict) else body
        if isinstance(detail, dict):
            detail = detail.get("message") or json.dumps(detail)
        text = str(detail)
    except ValueError:
        text = response.text
    return " ".join(text.split())[:200] or response.reason or "no detail"


def _int(value: object) -> int:
    return value if isinstance(value, int) and value >= 0 else 0
