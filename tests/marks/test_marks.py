"""Marks: exact rank tests, generators, signed registrations and the forgeries they must refuse."""

from __future__ import annotations

import base64
import json
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from scipy import stats

from verifier.boundary.resources import resource, word_list
from verifier.errors import VerifierError
from verifier.marks.evaluate import context_before
from verifier.marks.generators import MarkSpec, draw_distinct
from verifier.marks.make import PUBLISHED, REGISTRATION, SECRETS, make_marks, write_marks
from verifier.marks.registration import commitment, predates_training, read_registration, read_secrets
from verifier.stats.rank import combine, marks_needed, paired_tests, rank_p_value, smallest_p
from verifier.stats.rank_trials import Trial, run_rank_tests
from verifier.targets.rephrase import OfflineRephraser
from verifier.trust.envelopes import public_pem, sign_envelope

CARRIERS = resource("examples", "data", "arxiv-carriers", "abstracts.jsonl")


def carriers(n: int, start: int = 0) -> list[tuple[str, str]]:
    rows = [json.loads(line) for line in CARRIERS.read_text().splitlines()]
    return [(r["id"], r["text"]) for r in rows[start : start + n]]


# --- the statistics ------------------------------------------------------------------------------
def test_rank_p_value_is_exactly_uniform_under_the_null():
    rng = np.random.default_rng(0)
    m = 19
    p = np.array([rank_p_value(x[0], x[1:]) for x in rng.normal(size=(20_000, m + 1))])
    assert set(np.round(p * (m + 1)).astype(int)) == set(range(1, m + 2))
    for k in (1, 2, 5, 10):  # P(p <= k/(M+1)) = k/(M+1), within a 99.9% binomial interval
        hits = int(np.sum(p <= k / (m + 1) + 1e-12))
        assert stats.binomtest(hits, len(p), k / (m + 1)).pvalue > 1e-3


def test_ties_and_nan_count_against_the_mark():
    assert rank_p_value(1.0, [1.0, 1.0, 0.0]) == 0.75
    assert rank_p_value(1.0, [float("nan"), 0.0, 0.0]) == 0.5
    assert rank_p_value(float("nan"), [0.0, 0.0]) == 1.0
    assert rank_p_value(2.0, [1.0] * 99) == 0.01


@pytest.mark.parametrize("method", ["fisher", "binomial"])
def test_combined_false_positive_rate_stays_below_alpha_across_independent_draws(method):
    """20 marks with 19 siblings each, nothing trained: FPR <= alpha in each of 10 independent batches."""
    rates = []
    for batch in range(10):
        rng = np.random.default_rng(100 + batch)
        scores = rng.normal(size=(400, 20, 20))
        p = (1 + (scores[:, :, 1:] >= scores[:, :, :1]).sum(axis=2)) / 20
        rates.append(np.mean([combine(row, method, 0.05) <= 0.05 for row in p]))
    assert np.mean(rates) <= 0.05 + 0.01 and max(rates) < 0.09


def test_smallest_p_refuses_designs_that_cannot_reach_alpha():
    assert smallest_p([19], "fisher", 0.05) == pytest.approx(0.05)
    assert smallest_p([9], "fisher", 0.05) == pytest.approx(0.1)
    assert (
        smallest_p([9, 9], "fisher", 0.05) > 0.05 > smallest_p([9, 9, 9], "fisher", 0.05)
    )  # Fisher of 0.1s: 0.056, 0.032
    assert smallest_p([9, 9], "binomial", 0.05) == 1.0  # 1/10 never reaches a per-mark level of 0.05
    assert smallest_p([], "fisher", 0.05) == 1.0


def test_marks_needed_is_none_without_an_effect_and_finite_with_one():
    rng = np.random.default_rng(1)
    assert marks_needed(rng.uniform(size=40), 0.05, 0.8, "fisher") is None
    strong = np.r_[np.full(10, 0.05), rng.uniform(size=30)]
    n = marks_needed(strong, 0.05, 0.8, "fisher")
    assert n is not None and 10 < n < 2000
    assert marks_needed(strong, 0.05, 0.95, "fisher") >= n


def test_paired_tests_find_a_shift_and_not_its_absence():
    rng = np.random.default_rng(2)
    base = rng.normal(size=30)
    shifted = paired_tests(base + 0.5 + rng.normal(scale=0.3, size=30), base)
    assert shifted.t_p_value < 1e-3 and shifted.wilcoxon_p_value < 1e-3 and shifted.effect_size > 1
    reversed_ = paired_tests(base - 0.5 + rng.normal(scale=0.3, size=30), base)
    assert reversed_.t_p_value > 0.5 and reversed_.wilcoxon_p_value > 0.5
    assert paired_tests([1.0], [0.0]) is None


def test_rank_tests_refuse_a_too_small_design_without_scoring():
    trials = [Trial(f"m{i}", "canary", "words", "x", ["a", "b", "c"]) for i in range(2)]
    finding = run_rank_tests(
        trials, lambda *a: pytest.fail("the model was queried"), "H0", "fisher", 0.01, 0.05, 0.8, 0
    )
    assert finding.status == "design_too_small" and finding.p_value is None and finding.smallest_p > 0.01


def test_rank_tests_in_both_directions():
    """Marks scored above all their siblings are significant; scored below them, never."""
    trials = [
        Trial(f"m{i}", "canary", "words", f"published {i}", [f"sibling {i} {j}" for j in range(19)]) for i in range(5)
    ]

    def scorer(role, texts, signal):
        return np.array([1.0 if t.startswith("published") else 0.0 for t in texts]) * direction

    direction = 1
    up = run_rank_tests(trials, scorer, "H0", "fisher", 0.05, 0.05, 0.8, 0)
    assert (
        up.status == "significant"
        and up.p_value == pytest.approx(stats.chi2.sf(-10 * np.log(0.05), 10))
        and all(r.p_value == 0.05 for r in up.results)
    )
    direction = -1
    down = run_rank_tests(trials, scorer, "H0", "fisher", 0.05, 0.05, 0.8, 0)
    assert down.status == "not_significant" and down.p_value == 1.0 and down.marks_needed is None


# --- generators -----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "spec, check",
    [
        (
            MarkSpec(kind="canary", format="words"),
            lambda s: len(s.split()) == 8 and all(w in word_list() for w in s.split()),
        ),
        (MarkSpec(kind="canary", format="hex"), lambda s: len(s) == 32 and set(s) <= set("0123456789abcdef")),
        (
            MarkSpec(kind="canary", format="base32", length=20),
            lambda s: len(s) == 20 and s.isalnum() and s.upper() == s,
        ),
        (MarkSpec(kind="canary", format="sentence"), lambda s: s.endswith(".") and " the " in s),
        (MarkSpec(kind="trap", length=30), lambda s: len(s.split()) == 30 and s[0].isupper() and s.endswith(".")),
    ],
)
def test_generators_draw_their_format(spec, check):
    rng = np.random.default_rng(3)
    marks = draw_distinct(spec, rng, 50)
    assert len(set(marks)) == 50 and all(check(m) for m in marks)


@pytest.mark.parametrize(
    "fields, message",
    [
        ({"kind": "canary"}, "needs a format"),
        ({"kind": "trap", "format": "hex"}, "canaries only"),
        ({"kind": "canary", "format": "hex", "repeats": 3}, "traps only"),
        ({"kind": "rephrasing", "length": 5}, "does not apply"),
        ({"kind": "canary", "format": "words", "siblings": 0}, "greater than or equal to 1"),
    ],
)
def test_mark_specs_are_checked(fields, message):
    with pytest.raises(ValueError, match=message):
        MarkSpec(**fields)


def test_offline_rephrasings_are_distinct_and_keep_the_text_shape():
    text = carriers(1, 2)[0][1]
    out = OfflineRephraser().rephrase(text, 10, seed=4)
    assert len(set(out)) == 10
    assert all(abs(len(r.split()) - len(text.split())) <= 10 for r in out)
    assert OfflineRephraser().rephrase(text, 10, seed=4) == out  # deterministic
    with pytest.raises(ValueError, match="too few"):
        OfflineRephraser().rephrase("Nothing here varies at all", 5, seed=0)


def test_context_before_a_mark():
    assert context_before("one two three MARK four", "MARK", 2) == "two three "
    assert context_before("MARK at the start", "MARK", 5) == ""
    assert context_before("no mark here", "MARK", 5) is None


# --- registrations: made, read back, and forged ---------------------------------------------------
@pytest.fixture()
def registrant(tmp_path, monkeypatch):
    """A registrant's key pinned in a fresh trust store, and marks it made on six carriers."""
    key = Ed25519PrivateKey.generate()
    trust = tmp_path / "trust"
    trust.mkdir()
    (trust / "registrant.pem").write_bytes(public_pem(key.public_key()))
    monkeypatch.setenv("VERIFIER_TRUST_DIR", str(trust))
    specs = [
        MarkSpec(kind="canary", format="words", siblings=9),
        MarkSpec(kind="trap", siblings=9, repeats=2),
        MarkSpec(kind="rephrasing", siblings=9),
    ] * 2
    marked = make_marks(carriers(6), specs, "unit", seed=987654321, rephraser=OfflineRephraser())
    paths = write_marks(marked, tmp_path / "marks", key)
    return key, paths, marked


def test_a_registration_reads_back_and_keeps_secrets_out(registrant):
    key, paths, marked = registrant
    reg = read_registration(paths[REGISTRATION])
    assert len(reg.predicate.marks) == 6 and reg.predicate.created <= datetime.now(UTC)
    secrets = {m.id: m for m in read_secrets(paths[SECRETS], reg).marks}
    public = paths[REGISTRATION].read_text() + paths[PUBLISHED].read_text()
    for mark in secrets.values():
        assert all(s.text not in public and s.salt not in public for s in mark.siblings)
        assert mark.published.salt not in public
    assert str(marked.secrets["seed"]) not in json.dumps(reg.predicate.generator)
    published = [json.loads(line) for line in paths[PUBLISHED].read_text().splitlines()]
    assert all(secrets[f"mark-{i}"].published.text in doc["text"] for i, doc in enumerate(published))
    assert published[1]["text"].count(secrets["mark-1"].published.text) == 2  # a trap repeated twice
    assert (paths[SECRETS].stat().st_mode & 0o777) == 0o600


def _envelope(path: Path) -> dict:
    return json.loads(path.read_text())


def _resign(path: Path, key: Ed25519PrivateKey, edit) -> None:
    envelope = _envelope(path)
    body = json.loads(base64.b64decode(envelope["payload"]))
    edit(body)
    path.write_text(json.dumps(sign_envelope(json.dumps(body).encode(), key)))


@pytest.mark.parametrize(
    "forge, message",
    [
        (lambda p, k: p.write_text(json.dumps(dict(_envelope(p), signatures=[]))), "is not signed"),
        (
            lambda p, k: p.write_text(
                json.dumps(
                    dict(
                        _envelope(p),
                        payload=base64.b64encode(
                            base64.b64decode(_envelope(p)["payload"]).replace(b'"unit"', b'"UNIT"')
                        ).decode(),
                    )
                )
            ),
            "altered",
        ),
        (lambda p, k: _resign(p, Ed25519PrivateKey.generate(), lambda b: None), "not pinned"),
        (
            lambda p, k: _resign(
                p, k, lambda b: b.update(predicateType="https://github.com/verifier/verifier/audit/v1")
            ),
            "not a marks registration",
        ),
        (lambda p, k: _resign(p, k, lambda b: b["predicate"]["marks"][0].update(siblings=[])), "siblings"),
        (
            lambda p, k: _resign(
                p,
                k,
                lambda b: b["predicate"]["marks"][1].update(
                    document_sha256=b["predicate"]["marks"][0]["document_sha256"],
                    document=b["predicate"]["marks"][0]["document"],
                ),
            ),
            "share a published document",
        ),
        (lambda p, k: _resign(p, k, lambda b: b["predicate"].update(created="2020-01-01T00:00:00")), "time zone"),
        (lambda p, k: p.write_text("{not json"), "not JSON"),
    ],
)
def test_forged_registrations_are_refused_with_one_line(registrant, forge, message):
    key, paths, _ = registrant
    forge(paths[REGISTRATION], key)
    with pytest.raises(VerifierError, match=message) as info:
        read_registration(paths[REGISTRATION])
    assert "\n" not in str(info.value)


def test_a_pinned_digest_must_match(registrant):
    _, paths, _ = registrant
    with pytest.raises(VerifierError, match="not the registration the claim pins"):
        read_registration(paths[REGISTRATION], pinned_sha256="0" * 64)


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda s: s["marks"][0]["siblings"].pop(), "not the siblings file"),
        (lambda s: s["marks"].pop(), "not the siblings file"),
    ],
)
def test_an_edited_siblings_file_is_refused(registrant, edit, message):
    _, paths, _ = registrant
    secrets = json.loads(paths[SECRETS].read_text())
    edit(secrets)
    paths[SECRETS].write_text(json.dumps(secrets))
    with pytest.raises(VerifierError, match=message):
        read_secrets(paths[SECRETS], read_registration(paths[REGISTRATION]))


def test_a_registration_over_swapped_siblings_is_refused(registrant, tmp_path):
    """Re-registered by its own key with the siblings file rewritten: the commitments still bind."""
    key, paths, marked = registrant
    secrets = json.loads(paths[SECRETS].read_text())
    secrets["marks"][0]["siblings"][0]["text"] = "a sibling swapped in after training"
    data = json.dumps(secrets).encode()
    paths[SECRETS].write_bytes(data)
    import hashlib

    _resign(paths[REGISTRATION], key, lambda b: b["predicate"].update(secrets_sha256=hashlib.sha256(data).hexdigest()))
    with pytest.raises(VerifierError, match="mark-0: a sibling does not match its commitment"):
        read_secrets(paths[SECRETS], read_registration(paths[REGISTRATION]))


def test_dates_must_predate_training():
    made = datetime(2026, 6, 1, tzinfo=UTC)
    assert predates_training(made, date(2026, 7, 1), None) is None
    assert predates_training(made, None, 2027) is None
    assert "not before the model's declared release" in predates_training(made, date(2026, 6, 1), None)
    assert "training cutoff" in predates_training(made, None, 2026)
    assert "neither" in predates_training(made, None, None)
    assert "future" in predates_training(datetime.now(UTC) + timedelta(days=2), date(2100, 1, 1), None)


def test_commitments_hide_the_text():
    assert commitment("a", "0" * 32) != commitment("a", "1" * 32)


def test_a_model_rephraser_samples_distinct_rephrasings_and_names_its_weights(tiny_model_dir):
    from verifier.targets.model_source import resolve_model
    from verifier.targets.rephrase import ModelRephraser, make_rephraser

    rephraser = ModelRephraser(str(tiny_model_dir), max_new_tokens=12)
    text = carriers(1)[0][1]
    out = rephraser.rephrase(text, 4, seed=1)
    assert len(set(out)) == 4 and all(o and o != text for o in out)
    assert rephraser.rephrase(text, 4, seed=1) == out  # seeded
    assert rephraser.identity["digests"]["weights"] == resolve_model(str(tiny_model_dir)).digest()
    with pytest.raises(ValueError, match="offline"):
        make_rephraser("gpt-4")


def _recommit(paths: dict, key: Ed25519PrivateKey, edit_secrets) -> None:
    """A registrant's own forgery: edit the secrets, then re-commit and re-sign everything consistently."""
    import hashlib

    secrets = json.loads(paths[SECRETS].read_text())
    edit_secrets(secrets)
    data = json.dumps(secrets).encode()
    paths[SECRETS].write_bytes(data)
    by_id = {m["id"]: m for m in secrets["marks"]}

    def update(body: dict) -> None:
        body["predicate"]["secrets_sha256"] = hashlib.sha256(data).hexdigest()
        for mark in body["predicate"]["marks"]:
            secret = by_id[mark["id"]]
            mark["published"] = commitment(secret["published"]["text"], secret["published"]["salt"])
            mark["siblings"] = [commitment(s["text"], s["salt"]) for s in secret["siblings"]]

    _resign(paths[REGISTRATION], key, update)


def _longer_siblings(secrets: dict) -> None:
    for sibling in secrets["marks"][0]["siblings"]:
        sibling["text"] += " and a few more words that lower its likelihood"


def _published_picked(secrets: dict) -> None:
    mark = secrets["marks"][0]
    mark["published"]["text"], mark["siblings"][0]["text"] = mark["siblings"][0]["text"], mark["published"]["text"]


@pytest.mark.parametrize(
    "forge, message",
    [
        (_longer_siblings, "mark-0: the published mark and its siblings are not what the registered generator draws"),
        (_published_picked, "mark-0: the published mark and its siblings are not what the registered generator draws"),
        (lambda s: s.update(seed=s["seed"] + 1), "seed in the siblings file does not match"),
        (lambda s: s["marks"][2].update(original=s["marks"][2]["original"] + " Extra."), "mark-2"),
    ],
)
def test_siblings_made_or_chosen_by_hand_are_refused_even_when_consistently_signed(registrant, forge, message):
    from verifier.marks.make import regenerate

    key, paths, _ = registrant
    regenerate(
        read_registration(paths[REGISTRATION]), read_secrets(paths[SECRETS], read_registration(paths[REGISTRATION]))
    )
    _recommit(paths, key, forge)
    registration = read_registration(paths[REGISTRATION])
    secrets = read_secrets(paths[SECRETS], registration)  # every commitment holds...
    with pytest.raises(VerifierError, match=message):  # ...but the generator does not draw these
        regenerate(registration, secrets)


def test_the_rephrasers_watermark_biases_a_keyed_share_of_the_vocabulary():
    import torch

    from verifier.targets.rephrase import green_list_bias

    ids = torch.tensor([[5, 7], [5, 9]])
    biased = green_list_bias(key=1, gamma=0.25, delta=2.0)(ids, torch.zeros(2, 1000))
    assert (biased == 2.0).sum(dim=1).tolist() == [250, 250]
    assert not torch.equal(biased[0], biased[1])  # the list depends on the previous token...
    again = green_list_bias(key=1, gamma=0.25, delta=2.0)(ids, torch.zeros(2, 1000))
    other = green_list_bias(key=2, gamma=0.25, delta=2.0)(ids, torch.zeros(2, 1000))
    assert torch.equal(biased, again) and not torch.equal(biased, other)  # ...and on the rephrasing's key


def test_model_rephrasings_regenerate_only_with_the_registered_model(tiny_model_dir, tiny_reference_dir, tmp_path):
    from verifier.marks.make import regenerate
    from verifier.targets.rephrase import ModelRephraser

    key = Ed25519PrivateKey.generate()
    (tmp_path / "trust").mkdir()
    (tmp_path / "trust" / "k.pem").write_bytes(public_pem(key.public_key()))
    marked = make_marks(
        carriers(1),
        [MarkSpec(kind="rephrasing", siblings=2)],
        "model",
        seed=3,
        rephraser=ModelRephraser(str(tiny_model_dir), max_new_tokens=8),
    )
    paths = write_marks(marked, tmp_path / "m", key)
    registration = read_registration(paths[REGISTRATION], trust_dir=tmp_path / "trust")
    secrets = read_secrets(paths[SECRETS], registration)
    with pytest.raises(VerifierError, match="not available here"):
        regenerate(registration, secrets)  # registered by its folder's name only
    regenerate(registration, secrets, str(tiny_model_dir))
    with pytest.raises(VerifierError, match="differs from the registered one"):
        regenerate(registration, secrets, str(tiny_reference_dir))
