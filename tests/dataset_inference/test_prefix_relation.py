"""The prefix documents of ReCaLL must bear on both sets alike (``dataset_inference.prefix_relation``),
on real WikiMIA texts: edited copies are removed from every set, a prefix that shares passages with
one set only is refused, and prefixes drawn at random from the same population pass."""

from __future__ import annotations

import numpy as np

from verifier.dataset_inference.prefix_relation import BALANCE_ALPHA, prefix_relation


def every_fifth_word_replaced(text: str) -> str:
    """The outside attack's edit: under the hygiene's near-duplicate bar (rapidfuzz ratio 85-89)."""
    return " ".join("xyz" if i % 5 == 4 else w for i, w in enumerate(text.split()))


def test_edited_copies_of_heldout_documents_leave_every_set(wikimia64):
    texts = [r["text"] for r in wikimia64 if r["label"] == 1]
    texts = [
        texts[i] for i in np.random.default_rng(0).permutation(len(texts))
    ]  # neighbours in the file share an article
    suspect, heldout = texts[:60], texts[60:120]
    prefix = [every_fifth_word_replaced(t) for t in heldout[:5]]
    relation = prefix_relation(prefix, {"suspect": suspect, "heldout": heldout})
    assert relation.derived["heldout"] == [0, 1, 2, 3, 4] and relation.derived["suspect"] == []
    assert relation.balanced  # with the copies gone, the rest is as close to the prefix on both sides


def test_a_prefix_sharing_passages_with_one_set_is_refused(wikimia64):
    """Each held-out document carries one sentence of a prefix document (a partial copy, below the
    derived bar): the sets are not alike with respect to the prefix, whichever side it favours."""
    texts = [r["text"] for r in wikimia64 if r["label"] == 1]
    prefix, suspect, rest = texts[:5], texts[5:65], texts[65:125]
    sentences = [p.split(". ")[0] for p in prefix]
    heldout = [f"{t} {sentences[i % 5]}." for i, t in enumerate(rest)]
    for sets in ({"suspect": suspect, "heldout": heldout}, {"suspect": heldout, "heldout": suspect}):
        relation = prefix_relation(prefix, sets)
        assert not relation.balanced and min(relation.p_values.values()) < 1e-6, relation
        assert sum(map(len, relation.derived.values())) < 10  # refused by the balance test, not by removal
        assert ("held-out" in relation.reason()) == (sets["heldout"] is heldout)


def test_prefixes_drawn_from_the_population_pass_at_the_tests_level(wikimia64):
    """The null: suspect, held-out and prefix documents drawn at random from one population (100
    independent draws): refused about as often as the level says."""
    texts = [r["text"] for r in wikimia64]
    refused = 0
    for seed in range(100):
        order = np.random.default_rng(seed).permutation(len(texts))
        pick = [texts[i] for i in order]
        relation = prefix_relation(pick[:5], {"suspect": pick[5:105], "heldout": pick[105:205]})
        refused += not relation.balanced
    assert refused <= 12  # level 0.05: 5 expected; 12 or more has probability < 0.5% under the null
    assert BALANCE_ALPHA == 0.05


def test_verbatim_runs_of_heldout_documents_hidden_among_suspect_word_pairs_are_refused(wikimia64):
    """A second outside attack: each prefix document holds 40% of three held-out documents as
    in-order 5-word runs, between shuffled word pairs of three suspect documents (so the TF-IDF
    cosine looks balanced, p = 0.18); a model copying from context then favoured the held-out
    documents and two member-free sets gave SUPPORTED. Copy coverage sees the runs."""
    rng = np.random.default_rng(0)
    texts = [r["text"] for r in wikimia64 if r["label"] == 1]
    texts = [texts[i] for i in rng.permutation(len(texts))]
    suspect, heldout = texts[:30], texts[30:60]
    prefix = []
    for k in range(10):
        runs = [
            " ".join(w[i : i + 5])
            for t in heldout[3 * k : 3 * k + 3]
            for w in [t.split()]
            for i in range(0, len(w), 5)
            if rng.random() < 0.4
        ]
        pairs = [
            " ".join(w[i : i + 2])
            for t in suspect[3 * k : 3 * k + 3]
            for w in [t.split()]
            for i in range(0, len(w), 2)
            if rng.random() < 0.5
        ]
        rng.shuffle(pairs)
        prefix.append(" ".join(x for pair in zip(runs, pairs) for x in pair) + " " + " ".join(pairs[len(runs) :]))
    relation = prefix_relation(prefix, {"suspect": suspect, "heldout": heldout})
    assert not relation.balanced and relation.p_values["copy_coverage"] < 1e-4, relation
    assert "closer to the held-out documents" in relation.reason() and "copy_coverage" in relation.reason()
