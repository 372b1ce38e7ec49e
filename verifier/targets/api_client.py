"""The OpenAI-compatible API's reading of answers, over the shared peer client (``verifier.boundary.peers``).

Why it is shaped this way: an audit of an API model may send thousands of paid requests. A
transient failure (timeout, dropped connection, 429, 5xx, a body that is not JSON) is retried
(``PeerClient.post``); a request still failing after the retries, or refused for itself (400,
413, 422: too long, a policy refusal of the input), is one failed item, recorded, never a crash
that throws away what was already paid for. Failures that no retry can mend (a rejected key, a
path the server does not have) stop the run at once with one line; every answer received before
is cached by the caller. (No server at the address, or a model it does not serve, is found by the
target's preflight.)
"""

from __future__ import annotations

import json
from collections.abc import Callable

from verifier.boundary.peers import Answer, ItemFailed, PeerAccess, PeerClient, Retry, Usage, read_json
from verifier.errors import VerifierError

__all__ = ["ApiClient", "ItemFailed", "Usage"]

FATAL_STATUS = {
    401: "the server rejected the API key",
    403: "the server refused access (403)",
    404: "no such path on the server (is the base URL right? it usually ends in /v1)",
}
MAX_BODY_BYTES = 8 << 20  # an answer to a short query is kilobytes; a bigger body is a broken or hostile server
MAX_TOKENS_COUNTED = 10**7  # per response: a usage field beyond this is not a count


class ApiClient(PeerClient):
    """POSTs chat and completion requests to ``base_url`` and returns their JSON answers."""

    def __init__(
        self,
        base_url: str,
        access: PeerAccess,
        key_env: str | None,
        timeout_s: float,
        retries: int,
        rate_limit: float | None,
    ) -> None:
        super().__init__(
            base_url,
            what="API endpoint",
            access=access,
            key_env=key_env,
            timeout_s=timeout_s,
            retries=retries,
            max_body=MAX_BODY_BYTES,
            rate_limit=rate_limit,
        )

    def post_json(self, path: str, body: dict) -> dict:
        """The JSON response to ``body``. Raises ``ItemFailed`` when every attempt failed and
        ``VerifierError`` when no retry can help."""
        return self.post(path, body, self._read)

    def _read(self, answer: Answer) -> dict:
        if answer.status in FATAL_STATUS:
            raise VerifierError(f"API endpoint {self.base_url}: {FATAL_STATUS[answer.status]}")
        if (
            answer.status >= 400
        ):  # this request refused for itself (too long, a policy refusal of the input): one failed item
            self.fail(f"HTTP {answer.status}")
            raise ItemFailed(f"HTTP {answer.status}: {_detail(answer.body, answer.reason, self.scrub)}")
        try:
            payload = read_json(answer.body)
        except ValueError:  # not JSON, a key given twice, NaN, nested past what the parser can hold
            raise Retry("malformed response (not JSON)") from None
        if not isinstance(payload, dict) or not isinstance(payload.get("choices"), list) or not payload["choices"]:
            raise Retry("malformed response (no choices)")
        usage = payload.get("usage") if isinstance(payload.get("usage"), dict) else {}
        self.count(
            prompt_tokens=_int(usage.get("prompt_tokens")), completion_tokens=_int(usage.get("completion_tokens"))
        )
        return payload


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
