"""Long documents scored whole in sliding windows: stitched arrays, exact windows, the cut in the key."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from reference_scoring import float64_model

from verifier.data import Documents
from verifier.errors import VerifierError
from verifier.scoring.table import score_documents
from verifier.targets import ScoreCache, ScoringOptions
from verifier.targets.kinds.causal_lm import BATCH_TOLERANCE, CausalLMTarget

TOL = 1e-4
WINDOW, STRIDE = 48, 16


@pytest.fixture(scope="module")
def long_texts(wikimia64: list[dict]) -> list[str]:
    """Three long documents (several windows each) and a short one (one window, no stitching)."""
    joined = " ".join(row["text"] for row in wikimia64[:12])
    return [joined, " ".join(row["text"] for row in wikimia64[12:20]), joined[:1500], "A short one."]


@pytest.fixture(scope="module")
def windowed(tiny_model_dir) -> CausalLMTarget:
    return CausalLMTarget(
        str(tiny_model_dir), ScoringOptions(max_tokens=WINDOW, stride=STRIDE, max_chars=20_000, batch_tokens=4 * WINDOW)
    )


def test_windows_cover_every_token_once_with_context(windowed, long_texts):
    for text in long_texts:
        enc = windowed.encode(text)
        windows = windowed.windows("doc", enc)
        # Global index of the token each kept position predicts, in stitching order.
        predicted = [w.start + t + 1 for w in windows for t in range(w.keep_from, len(w.ids) - 1)]
        assert predicted == list(range(1, len(enc.ids)))  # every token after the first, once, in order
        assert all(w.ids == enc.ids[w.start : w.start + len(w.ids)] for w in windows)
        assert all(
            w.keep_from + 1 >= WINDOW - STRIDE for w in windows[1:]
        )  # at least max_tokens - stride tokens of context
        if len(enc.ids) > WINDOW:  # every window full: one width, so a document's windows finish together
            assert len(windows) > 1 and {len(w.ids) for w in windows} == {WINDOW} and windows[-1].ids[-1] == enc.ids[-1]
    assert len(windowed.encode(long_texts[0]).ids) > 3 * WINDOW


def test_stitched_arrays_equal_each_window_scored_alone_in_float64(windowed, long_texts):
    """Every entry of the stitched arrays is the prediction of its token from its window's context,
    computed independently in float64, one window per pass."""
    model64 = float64_model(windowed.model)
    for text, scores in zip(long_texts, windowed.score(long_texts)):
        enc = windowed.encode(text)
        assert scores.n_scored == len(enc.ids) - 1 and np.array_equal(scores.token_ids, enc.ids)
        assert (scores.char_start, scores.char_end) == (enc.char_start, enc.char_end) and scores.char_end >= len(
            text.rstrip()
        ) - 1
        want = []
        for window in windowed.windows("doc", enc):
            with torch.no_grad():
                logits = model64(torch.tensor([window.ids])).logits[0, :-1]
            logp = torch.log_softmax(logits, -1)
            actual = logp.gather(-1, torch.tensor(window.ids[1:])[:, None])[:, 0].numpy()
            want.append(actual[window.keep_from :])
        np.testing.assert_allclose(scores.logprob, np.concatenate(want), atol=TOL, rtol=0)


def test_first_window_is_the_cut_document_to_the_batch_tolerance(tiny_model_dir, windowed, long_texts):
    cut = CausalLMTarget(
        str(tiny_model_dir), ScoringOptions(max_tokens=WINDOW, max_chars=20_000, batch_tokens=4 * WINDOW)
    )
    for whole, first in zip(windowed.score(long_texts), cut.score(long_texts)):
        np.testing.assert_allclose(whole.logprob[: WINDOW - 1], first.logprob, atol=BATCH_TOLERANCE, rtol=0)
        np.testing.assert_allclose(whole.sigma[: WINDOW - 1], first.sigma, atol=BATCH_TOLERANCE, rtol=0)


def test_the_whole_document_reaches_the_signals_and_the_cut_is_in_key_and_metadata(
    tiny_model_dir, windowed, long_texts, tmp_path
):
    docs = Documents(texts=long_texts, labels=None, source="long.jsonl")
    cache = ScoreCache(tmp_path)
    table = score_documents(docs, windowed, signal_names=["loss", "min_k"], cache=cache)
    lengths = [len(windowed.encode(t).ids) for t in long_texts]
    assert table.frame["n_tokens"].tolist() == lengths and max(lengths) > 3 * WINDOW
    assert table.metadata["target"]["stride"] == STRIDE and table.metadata["target"]["max_tokens"] == WINDOW
    # The same texts cut at the window are other cache rows: nothing windowed is served as cut, or back.
    cut = CausalLMTarget(
        str(tiny_model_dir), ScoringOptions(max_tokens=WINDOW, max_chars=20_000, batch_tokens=4 * WINDOW)
    )
    served = cache.counts.served
    cut_scores = cut.score(long_texts, cache=cache)
    assert cache.counts.served == served and cut_scores[0].n_scored == WINDOW - 1
    other_stride = CausalLMTarget(
        str(tiny_model_dir), ScoringOptions(max_tokens=WINDOW, stride=8, max_chars=20_000, batch_tokens=4 * WINDOW)
    )
    assert other_stride.fingerprint != windowed.fingerprint
    windowed.score(long_texts, cache=cache)
    assert cache.counts.served == served + len(long_texts)


@pytest.mark.parametrize("stride", [0, WINDOW, WINDOW + 5, -1])
def test_a_stride_without_context_is_refused(stride):
    with pytest.raises(VerifierError, match="stride"):
        ScoringOptions(max_tokens=WINDOW, stride=stride)


def test_claims_check_the_cut_when_read():
    from pydantic import ValidationError

    from verifier.claims import ModelUnderTest

    assert ModelUnderTest(target="m", max_tokens=64, stride=32, max_chars=50_000).stride == 32
    for bad, why in (
        ({"target": "m", "max_tokens": 64, "stride": 64}, "stride 64 must be below max_tokens"),
        ({"target": "m", "stride": 0}, "greater than or equal to 1"),
        ({"target": "openai-compatible:http://127.0.0.1:9/v1#m", "stride": 16}, "apply to open-weight targets"),
    ):
        with pytest.raises(ValidationError, match=why):
            ModelUnderTest(**bad)


def test_a_stride_beyond_the_models_context_names_the_context(tiny_model_dir):
    with pytest.raises(VerifierError, match="reads at most 256 tokens at once"):
        CausalLMTarget(str(tiny_model_dir), ScoringOptions(max_tokens=1024, stride=512))


@pytest.mark.parametrize(
    "bad", [{"threads": 0}, {"threads": -1}, {"batch_tokens": 0}, {"max_tokens": 1}, {"device": "tpu"}]
)
def test_bad_scoring_options_are_refused_in_one_line(bad):
    with pytest.raises(VerifierError):
        ScoringOptions(**bad)
