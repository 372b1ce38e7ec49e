"""Prompt log-probs through an OpenAI-compatible API: real servers over the real SmolLM2-135M-Instruct
weights (verifier's own stand-in, and in the slow tests a real vLLM server) probed for what they
offer, and the gray-box signals computed through them equal to local scoring of the same weights;
hostile and inconsistent servers refused."""

from __future__ import annotations

import numpy as np
import pytest
import requests

from verifier.boundary.peers import PeerAccess
from verifier.data import Documents
from verifier.errors import VerifierError
from verifier.scoring.table import score_documents
from verifier.signals import Auxiliary
from verifier.targets import ApiOptions, OpenAICompatibleTarget, ScoreCache, load_target
from verifier.targets.kinds.openai_compatible import PromptTokens, read_prompt_tokens, text_scores

API_TOL = 1e-3  # the acceptance bound; measured differences are about 5e-5 (two implementations, fp32)


@pytest.fixture()
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("VERIFIER_CACHE_SECRET", str(tmp_path / "secret"))
    return ScoreCache(tmp_path / "cache")


@pytest.fixture(scope="module")
def texts(wikimia64) -> list[str]:
    return [r["text"] for r in wikimia64[:6]] + [r["text"] for r in wikimia64[-6:]]


ENGINES = ["verifier", pytest.param("vllm", marks=pytest.mark.slow)]


@pytest.fixture(params=ENGINES)
def logprob_server(request):
    """A server returning prompt log-probs: verifier's stand-in, or (slow) a real vLLM server."""
    return request.getfixturevalue("smollm2_vllm" if request.param == "vllm" else "smollm2_logprob_server")


def test_probe_finds_prompt_logprobs_and_top_k(logprob_server, smollm2):
    target = load_target(logprob_server.spec)
    assert target.capabilities == {"answers", "prompt_logprobs", "top_k_logprobs"}
    # The vLLM form is preferred: its token ids give the local tokenizer's fingerprint.
    assert target.prompt_form == "prompt_logprobs" and target.repeat_difference < 1e-4
    assert target.tokenizer_fingerprint == smollm2.tokenizer_fingerprint
    probed = target.identity.details["probed"]
    assert probed["prompt_logprobs_form"] == "prompt_logprobs" and probed["tokenizer"] == smollm2.tokenizer_fingerprint
    assert target.usage["probe_requests"] >= 3 and target.usage["requests_sent"] == 0 and target.usage["failures"] == {}


def test_gray_box_signals_through_the_api_equal_local_scoring(logprob_server, smollm2, texts, wikimia64, cache):
    from verifier.signals.frequencies import bundled_table

    aux = Auxiliary(
        nonmembers=tuple(r["text"] for r in wikimia64 if r["label"] == 0)[100:103],
        frequencies=bundled_table(smollm2.tokenizer_fingerprint),
    )
    names = ["loss", "zlib", "min_k", "recall", "pac", "dc_pdd"]
    docs = Documents(texts, None, "wikimia")
    target = load_target(logprob_server.spec)
    api = score_documents(docs, target, signal_names=names, aux=aux, cache=cache)
    local = score_documents(docs, smollm2, signal_names=names, aux=aux)
    for name in names:
        assert np.isfinite(api.signal(name)).all(), name
        np.testing.assert_allclose(api.signal(name), local.signal(name), atol=API_TOL, rtol=0, err_msg=name)
    assert (api.frame["n_tokens"] == local.frame["n_tokens"]).all()  # the same 256-token cut, in the server's tokens
    assert api.metadata["target"]["probed"]["capabilities"] == ["answers", "prompt_logprobs", "top_k_logprobs"]
    sent = target.usage["requests_sent"]
    again = load_target(logprob_server.spec)
    rerun = score_documents(docs, again, signal_names=names, aux=aux, cache=cache)
    assert again.usage["requests_sent"] == 0 and again.usage["answers_from_cache"] == sent
    np.testing.assert_array_equal(rerun.signal("loss"), api.signal("loss"))


def test_the_echo_form_gives_the_same_numbers(smollm2_logprob_server, texts, cache):
    vllm = load_target(smollm2_logprob_server.spec)
    echo = OpenAICompatibleTarget(smollm2_logprob_server.spec)
    echo.probe()
    echo.prompt_form = "echo"  # the server speaks both; the probe prefers the vLLM form
    echo.tokens_fingerprint = echo._probe_request("echo")[1]
    a, b = echo.score(texts[:3], cache=cache), vllm.score(texts[:3], cache=cache)
    for x, y in zip(a, b):
        np.testing.assert_allclose(x.logprob, y.logprob, atol=1e-6)
        assert (y.token_ids >= 0).all() and (x.token_ids == -1).all()  # ids only in the vLLM form


def test_full_vocabulary_signals_are_not_computable_through_the_api(smollm2_logprob_server):
    from verifier.signals import computable

    target = load_target(smollm2_logprob_server.spec)
    usable, why = computable(["loss", "min_k_pp", "gap_k", "dc_pdd"], target.capabilities)
    assert usable == ["loss"] and "vocab_stats" in why["min_k_pp"] and "vocab_stats" in why["gap_k"]


def test_a_tokenizer_changing_mid_run_is_refused(smollm2_logprob_server, texts, cache):
    target = load_target(smollm2_logprob_server.spec)
    target.probe()
    target.tokens_fingerprint = "0" * 64  # as if the probe at load had seen another tokenizer
    with pytest.raises(VerifierError, match="tokenizer changed during the run"):
        target.score(texts[:2], cache=cache)


def test_server_refuses_bad_requests_in_one_line(smollm2_logprob_server):
    url = smollm2_logprob_server.base_url + "/completions"
    model = smollm2_logprob_server.model
    for body, status, why in (
        ({"model": model, "prompt": ["a", "b"]}, 400, "prompt"),
        ({"model": "gpt-7", "prompt": "a"}, 404, "not served"),
        ({"model": model, "prompt": "a", "logprobs": 10**6}, 400, "logprobs"),
        ({"model": model, "prompt": "word " * 9000, "max_tokens": 0}, 400, "window"),
    ):
        response = requests.post(url, json=body, timeout=60)
        assert response.status_code == status and why in response.json()["error"]["message"]
    assert requests.post(url, data=b"{not json", timeout=10).status_code == 400


def test_hostile_or_inconsistent_prompt_tokens_give_no_scores():
    good = {"choices": [{"logprobs": {"tokens": ["Ab", " c"], "token_logprobs": [None, -1.0], "text_offset": [0, 2]}}]}
    assert read_prompt_tokens(good, "echo", "Ab c").logprobs == [None, -1.0]
    for broken in (
        {"choices": []},
        {"choices": [{"logprobs": None}]},
        {"choices": [{"logprobs": {"tokens": ["Ab", " c"], "token_logprobs": [None, 3.0], "text_offset": [0, 2]}}]},
        {"choices": [{"logprobs": {"tokens": ["Ab", " c"], "token_logprobs": [None, "x"], "text_offset": [0, 2]}}]},
        {"choices": [{"logprobs": {"tokens": ["Ab", " c"], "token_logprobs": [None, -1.0], "text_offset": [0, 99]}}]},
        {"choices": [{"logprobs": {"tokens": ["Ab"], "token_logprobs": [None, -1.0], "text_offset": [0, 2]}}]},
        {
            "choices": [
                {"logprobs": {"tokens": ["Ab", " c"], "token_logprobs": [None, float("nan")], "text_offset": [0, 2]}}
            ]
        },
    ):
        assert read_prompt_tokens(broken, "echo", "Ab c") is None
    # A server that generated a token anyway (max_tokens 0 raised to 1): its token starts at the prompt's end.
    generated = {
        "choices": [
            {
                "text": "Hello world foo bar",
                "logprobs": {
                    "tokens": ["Hello", " world", " foo", " bar"],
                    "token_logprobs": [None, -3.0, -4.0, -0.1],
                    "text_offset": [0, 5, 11, 15],
                },
            }
        ]
    }
    assert read_prompt_tokens(generated, "echo", "Hello world foo") is None
    # A token spanning the join of prefix and text: the text has no scores, never misaligned ones.
    spanning = PromptTokens(
        ["P", "re", "fixText", " more", " words"], [None, -1.0, -2.0, -1.0, -0.5], [0, 1, 3, 10, 15], None
    )
    assert text_scores(spanning, 6, 14, 256).n_scored == 0
    aligned = PromptTokens(
        ["Pre", "fix", "Text", " more", " words"], [None, -1.0, -2.0, -1.0, -0.5], [0, 3, 6, 10, 15], None
    )
    scored = text_scores(aligned, 6, 14, 256)
    assert scored.logprob.tolist() == [-1.0, -0.5] and (scored.char_start, scored.char_end) == (4, 14)
    # A tokenizer opening every prompt with a start token scores the text's first token alone, so after a prefix too.
    alone = PromptTokens(["<s>", "Text", " more"], [None, -3.0, -1.0], [0, 0, 4], None)
    after = PromptTokens(["<s>", "Pre", "fix", "Text", " more"], [None, -1.0, -2.0, -2.5, -0.9], [0, 0, 3, 6, 10], None)
    assert text_scores(alone, 0, 9, 256).logprob.tolist() == [-3.0, -1.0]
    assert text_scores(after, 6, 9, 256).logprob.tolist() == [-2.5, -0.9]


def vllm_body(strings: list[str], logprobs: list[float], ids: list[int] | None) -> dict:
    """A vLLM-form response: the first entry None, each other the actual token under its id."""
    entries = [None] + [
        {str(ids[i] if ids else i): {"logprob": lp, "decoded_token": t}}
        for i, (t, lp) in enumerate(zip(strings, logprobs), start=1)
    ]
    return {"choices": [{"prompt_logprobs": entries, **({"prompt_token_ids": ids} if ids is not None else {})}]}


def test_vllm_form_tokens_must_rebuild_the_prompt():
    """The vLLM form spells out every token but the first: their strings must rebuild the rest of
    the prompt (an outside attack appended generated tokens, or returned log-probs of half the
    prompt, and both were scored as the document's)."""
    prompt = "Hello world foo"
    good = read_prompt_tokens(vllm_body([" world", " foo"], [-1.0, -2.0], [7, 8, 9]), "prompt_logprobs", prompt)
    assert good.strings == ["Hello", " world", " foo"] and good.offsets == [0, 5, 11] and good.ids == [7, 8, 9]
    half = "word " * 60 + "end of the text"
    for body, text in [
        (
            vllm_body([" world", " foo", " bar", "!"], [-1.0, -2.0, -0.5, -0.1], [7, 8, 9, 10, 11]),
            prompt,
        ),  # generated tokens
        (vllm_body([" world", " foo"], [-1.0, -2.0], [7, 8, 9, 10]), prompt),  # ids of more tokens than log-probs
        (vllm_body([" the", " text"], [-1.0, -2.0], [1, 2, 3]), half),  # log-probs of the prompt's end only
        (vllm_body([" world", "", " foo"], [-1.0, -1.0, -2.0], [7, 8, 9, 10]), prompt),  # an empty token
        (vllm_body([" World", " foo"], [-1.0, -2.0], [7, 8, 9]), prompt),
    ]:  # another prompt's tokens
        assert read_prompt_tokens(body, "prompt_logprobs", text) is None
    # A second outside attack: replacement characters appended (or inserted) after an ASCII
    # prompt in the vLLM form, empty tokens inserted at valid offsets in the legacy form.
    assert (
        read_prompt_tokens(
            vllm_body([" world", " foo"] + ["\ufffd"] * 3, [-1.0, -2.0] + [-15.0] * 3, None), "prompt_logprobs", prompt
        )
        is None
    )
    assert (
        read_prompt_tokens(
            vllm_body([" world", "\ufffd", " foo"], [-1.0, -15.0, -2.0], None), "prompt_logprobs", prompt
        )
        is None
    )
    padded = {
        "choices": [
            {
                "logprobs": {
                    "tokens": ["Hello", "", " world", "", " foo"],
                    "token_logprobs": [None, -15.0, -1.0, -15.0, -2.0],
                    "text_offset": [0, 5, 5, 11, 11],
                }
            }
        ]
    }
    assert read_prompt_tokens(padded, "echo", prompt) is None
    # Bytes of a non-ASCII character split across tokens read as replacement characters: the
    # tokens are kept (scored), without offsets (no join with a prefix can be found).
    split = read_prompt_tokens(
        vllm_body([" caf", "\ufffd", "\ufffd", " au lait"], [-1.0, -2.0, -0.1, -0.5], None),
        "prompt_logprobs",
        "Un café au lait",
    )
    assert split is not None and split.offsets is None and split.logprobs[1:] == [-1.0, -2.0, -0.1, -0.5]


def test_a_token_id_spelled_two_ways_is_refused():
    """A server answering the probe with one tokenizer and documents with another (an outside
    attack: every re-probe passed, and DC-PDD read the table of one with the ids of the other)."""
    target = OpenAICompatibleTarget("openai-compatible:http://127.0.0.1:9/v1#m")
    probe = read_prompt_tokens(
        vllm_body([" quick", " brown", " fox"], [-1.0] * 3, [1, 20, 21, 22]), "prompt_logprobs", "The quick brown fox"
    )
    target._same_tokenizer(probe)
    same = read_prompt_tokens(
        vllm_body([" fox", "\n", " brown", " café"], [-1.0] * 4, [1, 22, 5, 21, 30]),
        "prompt_logprobs",
        "A fox\n brown café",
    )
    target._same_tokenizer(same)  # the same ids spell the same words (spacing and non-ASCII spellings not compared)
    other = read_prompt_tokens(
        vllm_body([" qu", "ick", " br"], [-1.0] * 3, [1, 20, 21, 22]), "prompt_logprobs", "The quick br"
    )
    with pytest.raises(VerifierError, match="two tokenizers"):
        target._same_tokenizer(other)


def test_partial_characters_as_vllm_spells_them_are_read_and_inserted_empty_tokens_are_not():
    """Real vLLM spells a token ending inside a multi-byte character as "" and the completing token
    with the whole character (tests/targets/vllm-0.32.0 holds real answers); an empty token
    anywhere else, or more of them than the characters shown can be cut, is not a partial one."""
    prompt = "Hi 東京 there"  # real vLLM: "Hi", "", "", " 東", "", "京", " there"
    real = read_prompt_tokens(
        vllm_body(["", "", " 東", "", "京", " there"], [-15.2, -3.1, -4.2, -2.4, -0.04, -12.6], [1, 2, 3, 4, 5, 6, 7]),
        "prompt_logprobs",
        prompt,
    )
    assert real is not None and real.strings[0] == "Hi" and real.offsets == [0, 2, 2, 2, 4, 4, 5]
    for strings, why in (
        (["", "", "", " 東", "", "京", " there"], "three cuts of a three-byte character"),
        (["", "", " 東", "", "京", "", " there"], "an empty token before ASCII text"),
        (["", "", " 東", "京", " there", ""], "an empty token at the end"),
    ):
        body = vllm_body(strings, [-1.0] * len(strings), None)
        assert read_prompt_tokens(body, "prompt_logprobs", prompt) is None, why
    # An id read as "" (a partial character) never reads as ASCII text in another response.
    target = OpenAICompatibleTarget("openai-compatible:http://127.0.0.1:9/v1#m")
    target._same_tokenizer(real)
    other = read_prompt_tokens(
        vllm_body([" a", " b", " c"], [-1.0] * 3, [1, 9, 3, 10]), "prompt_logprobs", "x a b c"
    )  # id 3 was "" above
    with pytest.raises(VerifierError, match="two tokenizers"):
        target._same_tokenizer(other)


def test_an_outside_review_of_the_real_server_forms_kept():
    """Third outside review: replacement characters stood for any non-ASCII text (a long Japanese
    prompt read from three tokens; a letter the prompt lacks), and echo offsets that disagreed with
    the token texts moved the scores after a prefix."""
    long = "東京タワーは高い。" * 40
    assert read_prompt_tokens(vllm_body(["\ufffd", "い", "。"], [-1.0] * 3, None), "prompt_logprobs", long) is None
    cafe = "Un café au lait"
    assert (
        read_prompt_tokens(vllm_body([" caf", "\ufffd", "ü", " au lait"], [-1.0] * 4, None), "prompt_logprobs", cafe)
        is None
    )
    appended = vllm_body(["高", "い", "。", "明", "日"], [-1.0] * 5, None)
    assert read_prompt_tokens(appended, "prompt_logprobs", "東京は高い。") is None
    shifted = {
        "choices": [
            {
                "logprobs": {
                    "tokens": ["é", "\n", "ab", "\n", "Text", " more", " x"],
                    "token_logprobs": [None, -1.0, -2.0, -3.0, -4.0, -5.0, -6.0],
                    "text_offset": [0, 2, 3, 5, 6, 10, 15],  # UTF-8 byte offsets, not characters
                }
            }
        ]
    }
    assert read_prompt_tokens(shifted, "echo", "é\nab\nText more x") is None


def test_an_output_only_server_offers_answers_only():
    """A server without the legacy endpoint's log-probs (the fault server, answering chat only)."""
    from fault_server import FaultServer

    with FaultServer() as server:
        target = OpenAICompatibleTarget.load(server.spec("ok"), None, ApiOptions(timeout_s=2, retries=0), PeerAccess())
        assert not server.requests  # loading sends nothing; reading the capabilities probes
        assert target.capabilities == {"answers"} and target.prompt_form is None
        assert target.usage["requests_sent"] == 0 and target.usage["probe_requests"] == len(server.requests) == 3
        with pytest.raises(VerifierError, match="no prompt log-probs"):
            target.score(["some text"])


@pytest.mark.slow
def test_api_logprobs_example_reaches_the_local_verdict_with_the_local_numbers(logprob_server, tmp_path, monkeypatch):
    """The bundled example through the server (the stand-in, and a real vLLM server; its address
    rewritten): loss, zlib and Min-K% computed
    through the API equal the local audit's to 1e-3 document by document, Min-K%++ and Gap-K% are
    not computable there, and both audits refuse the date-shifted comparison."""
    import json
    import shutil

    import yaml

    from verifier.audit import run_audit
    from verifier.boundary.resources import resource
    from verifier.report import render_html

    monkeypatch.setenv("VERIFIER_CACHE_SECRET", str(tmp_path / "secret"))
    examples = resource("examples")
    shutil.copytree(examples / "data" / "wikimia", tmp_path / "data" / "wikimia")
    shutil.copytree(examples / "data" / "policies", tmp_path / "data" / "policies")
    claim = yaml.safe_load((examples / "api-logprobs-wikimia.yaml").read_text())
    claim["model"]["target"] = logprob_server.spec
    claim["model"]["weights"] = "smollm2-135m"  # the weights the server is declared to serve: compared
    (tmp_path / "api.yaml").write_text(yaml.safe_dump(claim))
    local = dict(claim, model={"target": "smollm2-135m", "training_cutoff": 2024})
    (tmp_path / "local.yaml").write_text(yaml.safe_dump(local))
    api_run = run_audit(tmp_path / "api.yaml", cache=ScoreCache(tmp_path / "cache"))
    local_run = run_audit(tmp_path / "local.yaml", cache=ScoreCache(tmp_path / "cache"))
    assert api_run.findings["verdict"] == local_run.findings["verdict"] == "REJECTED-METHOD"
    route = next(r for r in api_run.findings["path"] if r["route"] == "date_shift")["outcome"]["metrics"]
    assert {"min_k_pp", "gap_k"} <= set(route["not_computable"]) and "vocab_stats" in route["not_computable"]["gap_k"]
    rows = {r["name"] for r in route["membership_rows"]}
    assert {"loss", "zlib", "min_k", "prefix_lcs_word", "blind_classifier"} <= rows
    key = ["role", "text_sha256"]
    merged = api_run.scores.merge(local_run.scores, on=key, suffixes=("_api", "_local"))
    assert len(merged) == 24
    for name in ("loss", "zlib", "min_k"):
        assert np.abs(merged[f"{name}_api"] - merged[f"{name}_local"]).max() < API_TOL, name
    target = api_run.findings["model"]["target"]
    assert target["probed"]["prompt_logprobs_form"] == "prompt_logprobs" and target["kind"] == "openai_compatible"
    assert str(tmp_path) not in json.dumps(api_run.findings)
    parity = api_run.findings["model"]["served_weights"]
    assert parity["documents"] == 16 and parity["max_document_difference"] < API_TOL
    assert parity["weights"]["digests"]["weights"] == local_run.findings["model"]["target"]["digests"]["weights"]
    html = render_html(api_run.findings, "0" * 64)
    assert (
        "offered prompt log-probs (prompt_logprobs form): the first 256 of its tokens" in html
        and str(tmp_path) not in html
    )
    assert "the server's log-probabilities are those of these weights" in html and "provider's word" not in html
    unchecked = json.loads(json.dumps(api_run.findings))
    unchecked["model"]["served_weights"], unchecked["claim"]["model"]["weights"] = None, None
    assert "rests on the provider's word: no weights were held" in render_html(unchecked, "0" * 64)
