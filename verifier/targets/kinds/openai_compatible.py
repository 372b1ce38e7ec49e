"""A model behind an OpenAI-compatible HTTP API as an audit target (no weights, output only).

SPEC: ``openai-compatible:http://127.0.0.1:8000/v1#model-name`` - the base URL (``/chat/completions``
and ``/completions`` are appended) and, after ``#``, the model name the server knows. How requests
are sent (key variable, timeout, retries, concurrency, rate limit) comes from the claim's
``model.api`` block (``ApiOptions``); what each query asks (temperature, max tokens, samples) is
the attack's.

The target declares one capability, ``answers``: chat queries to ``/chat/completions`` and text
queries (a raw prompt to continue) to legacy ``/completions``. Every response is cached under
(endpoint, model, endpoint path, request body, sample index) the moment it arrives, so a re-run
pays nothing and an interrupted run resumes. Its identity names the endpoint and model and a
digest of every answer the audit read, so two runs that read the same answers name the same
evidence. The usage counters (requests, retries, tokens, failures, wall time) depend on what the
cache held, so they go into the run record beside the findings (signed in the bundle manifest and
shown in the report), not into the findings, whose digest must not change on a re-run.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from pathlib import PurePosixPath
from typing import Literal
from urllib.parse import urlsplit

import requests
from pydantic import BaseModel, ConfigDict, Field, model_validator

from verifier.boundary.peers import ItemFailed, PeerAccess
from verifier.errors import VerifierError
from verifier.targets.api_client import ApiClient
from verifier.targets.base import ANSWERS, TargetIdentity
from verifier.targets.cache import ScoreCache
from verifier.targets.queries import CHAT, Answer, Query, failure_of
from verifier.targets.registry import register
from verifier.targets.token_scores import TokenScores

PREFIX = "openai-compatible:"
# Added to every route outcome that queried an API target (the report lists each once).
LIMITATION = ("An API audit attests only to what the endpoint returned: whoever runs the endpoint (or a proxy before it) could "
              "answer the suspect documents differently from the others, refuse them, or recognise the attacks' fixed prompts, "
              "and the weights behind a model name can change between runs (the responses' model names and fingerprints are "
              "recorded). Output-only attacks are weak: published evaluations put them near AUC 0.5 on modern chat models.")
THINK = re.compile(r"<think>(.*?)(?:</think>|$)", re.DOTALL)


class ApiOptions(BaseModel):
    """How the API is called (``model.api`` in a claim). Which key is sent is not the claim's to
    say: the auditor names the variable holding it (``--api-key-env``, ``PeerAccess``)."""

    model_config = ConfigDict(extra="forbid")

    timeout_s: float = Field(120.0, gt=0, le=3600, description="seconds before a request counts as timed out")
    retries: int = Field(4, ge=0, le=20, description="retries of a request after a timeout, 429, 5xx or malformed body")
    concurrency: int = Field(4, ge=1, le=256, description="requests in flight at once")
    rate_limit: float | None = Field(None, gt=0, le=10_000, description="most request starts per second")
    max_chars: int = Field(2500, ge=100, le=1_000_000, description="documents are cut to this many characters before queries are made")
    token_limit_field: Literal["max_tokens", "max_completion_tokens"] = Field(
        "max_tokens", description="the request field limiting the answer's length (newer OpenAI models accept only max_completion_tokens)")

    @model_validator(mode="before")
    @classmethod
    def _no_key_variable(cls, data: object) -> object:
        if isinstance(data, dict) and "api_key_env" in data:
            raise ValueError("api_key_env: the claim cannot choose which of the auditor's secrets is sent to its server; "
                             "the auditor names the variable: verifier audit CLAIM --api-key-env VAR")
        return data


def parse_spec(spec: str) -> tuple[str, str]:
    """(base URL, model name) of an ``openai-compatible:`` SPEC, or a one-line ``VerifierError``.
    One endpoint has one spelling (it is part of every cache key): no spaces, a lower-case scheme."""
    url, _, model = spec.removeprefix(PREFIX).partition("#")
    if any(c.isspace() for c in url + model):
        raise VerifierError(f"target {spec!r}: no spaces in the URL or the model name")
    if not url.startswith(("http://", "https://")):
        raise VerifierError(f"target {spec!r}: expected {PREFIX}http(s)://host[:port]/path#model (a lower-case scheme)")
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises on a bad port
    except ValueError as exc:
        raise VerifierError(f"target {spec!r}: not a URL ({exc})") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise VerifierError(f"target {spec!r}: expected {PREFIX}http(s)://host[:port]/path#model")
    if parts.username or parts.password or parts.query:
        raise VerifierError(f"target {spec!r}: no credentials or query string in the URL (it enters the findings); "
                            "the auditor gives the key in an environment variable: verifier audit --api-key-env VAR")
    if not model.strip() or len(model) > 300:
        raise VerifierError(f"target {spec!r}: name the served model after '#'")
    return url.rstrip("/"), model


@register(prefix=PREFIX, options=ApiOptions)
class OpenAICompatibleTarget:
    """An API-served model answering chat and text queries."""

    capabilities = frozenset({ANSWERS})
    kind = "openai_compatible"
    limitations = (LIMITATION,)
    remote = True  # another party's server: documents leave the machine, requests are counted

    @classmethod
    def load(cls, spec: str, scoring: object, api: ApiOptions | None, access: PeerAccess | None) -> OpenAICompatibleTarget:
        """The audited endpoint, sent the key of ``access.api_key_env`` (open-weight scoring options do not apply)."""
        return cls(spec, api, access, access.api_key_env if access else None)

    @classmethod
    def check_spec(cls, spec: str) -> None:
        parse_spec(spec)

    @classmethod
    def unloaded_identity(cls, spec: str, base: object) -> dict[str, object]:
        endpoint, model = parse_spec(spec)
        return {"kind": cls.kind, "spec": model, "endpoint": endpoint, "digests": {}, "loaded": False}

    def __init__(self, spec: str, options: ApiOptions | None = None, access: PeerAccess | None = None,
                 key_env: str | None = None) -> None:
        """``key_env``: the variable holding this endpoint's key, as the auditor named it (the
        target's is ``access.api_key_env``; a judge's, ``access.judge_api_key_env``)."""
        self.spec = spec
        self.endpoint, self.model = parse_spec(spec)
        self.options = options or ApiOptions()
        self.access = access = access or PeerAccess()
        self.client = ApiClient(self.endpoint, access, key_env, self.options.timeout_s, self.options.retries, self.options.rate_limit)
        self._checked = False
        self._read: dict[str, str] = {}  # query key -> digest of the response body the audit read
        self._bodies: dict[str, dict] = {}  # every response read in this run, by cache key (an audit reads each set's answers again)
        self._served_as: set[str] = set()  # the model names (and system fingerprints) the responses gave

    @property
    def max_chars(self) -> int:
        return self.options.max_chars

    @property
    def usage(self) -> dict[str, object]:
        return self.client.usage.as_finding()

    @property
    def fingerprint(self) -> dict[str, object]:
        return {"kind": self.kind, "endpoint": self.endpoint, "model": self.model}

    @property
    def identity(self) -> TargetIdentity:
        answers = hashlib.sha256("".join(f"{k}:{v}\n" for k, v in sorted(self._read.items())).encode()).hexdigest()
        return TargetIdentity(self.kind, self.model, {"answers": answers} if self._read else {},
                              {"endpoint": self.endpoint, "answers_read": len(self._read), "max_chars": self.max_chars,
                               "served_as": sorted(self._served_as), **self.options.model_dump(exclude={"max_chars"})})

    def score(self, texts: Sequence[str], cache: ScoreCache | None = None,
              on_progress: Callable[[int], None] | None = None) -> list[TokenScores]:
        raise VerifierError(f"target {self.model}: an API target gives no prompt log-probs; use output-only signals")

    def request(self, query: Query) -> tuple[str, dict]:
        """(endpoint path, JSON body) of one query. A sampled query carries its sample index as the
        seed, so servers that honour seeds give the same draw again."""
        body: dict[str, object] = {"model": self.model, self.options.token_limit_field: query.max_tokens, "temperature": query.temperature}
        if query.temperature > 0:
            body["seed"] = query.sample
        if query.kind == CHAT:
            messages = [{"role": "system", "content": query.system}] if query.system else []
            body["messages"] = [*messages, {"role": "user", "content": query.content}]
            return "/chat/completions", body
        body["prompt"] = query.content
        return "/completions", body

    def cache_key(self, query: Query, request: tuple[str, dict] | None = None) -> str:
        path, body = request or self.request(query)
        payload = {"endpoint": self.endpoint, "model": self.model, "path": path, "body": body, "sample": query.sample}
        return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()

    def answer(self, queries: Sequence[Query], cache: ScoreCache | None = None,
               on_progress: Callable[[int], None] | None = None) -> list[Answer]:
        """The answer to each query (from the cache where it is there), in order. Transport
        failures after every retry are failed answers (not cached: a later run asks again)."""
        started = time.monotonic()
        calls = [self.request(q) for q in queries]
        keys = [self.cache_key(q, r) for q, r in zip(queries, calls)]
        bodies: dict[str, dict] = {key: self._bodies[key] for key in keys if key in self._bodies}  # read earlier in this run
        from_cache = 0
        for key in dict.fromkeys(keys):
            if key not in bodies and cache is not None and (body := cache.get_response(key)) is not None:
                bodies[key] = body
                from_cache += 1
        self.client.usage.cached += from_cache
        if on_progress:
            on_progress(sum(1 for k in keys if k in bodies))
        failed: dict[str, str] = {}
        missing = {k: r for k, r in zip(keys, calls) if k not in bodies}
        if missing:
            self._preflight()
            self._fetch(missing, bodies, failed, cache, lambda: on_progress(1) if on_progress else None)
        self.client.usage.wall_s += time.monotonic() - started
        self._bodies.update(bodies)
        answers = []
        for key, query in zip(keys, queries):
            if key in failed:
                answers.append(Answer(error=failed[key], transient=True))
                continue
            self._read[key] = hashlib.sha256(json.dumps(bodies[key], sort_keys=True).encode()).hexdigest()
            self._served_as.update(served_as(bodies[key]))
            answers.append(answer := parse_answer(bodies[key], query.kind))
            if answer.error:
                self.client.usage.failures[answer.error] += 1
        return answers

    def _fetch(self, missing: dict[str, tuple[str, dict]], bodies: dict[str, dict], failed: dict[str, str], cache: ScoreCache | None,
               advance: Callable[[], None]) -> None:
        """Send the missing requests (path, body by cache key), ``concurrency`` at a time; each response is cached on this
        thread the moment it arrives. On a fatal error the queued requests are cancelled, those in
        flight are waited for, and every answer received is cached before the error is raised; on
        an interrupt (Ctrl-C) the queued ones are cancelled and what arrived is cached."""
        pool = ThreadPoolExecutor(max_workers=self.options.concurrency)
        futures: dict[Future, str] = {pool.submit(self.client.post_json, *request): k for k, request in missing.items()}

        def keep(future: Future) -> None:
            key = futures[future]
            if key in bodies or key in failed:
                return
            try:
                bodies[key] = self._scrubbed(future.result())
            except ItemFailed as exc:
                failed[key] = str(exc)
            else:
                if cache is not None:
                    cache.put_response(key, bodies[key])
            advance()

        try:
            for future in as_completed(futures):
                keep(future)
        except VerifierError:
            pool.shutdown(wait=True, cancel_futures=True)
            self._keep_done(futures, keep)
            raise
        except BaseException:
            pool.shutdown(wait=False, cancel_futures=True)
            self._keep_done(futures, keep)
            raise
        pool.shutdown()

    def _scrubbed(self, body: dict) -> dict:
        """``body`` with the API key removed wherever a server or proxy echoed it (it would
        otherwise reach the cache, and through ``served_as`` the findings)."""
        text = json.dumps(body)
        clean = self.client.scrub(text)
        return body if clean == text else json.loads(clean)

    @staticmethod
    def _keep_done(futures: dict[Future, str], keep: Callable[[Future], None]) -> None:
        """Cache every request that finished with an answer (a fatal error of one request must not
        throw away the others' paid answers)."""
        for future in futures:
            if future.done() and not future.cancelled() and not isinstance(future.exception(), VerifierError):
                keep(future)

    def _preflight(self) -> None:
        """Before the first paid request: is anything there, and does it serve this model? (A
        server without a model list is not refused here; its first answer tells.)"""
        if self._checked:
            return
        try:
            response = self.client.send("GET", "/models")
        except requests.ConnectionError:
            raise VerifierError(f"API endpoint {self.endpoint}: nothing answers there (is the server running?)") from None
        except requests.RequestException as exc:
            raise VerifierError(f"API endpoint {self.endpoint}: {type(exc).__name__} while listing models") from None
        except ItemFailed as exc:
            raise VerifierError(f"API endpoint {self.endpoint}: listing models: {exc}") from None
        if response.status in (401, 403):
            raise VerifierError(f"API endpoint {self.endpoint}: the server rejected the API key (HTTP {response.status})")
        if response.status == 200:
            try:
                served = [str(m.get("id")) for m in json.loads(response.body).get("data", []) if isinstance(m, dict)]
            except (ValueError, AttributeError, TypeError, RecursionError):  # no usable list: the first answer tells
                served = []
            if served and self.model not in served:
                names = self.client.scrub(", ".join(PurePosixPath(m).name for m in served[:5]))[:300]  # a server may name models by their (private) path
                raise VerifierError(f"API endpoint {self.endpoint}: model {self.model!r} is not served there; it serves {names}")
        self._checked = True


def served_as(body: dict) -> set[str]:
    """What a response says answered it: the model name and the system fingerprint, where given
    (an alias such as ``gpt-4o`` repointed to new weights shows up here as a second entry)."""
    names = set()
    for field in ("model", "system_fingerprint"):
        if isinstance(value := body.get(field), str) and value:
            names.add(f"{field}={PurePosixPath(value).name if value.startswith('/') else value}"[:200])
    return names


def parse_answer(body: dict, kind: str) -> Answer:
    """The text, reasoning trace and finish reason of a response; a malformed, empty or refused
    answer is a failed one. ``<think>`` blocks in the content are the trace, not the answer (as is
    everything before a lone ``</think>``, as templates that open the block themselves emit it);
    content given as parts keeps its text parts."""
    choice = body.get("choices", [{}])[0]
    if not isinstance(choice, dict):
        return Answer(error="malformed response (choice is not an object)")
    finish = choice.get("finish_reason") if isinstance(choice.get("finish_reason"), str) else None
    if kind == CHAT:
        message = choice.get("message")
        if not isinstance(message, dict):
            return Answer(error="malformed response (no message)")
        content, reasoning = message.get("content") or "", message.get("reasoning_content") or message.get("reasoning")
        if isinstance(content, list):
            content = "".join(p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text" and isinstance(p.get("text"), str))
    else:
        content, reasoning = choice.get("text") or "", None
    if not isinstance(reasoning, str):
        reasoning = None  # a trace in a form we do not read is no trace; the answer stands
    if not isinstance(content, str):
        return Answer(error="malformed response (content is not text)")
    if "</think>" in content and "<think>" not in content:
        before, _, content = content.partition("</think>")
        reasoning, content = "\n".join(filter(None, [reasoning, before.strip()])), content.strip()
    if thoughts := THINK.findall(content):
        reasoning = "\n".join(filter(None, [reasoning, *(t.strip() for t in thoughts)]))
        content = THINK.sub("", content).strip()
    error = failure_of(content, finish, kind)
    return Answer(text="" if error else content, reasoning=reasoning, finish_reason=finish, error=error)
