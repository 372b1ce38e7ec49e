"""Tokenizer data-mixture inference on a byte-level BPE tokenizer trained here on a known mixture."""

from __future__ import annotations

import numpy as np
import pytest

from verifier.summary.mixture import byte_level_merges, infer_mixture, word_symbols


def test_a_known_mixture_is_read_back_from_the_merges():
    import wordfreq
    from tokenizers import ByteLevelBPETokenizer

    rng = np.random.default_rng(0)
    truth = {"en": 0.7, "ru": 0.3}
    lines = []
    for code, share in truth.items():
        table = wordfreq.get_frequency_dict(code, wordlist="small")
        words = sorted(table, key=table.__getitem__, reverse=True)[:5000]
        p = np.array([table[w] for w in words])
        p /= p.sum()
        count = int(share * 300_000 / float(p @ np.array([len(w.encode()) + 1 for w in words])))
        drawn = rng.choice(len(words), size=count, p=p)
        lines += [" ".join(words[i] for i in drawn[j : j + 20]) for j in range(0, count, 20)]
    tokenizer = ByteLevelBPETokenizer()
    tokenizer.train_from_iterator(lines, vocab_size=256 + 300, min_frequency=2, show_progress=False)
    found = infer_mixture(byte_level_merges(tokenizer.to_str()), ["de", "en", "ru", "uk"], limit=300)
    assert abs(sum(found.shares.values()) - 1) < 1e-9
    assert abs(found.shares["en"] - 0.7) < 0.1 and abs(found.shares["ru"] + found.shares["uk"] - 0.3) < 0.1
    assert found.shares["de"] < 0.1


def test_words_are_written_as_a_byte_level_pretokeniser_gives_them():
    assert word_symbols("hi") == ("Ġ", "h", "i")
    assert len(word_symbols("é")) == 3  # a space and two UTF-8 bytes
    with pytest.raises(ValueError, match="not a BPE"):
        byte_level_merges('{"model": {"type": "Unigram"}}')
    with pytest.raises(ValueError, match="not a byte-level BPE"):  # SentencePiece-style BPE (Llama, Mistral)
        byte_level_merges('{"pre_tokenizer": {"type": "Metaspace"}, "model": {"type": "BPE", "merges": ["▁ t"]}}')
    with pytest.raises(ValueError, match="not a pair"):
        byte_level_merges('{"pre_tokenizer": {"type": "ByteLevel"}, "model": {"type": "BPE", "merges": ["ab"]}}')
