"""Tracing model outputs to the corpus: a tiny GPT-2 that memorised four corpus documents
reproduces them from their first words, and the trace attributes the spans to those documents."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import CORPUS, make_tiny_gpt2

from verifier.corpus import CorpusIndex, normalise
from verifier.corpus.attribution import attribute_outputs
from verifier.corpus.backends import LocalBackend


@pytest.fixture(scope="module")
def memorising_model(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict]]:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    docs = [json.loads(line) for line in (CORPUS / "wikipedia-events.jsonl").read_text().splitlines()]
    trained = [" ".join(d["text"].split()[:50]) for d in docs[:4]]
    folder = make_tiny_gpt2(tmp_path_factory.mktemp("memorising"), [d["text"] for d in docs], seed=0, vocab_size=600)
    tokenizer = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForCausalLM.from_pretrained(folder)
    torch.manual_seed(0)
    optimiser = torch.optim.AdamW(model.parameters(), lr=3e-3)
    batch = tokenizer([t + tokenizer.eos_token for t in trained], return_tensors="pt", padding=True)
    labels = batch.input_ids.masked_fill(batch.attention_mask == 0, -100)
    for _ in range(300):  # until the four texts are memorised (about 100 steps, 2 s)
        loss = model(**batch, labels=labels).loss
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
        if loss.item() < 0.02:
            break
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder, docs


def test_trace_attributes_memorised_outputs_to_their_documents(memorising_model, demo_index: CorpusIndex) -> None:
    from verifier.targets import load_target
    from verifier.targets.base import generating

    folder, docs = memorising_model
    target = load_target(str(folder))
    prompts = [" ".join(d["text"].split()[:8]) for d in docs[:4]] + ["The weather in the mountains was"]
    outputs = generating(target).generate(prompts, 60)
    found = attribute_outputs(LocalBackend(demo_index), prompts, outputs, min_span_words=8)
    for item, doc in zip(found[:4], docs[:4]):
        assert item.lookup.longest_words >= 12, item.output
        top = max(item.lookup.spans, key=lambda s: s.words)
        assert [h.meta["id"] for h in top.documents] == [doc["id"]]
        assert item.lookup.text[top.start : top.end] in normalise(doc["text"])  # the span really is in that document
    by_id = {
        json.loads(line)["id"]: json.loads(line)["text"]
        for f in CORPUS.glob("*.jsonl")
        for line in f.read_text().splitlines()
    }
    for item in found:  # whatever the prompt, every reported span is verbatim in the documents it names
        for span in item.lookup.spans:
            piece = item.lookup.text[span.start : span.end]
            assert all(piece in normalise(by_id[h.meta["id"]]) for h in span.documents)


def test_a_target_that_cannot_generate_is_one_line(demo_index: CorpusIndex) -> None:
    from verifier.errors import VerifierError
    from verifier.targets.base import TargetIdentity, generating

    class Scorer:  # offers prompt log-probs only
        capabilities = frozenset({"prompt_logprobs"})
        identity = TargetIdentity("stand-in", "scorer-only")

    with pytest.raises(VerifierError, match="model scorer-only: cannot generate text"):
        generating(Scorer())  # type: ignore[arg-type]
    with pytest.raises(VerifierError, match="2 prompts but 1 outputs"):
        attribute_outputs(LocalBackend(demo_index), ["a", "b"], ["x"])
