"""A model behind an OpenAI-compatible HTTP API as an audit target (no weights, output only).

SPEC: ``openai-compatible:http://127.0.0.1:8000/v1#model-name`` - the base URL (``/chat/completions``
and ``/completions`` are appended) and, after ``#``, the model name the server knows. How requests
are sent (key variable, timeout, retries, concurrency, rate limit) comes from the claim's
``model.api`` block (``ApiOptions``); what each query asks (temperature, max tokens, samples) is
the attack's.

The target answers chat queries (``/chat/completions``) and text queries (a raw prompt to
continue, legacy ``/completions``): capability ``answers``. When loaded it probes what else the
server offers (``probe``), and declares it:
- ``prompt_logprobs``: the log-prob of every prompt token, from the legacy API's ``echo`` with
  ``logprobs`` and ``max_tokens: 0``, or vLLM's ``prompt_logprobs``. Then loss, zlib, Min-K% and
  the prefixed and calibrated signals are computed through the API (``score``). Statistics over
  the whole vocabulary (Min-K%++, Gap-K%) are not: no such server returns the whole distribution.
- ``top_k_logprobs``: the most likely alternatives of each generated token (chat ``logprobs`` /
  ``top_logprobs``).
Token-level numbers are the server's tokenizer's: the probe records its fingerprint (from the
token ids where the server gives them, else from its token strings), every scoring request's
cache key carries it, and a server whose tokenizer changes during a run is refused. The probe
also sends one scoring request twice and records how far the answers differ (a prefix cache or
batching on the server can change log-probs between identical requests). Every response is cached under
(endpoint, model, endpoint path, request body, sample index) the moment it arrives, so a re-run
pays nothing and an interrupted run resumes. Its identity names the endpoint and model and a
digest of every answer the audit read, so two runs that read the same answers name the same
evidence. The usage counters (requests, retries, tokens, failures, wall time) depend on what the
cache held, so they go into the run record beside the findings (signed in the bundle manifest and
shown in the report), not into the findings, whose digest must not change on a re-run.
"""

from __future__ import annotations

import contextlib
import copy
import hashlib
import json
import re
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Literal
from urllib.parse import urlsplit

import numpy as np
import requests
from pydantic import BaseModel, ConfigDict, Field, model_validator

from verifier.boundary.peers import ItemFailed, PeerAccess
from verifier.errors import VerifierError
from verifier.targets.api_client import ApiClient
from verifier.targets.base import (
    ANSWERS,
    PROMPT_LOGPROBS,
    TOKENIZER_PROBE,
    TOP_K_LOGPROBS,
    TargetIdentity,
    tokenizer_fingerprint,
)
from verifier.targets.cache import ScoreCache
from verifier.targets.queries import CHAT, Answer, Query, failure_of
from verifier.targets.registry import register
from verifier.targets.token_scores import TokenScores

PREFIX = "openai-compatible:"
# Added to every route outcome that queried an API target (the report lists each once).
LIMITATION = (
    "An API audit attests only to what the endpoint returned: whoever runs the endpoint (or a proxy before it) could "
    "answer the suspect documents differently from the others, refuse them, or recognise the attacks' fixed prompts, "
    "and the weights behind a model name can change between runs (the responses' model names and fingerprints are "
    "recorded). Output-only attacks are weak: published evaluations put them near AUC 0.5 on modern chat models."
)
THINK = re.compile(r"<think>(.*?)(?:</think>|$)", re.DOTALL)


class ApiOptions(BaseModel):
    """How the API is called (``model.api`` in a claim). Which key is sent is not the claim's to
    say: the auditor names the variable holding it (``--api-key-env``, ``PeerAccess``)."""

    model_config = ConfigDict(extra="forbid")

    timeout_s: float = Field(120.0, gt=0, le=3600, description="seconds before a request counts as timed out")
    retries: int = Field(4, ge=0, le=20, description="retries of a request after a timeout, 429, 5xx or malformed body")
    concurrency: int = Field(4, ge=1, le=256, description="requests in flight at once")
    rate_limit: float | None = Field(None, gt=0, le=10_000, description="most request starts per second")
    max_chars: int = Field(
        2500, ge=100, le=1_000_000, description="documents are cut to this many characters before queries are made"
    )
    token_limit_field: Literal["max_tokens", "max_completion_tokens"] = Field(
        "max_tokens",
        description="the request field limiting the answer's length (newer OpenAI models accept only "
        "max_completion_tokens)",
    )
    max_tokens: int = Field(
        256,
        ge=2,
        le=100_000,
        description="tokens of each document scored where the server returns prompt "
        "log-probs (as --max-tokens for a local model: the same cut gives the same numbers)",
    )

    logprobs: bool = Field(
        True,
        description="false: treat the endpoint as answers-only - no request for log-probs is ever sent, probes "
        "included (routes that need them are skipped and say why)",
    )

    @model_validator(mode="before")
    @classmethod
    def _no_key_variable(cls, data: object) -> object:
        if isinstance(data, dict) and "api_key_env" in data:
            raise ValueError(
                "api_key_env: the claim cannot choose which of the auditor's secrets is sent to its server; "
                "the auditor names the variable: verifier audit CLAIM --api-key-env VAR"
            )
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
    path = parts.path.lower()
    if parts.username or parts.password or parts.query or any(c in path for c in (";", "=", "%3b", "%3d")):
        raise VerifierError(
            f"target {spec!r}: no credentials, parameters or query string in the URL (it enters the findings); "
            "the auditor gives the key in an environment variable: verifier audit --api-key-env VAR"
        )
    if not model.strip() or len(model) > 300:
        raise VerifierError(f"target {spec!r}: name the served model after '#'")
    return url.rstrip("/"), model


class ProbedCapabilities:
    """What a kind of server may offer (read on the class, as the registry does before anything
    is loaded), and what this server does offer (read on a target: probed on first reading, so
    loading a target sends nothing)."""

    def __init__(self, possible: frozenset[str]) -> None:
        self.possible = possible

    def __get__(self, target: OpenAICompatibleTarget | None, owner: type) -> frozenset[str]:
        if target is None:
            return self.possible
        if target._capabilities is None:
            target.probe()
        return target._capabilities


@register(prefix=PREFIX, options=ApiOptions)
class OpenAICompatibleTarget:
    """An API-served model answering chat and text queries."""

    capabilities = ProbedCapabilities(frozenset({ANSWERS, PROMPT_LOGPROBS, TOP_K_LOGPROBS}))
    kind = "openai_compatible"
    limitations = (LIMITATION,)
    remote = True  # another party's server: documents leave the machine, requests are counted

    @classmethod
    def load(
        cls, spec: str, scoring: object, api: ApiOptions | None, access: PeerAccess | None
    ) -> OpenAICompatibleTarget:
        """The audited endpoint, sent the key of ``access.api_key_env`` (open-weight scoring options do not apply)."""
        return cls(spec, api, access, access.api_key_env if access else None)

    @classmethod
    def check_spec(cls, spec: str) -> None:
        parse_spec(spec)

    @classmethod
    def unloaded_identity(cls, spec: str, base: object) -> dict[str, object]:
        endpoint, model = parse_spec(spec)
        return {"kind": cls.kind, "spec": model, "endpoint": endpoint, "digests": {}, "loaded": False}

    def __init__(
        self, spec: str, options: ApiOptions | None = None, access: PeerAccess | None = None, key_env: str | None = None
    ) -> None:
        """``key_env``: the variable holding this endpoint's key, as the auditor named it (the
        target's is ``access.api_key_env``; a judge's, ``access.judge_api_key_env``)."""
        self.spec = spec
        self.endpoint, self.model = parse_spec(spec)
        self.options = options or ApiOptions()
        self.access = access = access or PeerAccess()
        self.client = ApiClient(
            self.endpoint, access, key_env, self.options.timeout_s, self.options.retries, self.options.rate_limit
        )
        self._checked = False
        self._read: dict[str, str] = {}  # query key -> digest of the response body the audit read
        self._bodies: dict[
            str, dict
        ] = {}  # every response read in this run, by cache key (an audit reads each set's answers again)
        self._served_as: set[str] = set()  # the model names (and system fingerprints) the responses gave
        self._capabilities: frozenset[str] | None = None  # what the server offers: probed when first read
        self.prompt_form: str | None = None  # "echo" (legacy) or "prompt_logprobs" (vLLM), as the probe found
        self._tokenizer_fingerprint: str | None = None  # from token ids, where the server gives them
        self.tokens_fingerprint: str | None = None  # from the token strings of the probe text (any prompt_form)
        self.repeat_difference: float | None = None  # largest |log p| difference between two identical scoring requests
        self._token_strings: dict[int, str] = {}  # token id -> its text, over every response read (vLLM form)

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
        probed = {
            "capabilities": sorted(self._capabilities or ()),
            "prompt_logprobs_form": self.prompt_form,
            "tokenizer": self._tokenizer_fingerprint or self.tokens_fingerprint,
            "repeat_difference": self.repeat_difference,
        }
        return TargetIdentity(
            self.kind,
            self.model,
            {"answers": answers} if self._read else {},
            {
                "endpoint": self.endpoint,
                "answers_read": len(self._read),
                "max_chars": self.max_chars,
                "served_as": sorted(self._served_as),
                **self.options.model_dump(exclude={"max_chars"}),
                **({"probed": probed} if self.prompt_form or TOP_K_LOGPROBS in self.capabilities else {}),
            },
        )

    # --- capabilities and prompt log-probs -----------------------------------------------------

    @property
    def tokenizer_fingerprint(self) -> str | None:
        """The server's tokenizer fingerprint (``targets.base``), where its answers give token ids."""
        self.capabilities  # noqa: B018 - probes the server on first reading
        return self._tokenizer_fingerprint

    @contextlib.contextmanager
    def _probing(self) -> Iterator[None]:
        """Requests made inside are probes: counted as such, their failures (a server refusing a
        form it does not speak) not counted as failed answers."""
        before = copy.deepcopy(self.client.usage)
        try:
            yield
        finally:
            sent = self.client.usage.requests - before.requests
            before.probes += sent
            self.client.usage = before

    def probe(self) -> None:
        """Ask the server what it offers beyond answers (a few requests, never cached: they test
        the live server): prompt log-probs in either form, and top-k log-probs of chat answers."""
        self._preflight()
        with self._probing():
            self._capabilities = self._probed()

    def _probed(self) -> frozenset[str]:
        offered = {ANSWERS}
        if not self.options.logprobs:
            return frozenset(offered)  # answers only, by the claim's word: nothing is asked
        # The vLLM form first: it gives token ids (a tokenizer fingerprint, DC-PDD's frequencies).
        for form in ("prompt_logprobs", "echo"):
            first = self._probe_request(form)
            if first is not None:
                second = self._probe_request(form)
                if second is None:
                    raise VerifierError(
                        f"API endpoint {self.endpoint}: scored the probe text once, then answered the same request "
                        "with no usable prompt log-probs"
                    )
                if second[1] != first[1]:
                    raise VerifierError(
                        f"API endpoint {self.endpoint}: tokenized the same text two ways in two requests"
                    )
                self.prompt_form, offered = form, offered | {PROMPT_LOGPROBS}
                self.tokens_fingerprint, self._tokenizer_fingerprint = first[1], first[2]
                self.repeat_difference = float(np.max(np.abs(first[0] - second[0]))) if len(first[0]) else 0.0
                break
        try:
            body = self.client.post_json(
                "/chat/completions",
                {
                    "model": self.model,
                    "messages": [{"role": "user", "content": "Say OK."}],
                    self.options.token_limit_field: 1,
                    "temperature": 0,
                    "logprobs": True,
                    "top_logprobs": 2,
                },
            )
            content = ((body["choices"][0].get("logprobs") or {}).get("content") or [{}])[0]
            if isinstance(content.get("top_logprobs"), list) and content["top_logprobs"]:
                offered.add(TOP_K_LOGPROBS)
        except (ItemFailed, VerifierError, KeyError, IndexError, TypeError, AttributeError):
            pass
        return frozenset(offered)

    def _probe_request(self, form: str) -> tuple[np.ndarray, str, str | None] | None:
        """The probe text's scores in ``form`` (log-probs, token-strings fingerprint, token-ids
        fingerprint or None); None when the server does not answer in that form."""
        try:
            body = self._scrubbed(self.client.post_json("/completions", self.scoring_body(TOKENIZER_PROBE, form)))
            tokens = read_prompt_tokens(body, form, TOKENIZER_PROBE)
        except (ItemFailed, VerifierError):
            return None
        if tokens is None or len(tokens.logprobs) < 2:
            return None
        self._same_tokenizer(tokens)
        strings = hashlib.sha256(json.dumps(tokens.strings).encode()).hexdigest()
        # A start token (no text of its own, the others rebuilding the probe) is not the text's: left
        # out, as the local fingerprint leaves it out. Where that is unclear it stays, and a table
        # counted locally does not match (refused, never mixed).
        opens = tokens.ids and tokens.strings[0] == "" and "".join(tokens.strings[1:]) == TOKENIZER_PROBE
        ids = tokens.ids[1:] if opens else tokens.ids
        return np.asarray(tokens.logprobs[1:], dtype=np.float64), strings, tokenizer_fingerprint(ids) if ids else None

    def scoring_body(self, prompt: str, form: str | None = None) -> dict[str, object]:
        """The request scoring ``prompt`` (nothing generated, greedy, one alternative)."""
        if (form or self.prompt_form) == "echo":
            return {
                "model": self.model,
                "prompt": prompt,
                "max_tokens": 0,
                "echo": True,
                "logprobs": 1,
                "temperature": 0,
            }
        return {
            "model": self.model,
            "prompt": prompt,
            "max_tokens": 1,
            "prompt_logprobs": 0,
            "temperature": 0,
            "return_token_ids": True,  # vLLM then lists the prompt's ids (others ignore the field)
        }

    def score(
        self,
        texts: Sequence[str],
        cache: ScoreCache | None = None,
        on_progress: Callable[[int], None] | None = None,
        context: str | None = None,
    ) -> list[TokenScores]:
        """Token scores of each text (cut to ``max_chars``, then to ``max_tokens`` of the server's
        tokens) from the server's prompt log-probs, through the response cache; with ``context``,
        the text's own tokens after the context. A text the server refused, or tokenized across
        the join with the context, gets no scored positions (its signals are NaN, counted)."""
        if PROMPT_LOGPROBS not in self.capabilities:
            raise VerifierError(
                f"target {self.model}: the server returned no prompt log-probs when probed; use output-only signals"
            )
        prefix = context or ""
        cut = [text[: self.max_chars] for text in texts]
        calls = [("/completions", self.scoring_body(prefix + text)) for text in cut]
        keys = [self._scoring_key(body) for _, body in calls]
        bodies, failed = self._read_through(keys, calls, cache, on_progress, self._check_tokenizer_unchanged)
        out = []
        for key, text in zip(keys, cut):
            if key in failed:
                out.append(empty_scores())
                continue
            self._record(key, bodies[key])
            tokens = read_prompt_tokens(bodies[key], self.prompt_form, prefix + text)
            if tokens is not None:
                self._same_tokenizer(tokens)
            out.append(text_scores(tokens, len(prefix), len(text), self.options.max_tokens))
        return out

    def _same_tokenizer(self, tokens: PromptTokens) -> None:
        """Every token id must spell the same text in every response of the run, the probe's
        included: a server answering the probe with one tokenizer and documents with another (or
        replicas behind a balancer running two versions) is refused, never mixed. Only the
        vLLM form gives ids. A server detokenizing incrementally may spell a token's spacing by
        position, and a token completing a multi-byte character with its neighbours' bytes, so
        only ASCII spellings (and the empty spelling of a partial character) are compared, without
        surrounding white space, and the first tokens are left out."""
        if not tokens.ids:
            return
        for token_id, text in zip(tokens.ids[2:], tokens.strings[2:]):
            # vLLM spells a token ending inside a character as "" wherever it stands, and such a
            # token never reads as ASCII text elsewhere: "" is compared too (white space is not).
            spelled = text.strip()
            if (text and not spelled) or not spelled.isascii():
                continue
            known = self._token_strings.setdefault(token_id, spelled)
            if known != spelled:
                raise VerifierError(
                    f"API endpoint {self.endpoint}: token id {token_id} reads {known[:20]!r} in one response and "
                    f"{spelled[:20]!r} in another: the server tokenized with two tokenizers, whose token-level "
                    "numbers are never mixed in one test"
                )

    def _check_tokenizer_unchanged(self) -> None:
        """After requests were sent: the probe text must still be tokenized as when loaded."""
        with self._probing():
            again = self._probe_request(self.prompt_form)
        if again is None or again[1] != self.tokens_fingerprint:
            raise VerifierError(
                f"API endpoint {self.endpoint}: the server's tokenizer changed during the run (its tokens of the probe "
                "text differ from those when loaded): token-level numbers of two tokenizers are never mixed in one test"
            )

    def _scoring_key(self, body: dict) -> str:
        """A scoring response's cache key: the request, and the tokenizer the probe found (a
        response read with another tokenizer is never reused)."""
        payload = {
            "endpoint": self.endpoint,
            "model": self.model,
            "path": "/completions",
            "body": body,
            "tokenizer": self.tokens_fingerprint,
        }
        return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()

    def request(self, query: Query) -> tuple[str, dict]:
        """(endpoint path, JSON body) of one query. A sampled query carries its sample index as the
        seed, so servers that honour seeds give the same draw again."""
        body: dict[str, object] = {
            "model": self.model,
            self.options.token_limit_field: query.max_tokens,
            "temperature": query.temperature,
        }
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

    def answer(
        self,
        queries: Sequence[Query],
        cache: ScoreCache | None = None,
        on_progress: Callable[[int], None] | None = None,
    ) -> list[Answer]:
        """The answer to each query (from the cache where it is there), in order. Transport
        failures after every retry are failed answers (not cached: a later run asks again)."""
        calls = [self.request(q) for q in queries]
        keys = [self.cache_key(q, r) for q, r in zip(queries, calls)]
        bodies, failed = self._read_through(keys, calls, cache, on_progress)
        answers = []
        for key, query in zip(keys, queries):
            if key in failed:
                answers.append(Answer(error=failed[key], transient=True))
                continue
            self._record(key, bodies[key])
            answers.append(answer := parse_answer(bodies[key], query.kind))
            if answer.error:
                self.client.usage.failures[answer.error] += 1
        return answers

    def _read_through(
        self,
        keys: list[str],
        calls: list[tuple[str, dict]],
        cache: ScoreCache | None,
        on_progress: Callable[[int], None] | None,
        after_fetch: Callable[[], None] | None = None,
    ) -> tuple[dict[str, dict], dict[str, str]]:
        """(response bodies, failures) by cache key: what this run read already, then the cache,
        then the server for the rest (``after_fetch`` runs once requests were sent). Answers and
        scoring read the same way, so the cache, counters and trust rules are one."""
        started = time.monotonic()
        bodies: dict[str, dict] = {
            key: self._bodies[key] for key in keys if key in self._bodies
        }  # read earlier in this run
        for key in dict.fromkeys(keys):
            if key not in bodies and cache is not None and (body := cache.get_response(key)) is not None:
                bodies[key] = body
                self.client.usage.cached += 1
        if on_progress:
            on_progress(sum(1 for k in keys if k in bodies))
        failed: dict[str, str] = {}
        missing = {k: c for k, c in zip(keys, calls) if k not in bodies}
        if missing:
            self._preflight()
            self._fetch(missing, bodies, failed, cache, lambda: on_progress(1) if on_progress else None)
            if after_fetch:
                after_fetch()
        self.client.usage.wall_s += time.monotonic() - started
        self._bodies.update(bodies)
        return bodies, failed

    def _record(self, key: str, body: dict) -> None:
        """A response the audit used: its digest enters the target's identity, its model name the findings."""
        self._read[key] = hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()
        self._served_as.update(served_as(body))

    def _fetch(
        self,
        missing: dict[str, tuple[str, dict]],
        bodies: dict[str, dict],
        failed: dict[str, str],
        cache: ScoreCache | None,
        advance: Callable[[], None],
    ) -> None:
        """Send the missing requests (path, body by cache key), ``concurrency`` at a time; each response is cached on
        this
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
            raise VerifierError(
                f"API endpoint {self.endpoint}: nothing answers there (is the server running?)"
            ) from None
        except requests.RequestException as exc:
            raise VerifierError(f"API endpoint {self.endpoint}: {type(exc).__name__} while listing models") from None
        except ItemFailed as exc:
            raise VerifierError(f"API endpoint {self.endpoint}: listing models: {exc}") from None
        if response.status in (401, 403):
            raise VerifierError(
                f"API endpoint {self.endpoint}: the server rejected the API key (HTTP {response.status})"
            )
        if response.status == 200:
            try:
                served = [str(m.get("id")) for m in json.loads(response.body).get("data", []) if isinstance(m, dict)]
            except (ValueError, AttributeError, TypeError, RecursionError):  # no usable list: the first answer tells
                served = []
            if served and self.model not in served:
                names = self.client.scrub(", ".join(PurePosixPath(m).name for m in served[:5]))[
                    :300
                ]  # a server may name models by their (private) path
                raise VerifierError(
                    f"API endpoint {self.endpoint}: model {self.model!r} is not served there; it serves {names}"
                )
        self._checked = True


@dataclass(frozen=True)
class PromptTokens:
    """A scored prompt as a server returned it: token strings, their log-probs (the first None),
    where each token starts in the prompt (None when the server's strings do not rebuild the
    prompt, so no join with a prefix can be found), and the token ids where the server gives them."""

    strings: list[str]
    logprobs: list[float | None]
    offsets: list[int] | None
    ids: list[int] | None


def read_prompt_tokens(body: dict, form: str | None, prompt: str) -> PromptTokens | None:
    """The prompt's tokens in a response of either form; None when the response holds none, or
    holds them malformed (another party's bytes: every field is checked)."""
    try:
        choice = body["choices"][0]
        if form == "echo":
            lp = choice["logprobs"]
            strings, logprobs, offsets, ids = lp["tokens"], lp["token_logprobs"], lp["text_offset"], None
            # Every token must start inside the prompt, in order: a server that generated a token
            # anyway (max_tokens 0 raised to 1) appends one starting at the prompt's end, and its
            # log-prob is not the text's.
            if not (
                isinstance(offsets, list)
                and all(type(o) is int for o in offsets)
                and all(0 <= a <= b < len(prompt) for a, b in zip(offsets, offsets[1:] + [len(prompt) - 1]))
            ):
                return None
            if choice.get("text") not in (None, prompt):
                return None
            if not isinstance(strings, list) or first_token_length(strings[1:], prompt) is None:
                return None
            # Where the tokens rebuild the prompt, each starts where the ones before it end (the first
            # token's length aside): offsets that disagree with the texts would move every score
            # after a prefix.
            rest = "".join(strings[1:])
            if prompt.endswith(rest) and offsets[1:] != [
                len(prompt) - len(rest) + sum(len(t) for t in strings[1:i]) for i in range(1, len(strings))
            ]:
                return None
        else:
            entries, ids = choice["prompt_logprobs"], choice.get("prompt_token_ids")
            if not isinstance(entries, list) or not entries or entries[0] is not None:
                return None
            if ids is not None and (not isinstance(ids, list) or len(ids) != len(entries)):
                return None  # ids and log-probs of different prompts (or of a prompt and what was generated)
            strings, logprobs = [], [None]
            for index, entry in enumerate(entries[1:], start=1):
                token = (
                    entry[str(ids[index])] if ids else next(iter(entry.values()))
                )  # without ids: the actual token, listed first
                strings.append(token["decoded_token"])
                logprobs.append(token["logprob"])
            first = first_token_length(strings, prompt)
            if first is None:
                return None
            strings.insert(0, prompt[:first])
            offsets = (
                [sum(len(s) for s in strings[:i]) for i in range(len(strings))] if "".join(strings) == prompt else None
            )
        n = len(strings)
        if not (
            n
            and len(logprobs) == n
            and (offsets is None or len(offsets) == n)
            and all(isinstance(t, str) for t in strings)
            and all(type(v) in (int, float) and v <= 1e-6 and v == v for v in logprobs[1:])
        ):
            return None
        if ids is not None and not all(type(i) is int and i >= 0 for i in ids):
            return None
        return PromptTokens(
            list(strings), [None, *map(float, logprobs[1:])], offsets, [int(i) for i in ids] if ids else None
        )
    except (KeyError, IndexError, TypeError, AttributeError, StopIteration):
        return None


MAX_TOKEN_CHARS = 128  # longer than any token of a real tokenizer's vocabulary


def first_token_length(others: list, prompt: str) -> int | None:
    """The length of the prompt's first token (which the vLLM form does not spell out) when the
    other tokens rebuild the rest of the prompt; None when they do not (in either form): tokens of
    another text (generated ones appended), log-probs of only part of the prompt (a first "token"
    longer than any token), a prompt the server changed, or an empty token that is not a partial
    character.

    Partial characters: a byte-level tokenizer splits a multi-byte UTF-8 character across tokens,
    and servers spell a token that ends inside a character in one of two ways. vLLM writes it as
    ``""`` and spells the whole character with the token that completes it, so its tokens still
    rebuild the prompt exactly; others write replacement characters. An empty token is told apart
    from an inserted one by what must follow it (``partial_characters_hold``); a run of
    replacement characters stands for non-ASCII characters whose bytes a token split, so there the
    ASCII text is compared, and the replacement characters may be at most as many as the prompt's
    non-ASCII bytes."""
    if not all(isinstance(t, str) for t in others):
        return None
    rest = "".join(others)
    if prompt.endswith(rest):
        first = len(prompt) - len(rest)
    elif "\ufffd" in rest:
        # A run of k replacement characters stands for bytes of 1 to k non-ASCII characters; every
        # other character must be the prompt's own, and the tokens must reach the prompt's end.
        pattern = "".join(
            f"[^\\x00-\\x7f]{{1,{len(run)}}}" if run[0] == "\ufffd" else re.escape(run)
            for run in re.split("(\ufffd+)", rest)
            if run
        )
        match = re.search(f"(?:{pattern})\\Z", prompt)
        if match is None:
            return None
        first = match.start()
    else:
        return None
    if first > MAX_TOKEN_CHARS or not partial_characters_hold(others, prompt[:first]):
        return None
    return first


def partial_characters_hold(others: list[str], first: str) -> bool:
    """Whether every empty token among ``others`` (the tokens after the first, whose text is
    ``first``) can be a token ending inside a multi-byte character, as vLLM spells one.

    Such a token holds at least one byte of a character its text does not show; the token that
    completes the character shows it whole. So a run of empty tokens must be followed by a token
    showing a non-ASCII character (a run at the end, or before ASCII text only, was inserted),
    and the empty tokens up to any point can be no more than the byte boundaries inside the
    multi-byte characters shown so far (a character of n bytes can be cut n - 1 times; the first
    token's characters count, as vLLM does not show a character the first token begins). In an
    ASCII prompt no empty token is accepted; where non-ASCII characters are, an inserted empty
    token within these bounds is not detectable without the server's tokenizer, and shifts no
    other token's log-prob."""
    cuts, run, empty = _inner_boundaries(first), 0, 0
    for text in others:
        if text == "":
            run, empty = run + 1, empty + 1
            continue
        cuts += _inner_boundaries(text)
        if run and (text.isascii() or empty > cuts):
            return False
        run = 0
    return run == 0


def _inner_boundaries(text: str) -> int:
    """How many times the characters of ``text`` can be cut between bytes: n - 1 per n-byte character."""
    return len(text.encode("utf-8")) - len(text)


def empty_scores() -> TokenScores:
    """No scored positions: every signal of the document is NaN."""
    return TokenScores(np.zeros(0, dtype=np.int32), np.zeros(0), None, None, None, 0, 0)


def text_scores(tokens: PromptTokens | None, text_start: int, text_length: int, max_tokens: int) -> TokenScores:
    """The scores of the text's own tokens - from the prompt's first, or from the one starting at
    ``text_start`` after a prefix - the first ``max_tokens`` of them, every one after the first;
    none when no token starts exactly where the text does (a token spanning the join).

    A tokenizer that opens every prompt with a start token (an empty token at offset 0, as Llama's
    ``<s>``) scores the text's first real token alone (after the start token): after a prefix
    that token is then scored too, and the start token counts among the ``max_tokens``, so both
    score the same positions."""
    if tokens is None:
        return empty_scores()
    opens = bool(
        tokens.offsets
        and len(tokens.offsets) > 1
        and tokens.offsets[0] == tokens.offsets[1] == 0
        and tokens.strings[0] in ("", "<s>")
    )
    if text_start == 0:
        first = 0
    elif tokens.offsets is not None and text_start in tokens.offsets:
        first = tokens.offsets.index(text_start) - (1 if opens else 0)
    else:
        return empty_scores()
    last = min(len(tokens.strings), first + max_tokens)
    logprobs = tokens.logprobs[first + 1 : last]
    if first + 1 >= last or any(v is None for v in logprobs):
        return empty_scores()
    starts = tokens.offsets or [sum(len(s) for s in tokens.strings[:i]) for i in range(len(tokens.strings))]
    end = starts[last] if last < len(starts) else text_start + text_length
    ids = np.asarray(tokens.ids[first:last] if tokens.ids else [-1] * (last - first), dtype=np.int32)
    return TokenScores(
        token_ids=ids,
        logprob=np.asarray(logprobs, dtype=np.float64),
        mu=None,
        sigma=None,
        top1=None,
        char_start=max(0, min(starts[first + 1] - text_start, text_length)),
        char_end=max(0, min(end - text_start, text_length)),
    )


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
            content = "".join(
                p.get("text", "")
                for p in content
                if isinstance(p, dict) and p.get("type") == "text" and isinstance(p.get("text"), str)
            )
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
