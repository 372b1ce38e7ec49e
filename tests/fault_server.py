"""A small local HTTP server that misbehaves on purpose, for the API client's fault handling.

The base URL names the fault: ``http://127.0.0.1:PORT/<fault>/v1``. Every request is recorded
(path, headers, body) so tests can check what the client sent and how often. The real model
server is tested elsewhere; this one only produces what real servers do on bad days.
"""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def _completion(text: str, finish: str = "stop") -> dict:
    return {
        "id": "x",
        "object": "chat.completion",
        "model": "m",
        "choices": [{"index": 0, "finish_reason": finish, "message": {"role": "assistant", "content": text}}],
        "usage": {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7},
    }


RECALL = [
    "I recognise this text: it is {head}, and I remember how it goes on.",
    "This is familiar, I have read it before.",
    "The next word follows directly from the original, which I recall word for word.",
    "I am certain of the continuation.",
]
INFER = [
    "Hmm, I do not recognise this text about {head}.",
    "Wait, maybe it continues with a noun, or perhaps a verb.",
    "Let me think about the context again.",
    "Alternatively it could be a name; I am not sure.",
    "Hmm, hard to say, I will guess.",
]


def scripted_trace(known: set[str]):
    """A reasoning model that recalls any text holding one of ``known`` and reasons its way to a
    guess otherwise (sentences drawn by the request's seed; the trace quotes the text's first
    words, as real traces do); as a judge it rates recall-like traces high."""
    import random

    def trace_for(prompt: str, seed: int) -> tuple[str | None, str]:
        if prompt.startswith("Below is the reasoning"):
            return None, "9" if "I recognise" in prompt or "familiar" in prompt else "2"
        text = prompt.rsplit("Text: ", 1)[-1]
        head = " ".join(text.split()[:4])
        pool = RECALL if any(k in prompt for k in known) else INFER
        rng = random.Random(f"{text}|{seed}")
        picked = [pool[0].format(head=head)] + rng.sample(pool[1:], k=len(pool) - 2)
        return " ".join(picked), "word"

    return trace_for


class FaultServer:
    """Faults: ok, flaky429 (two 429s per distinct body, then an answer), always503, slow (sleeps
    past any short timeout), malformed_once (a non-JSON body, then an answer), drop_once (the
    connection closed mid-body, then an answer), refuse, empty, think (a <think> block before the
    answer), unauthorized (401), echo_auth_400 (a 400 quoting the Authorization header), too_long
    (a 400 for prompts holding "LONG", answers otherwise), stop401 (a 401 for the prompt "STOP", slow
    answers otherwise), busy520 (one 520 per distinct body, then an answer), pause (one 429 asking
    every client to wait 1 s, then answers), no_path (404 on completions), nested (a body nested
    past any parser's depth, then an answer), echo_key_model (the model field quotes the
    Authorization header), redirect (307 elsewhere), huge (a 9 MiB answer), drip (headers, then a
    byte every 50 ms), models_null (a model list that is not a list), refuse_some (a refusal for
    prompts holding one of ``refused_fragments``, a bland answer otherwise), reasoner (a scripted
    reasoning model: ``reasoning_content`` from ``trace_for(prompt, seed)``, see ``scripted_trace``)."""

    def __init__(self) -> None:
        self.requests: list[dict] = []
        self.seen: Counter = Counter()
        self.lock = threading.Lock()
        self.refused_fragments: list[str] = []  # refuse_some: prompts holding one of these are refused
        self.trace_for = scripted_trace(set())  # reasoner: (prompt, seed) -> (reasoning or None, answer)
        self.model_name = "m"  # reasoner: the model name its responses give
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def _send(
                self, status: int, payload: bytes, headers: dict[str, str] | None = None, length: int | None = None
            ) -> None:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload) if length is None else length))
                for key, value in (headers or {}).items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(payload)

            def do_GET(self) -> None:
                fault = self.path.strip("/").split("/")[0]
                if fault == "unauthorized":
                    self._send(401, b'{"error": "bad key"}')
                    return
                if fault == "models_null":
                    self._send(200, b'{"data": null}')
                    return
                self._send(200, json.dumps({"object": "list", "data": [{"id": "m"}]}).encode())

            def do_POST(self) -> None:
                fault = self.path.strip("/").split("/")[0]
                raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                body = json.loads(raw)
                with server.lock:
                    server.requests.append(
                        {"path": self.path, "headers": dict(self.headers), "body": body, "at": time.monotonic()}
                    )
                    server.seen[(fault, raw)] += 1
                    count = server.seen[(fault, raw)]
                content = body["messages"][-1]["content"] if "messages" in body else body.get("prompt", "")
                answer = json.dumps(_completion(f"echo: {content}")).encode()
                if fault == "flaky429" and count <= 2:
                    self._send(429, b'{"error": "slow down"}', {"Retry-After": "0"})
                elif fault == "always503":
                    self._send(503, b'{"error": "overloaded"}')
                elif fault == "slow":
                    time.sleep(1.5)
                    self._send(200, answer)
                elif fault == "malformed_once" and count == 1:
                    self._send(200, b"<html>gateway error</html>")
                elif fault == "drop_once" and count == 1:
                    self._send(200, answer[:20], length=len(answer))  # promises more than it sends, then closes
                    self.close_connection = True
                elif fault == "refuse_some":
                    refused = any(fragment in content for fragment in server.refused_fragments)
                    reply = "I\u2019m unable to continue this text." if refused else "the city and the year."
                    self._send(200, json.dumps(_completion(reply)).encode())
                elif fault == "reasoner":
                    reasoning, reply = server.trace_for(content, body.get("seed") or 0)
                    completion = _completion(reply)
                    completion["choices"][0]["message"]["reasoning_content"] = reasoning
                    completion["model"] = server.model_name
                    self._send(200, json.dumps(completion).encode())
                elif fault == "refuse":
                    self._send(200, json.dumps(_completion("I'm sorry, but I can't help with that.")).encode())
                elif fault == "empty":
                    self._send(200, json.dumps(_completion("", "length")).encode())
                elif fault == "think":
                    self._send(200, json.dumps(_completion("<think>recall the text</think> Paris")).encode())
                elif fault == "unauthorized" or (fault == "stop401" and content == "STOP"):
                    self._send(401, b'{"error": "bad key"}')
                elif fault == "stop401":
                    time.sleep(0.3)
                    self._send(200, answer)
                elif fault == "too_long" and "LONG" in content:
                    self._send(400, b'{"error": {"message": "context length exceeded"}}')
                elif fault == "busy520" and count == 1:
                    self._send(520, b'{"error": "origin error"}')
                elif fault == "pause" and sum(v for (f, _), v in server.seen.items() if f == "pause") == 1:
                    self._send(429, b'{"error": "slow down"}', {"Retry-After": "1"})
                elif fault == "no_path":
                    self._send(404, b'{"detail": "Not Found"}')
                elif fault == "nested" and count == 1:
                    self._send(200, b'{"choices": ' + b"[" * 100_000 + b"]" * 100_000 + b"}")
                elif fault == "echo_key_model":
                    reply = _completion("Paris")
                    reply["model"] = f"proxy for {self.headers.get('Authorization')}"
                    self._send(200, json.dumps(reply).encode())
                elif fault == "redirect":
                    self._send(307, b"", {"Location": "http://127.0.0.1:9/elsewhere"})
                elif fault == "huge":
                    self._send(200, json.dumps(_completion("x" * (9 << 20))).encode())
                elif fault == "drip":
                    self.send_response(200)
                    self.send_header("Content-Length", str(len(answer)))
                    self.end_headers()
                    for byte in answer[:60]:
                        self.wfile.write(bytes([byte]))
                        self.wfile.flush()
                        time.sleep(0.05)
                elif fault == "echo_auth_400":
                    self._send(
                        400,
                        json.dumps(
                            {"error": {"message": f"bad request from {self.headers.get('Authorization')}"}}
                        ).encode(),
                    )
                else:
                    self._send(200, answer)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def url(self, fault: str) -> str:
        return f"http://127.0.0.1:{self.port}/{fault}/v1"

    def spec(self, fault: str) -> str:
        return f"openai-compatible:{self.url(fault)}#m"

    def __enter__(self) -> FaultServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
