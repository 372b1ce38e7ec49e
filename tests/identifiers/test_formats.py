"""Natural identifiers: found once, known constants and self-predictable values set aside, fresh
draws of each format that keep its character classes and pass the same filter."""

from __future__ import annotations

import base64
import hashlib

import numpy as np
import pytest

from verifier.identifiers.formats import (
    HEX_LOWER,
    KNOWN_CONSTANTS,
    _self_predictable,
    _views,
    find_identifiers,
    fresh_draws,
    random_looking,
    revealed,
)


def test_identifiers_are_found_once_and_known_constants_set_aside():
    texts = [
        "Commit 69bf4a41ef5074b584091640af915260b50dc450 fixed it; see bit.ly/3xK9qPz.",
        "Again 69bf4a41ef5074b584091640af915260b50dc450, and the empty hash "
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855.",
        "Key AKIAIOSFODNN7EXAMPLE and id 0f8fad5b-d9cb-469f-a165-70867728950e in a log.",
        "Vanity link bit.ly/summerbook is not random; tinyurl.com/ab12cd9x is.",
        "Short hash 9c2e4f1 of 9c2e4f1a0b3d5e7f9a1b3c5d7e9f0a2b4c6d8e0f.",  # the context gives it away
        "uuid4 hex 7c9e6679742540de944be07fc1f90ae7 is not uniform hex",
        "A DeepSeek-style key sk-7d1e0c9a4b2f8e6d3c5a1b9f0e2d4c6a is tested once, as its random hex.",
    ]
    found, dropped = find_identifiers(texts, 4)
    assert [f.format for f in found] == ["hex_digest", "short_url", "uuid4", "short_url", "hex_digest", "hex_digest"]
    assert found[4].revealed == frozenset(range(7))  # the short hash before it: kept in every fresh draw
    assert found[-1].identifier == "7d1e0c9a4b2f8e6d3c5a1b9f0e2d4c6a" and found[-1].context.endswith("key sk-")
    assert found[0].context == "Commit " and found[2].context == "Key AKIAIOSFODNN7EXAMPLE and id "
    assert dropped == {
        "not random-looking": 3,
        "repeated": 1,
        "context shows most of it": 0,
    }  # AKIA keys are no format here
    assert all(not random_looking(c) for c in KNOWN_CONSTANTS)
    assert (
        find_identifiers(["x " * 10 + "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 end"], 0)[0][0].context == ""
    )


def test_fresh_draws_match_the_format_and_pass_the_same_filter():
    found, _ = find_identifiers(
        [
            "id 0F8FAD5B-D9CB-469F-A165-70867728950E, tinyurl.com/q8x2k4m7 and "
            "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"
        ],
        4,
    )
    upper, tiny, key = found
    for item in found:
        draws = fresh_draws(item, 200)
        assert len(set(draws)) == 200 and item.identifier not in draws and all(random_looking(d) for d in draws)
        assert fresh_draws(item, 200) == draws  # seeded by the identifier alone
    assert all(d.isupper() or not d.isalpha() for d in fresh_draws(upper, 50)) and all(
        d[14] == "4" for d in fresh_draws(upper, 50)
    )
    assert all(d.startswith("tinyurl.com/") and d[12:].islower() or d[12:].isdigit() for d in fresh_draws(tiny, 50))
    assert all(d[23:31] == "T3BlbkFJ" and len(d) == len(key.identifier) for d in fresh_draws(key, 50))


def _classes(text: str) -> str:
    return "".join("d" if c.isdigit() else "l" if c.islower() else "u" if c.isupper() else c for c in text)


def test_fresh_draws_keep_each_character_class_so_a_models_taste_for_digits_or_lower_case_cancels():
    """An outside attack: digit-only 'digests' and lower-case short links against mixed draws came out
    'memorised' on a model that never saw them (p = 0.0006 and 0.002). Draws now keep the class pattern."""
    texts = [
        "see bit.ly/efr4edt now",
        "ref 7d1e0c9a4B2f8e6d3c5a1b9f0e2d4c6a",
        "id 3f9A1c2b-7d4e-4f60-9182-93a4b5c6d7e8 x",
    ]
    found, _ = find_identifiers(texts, 2)
    for item in found:
        assert {_classes(d) for d in fresh_draws(item, 100)} == {_classes(item.identifier)}
    digits = "3141592653589793238462643383279502884197"
    assert not random_looking(digits) and not random_looking("abcdefabcdeffedcbaabcdefabcdefabcdeffedc")
    assert find_identifiers([f"pi is {digits}, a number"], 4)[0] == []
    assert not random_looking("550e8400-e29b-41d4-a716-446655440000") and not random_looking("bit.ly/x12345y")


def test_copies_in_context_and_variants_of_one_value_are_caught():
    """A second outside attack: a fingerprint shown grouped in fours, upper case, before the full key
    made SmolLM2 'recognise' 15 fresh keys (p = 7e-8: it copied them); and one value written five ways
    counted five times in Fisher's combination. What the context shows, in any grouping, case or look-alike form,
    is kept in every fresh draw; a key shown whole is not tested."""
    key = "358d7f7117e1166867a1bd2f4df77c3a4c19b5d8"
    grouped = " ".join(key.upper()[i : i + 4] for i in range(0, 40, 4))
    assert find_identifiers([f"Fingerprint: {grouped}. The key id is {key}."], 32)[1]["context shows most of it"] == 1
    spaced = "\u200b".join(key[:12])
    fullwidth = "".join(chr(ord(c) + 0xFEE0) for c in key[:10])
    for shown, length in ((spaced, 12), (fullwidth, 10), (key[:8].upper(), 8)):
        (item,), _ = find_identifiers([f"Shown as {shown} first, then {key} in full."], 32)
        assert item.revealed >= frozenset(range(length))
        assert all(d[:length] == key[:length] for d in fresh_draws(item, 50))
    value = "9e1c7a2f4b8d3e6a0c5f7b9d2e4a6c8f1b3d5e7a9c0e2f4a6b8d0c2e4f6a8b0c"
    variants = [value, value.upper(), value[:40], value[:32], "1" + value[:63]]
    found, dropped = find_identifiers([f"Record {v} filed." for v in variants], 4)
    assert [f.identifier for f in found] == [value] and dropped["repeated"] == 4
    item = find_identifiers([f"Fingerprint {key[:2]}: filed under {key}."], 4)[0][0]
    context = _views(item.context)
    assert all(revealed(context, d) == item.revealed for d in fresh_draws(item, 50))


@pytest.mark.parametrize("shown", [3, 4, 5, 6])
def test_what_the_context_reveals_is_shared_by_every_fresh_draw(shown):
    """The outside attack of issue 40: git's "short SHA is ambiguous" message showing a hash's first 4-5
    characters before the full hash (generated on the day, never seen by any model) gave SUPPORTED at p = 9e-7:
    the model copied the prefix, which fresh draws did not share. They share it now, and show the context no
    other run of the identifier (so the real one is uniform among the strings they come from)."""
    key = "6b2f0d9c41e7a8355c0e9d1f7a3b6c2e8d4f1a07"
    text = (
        f"$ git show {key[:shown]}\nerror: short object ID {key[:shown]} is ambiguous\nhint: The candidates are:\n"
        f"hint:   {key[:shown]}xx commit 2026-12-06 - fix the parser\nThe fix landed as {key} on the day."
    )
    (item,), _ = find_identifiers([text], 32)
    assert item.revealed == frozenset(range(shown))
    draws = fresh_draws(item, 99)
    context = _views(item.context)
    assert all(d[:shown] == key[:shown] and revealed(context, d) == item.revealed for d in draws)
    assert len({d[shown:] for d in draws}) == 99


@pytest.mark.parametrize(
    "shown",
    [
        lambda h, b: "key bytes {" + ", ".join(f"0x{x:02x}" for x in b[:10]) + "} commit ",  # a C byte array
        lambda h, b: '"' + "".join(f"\\x{x:02x}" for x in b[:10]) + '" commit ',  # escapes
        lambda h, b: "url %" + "%".join(f"{x:02X}" for x in b[:10]) + " then ",  # percent-encoded
        lambda h, b: h[:20][::-1] + " reversed, then ",  # written backwards
        lambda h, b: b[:10][::-1].hex() + " little-endian, then ",  # bytes in reversed order
        lambda h, b: base64.b64encode(b[:12]).decode() + " then ",  # base64 of the bytes
        lambda h, b: "bytes " + ", ".join(str(x) for x in b[:10]) + " then ",  # decimal byte list
    ],
)
def test_what_the_context_shows_in_another_form_is_shared_too(shown):
    """An outside review: a context showing the hash as a C byte array, escapes, reversed, base64 or decimal bytes
    revealed nothing to the bare-letters comparison, and a model converts those forms easily. Each form is a view
    of the context now; what any view shows is kept in every fresh draw."""
    key = hashlib.sha1(b"review40-a").hexdigest()
    (item,), _ = find_identifiers([shown(key, bytes.fromhex(key)) + key + " end"], 64)
    assert len(item.revealed) >= 16
    views = _views(item.context)
    assert all(revealed(views, d) == item.revealed for d in fresh_draws(item, 40))


@pytest.mark.parametrize(
    "structured",
    [
        "我们的数据很安全吗".encode().hex()[:40],  # UTF-8 lead bytes every sixth character
        "Hello world ab".encode("utf-16-le").hex()[:32],  # UTF-16: a zero byte every other byte
        "привет мир данные".encode().hex()[:32],  # Cyrillic UTF-8: d0/d1 every fourth character
        "c0bc1c22002a222ab2110c2cc0cabbac",  # a narrow alphabet (6 of 16 characters)
    ],
)
def test_hex_with_structure_uniform_hex_lacks_is_not_taken_for_random(structured):
    """The same review: hex of non-ASCII text and narrow alphabets passed the printable-ASCII filter. A periodic
    character and too few distinct characters are tested now, on real identifiers and fresh draws alike; uniform
    digests fail them rarely."""
    assert not random_looking(structured)
    rng = np.random.default_rng(3)
    digests = ["".join(HEX_LOWER[i] for i in rng.integers(0, 16, 40)) for _ in range(3000)]
    assert np.mean([not random_looking(d) for d in digests]) < 0.06  # words, repeats, progressions and structure


def test_hex_encoded_text_and_a_short_links_sequence_digit_are_not_taken_for_random():
    """Hex-encoded ASCII leaned +0.7 to +1.4 SD above fresh hex on text no model saw; 2015's bit.ly paths all
    begin with 1. The first is not tested; the second keeps its first character in every draw."""
    encoded = b"Hello, world: an audit!!".hex()[:40]
    assert not random_looking(encoded) and find_identifiers([f"payload {encoded} end"], 4)[0] == []
    (link,), _ = find_identifiers(["see bit.ly/1xK9qPz now"], 4)
    assert {d[7] for d in fresh_draws(link, 99)} == {"1"}


@pytest.mark.parametrize(
    "identifier",
    [
        "4c123b" * 6 + "4c12",  # a 6-character block repeated (the attack: p = 2e-9 on SmolLM2)
        "9f3e21" + "12e3f9" + "69bf4a41ef5074b584091640af91",  # a block and its mirror
        "e7b2a913579c04d8f6a1e3b5c7d9f0a2",  # a progression of one step (13579)
        "bit.ly/Ab3XyAb3X",  # a short link repeating itself
    ],
)
def test_identifiers_whose_parts_predict_each_other_are_not_tested(identifier):
    """A model that copies from its context continues these from their first part without training;
    fresh draws keeping only each position's class cannot be continued, so the null fails for them."""
    found, dropped = find_identifiers([f"The build {identifier} passed."], 4)
    assert found == [] and dropped["not random-looking"] == 1


def test_fresh_draws_are_never_self_predictable_and_uniform_digests_rarely_are():
    found, _ = find_identifiers(["Commit 69bf4a41ef5074b584091640af915260b50dc450 fixed it."], 4)
    assert not any(_self_predictable(d) for d in fresh_draws(found[0], 500))
    rng = np.random.default_rng(0)
    digests = ["".join(HEX_LOWER[i] for i in rng.integers(0, 16, 40)) for _ in range(4000)]
    assert 0.005 < np.mean([_self_predictable(d) for d in digests]) < 0.04  # the filter costs few real digests


@pytest.mark.slow
def test_the_revealing_context_attack_no_longer_reaches_a_verdict_on_smollm2(smollm2):
    """The outside attack itself, on the real model: fresh 40-hex hashes (never seen by any model) after git's
    "ambiguous" message showing their first 4 or 5 characters. With only six-character runs set aside this gave
    SUPPORTED at p = 9e-7; with what the context shows kept in every draw the rank is exact again."""
    from verifier.data import Documents
    from verifier.identifiers.trials import NULL, identifier_trials
    from verifier.scoring.table import score_documents
    from verifier.stats.rank_trials import run_rank_tests

    rng = np.random.default_rng(20261206)
    texts = []
    for i in range(6):
        while not random_looking(key := "".join(HEX_LOWER[j] for j in rng.integers(0, 16, 40))):
            pass
        shown = key[: 4 + i % 2]
        texts.append(
            f"$ git show {shown}\nerror: short object ID {shown} is ambiguous\nhint: The candidates are:\n"
            f"hint:   {shown}e1 commit 2026-12-06 - fix the parser\nhint:   {shown}9c tree\n"
            f"The fix landed as {key} and"
        )
    trials, dropped = identifier_trials(texts, 19, 32, 100)
    assert len(trials) == 6 and not any(dropped.values())

    def scorer(role: str, batch: list[str], signal: str) -> np.ndarray:
        return score_documents(Documents(batch, None, role), smollm2, signal_names=[signal]).signal(signal)

    finding = run_rank_tests(trials, scorer, NULL, "fisher", 0.05, 0.05, 0.8, 0)
    assert finding.p_value is not None and finding.p_value > 0.05, finding.p_value
