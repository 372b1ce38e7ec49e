"""Parity evidence: an API target declared to serve weights the auditor holds is compared with them.

A real server (verifier's stand-in, in vLLM's shape) serves a tiny GPT-2. Declared as those weights,
the audit records the comparison in the findings and the report; declared as other weights with
the same tokenizer, or as a model with another tokenizer, the API target is refused in one line;
with no weights declared, the report says the identity rests on the provider's word.
"""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import pytest
import yaml
from conftest import make_tiny_gpt2

from verifier.boundary.resources import resource
from verifier.errors import VerifierError
from verifier.scoring.parity import check_parity, sample_texts
from verifier.targets import ScoreCache, load_target
from verifier.targets.serving import start_server

CHAT = "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}assistant:"


@pytest.fixture(scope="module")
def served_tiny(tiny_model_dir, tmp_path_factory):
    """The tiny GPT-2's weights served with a chat template (the routes' answers need one)."""
    from transformers import AutoTokenizer

    folder = tmp_path_factory.mktemp("served") / "tiny-chat"
    shutil.copytree(tiny_model_dir, folder)
    tokenizer = AutoTokenizer.from_pretrained(folder)
    tokenizer.chat_template = CHAT
    tokenizer.save_pretrained(folder)
    with start_server(folder, engine="verifier", log=tmp_path_factory.mktemp("log") / "server.log") as server:
        yield server


@pytest.fixture(scope="module")
def other_weights(tmp_path_factory, wikimia64) -> Path:
    """The tiny GPT-2's tokenizer (trained on the same texts) with other weights."""
    return make_tiny_gpt2(tmp_path_factory.mktemp("tiny-other"), [r["text"] for r in wikimia64], seed=5, vocab_size=600)


@pytest.fixture()
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("VERIFIER_CACHE_SECRET", str(tmp_path / "secret"))
    return ScoreCache(tmp_path / "cache")


def test_the_sample_is_fixed_by_the_documents_and_the_seed(wikimia64):
    texts = [r["text"] for r in wikimia64]
    first = sample_texts(texts, seed=3)
    assert len(first) == 16 and first == sample_texts(texts[::-1], seed=3)  # not the files' order
    assert first != sample_texts(texts, seed=4)
    assert sample_texts(["", "   "], seed=3) == []


def test_the_declared_weights_hold_and_others_are_refused(
    served_tiny, tiny_model_dir, other_weights, tiny_reference_dir, wikimia64, cache
):
    texts = [r["text"] for r in wikimia64]
    served = load_target(served_tiny.spec)
    parity = check_parity(served, load_target(str(tiny_model_dir)), texts, 0, cache)
    assert parity is not None and parity.documents == 16
    assert parity.max_document_difference < 1e-3 and parity.max_token_difference < 1e-2
    with pytest.raises(VerifierError, match=r"does not serve the declared weights \(a document's mean log-prob"):
        check_parity(served, load_target(str(other_weights)), texts, 0, cache)
    with pytest.raises(VerifierError, match="does not serve the declared weights"):  # another tokenizer
        check_parity(served, load_target(str(tiny_reference_dir)), texts, 0, cache)


def write_claim(folder: Path, target: str, weights: str | None) -> Path:
    examples = resource("examples")
    for part in ("wikimia", "policies"):
        if not (folder / "data" / part).exists():
            shutil.copytree(examples / "data" / part, folder / "data" / part)
    claim = yaml.safe_load((examples / "api-logprobs-wikimia.yaml").read_text())
    claim["model"]["target"] = target
    if not target.startswith("openai-compatible:"):
        claim["model"].pop("api", None)
    if weights is not None:
        claim["model"]["weights"] = weights
    path = folder / f"claim-{len(list(folder.glob('claim-*')))}.yaml"
    path.write_text(yaml.safe_dump(claim))
    return path


def test_after_the_routes_the_session_compares_what_they_sent_and_refuses_other_weights(
    served_tiny, tiny_model_dir, other_weights, wikimia64, tmp_path, cache
):
    """The comparison runs after the routes, on a sample of the texts they sent (read back from the
    response cache: no new request), so the server could not tell which answers would be compared.
    (The slow test of the API example records parity through the stand-in and a real vLLM server.)"""
    from verifier.claims import load_claim
    from verifier.scoring.session import RouteContext

    texts = [r["text"] for r in wikimia64[:40]]
    for weights, refused in ((tiny_model_dir, False), (other_weights, True)):
        loaded = load_claim(write_claim(tmp_path, served_tiny.spec, str(weights)))
        ctx = RouteContext(
            claim=loaded.manifest,
            base_dir=loaded.base,
            cache=cache,
            target_factory=lambda role, w=weights: load_target(served_tiny.spec if role == "target" else str(w)),
        )
        ctx.model().score(texts, cache=cache)  # what a route sends
        ctx.sent_texts.extend(texts)
        sent = ctx.model().usage["requests_sent"]
        if refused:
            with pytest.raises(VerifierError, match="the server does not serve the declared weights"):
                ctx.check_served_weights()
        else:
            ctx.check_served_weights()
            assert ctx.parity is not None and ctx.parity.documents == 16
            # The draw's seed is fixed by every answer the server gave (it cannot know the draw in advance).
            answers = ctx.model().identity.digests["answers"]
            expected = int(hashlib.sha256(f"{loaded.manifest.seed}:{answers}".encode()).hexdigest()[:15], 16)
            assert ctx.parity.seed == expected
        assert ctx.model().usage["requests_sent"] == sent  # the compared answers are those the route read


def test_weights_are_refused_beside_a_local_target_or_as_an_api(tmp_path):
    from verifier.claims import load_claim

    for target, weights, why in (
        ("smollm2-135m", "smollm2-135m", "applies to an API target"),
        ("openai-compatible:http://127.0.0.1:9/v1#m", "openai-compatible:http://127.0.0.1:9/v1#n", "local or hub"),
    ):
        with pytest.raises(VerifierError, match=why):
            load_claim(write_claim(tmp_path, target, weights))
