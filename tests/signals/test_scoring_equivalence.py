"""Batching, padding and caching change nothing: every signal equals a plain float64 computation."""

from __future__ import annotations

import numpy as np
import pytest
from reference_scoring import float64_model, plain_arrays, plain_signals, published_defined

from verifier.data import Documents
from verifier.scoring.table import score_documents
from verifier.targets import ScoreCache, ScoringOptions
from verifier.targets.kinds.causal_lm import BATCH_TOLERANCE, CausalLMTarget

TOL = 1e-4


@pytest.fixture(scope="module")
def texts(wikimia64: list[dict]) -> list[str]:
    # Mixed lengths (a short one forces heavy padding), a duplicate, and casing for the lowercase view.
    picked = [row["text"] for row in wikimia64[:9]]
    return picked + ["A short one.", picked[0], "Mixed CASE Text About NASA In 2014 And The UN."]


@pytest.fixture(scope="module")
def tiny(tiny_model_dir) -> CausalLMTarget:
    return CausalLMTarget(str(tiny_model_dir), ScoringOptions(batch_tokens=192, max_tokens=48))


def expected(target: CausalLMTarget, texts: list[str], reference: CausalLMTarget | None = None) -> list[dict]:
    model64 = float64_model(target.model)
    ref64 = float64_model(reference.model) if reference else None
    opts = target.options
    assert reference is None or (reference.options.max_tokens, reference.options.max_chars) == (
        opts.max_tokens,
        opts.max_chars,
    )
    rows = []
    for text in texts:
        a = plain_arrays(model64, target.tokenizer, text, opts.max_chars, opts.max_tokens)
        lower = plain_arrays(model64, target.tokenizer, text.lower(), opts.max_chars, opts.max_tokens)
        ref = plain_arrays(ref64, reference.tokenizer, text, opts.max_chars, opts.max_tokens) if ref64 else None
        rows.append(plain_signals(a, lower=lower, ref=ref))
    return rows


def assert_table_matches(table, want: list[dict]) -> None:
    for name in table.signal_names:
        got = table.signal(name)
        ref = np.array([row[name] for row in want])
        np.testing.assert_allclose(got, ref, atol=TOL, rtol=0, err_msg=name)


def test_batched_cached_signals_match_plain_float64(tiny, tiny_reference_dir, texts, tmp_path):
    # The reference has other weights and another tokenizer (400 vs 600 tokens).
    reference = CausalLMTarget(str(tiny_reference_dir), ScoringOptions(batch_tokens=144, max_tokens=48))
    docs = Documents(texts=texts, labels=None, source="t.jsonl")
    names = ["loss", "zlib", "min_k", "min_k_pp", "gap_k", "lowercase", "reference"]
    cache = ScoreCache(tmp_path)
    want = expected(tiny, texts, reference)
    # Truncation at 48 tokens really happens (zlib still compresses the whole text given to the
    # model, as published), and most texts are long enough for the published Min-K% to be defined.
    assert sum(len(tiny.encode(t).ids) == 48 for t in texts) >= 8
    model64 = float64_model(tiny.model)
    assert sum(published_defined(plain_arrays(model64, tiny.tokenizer, t, 2500, 48)) for t in texts) >= len(texts) - 1
    first = score_documents(docs, tiny, reference=reference, signal_names=names, cache=cache)
    assert sorted(first.signal_names) == sorted(names)
    assert_table_matches(first, want)
    # Served from the cache: bit-identical, and the model is never called.
    tiny._launch = reference._launch = None  # type: ignore[assignment]
    second = score_documents(docs, tiny, reference=reference, signal_names=names, cache=cache)
    for name in names:
        np.testing.assert_array_equal(first.signal(name), second.signal(name))


def test_batch_size_does_not_change_scores(tiny_model_dir, texts):
    one = CausalLMTarget(str(tiny_model_dir), ScoringOptions(batch_tokens=48, max_tokens=48)).score(texts)
    many = CausalLMTarget(str(tiny_model_dir), ScoringOptions(batch_tokens=576, max_tokens=48)).score(texts)
    for a, b in zip(one, many):
        np.testing.assert_allclose(a.logprob, b.logprob, atol=TOL)
        np.testing.assert_allclose(a.sigma, b.sigma, atol=TOL)


def test_interrupted_run_resumes_without_rescoring(tiny_model_dir, texts, tmp_path):
    target = CausalLMTarget(str(tiny_model_dir), ScoringOptions(batch_tokens=192, max_tokens=48))
    calls: list[int] = []
    original = target._launch

    def counting_forward(batch, width):
        calls.append(len(batch))
        if len(calls) == 2:
            raise KeyboardInterrupt  # the user stops the run during the second batch
        return original(batch, width)

    target._launch = counting_forward  # type: ignore[method-assign]
    with pytest.raises(KeyboardInterrupt):
        target.score(texts, cache=ScoreCache(tmp_path))
    calls.clear()
    target._launch = lambda batch, width: (calls.append(len(batch)), original(batch, width))[1]  # type: ignore[method-assign]
    resumed = target.score(texts, cache=ScoreCache(tmp_path))
    unique = len(set(texts))
    assert sum(calls) == unique - 4  # only the documents of the lost batches were scored again
    fresh = CausalLMTarget(str(tiny_model_dir), ScoringOptions(batch_tokens=192, max_tokens=48)).score(texts)
    for a, b in zip(resumed, fresh):  # batch-invariant to the stated tolerance, whatever the cache held
        np.testing.assert_allclose(a.logprob, b.logprob, atol=BATCH_TOLERANCE, rtol=0)
        np.testing.assert_allclose(a.sigma, b.sigma, atol=BATCH_TOLERANCE, rtol=0)


def test_scores_do_not_depend_on_the_other_documents_of_a_batch(tiny_model_dir, texts):
    """A document's arrays are a function of the document (and the options), to the stated
    tolerance on every CPU: scored among all texts, among every third text, or in reverse order,
    it gets the same numbers; scored in the same passes again, the same bits."""
    target = CausalLMTarget(str(tiny_model_dir), ScoringOptions(batch_tokens=5 * 256))
    unique = list(dict.fromkeys(texts))
    together = dict(zip(unique, target.score(unique)))
    for subset in (unique[::3], unique[::-1], unique[1::2]):
        for text, scores in zip(subset, target.score(subset)):
            for name in ("logprob", "mu", "sigma", "top1"):
                np.testing.assert_allclose(
                    getattr(scores, name), getattr(together[text], name), atol=BATCH_TOLERANCE, rtol=0, err_msg=name
                )
    for text, scores in zip(unique, target.score(unique)):
        np.testing.assert_array_equal(scores.logprob, together[text].logprob)


def test_cache_key_separates_precision_and_cut(tiny_model_dir, texts, tmp_path):
    cache = ScoreCache(tmp_path)
    fp32 = CausalLMTarget(str(tiny_model_dir), ScoringOptions(max_tokens=48))
    short = CausalLMTarget(str(tiny_model_dir), ScoringOptions(max_tokens=16))
    bf16 = CausalLMTarget(str(tiny_model_dir), ScoringOptions(max_tokens=48, dtype="bf16"))
    a, b, c = (t.score(texts[:3], cache=cache) for t in (fp32, short, bf16))
    assert a[0].n_scored == 47 and b[0].n_scored == 15
    assert not np.array_equal(a[0].logprob, c[0].logprob)  # bf16 rows are not served as fp32 rows


@pytest.mark.slow
def test_smollm2_on_wikimia_matches_plain_float64(smollm2, wikimia64, tmp_path):
    texts = [row["text"] for row in wikimia64[:4]] + [wikimia64[-1]["text"]]
    docs = Documents(texts=texts, labels=None, source="wikimia64.jsonl")
    table = score_documents(
        docs,
        smollm2,
        signal_names=["loss", "zlib", "min_k", "min_k_pp", "gap_k", "lowercase"],
        cache=ScoreCache(tmp_path),
    )
    assert_table_matches(table, expected(smollm2, texts))
    # Real text under a real model: tokens are far more likely than uniform (log 49152 = 10.8).
    assert (table.signal("loss") > -6).all()


def test_small_statistics_chunks_and_full_width_passes_stay_batch_invariant(tiny_model_dir, texts, wikimia64):
    """With the statistics in chunks smaller than a pass (as for a 49k vocabulary: 85 positions on
    the CPU), and with passes of full-width documents (no padding at all) beside passes holding
    dummy rows, a document's numbers still do not depend on its batch-mates beyond the stated
    tolerance (bit for bit on some CPUs, not on all: 1.4e-6 apart on AVX2-only ones)."""
    target = CausalLMTarget(str(tiny_model_dir), ScoringOptions(batch_tokens=4 * 48, max_tokens=48))
    target.row_chunk = 7  # not a divisor of any pass: chunks straddle documents and the last one overlaps
    full_width = [" ".join(row["text"] for row in wikimia64[i : i + 3]) for i in range(0, 24, 3)]
    unique = list(dict.fromkeys(texts)) + full_width
    assert sum(len(target.encode(t).ids) == 48 for t in full_width) == len(full_width)
    together = dict(zip(unique, target.score(unique)))
    reference = CausalLMTarget(str(tiny_model_dir), ScoringOptions(batch_tokens=4 * 48, max_tokens=48))
    for text, scores in zip(unique, reference.score(unique)):  # one chunk per pass: the same numbers to rounding
        np.testing.assert_allclose(together[text].logprob, scores.logprob, atol=1e-5)
    for subset in (full_width[:1], full_width[::3] + unique[:2], unique[::-1]):
        for text, scores in zip(subset, target.score(subset)):
            for name in ("logprob", "mu", "sigma", "top1"):
                np.testing.assert_allclose(
                    getattr(scores, name), getattr(together[text], name), atol=BATCH_TOLERANCE, rtol=0, err_msg=name
                )
