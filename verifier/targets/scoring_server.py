"""An OpenAI-compatible server that returns prompt log-probs, for gray-box audits through an API.

``transformers serve`` (``serving``) answers chat and text queries but returns no log-probs of
the prompt, so it stands for an output-only API. Many real deployments do return them - vLLM's
``prompt_logprobs`` and the legacy completions API's ``echo`` with ``logprobs`` - and there the
gray-box signals work through the API. This server speaks both, over a local model, so the
``openai-compatible:`` target's probing and prompt scoring are tested against real weights:

- ``POST /v1/completions`` with ``echo: true`` and ``logprobs: k`` returns the legacy
  ``logprobs`` object (``tokens``, ``token_logprobs`` with ``null`` for the first token,
  ``top_logprobs``, ``text_offset`` in characters of the prompt) over the prompt, then over the
  ``max_tokens`` generated tokens (``max_tokens: 0`` scores the prompt only);
- the same request with ``prompt_logprobs: k`` returns vLLM's ``prompt_logprobs`` (``null``, then
  per token a map from token id to ``logprob``, ``rank`` and ``decoded_token``, holding the actual
  token and the ``k`` most likely);
- ``POST /v1/chat/completions`` with ``logprobs: true`` and ``top_logprobs: k`` returns the top-k
  log-probs of each generated token; ``GET /v1/models`` and ``GET /health`` as usual.

The forward pass is its own plain code (one text per pass, float32, no cache), not the audit's
batched scorer: a test that the API's numbers equal local scoring compares two implementations.
Requests are checked at the boundary (JSON object, types, bounds, the served model's name) and
refused with 400 and one line; a prompt longer than the model's window is refused, never cut.
"""

from __future__ import annotations

import argparse
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

MAX_BODY = 1 << 20
MAX_TOP = 20
MAX_NEW_TOKENS = 512


class BadRequest(Exception):
    """A request refused for itself (400), with the one line said to the client."""


class ScoringModel:
    """A causal LM in float32 on the CPU and its tokenizer, used by one request at a time."""

    def __init__(self, folder: Path) -> None:
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self.tokenizer = AutoTokenizer.from_pretrained(folder)
        self.model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()
        self.window = int(getattr(self.model.config, "max_position_embeddings", 2048))
        self.lock = threading.Lock()

    def token_strings(self, ids: list[int]) -> list[str]:
        return [self.tokenizer.decode([i]) for i in ids]

    @torch.inference_mode()
    def prompt_logprobs(self, ids: list[int], top: int) -> tuple[list[float], list[int], list[list[tuple[int, float]]]]:
        """log p of ids[1:] each after the ids before it, its rank (1 + the tokens more likely, as
        vLLM ranks), and the ``top`` most likely ids with their log p."""
        with self.lock:
            logits = self.model(torch.tensor([ids])).logits[0, :-1].float()
        logp = torch.log_softmax(logits, dim=-1)
        actual = logp.gather(-1, torch.tensor(ids[1:])[:, None])
        ranks = ((logp > actual).sum(-1) + 1).tolist()
        best = torch.topk(logp, top, dim=-1) if top else None
        tops = [
            list(zip(best.indices[i].tolist(), best.values[i].tolist())) if best is not None else []
            for i in range(len(ranks))
        ]
        return actual[:, 0].tolist(), ranks, tops

    @torch.inference_mode()
    def generate(
        self, ids: list[int], max_new: int, temperature: float, seed: int, top: int
    ) -> tuple[list[int], list[float], list[list[tuple[int, float]]]]:
        """Generated ids, their log p under the model, and the ``top`` alternatives at each step."""
        if max_new == 0:
            return [], [], []
        pad = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else self.tokenizer.eos_token_id
        with self.lock:
            torch.manual_seed(seed)
            out = self.model.generate(
                torch.tensor([ids]),
                attention_mask=torch.ones(1, len(ids), dtype=torch.long),
                max_new_tokens=max_new,
                do_sample=temperature > 0,
                temperature=temperature if temperature > 0 else None,
                top_p=None,
                top_k=None,
                pad_token_id=pad,
                output_logits=True,
                return_dict_in_generate=True,
            )
        new = out.sequences[0, len(ids) :].tolist()
        logps, tops = [], []
        for step, token in enumerate(new):
            logp = torch.log_softmax(out.logits[step][0].float(), dim=-1)
            logps.append(float(logp[token]))
            if top:
                best = torch.topk(logp, top)
                tops.append(list(zip(best.indices.tolist(), best.values.tolist())))
        return new, logps, tops


def _int(body: dict, key: str, default: int | None, low: int, high: int) -> int | None:
    value = body.get(key, default)
    if value is None:
        return None
    if type(value) is not int or not low <= value <= high:
        raise BadRequest(f"{key}: an integer from {low} to {high}")
    return value


def _number(body: dict, key: str, default: float, low: float, high: float) -> float:
    value = body.get(key, default)
    if type(value) not in (int, float) or not low <= value <= high:
        raise BadRequest(f"{key}: a number from {low} to {high}")
    return float(value)


def completion(lm: ScoringModel, name: str, body: dict) -> dict[str, Any]:
    """A legacy completion, with the prompt's log-probs in the legacy or the vLLM form when asked."""
    prompt = body.get("prompt")
    if not isinstance(prompt, str) or not prompt:
        raise BadRequest("prompt: a non-empty string (lists of prompts are not served)")
    echo = body.get("echo", False)
    if not isinstance(echo, bool):
        raise BadRequest("echo: true or false")
    top = _int(body, "logprobs", None, 0, MAX_TOP)
    prompt_top = _int(body, "prompt_logprobs", None, 0, MAX_TOP)
    max_new = _int(body, "max_tokens", 16, 0, MAX_NEW_TOKENS)
    temperature = _number(body, "temperature", 1.0, 0, 2)
    seed = _int(body, "seed", 0, 0, 2**32 - 1)
    enc = lm.tokenizer(prompt, return_offsets_mapping=True)
    ids, offsets = enc["input_ids"], enc["offset_mapping"]
    if len(ids) + max_new > lm.window:
        raise BadRequest(
            f"the prompt ({len(ids)} tokens) and max_tokens exceed the model's window of {lm.window} tokens"
        )
    new, new_logps, new_tops = lm.generate(ids, max_new, temperature, seed, top or 0)
    text = lm.tokenizer.decode(new, skip_special_tokens=True)
    choice: dict[str, Any] = {
        "index": 0,
        "text": (prompt if echo else "") + text,
        "finish_reason": "length" if len(new) == max_new else "stop",
    }
    wants_prompt = (echo and top is not None) or prompt_top is not None
    actual, ranks, tops = (
        lm.prompt_logprobs(ids, max(top or 0, prompt_top or 0)) if wants_prompt and len(ids) > 1 else ([], [], [])
    )
    strings = lm.token_strings
    if top is not None:
        shown_ids = (ids if echo else []) + new
        shown_logps = ([None, *actual] if echo else []) + new_logps
        shown_tops = ([None, *[t[:top] for t in tops]] if echo else []) + new_tops
        starts = [start for start, _ in offsets] if echo else []
        position = len(prompt)
        for piece in strings(new):
            starts.append(position)
            position += len(piece)
        choice["logprobs"] = {
            "tokens": strings(shown_ids),
            "token_logprobs": shown_logps,
            "top_logprobs": [None if t is None else {strings([i])[0]: lp for i, lp in t} for t in shown_tops],
            "text_offset": starts,
        }
    if prompt_top is not None:
        entries: list[dict[str, dict[str, Any]] | None] = [None]
        for token, logp, rank, alternatives in zip(ids[1:], actual, ranks, tops):
            entry = {
                str(i): {"logprob": lp, "rank": place + 1, "decoded_token": strings([i])[0]}
                for place, (i, lp) in enumerate(alternatives[:prompt_top])
            }
            entry.setdefault(str(token), {"logprob": logp, "rank": rank, "decoded_token": strings([token])[0]})
            entries.append(entry)
        choice["prompt_logprobs"] = entries
        choice["prompt_token_ids"] = ids
    return {
        "id": f"cmpl-{time.monotonic_ns()}",
        "object": "text_completion",
        "created": int(time.time()),
        "model": name,
        "choices": [choice],
        "usage": {"prompt_tokens": len(ids), "completion_tokens": len(new), "total_tokens": len(ids) + len(new)},
    }


def chat(lm: ScoringModel, name: str, body: dict) -> dict[str, Any]:
    """A chat completion, with the top-k log-probs of each generated token when asked."""
    messages = body.get("messages")
    if (
        not isinstance(messages, list)
        or not messages
        or not all(
            isinstance(m, dict)
            and m.get("role") in ("system", "user", "assistant")
            and isinstance(m.get("content"), str)
            for m in messages
        )
    ):
        raise BadRequest("messages: a list of {role: system|user|assistant, content: string}")
    wants = body.get("logprobs", False)
    if not isinstance(wants, bool):
        raise BadRequest("logprobs: true or false")
    top = _int(body, "top_logprobs", 0, 0, MAX_TOP) or 0
    limit = body.get("max_completion_tokens", body.get("max_tokens", 16))
    max_new = _int({"max_tokens": limit}, "max_tokens", 16, 1, MAX_NEW_TOKENS)
    temperature = _number(body, "temperature", 1.0, 0, 2)
    seed = _int(body, "seed", 0, 0, 2**32 - 1)
    ids = lm.tokenizer.apply_chat_template(
        [{"role": m["role"], "content": m["content"]} for m in messages],
        add_generation_prompt=True,
        tokenize=True,
        return_dict=True,
    )["input_ids"]
    if len(ids) + max_new > lm.window:
        raise BadRequest(
            f"the messages ({len(ids)} tokens) and max_tokens exceed the model's window of {lm.window} tokens"
        )
    new, logps, tops = lm.generate(ids, max_new, temperature, seed, top if wants else 0)
    eos = lm.tokenizer.eos_token_id
    content_ids = [t for t in new if t != eos]
    choice: dict[str, Any] = {
        "index": 0,
        "message": {"role": "assistant", "content": lm.tokenizer.decode(content_ids, skip_special_tokens=True)},
        "finish_reason": "length" if len(new) == max_new and (not new or new[-1] != eos) else "stop",
    }
    if wants:
        strings = lm.token_strings
        choice["logprobs"] = {
            "content": [
                {
                    "token": strings([t])[0],
                    "logprob": lp,
                    "top_logprobs": [{"token": strings([i])[0], "logprob": v} for i, v in alt],
                }
                for t, lp, alt in zip(new, logps, tops or [[]] * len(new))
            ]
        }
    return {
        "id": f"chatcmpl-{time.monotonic_ns()}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": name,
        "choices": [choice],
        "usage": {"prompt_tokens": len(ids), "completion_tokens": len(new), "total_tokens": len(ids) + len(new)},
    }


def make_app(lm: ScoringModel, name: str):  # noqa: ANN201 - a Starlette application
    import json

    from starlette.applications import Starlette
    from starlette.concurrency import run_in_threadpool
    from starlette.requests import Request
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    def error(status: int, message: str) -> JSONResponse:
        return JSONResponse({"error": {"message": message, "type": "invalid_request_error"}}, status_code=status)

    async def read(request: Request) -> dict:
        raw = await request.body()
        if len(raw) > MAX_BODY:
            raise BadRequest(f"body larger than {MAX_BODY} bytes")
        try:
            body = json.loads(raw)
        except (ValueError, RecursionError):
            raise BadRequest("the body is not JSON") from None
        if not isinstance(body, dict):
            raise BadRequest("the body must be a JSON object")
        if body.get("model") != name:
            raise LookupError(f"model {str(body.get('model'))[:100]!r} is not served here; it serves {name}")
        if body.get("stream"):
            raise BadRequest("stream: not served")
        return body

    def endpoint(handler: Callable[[ScoringModel, str, dict[str, Any]], Any]) -> Callable[[Request], Any]:
        async def run(request: Request) -> JSONResponse:
            try:
                body = await read(request)
                return JSONResponse(await run_in_threadpool(handler, lm, name, body))
            except BadRequest as exc:
                return error(400, str(exc))
            except LookupError as exc:
                return error(404, str(exc))

        return run

    async def models(request: Request) -> JSONResponse:
        return JSONResponse({"object": "list", "data": [{"id": name, "object": "model", "owned_by": "verifier"}]})

    async def health(request: Request) -> JSONResponse:
        return JSONResponse({"status": "ok"})

    return Starlette(
        routes=[
            Route("/health", health),
            Route("/v1/models", models),
            Route("/v1/completions", endpoint(completion), methods=["POST"]),
            Route("/v1/chat/completions", endpoint(chat), methods=["POST"]),
        ]
    )


def main(argv: list[str] | None = None) -> None:
    import uvicorn

    parser = argparse.ArgumentParser(
        description="verifier's OpenAI-compatible server with prompt log-probs (see the module docstring)"
    )
    parser.add_argument("--folder", type=Path, required=True)
    parser.add_argument("--name", required=True)
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args(argv)
    torch.set_num_threads(max(1, torch.get_num_threads()))
    uvicorn.run(
        make_app(ScoringModel(args.folder), args.name),
        host="127.0.0.1",
        port=args.port,
        log_level="warning",
        access_log=False,
    )


if __name__ == "__main__":
    main()
