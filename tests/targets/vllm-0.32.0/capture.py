"""Capture what a real vLLM server sends, for the tests that hold ``verifier serve --prompt-logprobs`` to it.

Run against vLLM serving SmolLM2-135M-Instruct (the folder ``verifier.targets.serving.model_folder``
converts from the bundled GGUF) under the served name ``smol``:

    VLLM_CPU_KVCACHE_SPACE=2 .venv-vllm/bin/python -m vllm.entrypoints.openai.api_server --model FOLDER \
        --host 127.0.0.1 --port 8011 --served-model-name smol --dtype float32 --max-model-len 2048 --max-logprobs 20
    .venv/bin/python tests/targets/vllm-0.32.0/capture.py http://127.0.0.1:8011/v1

Each request in REQUESTS is sent once; ``<name>.json`` holds ``{"path", "request", "response"}`` with the
response's bytes as received (parsed only to store them; key order kept).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import requests

PROBE = (
    "The Quick brown fox, 1,234.5 km/h; naïve café — déjà vu! 東京タワー 2024-12-04\n"
    "def f(x):\n    return x**2  # ünïcödé  \t tabs & emoji 🙂"
)
REQUESTS = {
    "prompt_logprobs_ids": (
        "/completions",
        {"prompt": PROBE, "max_tokens": 1, "prompt_logprobs": 0, "temperature": 0, "return_token_ids": True},
    ),
    "prompt_logprobs_top": (
        "/completions",
        {"prompt": "Hi 東京 there", "max_tokens": 1, "prompt_logprobs": 1, "temperature": 0},
    ),
    "prompt_logprobs_start": (
        "/completions",
        {"prompt": "🙂é starts it", "max_tokens": 1, "prompt_logprobs": 0, "temperature": 0, "return_token_ids": True},
    ),
    "echo": ("/completions", {"prompt": PROBE, "max_tokens": 0, "echo": True, "logprobs": 1, "temperature": 0}),
    "echo_start": (
        "/completions",
        {"prompt": "東京タワー is tall", "max_tokens": 0, "echo": True, "logprobs": 1, "temperature": 0},
    ),
    "chat_top_logprobs": (
        "/chat/completions",
        {
            "messages": [{"role": "user", "content": "Say OK."}],
            "max_tokens": 2,
            "logprobs": True,
            "top_logprobs": 2,
            "temperature": 0,
        },
    ),
}


def main(base: str) -> None:
    here = Path(__file__).parent
    for name, (path, body) in REQUESTS.items():
        request = {"model": "smol", **body}
        answer = requests.post(base + path, json=request, timeout=120)
        answer.raise_for_status()
        record = {"path": path, "request": request, "response": json.loads(answer.content)}
        (here / f"{name}.json").write_text(json.dumps(record, ensure_ascii=False, indent=1) + "\n")


if __name__ == "__main__":
    main(sys.argv[1])
