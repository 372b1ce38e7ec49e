"""The verdict rules of the set-level test, tried as a careful auditor would try to break them.

Real WikiMIA texts (pre-2017 and post-2023), synthetic signal features: what is tested here is
the step from statistics to verdict - the blind exchangeability check, set hygiene, declared
years and the member-free control - so no model is needed.
"""

from __future__ import annotations

import numpy as np
import pytest
from conftest import ROOT, read_jsonl

from verifier.baselines.exchangeability import check_exchangeable, column_aucs, margin_for
from verifier.baselines.surface import SURFACE_FEATURES, surface_features
from verifier.dataset_inference.hygiene import find_overlap
from verifier.dataset_inference.rules import (
    DocumentSet,
    SetStatus,
    SetTestParams,
    residualise_on_text,
    run_set_membership,
)

SIGNALS = ["loss", "zlib", "min_k", "min_k_pp"]  # registered signal names (the policy validator checks them)
FAST = SetTestParams(n_permutations=199, shift_permutations=199)
OPT_IN = FAST.model_copy(update={"blind_residual_test": True})  # the opt-in blind-residual test


@pytest.fixture(scope="module")
def periods() -> tuple[list[str], list[str]]:
    """Distinct pre-2017 and post-2023 event texts from WikiMIA-64 and WikiMIA-24."""
    rows = read_jsonl(ROOT / "verifier/examples/data/wikimia/length64.jsonl") + [
        r for r in read_jsonl(ROOT / "verifier/examples/data/wikimia24/length64.jsonl") if not r["dup_of_earlier_row"]
    ]
    old, new = {r["text"] for r in rows if r["label"] == 1}, {r["text"] for r in rows if r["label"] == 0}
    return sorted(old), sorted(new)


def features(rng: np.random.Generator, n: int, shift: float = 0.0) -> np.ndarray:
    base = rng.normal(size=(n, 1)) + shift
    return base + 0.6 * rng.normal(size=(n, len(SIGNALS)))


def sets(periods, n: int, seed: int, member_shift: float = 0.0, transform=None, year: int | None = 2016):
    """A suspect set and a same-period held-out set of ``n`` texts each (held-out optionally transformed)."""
    old, _ = periods
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(old))
    s_texts, h_texts = [old[i] for i in order[:n]], [old[i] for i in order[n : 2 * n]]
    if transform is not None:
        h_texts = [transform(t) for t in h_texts]
    suspect = DocumentSet(s_texts, features(rng, n, member_shift), year, "s.jsonl")
    heldout = DocumentSet(h_texts, features(rng, n), year, "h.jsonl")
    return suspect, heldout, rng


def test_matched_sets_with_a_real_difference_are_significant(periods):
    suspect, heldout, _ = sets(periods, 150, seed=0, member_shift=0.6)
    finding = run_set_membership(suspect, heldout, SIGNALS, params=FAST)
    assert finding.shift.exchangeable and not finding.shift.detected
    assert finding.status == SetStatus.SIGNIFICANT and finding.result.p_value < 0.01
    assert "not exchangeable under the model" in finding.reason and "at least part of the suspect set" in finding.reason


SURFACE_SHIFTS = {
    "lowercased": str.lower,
    "typographic quotes and apostrophes": lambda t: (
        t.replace('"', "\u201c").replace("'", "\u2019").replace(" - ", " \u2013 ")
    ),
    "doubled spaces": lambda t: t.replace(". ", ".  "),
    "boilerplate prepended": lambda t: "Retrieved from the online encyclopedia. " + t,
    "cut at 40 words": lambda t: " ".join(t.split()[:40]),
}


@pytest.mark.parametrize("name", sorted(SURFACE_SHIFTS))
def test_surface_form_shift_never_reaches_a_verdict(periods, name):
    # The held-out set differs only in how it was scraped, and the model "sees" that: give the
    # suspect a large apparent membership effect. The rules must refuse or withhold the verdict.
    suspect, heldout, _ = sets(periods, 100, seed=1, member_shift=0.8, transform=SURFACE_SHIFTS[name])
    finding = run_set_membership(suspect, heldout, SIGNALS, params=FAST)
    if name.startswith("typographic"):
        # Only texts that hold quotes, apostrophes or dashes change: a partial shift.
        assert finding.status in (SetStatus.SHIFT_DETECTED, SetStatus.NOT_ESTABLISHED, SetStatus.SIGNIFICANT)
        assert finding.shift.auc_corrected > 0.5
    else:
        assert finding.status == SetStatus.SHIFT_DETECTED, (name, finding.reason)
        assert finding.shift.auc_corrected > 0.9 and finding.result is None


def test_lowercasing_is_invisible_to_the_old_bag_of_words_but_not_to_the_check(periods):
    # The case that gave CONTRADICTED at p = 4e-10: a lowercasing TF-IDF is at chance here.
    from verifier.baselines.bag_of_words import bag_of_words_scores
    from verifier.stats.metrics import evaluate_scores

    suspect, heldout, _ = sets(periods, 100, seed=2, transform=str.lower)
    texts, labels = list(suspect.texts) + list(heldout.texts), np.r_[np.ones(100), np.zeros(100)]
    assert evaluate_scores("bow", bag_of_words_scores(texts, labels), labels).auc < 0.65
    check = check_exchangeable(suspect.texts, heldout.texts, n_permutations=199)
    assert check.detected and check.p_value == pytest.approx(1 / 200)


def test_half_post_cutoff_heldout_is_refused(periods):
    old, new = periods
    suspect, heldout, rng = sets(periods, 120, seed=3, member_shift=0.5)
    mixed = list(heldout.texts[:60]) + [new[i] for i in rng.permutation(len(new))[:60]]
    finding = run_set_membership(suspect, DocumentSet(mixed, heldout.features, 2016, "h"), SIGNALS, params=FAST)
    assert finding.status == SetStatus.SHIFT_DETECTED


def test_check_is_calibrated_on_exchangeable_sets(periods):
    # Same-period random halves: the interval covers 0.5 and the test rejects at about alpha
    # (the old bootstrap covered 0.5 in only 82-87% of such trials at n = 20-30).
    old, _ = periods
    rng = np.random.default_rng(4)
    checks = []
    for trial in range(60):
        order = rng.permutation(len(old))[:60]
        checks.append(
            check_exchangeable(
                [old[i] for i in order[:30]], [old[i] for i in order[30:]], n_permutations=199, seed=trial
            )
        )
    covered = np.mean([c.ci_low <= 0.5 <= c.ci_high for c in checks])
    detected = np.mean([c.detected for c in checks])
    assert covered >= 0.9 and detected <= 0.1
    assert all(c.smallest_detectable > 0.6 for c in checks)  # at 30 per set only large shifts are detectable
    assert margin_for(30) == 0.70 and margin_for(10_000) == pytest.approx(0.52)


def test_column_aucs_match_sklearn():
    from sklearn.metrics import roc_auc_score

    rng = np.random.default_rng(5)
    scores, labels = (
        rng.normal(size=(40, 3)),
        np.stack([rng.permutation(np.r_[np.ones(15), np.zeros(25)]) for _ in range(3)], axis=1),
    )
    scores[:, 2] = np.round(scores[:, 2])  # ties
    want = [roc_auc_score(labels[:, j], scores[:, j]) for j in range(3)]
    np.testing.assert_allclose(column_aucs(scores, labels), want)


def test_duplicates_and_near_duplicates_are_removed_from_the_heldout_set(periods):
    suspect, heldout, rng = sets(periods, 100, seed=6, member_shift=0.6)
    natural = find_overlap(
        suspect.texts, heldout.texts[4:]
    )  # templated pages ("... elections in Texas") are near duplicates too
    assert natural.exact == natural.prefix == 0 and natural.near <= 5
    planted = [
        suspect.texts[0],
        suspect.texts[1].upper(),
        " ".join(suspect.texts[2].split()[:30]),
        suspect.texts[3][:10] + "#" + suspect.texts[3][11:],
    ]
    texts = planted + list(heldout.texts[4:])
    overlap = find_overlap(suspect.texts, texts)
    assert overlap.removed == [0, 1, 2, 3] + [4 + i for i in natural.removed]
    assert (overlap.exact, overlap.prefix, overlap.near) == (2, 1, 1 + natural.near)
    finding = run_set_membership(suspect, DocumentSet(texts, heldout.features, 2016, "h"), SIGNALS, params=FAST)
    # Both sides of every pair leave: dropping only the held-out side would itself shift the sets.
    assert overlap.removed_suspect[:4] == [0, 1, 2, 3]
    seen = finding.heldout_overlap  # after within-set duplicates went (templated pages repeat inside a set too)
    assert seen.exact == 2 and seen.prefix == 1 and seen.near >= 1
    assert finding.n_heldout == 100 - seen.count - finding.duplicates_removed["heldout"]
    assert finding.n_suspect == 100 - len(seen.removed_suspect) - finding.duplicates_removed["suspect"]
    assert any(
        f"{seen.count} held-out and {len(seen.removed_suspect)} suspect documents" in note for note in finding.notes
    )


def test_order_of_rows_does_not_change_the_outcome(periods):
    suspect, heldout, _ = sets(periods, 60, seed=12, member_shift=0.3)
    flipped = DocumentSet(list(suspect.texts)[::-1], suspect.features[::-1], 2016, "s.jsonl")
    a, b = (run_set_membership(s, heldout, SIGNALS, params=FAST) for s in (suspect, flipped))
    assert a.result.p_value == b.result.p_value and a.shift.p_value == b.shift.p_value


def test_duplicates_within_a_set_are_removed(periods):
    suspect, heldout, _ = sets(periods, 60, seed=13)
    repeated = DocumentSet(
        list(suspect.texts[:50]) + [t.upper() for t in suspect.texts[:10]], suspect.features, 2016, "s"
    )
    finding = run_set_membership(repeated, heldout, SIGNALS, params=FAST)
    assert finding.duplicates_removed["suspect"] >= 10 and any(
        "suspect documents repeat" in note for note in finding.notes
    )


def test_too_few_left_after_removing_overlap_is_refused(periods):
    suspect, heldout, _ = sets(periods, 30, seed=7)
    texts = list(suspect.texts[:15]) + list(heldout.texts[15:])
    finding = run_set_membership(suspect, DocumentSet(texts, heldout.features, 2016, "h"), SIGNALS, params=FAST)
    assert finding.status == SetStatus.TOO_SMALL and "held-out (15)" in finding.reason


def test_declared_years_that_differ_refuse_without_a_cutoff(periods):
    suspect, heldout, _ = sets(periods, 60, seed=8, member_shift=1.0)
    later = DocumentSet(heldout.texts, heldout.features, 2019, "h")
    finding = run_set_membership(suspect, later, SIGNALS, params=FAST)
    assert finding.status == SetStatus.DATES_DIFFER and "2016" in finding.reason and "2019" in finding.reason


def test_control(periods):
    old, new = periods
    suspect, heldout, rng = sets(periods, 100, seed=11, member_shift=0.6)
    rest = [t for t in old if t not in set(suspect.texts) | set(heldout.texts)]
    control = DocumentSet([rest[i] for i in rng.permutation(len(rest))[:100]], features(rng, 100), 2016, "c.jsonl")
    valid = run_set_membership(suspect, heldout, SIGNALS, control=control, params=FAST)
    assert valid.shift.exchangeable  # a seed whose random halves pass the blind check (about 1 in 20 do not)
    assert valid.control.validated and valid.control.problems == [] and not valid.control.result.significant
    assert valid.status == SetStatus.SIGNIFICANT
    # Drawn with the held-out set's own file and filter: it cannot validate anything.
    vacuous = DocumentSet(control.texts, control.features, 2016, heldout.origin)
    finding = run_set_membership(suspect, heldout, SIGNALS, control=vacuous, params=FAST)
    assert not finding.control.validated and "split of the held-out population" in finding.control.problems[0]
    strict = SetTestParams(n_permutations=199, shift_permutations=199, require_control=True)
    assert (
        run_set_membership(suspect, heldout, SIGNALS, control=vacuous, params=strict).status
        == SetStatus.CONTROL_REQUIRED
    )
    assert run_set_membership(suspect, heldout, SIGNALS, params=strict).status == SetStatus.CONTROL_REQUIRED
    assert run_set_membership(suspect, heldout, SIGNALS, control=control, params=strict).status == SetStatus.SIGNIFICANT
    # A control from another period is not the suspect's population.
    # (Its features sit below the held-out set's, so the one-sided control test itself cannot flag.)
    later = DocumentSet([new[i] for i in rng.permutation(len(new))[:100]], heldout.features - 1.0, 2016, "c.jsonl")
    shifted = run_set_membership(suspect, heldout, SIGNALS, control=later, params=strict)
    assert not shifted.control.validated and shifted.status == SetStatus.CONTROL_REQUIRED
    # A control that scores like the suspect set flags the method: the held-out set is what differs.
    flagged = DocumentSet(control.texts, features(rng, 100, 0.6), 2016, "c.jsonl")
    assert (
        run_set_membership(suspect, heldout, SIGNALS, control=flagged, params=FAST).status == SetStatus.CONTROL_FLAGGED
    )


def test_conditional_test_removes_what_text_form_explains(periods):
    # A signal that is pure text length (the held-out set cut shorter) separates the sets; after
    # residualising on the surface features nothing is left to separate them.
    suspect, heldout, rng = sets(periods, 100, seed=10)
    cut = [" ".join(t.split()[:45]) for t in heldout.texts]
    texts = list(suspect.texts) + cut
    signal = np.log([len(t) for t in texts])[:, None] + 0.01 * rng.normal(size=(200, 1))
    residual = residualise_on_text(signal, texts)
    from scipy.stats import mannwhitneyu

    assert mannwhitneyu(signal[:100, 0], signal[100:, 0]).pvalue < 1e-10
    assert mannwhitneyu(residual[:100, 0], residual[100:, 0]).pvalue > 0.01


def test_surface_features_are_finite_on_hostile_text():
    texts = [
        "",
        " ",
        "\u202eevil\u200b",
        "A" * 10_000,
        "\t\n\r",
        "\ud800".encode("utf-8", "surrogatepass").decode("utf-8", "replace"),
    ]
    values = surface_features(texts)
    assert values.shape == (len(texts), len(SURFACE_FEATURES)) and np.isfinite(values).all()


def test_sets_matched_in_pairs_by_the_model_are_refused(periods):
    # The outside attack that gave a wrong SUPPORTED (and, under strict, beside a "validated"
    # control): no member anywhere, documents paired by text similarity, and in each pair the one
    # the model scores higher goes to the suspect set. The sets mirror each other, so the blind
    # AUC falls far *below* its null; the lower tail refuses the split as chosen, not drawn.
    from verifier.baselines.exchangeability import blind_kernel

    old, _ = periods
    rng = np.random.default_rng(14)
    texts = [old[i] for i in rng.permutation(len(old))[:240]]
    scores = features(rng, 240)
    kernel = blind_kernel(texts)
    np.fill_diagonal(kernel, -np.inf)
    free, pairs = set(range(240)), []
    for i in rng.permutation(240):
        if i in free:
            free.discard(i)
            j = max(free, key=lambda k: kernel[i, k])
            free.discard(j)
            pairs.append((i, j) if scores[i, 0] > scores[j, 0] else (j, i))
    high, low = (np.array([p[k] for p in pairs]) for k in (0, 1))
    suspect = DocumentSet([texts[i] for i in high], scores[high], 2016, "s")
    heldout = DocumentSet([texts[i] for i in low], scores[low], 2016, "h")
    finding = run_set_membership(suspect, heldout, SIGNALS, params=FAST)
    assert finding.status == SetStatus.MIRRORED and finding.shift.auc_corrected < 0.4
    assert "look matched" in finding.reason
    assert dataset_inference_of(
        suspect, heldout
    ).significant  # what the rules would have granted without the lower tail


def dataset_inference_of(suspect: DocumentSet, heldout: DocumentSet):
    from verifier.dataset_inference.statistic import dataset_inference

    return dataset_inference(suspect.features, heldout.features, SIGNALS, n_permutations=199)


def test_uneven_failures_cannot_make_a_verdict(periods):
    """A model that refuses many held-out documents and none of the suspect ones: with a
    label-blind median fill, 0/1 scores of one population came out significant in 99% of draws.
    Uneven failures stop the test before it runs (no verdict)."""
    hits = 0
    for seed in range(20):
        suspect, heldout, rng = sets(periods, 60, seed=seed)
        s = (rng.random((60, 1)) < 0.35).astype(float)
        h = (rng.random((60, 1)) < 0.35).astype(float)
        h[rng.random(60) < 0.45] = np.nan  # refused
        finding = run_set_membership(
            DocumentSet(suspect.texts, s, 2016, "s"),
            DocumentSet(heldout.texts, h, 2016, "h"),
            ["name_cloze"],
            params=FAST,
        )
        hits += finding.status == SetStatus.SIGNIFICANT
        if finding.shift.exchangeable:
            assert finding.status == SetStatus.NOT_ESTABLISHED and "fail unevenly" in finding.reason
    assert hits == 0


def test_a_detection_carried_by_failed_items_is_not_significant(periods):
    """Even failures (a quarter of each set), a moderate effect: significant with the median fill
    (p = 0.005 when written) but not if the failed items had scored least favourably (suspect at
    the lowest score, held-out at the highest): the failures could carry it, so no verdict."""
    suspect, heldout, rng = sets(periods, 120, seed=3)
    s, h = features(rng, 120, 0.7), features(rng, 120)
    s[:30], h[:30] = np.nan, np.nan  # even, so the failure-rate check passes
    finding = run_set_membership(
        DocumentSet(suspect.texts, s, 2016, "s"), DocumentSet(heldout.texts, h, 2016, "h"), SIGNALS, params=FAST
    )
    assert finding.status == SetStatus.NOT_SIGNIFICANT and "filled least favourably" in finding.reason
    assert finding.result.significant  # the median-filled test alone would have decided
    assert any("failed query" in note for note in finding.notes)
    strong, few = features(rng, 120, 1.5), features(rng, 120)
    strong[:8], few[:8] = np.nan, np.nan
    kept = run_set_membership(
        DocumentSet(suspect.texts, strong, 2016, "s"), DocumentSet(heldout.texts, few, 2016, "h"), SIGNALS, params=FAST
    )
    assert kept.status == SetStatus.SIGNIFICANT  # a strong effect with few failures survives the least favourable fill


def test_copies_salted_with_invisible_characters_are_still_duplicates():
    """An outside attack: held-out copies of suspect documents with a zero-width space between every
    letter (or soft hyphens, direction marks) passed set hygiene as new documents."""
    suspect = [f"The council met on day {i} and voted on the new budget for the harbour district." for i in range(6)]
    salted = ["\u200b".join(t) for t in suspect[:3]] + [t.replace(" ", " \u00ad\u200e") for t in suspect[3:]]
    assert find_overlap(suspect, salted).count == 6


def digit_share(texts) -> np.ndarray:
    return np.array([sum(c.isdigit() for c in t) / max(1, len(t)) for t in texts])


def test_a_text_driven_shift_the_check_cannot_exclude_is_not_read_as_training(periods):
    # Small sets (the blind check cannot establish exchangeability at n = 30), a held-out set chosen
    # with fewer digits, and signals that follow the digits: the test on the signals residualised on
    # the blind classifier's text features must not call that training.
    old, _ = periods
    order = np.argsort(digit_share(old))
    granted = 0
    for seed in range(12):
        rng = np.random.default_rng(seed)
        low, high = rng.permutation(order[: len(order) // 2])[:30], rng.permutation(order[len(order) // 2 :])[:30]
        s_texts, h_texts = [old[i] for i in high], [old[i] for i in low]

        def signal(texts):
            return (40 * digit_share(texts))[:, None] + 0.3 * rng.normal(size=(len(texts), len(SIGNALS)))  # noqa: B023

        finding = run_set_membership(
            DocumentSet(s_texts, signal(s_texts), 2016),
            DocumentSet(h_texts, signal(h_texts), 2016),
            SIGNALS,
            params=OPT_IN,
        )
        assert finding.status != SetStatus.SIGNIFICANT or not finding.on_blind
        granted += finding.status == SetStatus.SIGNIFICANT
    assert granted <= 1  # the few the margin established are the test's own alpha


def test_a_subtle_vocabulary_shift_never_gets_a_verdict_under_the_default_rules(periods):
    # The outside review's counterexample to the opt-in test: a held-out set chosen with a slightly lower share
    # of twenty common words, and signals that follow that share. Kernel ridge shrinks such a weak direction
    # without removing it, so the opt-in test can be fooled; the default rules (the margin alone) never grant it.
    old, _ = periods
    words = [
        "the",
        "of",
        "and",
        "in",
        "a",
        "to",
        "was",
        "on",
        "by",
        "for",
        "with",
        "at",
        "as",
        "from",
        "is",
        "that",
        "were",
        "which",
        "an",
        "his",
    ]
    share = np.array([sum(w in words for w in t.lower().split()) / max(1, len(t.split())) for t in old])
    order = np.argsort(share)
    for seed in range(8):
        rng = np.random.default_rng(seed)
        low, high = rng.permutation(order[: len(order) // 2])[:40], rng.permutation(order[len(order) // 2 :])[:40]

        def features(rows):
            return (30 * share[rows])[:, None] + 0.5 * rng.normal(size=(len(rows), len(SIGNALS)))  # noqa: B023

        finding = run_set_membership(
            DocumentSet([old[i] for i in high], features(high), 2016),
            DocumentSet([old[i] for i in low], features(low), 2016),
            SIGNALS,
            params=FAST,
        )
        assert finding.status != SetStatus.SIGNIFICANT, finding.reason


def test_where_the_margin_cannot_be_met_the_opt_in_test_finds_a_real_effect(periods):
    # At n = 40 the margin alone leaves a real, strong effect undecided (and says what size would do);
    # the opt-in blind-residual test finds it.
    suspect, heldout, _ = sets(periods, 40, seed=3, member_shift=1.2)
    margin_only = run_set_membership(suspect, heldout, SIGNALS, params=FAST)
    now = run_set_membership(suspect, heldout, SIGNALS, params=OPT_IN)
    assert margin_only.status == SetStatus.NOT_ESTABLISHED and "would let the check establish it" in margin_only.reason
    assert (
        now.status == SetStatus.SIGNIFICANT
        and now.on_blind
        and "beyond everything the blind classifier's text features explain" in now.reason
    )


def test_the_size_that_would_establish_exchangeability():
    from verifier.baselines.exchangeability import ExchangeabilityCheck, size_to_establish

    def check(corrected: float, spread: float, n: int) -> ExchangeabilityCheck:
        return ExchangeabilityCheck(
            auc=corrected,
            auc_corrected=corrected,
            ci_low=corrected - spread,
            ci_high=corrected + spread,
            p_value=0.5,
            p_value_mirrored=0.5,
            null_median=0.45,
            smallest_detectable=0.7,
            margin=margin_for(n),
            alpha=0.05,
            detected=False,
            mirrored=False,
            exchangeable=False,
            n_first=n,
            n_second=n,
            n_checked_first=n,
            n_checked_second=n,
            n_permutations=199,
            seed=0,
        )

    found = size_to_establish(check(0.5, 0.21, 50))  # the null's spread shrinks as 1/sqrt(n): just above 50 suffices
    assert found is not None and 50 < found < 60 and 0.5 + 0.21 * np.sqrt(50 / found) < margin_for(found)
    # Where the null's spread x sqrt(n) exceeds the margin's scale (heterogeneous text), no size ever would.
    assert size_to_establish(check(0.52, 0.22, 92)) is None


@pytest.mark.parametrize("claims", [2, 20, 50, 200, 1000])
@pytest.mark.parametrize("alpha", [0.01, 0.05, 0.2])
def test_a_claim_of_a_batch_can_reach_the_strictest_adjusted_level(claims, alpha):
    """With the policy's 999 relabellings a batch of 50 claims at alpha 0.05 could never keep a
    verdict (the smallest p-value, 0.001, is above 0.05 / 50): a claim of a batch of m runs enough
    relabellings for its p-value to fall ten times below alpha / m, Holm's and BH's strictest level."""
    params = SetTestParams(alpha=alpha, n_permutations=999)
    family = params.for_family(claims)
    assert 1 / (family.n_permutations + 1) <= alpha / claims / 10 + 1e-12
    assert family.n_permutations >= params.n_permutations
    assert {k: v for k, v in family.model_dump().items() if k != "n_permutations"} == {
        k: v for k, v in params.model_dump().items() if k != "n_permutations"
    }


def test_a_single_claim_and_a_finer_policy_keep_their_relabellings():
    params = SetTestParams(n_permutations=99_999)
    assert params.for_family(1) is params and params.for_family(20) is params
    assert SetTestParams().for_family(1).n_permutations == 999
    assert SetTestParams(method="split_median").for_family(200).n_permutations == 999  # no relabellings to raise
