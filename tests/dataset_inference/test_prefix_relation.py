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
        assert not relation.balanced and relation.p_value < 1e-6, relation
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
