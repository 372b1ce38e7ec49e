"""ReCaLL, Con-ReCall, DC-PDD and PAC against independent float64 re-implementations of their
papers' formulas, on a tiny model: one text per forward pass, no batching, no cache, the
prefixed pass built by hand from the joined string (prefix + text, as a server tokenizes it),
the text's tokens found by their character offsets."""

from __future__ import annotations

import io
import json
import zipfile

import numpy as np
import pytest
import torch
from reference_scoring import float64_model

from verifier.data import Documents
from verifier.errors import VerifierError
from verifier.scoring.table import draw_prefix_documents, score_documents
from verifier.signals import MEMBER_PREFIX, NONMEMBER_PREFIX, Auxiliary, computable, make_signals
from verifier.signals.frequencies import FrequencyTable, build_table, read_table, table_for
from verifier.signals.gray_box.pac import swapped_copies
from verifier.targets import ScoreCache, ScoringOptions
from verifier.targets.kinds.causal_lm import CausalLMTarget

TOL = 1e-5
MAX_TOKENS = 48


@pytest.fixture(scope="module")
def tiny(tiny_model_dir) -> CausalLMTarget:
    return CausalLMTarget(str(tiny_model_dir), ScoringOptions(batch_tokens=256, max_tokens=MAX_TOKENS))


@pytest.fixture(scope="module")
def setting(tiny, wikimia64):
    texts = [r["text"] for r in wikimia64[:8]] + ["A short text. It has two sentences."]
    nonmembers = tuple(r["text"] for r in wikimia64 if r["label"] == 0)[-4:]
    members = tuple(r["text"] for r in wikimia64 if r["label"] == 1)[-4:]
    table = build_table(
        lambda xs: tiny.tokenizer(xs, add_special_tokens=False).input_ids,
        len(tiny.tokenizer),
        [r["text"] for r in wikimia64[100:300]],
        tiny.tokenizer_fingerprint,
        "WikiMIA rows 100-299 (test)",
    )
    return texts, Auxiliary(nonmembers, members, table)


def token_logprobs(model64, ids: list[int], first_kept: int) -> np.ndarray:
    """log p of ids[first_kept + 1:] each given everything before it, in float64."""
    with torch.no_grad():
        logits = model64(torch.tensor([ids])).logits[0].double()
    logp = torch.log_softmax(logits[:-1], dim=-1).gather(-1, torch.tensor(ids[1:])[:, None])[:, 0].numpy()
    return logp[first_kept:]


def plain(tiny, texts, aux, shots=2, shot_chars=300, gamma=1.0, a=0.01, copies=3):
    model64, tok = float64_model(tiny.model), tiny.tokenizer

    def enc(t):
        return tok(t[: tiny.options.max_chars], truncation=True, max_length=MAX_TOKENS).input_ids

    room = tiny.model.config.n_positions - MAX_TOKENS  # a prefix longer than the window keeps its last tokens
    non = "".join(d[:shot_chars].strip() + "\n\n" for d in aux.nonmembers[:shots])
    mem = "".join(d[:shot_chars].strip() + "\n\n" for d in aux.members[:shots])

    def after(prefix: str, text: str) -> np.ndarray:
        joined = tok(prefix + text[: tiny.options.max_chars], return_offsets_mapping=True)
        first = [start for start, _ in joined["offset_mapping"]].index(len(prefix))
        context, own = joined["input_ids"][:first][-room:], joined["input_ids"][first : first + MAX_TOKENS]
        return token_logprobs(model64, context + own, len(context))

    out = []
    for text in texts:
        ids = enc(text)
        ll = token_logprobs(model64, ids, 0)
        ll_non, ll_mem = after(non, text), after(mem, text)
        # DC-PDD: first occurrences over the whole text, the unscored first token left out.
        seen, first = set(), []
        for i, t in enumerate(ids):
            if t not in seen:
                seen.add(t)
                first.append(i)
        first = [i for i in first if i > 0]
        freq = (1 + aux.frequencies.counts[np.array(ids)[first]]) / (
            aux.frequencies.counts.sum() + len(aux.frequencies.counts)
        )
        alpha = np.exp(ll[np.array(first) - 1]) * np.log(1 / freq)

        # PAC: polarized distance, top 5% minus bottom 30%.
        def pd(v):
            s = np.sort(v)
            return np.mean(s[::-1][: max(int(len(s) * 0.05), 1)]) - np.mean(s[: max(int(len(s) * 0.3), 1)])

        pds = [
            pd(token_logprobs(model64, enc(c), 0))
            for c in swapped_copies(text[: tiny.options.max_chars], copies, 0.3, 0)
        ]
        out.append(
            {
                "recall": ll_non.mean() / ll.mean(),
                "con_recall": (ll_non.mean() - gamma * ll_mem.mean()) / ll.mean(),
                "dc_pdd": np.minimum(alpha, a).mean(),
                "pac": np.mean(pds) - pd(ll),
            }
        )
    return out


def test_new_signals_equal_their_papers_formulas(tiny, setting, tmp_path):
    texts, aux = setting
    params = {
        "recall": {"shots": 2, "shot_chars": 300},
        "con_recall": {"shots": 2, "shot_chars": 300, "gamma": 0.5},
        "dc_pdd": {"a": 0.01},
        "pac": {"augmentations": 3},
    }
    names = list(params)
    cache = ScoreCache(tmp_path)
    table = score_documents(
        Documents(texts, None, "t.jsonl"), tiny, signal_names=names, signal_params=params, aux=aux, cache=cache
    )
    want = plain(tiny, texts, aux, gamma=0.5)
    assert sum(len(tiny.encode(t).ids) == MAX_TOKENS for t in texts) >= 6  # the token cut really happens
    for name in names:
        np.testing.assert_allclose(table.signal(name), [w[name] for w in want], atol=TOL, rtol=0, err_msg=name)
    # The prefix changes the numbers (it is really read), and a re-run from the cache gives the same.
    assert not np.allclose(table.signal("recall"), 1.0, atol=1e-4)
    again = score_documents(
        Documents(texts, None, "t.jsonl"), tiny, signal_names=names, signal_params=params, aux=aux, cache=cache
    )
    np.testing.assert_array_equal(
        again.frame.filter(like="signal.").to_numpy(), table.frame.filter(like="signal.").to_numpy()
    )
    assert table.metadata["auxiliary"]["nonmember_prefix"]["documents"] == 4
    assert "WikiMIA" in table.metadata["auxiliary"]["token_frequencies"]["source"]


def test_another_prefix_is_another_cache_row(tiny, setting, tmp_path):
    texts, aux = setting
    cache = ScoreCache(tmp_path)
    first = score_documents(Documents(texts, None, "t"), tiny, signal_names=["recall"], aux=aux, cache=cache)
    other = Auxiliary(aux.members, (), None)  # the member documents as the non-member prefix
    second = score_documents(Documents(texts, None, "t"), tiny, signal_names=["recall"], aux=other, cache=cache)
    assert not np.allclose(first.signal("recall"), second.signal("recall"))
    assert first.metadata["auxiliary"] != second.metadata["auxiliary"]


def test_a_table_shorter_than_the_token_ids_gives_no_dc_pdd(tiny, setting, tmp_path):
    """An outside attack: a table cut to 100 ids (fingerprint kept) was read through an API, whose
    vocabulary is unknown, as if every later id had count 0. Now an id past the table is no score."""
    texts, aux = setting
    short = FrequencyTable(aux.frequencies.counts[:100], aux.frequencies.tokenizer, "cut", 1, "d")
    table = score_documents(
        Documents(texts, None, "t"),
        tiny,
        signal_names=["dc_pdd"],
        aux=Auxiliary((), (), short),
        cache=ScoreCache(tmp_path),
    )
    assert np.isnan(table.signal("dc_pdd")).all()
    whole = score_documents(
        Documents(texts, None, "t"), tiny, signal_names=["dc_pdd"], aux=aux, cache=ScoreCache(tmp_path)
    )
    assert np.isfinite(whole.signal("dc_pdd")).all()


def test_needs_are_stated_not_guessed(tiny):
    usable, why = computable(["recall", "con_recall", "dc_pdd", "pac"], tiny.capabilities)
    assert usable == ["pac"]
    assert all("not computable" in why[n] for n in ("recall", "con_recall", "dc_pdd"))
    assert computable(["recall", "con_recall"], tiny.capabilities | {NONMEMBER_PREFIX})[0] == ["recall"]
    assert computable(["con_recall"], tiny.capabilities | {NONMEMBER_PREFIX, MEMBER_PREFIX})[0] == ["con_recall"]
    with pytest.raises(VerifierError, match="known membership"):
        make_signals(["recall"], tiny.capabilities)
    with pytest.raises(VerifierError, match="shots"):
        make_signals(["recall"], tiny.capabilities | {NONMEMBER_PREFIX}, {"recall": {"shots": 0}})
    with pytest.raises(VerifierError, match="swap_share"):
        make_signals(["pac"], tiny.capabilities, {"pac": {"swap_share": 1.5}})


def test_prefix_documents_are_never_scored(wikimia64):
    docs = Documents([r["text"] for r in wikimia64[:40]], np.array([r["label"] for r in wikimia64[:40]]), "w")
    rest, non, mem = draw_prefix_documents(docs, frozenset({NONMEMBER_PREFIX, MEMBER_PREFIX}), 3, seed=7)
    assert len(non) == len(mem) == 3 and len(rest) == 34
    assert not (set(non) | set(mem)) & set(rest.texts)
    assert {docs.labels[docs.texts.index(t)] for t in non} == {0} and {
        docs.labels[docs.texts.index(t)] for t in mem
    } == {1}
    assert draw_prefix_documents(docs, frozenset({NONMEMBER_PREFIX}), 3, seed=7)[1] == non  # seeded
    with pytest.raises(VerifierError, match="labelled"):
        draw_prefix_documents(Documents(docs.texts, None, "w"), frozenset({NONMEMBER_PREFIX}), 3, seed=0)


def test_frequency_tables_of_another_tokenizer_are_refused(tiny, tiny_reference_dir, setting, tmp_path):
    _, aux = setting
    path = tmp_path / "f.npz"
    path.write_bytes(aux.frequencies.to_bytes())
    assert table_for(tiny, path).tokenizer == tiny.tokenizer_fingerprint
    other = CausalLMTarget(str(tiny_reference_dir), ScoringOptions(max_tokens=MAX_TOKENS))
    with pytest.raises(VerifierError, match="another tokenizer"):
        table_for(other, path)
    assert table_for(other) is None  # nothing bundled for a tiny tokenizer
    for damage in (b"", b"PK\x03\x04 not a zip", path.read_bytes()[:200]):
        path.write_bytes(damage)
        with pytest.raises(VerifierError, match="f.npz"):
            read_table(path)
    negative = FrequencyTable(np.array([3, -1, 2]), "x", "s", 1, "d")
    path.write_bytes(negative.to_bytes())
    with pytest.raises(VerifierError, match="non-negative"):
        read_table(path)
    # Counts that would wrap negative when cast, or whose total overflows: refused, never read as probabilities.
    meta = np.frombuffer(json.dumps({"tokenizer": "x", "source": "s", "documents": 1}).encode(), dtype=np.uint8)
    for counts in (np.array([2**63 + 5, 1], dtype=np.uint64), np.array([2**62, 2**62], dtype=np.int64)):
        buffer = io.BytesIO()
        np.savez(buffer, counts=counts, meta=meta)
        path.write_bytes(buffer.getvalue())
        with pytest.raises(VerifierError, match="at most"):
            read_table(path)
    # Found by an outside attack: a zip of raw members (no .npy) crashed the reader; a table
    # carrying the right fingerprint but another vocabulary's length, or nothing counted, was read.
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("counts.npy", b"raw bytes, no array")
        archive.writestr("meta.npy", b"{}")
    path.write_bytes(buffer.getvalue())
    with pytest.raises(VerifierError, match="must be arrays"):
        read_table(path)
    vocabulary = len(tiny.tokenizer)
    for counts, why in (
        (np.ones(vocabulary + 7, dtype=np.int64), "token ids"),
        (np.zeros(vocabulary, dtype=np.int64), "at least 1"),
    ):
        path.write_bytes(FrequencyTable(counts, tiny.tokenizer_fingerprint, "s", 1, "d").to_bytes())
        with pytest.raises(VerifierError, match=why):
            table_for(tiny, path)


def test_bundled_table_matches_smollm2_tokenizer():
    from verifier.signals.frequencies import bundled_table
    from verifier.targets.model_source import load_tokenizer

    _, fingerprint = load_tokenizer("smollm2-135m")
    table = bundled_table(fingerprint)
    assert table is not None and table.documents == 500 and len(table.counts) == 49152
    assert "PG-19" in table.source
