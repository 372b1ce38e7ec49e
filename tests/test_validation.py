"""The method-validation table's regimes: rows say which trained models they hold for, and an audit quotes the
rows of the regime nearest its model with how far that is."""

from __future__ import annotations

import json

import pytest

from verifier.errors import VerifierError
from verifier.validation import Regime, for_audit, load_table, nearest_regime, regime_sentence

TOY = Regime(model="GPT-2-style, from scratch", parameters=4_000_000, passes=2, member_token_share=0.6)
PRETRAIN = Regime(model="smollm2-135m continued-pretrained", parameters=135_000_000, passes=1, member_token_share=0.2)
BIG = Regime(model="a 1B model", parameters=1_000_000_000, passes=1, member_token_share=0.05)


def test_the_nearest_regime_is_nearest_in_size_then_the_most_pretraining_like():
    assert nearest_regime([TOY, PRETRAIN, BIG], 3_000_000) == TOY
    assert nearest_regime([TOY, PRETRAIN, BIG], 160_000_000) == PRETRAIN
    assert nearest_regime([TOY, PRETRAIN, BIG], 7_000_000_000) == BIG
    # Behind an API the size is unknown: audited models are pretrained, so the fewest passes and smallest share.
    assert nearest_regime([TOY, PRETRAIN, BIG], None) == BIG
    assert nearest_regime([TOY, PRETRAIN], None) == PRETRAIN
    assert nearest_regime([], 1000) is None


def test_the_sentence_says_how_far_the_audited_model_is_from_where_the_rows_were_measured():
    near = regime_sentence(PRETRAIN, 134_515_008)
    assert "135M-parameter" in near and "once" in near and "20% of its training tokens" in near
    assert "about that size" in near and "trillions of tokens" in near
    far = regime_sentence(TOY, 7_000_000_000)
    assert "2 times" in far and "no model within 3x of its size is measured" in far
    assert "size not known" in regime_sentence(PRETRAIN, None)
    assert regime_sentence(None, None).startswith("Measured without training a model")


def test_an_audit_of_an_unknown_size_quotes_the_most_pretraining_like_rows_of_the_shipped_table():
    table = load_table()
    regimes = {r.regime for r in table.rows if r.route == "dataset_inference" and r.regime is not None}
    assert regimes, "the shipped set-level rows carry their regime"
    found = for_audit("dataset_inference", 100, "SUPPORTED", None)
    chosen = Regime.model_validate(found["regime"])
    assert chosen == nearest_regime(list(regimes), None)
    for row in found["rows"]:  # each quantity from the regime nearest the model among those that measured it
        measured = {r.regime for r in table.rows if (r.quantity, r.scenario) == (row["quantity"], row["scenario"])}
        assert row["regime"] is None or Regime.model_validate(row["regime"]) == nearest_regime(
            [r for r in measured if r is not None], None
        )
    for bearing in found["bearing"]:  # a row of another regime than the one the report names says its own
        other = bearing["regime"] is not None and Regime.model_validate(bearing["regime"]) != chosen
        assert ("; measured on a " in bearing["sentence"]) == other
    corpus = for_audit("corpus", 24, "VERIFIED", None)
    assert corpus["regime"] is None and corpus["regime_sentence"].startswith("Measured without training a model")


@pytest.mark.parametrize("bad", [{"member_token_share": 1.5}, {"passes": 0}, {"parameters": -3}, {"extra": 1}])
def test_a_regime_edited_out_of_shape_is_refused_with_the_file_named(tmp_path, bad):
    table = json.loads(load_table().model_dump_json())
    row = next(r for r in table["rows"] if r["regime"] is not None)
    row["regime"] |= bad
    path = tmp_path / "table.json"
    path.write_text(json.dumps(table))
    with pytest.raises(VerifierError, match=r"^table\.json: not a method-validation table \(rows\.\d+\.regime"):
        load_table(path)
