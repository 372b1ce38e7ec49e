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

Its responses have the shape vLLM (0.32) sends, field for field and in vLLM's order, spelled as
vLLM spells tokens: a token ending inside a multi-byte UTF-8 character reads ``""`` and the token
completing the character shows it whole, read with up to four preceding prompt tokens - never the
first, which vLLM keeps out of that context (``vllm_token_text``). ``prompt_token_ids`` and
``token_ids`` are given only when the request sets ``return_token_ids``; echo's log-probs are
floored at -9999 as vLLM floors them. Real vLLM responses are kept under
``tests/targets/vllm-0.32.0/`` and the tests hold this server to them (the same keys in the same
order, the same token texts).

The forward pass is its own plain code (one text per pass, float32, no cache), not the audit's
batched scorer: a test that the API's numbers equal local scoring compares two implementations.
Requests are checked at the boundary (JSON object, types, bounds, the served model's name) and
refused with 400 and one line; a prompt longer than the model's window is refused, never cut.
"""

from __future__ import annotations

import argparse
import os
import secrets
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

MAX_BODY = 1 << 20
MAX_TOP = 20
MAX_NEW_TOKENS = 512
FINGERPRINT = "verifier-serve"  # where vLLM writes its version ("vllm-0.32.0-<hash>")


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

    def spell(self, token_id: int, context: list[int]) -> str:
        """The token's text as vLLM spells it after the sequence's ``context`` (``vllm_token_text``)."""
        return vllm_token_text(self.tokenizer.decode, token_id, context)

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


def vllm_token_text(decode: Callable[[list[int]], str], token_id: int, context: list[int]) -> str:
    """A token's text as vLLM writes it in log-probs: decoded alone, unless that ends in a
    replacement character (the token ends inside a multi-byte character); then decoded after 1 to
    4 of the sequence's preceding tokens (``context``, oldest first), less the text of those that
    were complete themselves - so a token completing a character shows the whole character, and
    ``""`` when no context completes it (vLLM's ``LogprobsProcessor._correct_decoded_token``)."""
    text = decode([token_id])
    if not text.endswith("\ufffd"):
        return text
    for count in range(1, min(len(context), 4) + 1):
        window = context[-count:]
        whole = decode([*window, token_id])
        if whole.endswith("\ufffd"):
            continue
        clean = len(window)
        while clean and decode([window[clean - 1]]).endswith("\ufffd"):
            clean -= 1
        prefix = decode(window[:clean]) if clean else ""
        if whole.startswith(prefix):
            return whole[len(prefix) :]
        return whole[len(os.path.commonprefix([prefix, whole])) :]
    return ""


def _entry(lm: ScoringModel, token: int, logp: float, rank: int, top: list[tuple[int, float]], context: list[int]):  # noqa: ANN202
    """One position of vLLM's log-probs: the actual token first (its rank), then the top ones."""
    entry = {str(token): {"logprob": logp, "rank": rank, "decoded_token": lm.spell(token, context)}}
    for place, (other, value) in enumerate(top, start=1):
        entry[str(other)] = {"logprob": value, "rank": place, "decoded_token": lm.spell(other, context)}
    return entry


def _usage(prompt: int, completion: int) -> dict[str, Any]:
    return {
        "prompt_tokens": prompt,
        "total_tokens": prompt + completion,
        "completion_tokens": completion,
        "prompt_tokens_details": None,
        "completion_tokens_details": None,
    }


def completion(lm: ScoringModel, name: str, body: dict) -> dict[str, Any]:
    """A legacy completion, with the prompt's log-probs in the legacy or the vLLM form when asked."""
    prompt = body.get("prompt")
    if not isinstance(prompt, str) or not prompt:
        raise BadRequest("prompt: a non-empty string (lists of prompts are not served)")
    echo, with_ids = body.get("echo", False), body.get("return_token_ids", False)
    if not isinstance(echo, bool) or not isinstance(with_ids, bool):
        raise BadRequest("echo, return_token_ids: true or false")
    top = _int(body, "logprobs", None, 0, MAX_TOP)
    prompt_top = _int(body, "prompt_logprobs", None, 0, MAX_TOP)
    max_new = _int(body, "max_tokens", 16, 0, MAX_NEW_TOKENS)
    temperature = _number(body, "temperature", 1.0, 0, 2)
    seed = _int(body, "seed", 0, 0, 2**32 - 1)
    ids = lm.tokenizer(prompt)["input_ids"]
    if len(ids) + max_new > lm.window:
        raise BadRequest(
            f"the prompt ({len(ids)} tokens) and max_tokens exceed the model's window of {lm.window} tokens"
        )
    new, new_logps, new_tops = lm.generate(ids, max_new, temperature, seed, top or 0)
    text = lm.tokenizer.decode(new, skip_special_tokens=True)
    # vLLM with echo also returns the prompt's log-probs, with as many alternatives as logprobs asks.
    shown_top = prompt_top if prompt_top is not None else (top if echo and top is not None else None)
    entries: list[dict[str, Any] | None] | None = None
    if shown_top is not None:
        actual, ranks, tops = lm.prompt_logprobs(ids, shown_top) if len(ids) > 1 else ([], [], [])
        entries = [None]
        for position, (token, logp, rank, best) in enumerate(zip(ids[1:], actual, ranks, tops), start=1):
            entries.append(_entry(lm, token, logp, rank, best, ids[max(1, position - 4) : position]))
    logprobs = None
    if top is not None:
        tokens: list[str] = []
        token_logps: list[float | None] = []
        top_logps: list[dict[str, float] | None] = []
        if echo:
            tokens.append(lm.tokenizer.decode(ids[0]))
            token_logps.append(None)
            top_logps.append(None)
            for token, entry in zip(ids[1:], (entries or [None])[1:]):
                if entry is None:
                    continue
                tokens.append(entry[str(token)]["decoded_token"])
                token_logps.append(max(entry[str(token)]["logprob"], -9999.0))
                top_logps.append({v["decoded_token"]: max(v["logprob"], -9999.0) for v in entry.values()})
        for step, (token, logp, best) in enumerate(zip(new, new_logps, new_tops or [[]] * len(new))):
            entry = _entry(lm, token, logp, 1 + sum(v > logp for _, v in best), best, new[max(0, step - 4) : step])
            tokens.append(entry[str(token)]["decoded_token"])
            token_logps.append(max(logp, -9999.0))
            top_logps.append({v["decoded_token"]: max(v["logprob"], -9999.0) for v in entry.values()})
        offsets = [0] if tokens else []
        for piece in tokens[:-1]:
            offsets.append(offsets[-1] + len(piece))
        if not echo:
            offsets = [len(prompt) + o for o in offsets]
        logprobs = {"text_offset": offsets, "token_logprobs": token_logps, "tokens": tokens, "top_logprobs": top_logps}
    choice: dict[str, Any] = {
        "index": 0,
        "text": (prompt if echo else "") + text,
        "logprobs": logprobs,
        "finish_reason": "length" if len(new) == max_new else "stop",
        "stop_reason": None,
        "token_ids": new if with_ids else None,
        "prompt_logprobs": entries,
        "prompt_token_ids": ids if with_ids else None,
        "routed_experts": None,
    }
    return {
        "id": f"cmpl-{secrets.token_hex(8)}",
        "object": "text_completion",
        "created": int(time.time()),
        "model": name,
        "choices": [choice],
        "service_tier": None,
        "system_fingerprint": FINGERPRINT,
        # vLLM runs an echo of max_tokens 0 as one generated token it does not show, and counts it.
        "usage": _usage(len(ids), len(new) or int(echo)),
        "kv_transfer_params": None,
        "ec_transfer_params": None,
        "metrics": None,
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
    if not lm.tokenizer.chat_template:  # as vLLM answers a model without one
        raise BadRequest("the model's tokenizer has no chat template: use /v1/completions")
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
    message = {
        "role": "assistant",
        "content": lm.tokenizer.decode(content_ids, skip_special_tokens=True),
        "refusal": None,
        "annotations": None,
        "audio": None,
        "function_call": None,
        "reasoning": None,
    }
    logprobs = None
    if wants:
        content = []
        for step, (token, logp, best) in enumerate(zip(new, logps, tops or [[]] * len(new))):
            spelled = lm.spell(token, new[max(0, step - 4) : step])
            alternatives = [(lm.spell(i, new[max(0, step - 4) : step]), v) for i, v in best]
            content.append(
                {
                    "token": spelled,
                    "logprob": max(logp, -9999.0),
                    "bytes": list(spelled.encode("utf-8")),
                    "top_logprobs": [
                        {"token": t, "logprob": max(v, -9999.0), "bytes": list(t.encode("utf-8"))}
                        for t, v in alternatives
                    ],
                }
            )
        logprobs = {"content": content}
    choice: dict[str, Any] = {
        "index": 0,
        "message": message,
        "logprobs": logprobs,
        "finish_reason": "length" if len(new) == max_new and (not new or new[-1] != eos) else "stop",
        "stop_reason": None,
        "token_ids": None,
        "routed_experts": None,
    }
    return {
        "id": f"chatcmpl-{secrets.token_hex(8)}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": name,
        "choices": [choice],
        "service_tier": None,
        "system_fingerprint": FINGERPRINT,
        "usage": _usage(len(ids), len(new)),
        "prompt_logprobs": None,
        "prompt_token_ids": None,
        "prompt_text": None,
        "kv_transfer_params": None,
        "ec_transfer_params": None,
        "metrics": None,
    }


def make_app(lm: ScoringModel, name: str):  # noqa: ANN201 - a Starlette application
    import json

    from starlette.applications import Starlette
    from starlette.concurrency import run_in_threadpool
    from starlette.requests import Request
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    def error(status: int, message: str) -> JSONResponse:
        kind = "NotFoundError" if status == 404 else "BadRequestError"
        return JSONResponse(
            {"error": {"message": message, "type": kind, "param": None, "code": status}}, status_code=status
        )

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
