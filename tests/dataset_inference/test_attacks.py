"""Output-only attacks (DE-COP, name cloze, prefix probing, familiarity ranking, SaMIA, CDD), scored
from hand-made answers: no model is loaded and nothing is sent anywhere."""

from __future__ import annotations

import math
from collections import Counter

import pytest

from verifier.errors import VerifierError
from verifier.signals import REGISTRY, ScoredDocument, make_signals
from verifier.signals.base import QuerySignal
from verifier.signals.output_only.cdd import CDD
from verifier.signals.output_only.decop import LETTERS, DeCop, paraphrases, parse_letter
from verifier.signals.output_only.familiarity import Familiarity, shuffled_words
from verifier.signals.output_only.name_cloze import MASK, NameCloze, masked_name
from verifier.signals.output_only.prefix_probe import PrefixLcsToken, PrefixLcsWord
from verifier.signals.output_only.samia import SaMIA, rouge1_f1
from verifier.targets.queries import CHAT, TEXT, Answer, Query

PASSAGE = (
    "During the summer of 1887 the famous painter Vincent Morrow travelled with his brother Theo to the small city of "
    "Arles, where Morrow later painted many of his most important works. The brothers used a simple studio near the "
    "river, and Theo wrote that Vincent worked very quickly, often finishing several canvases in a single week before "
    "the autumn rains began."
)
UNRELATED = (
    "Quarterly revenue at the shipping firm fell sharply as fuel costs rose and two container vessels were held in "
    "port for repairs, analysts said on Tuesday"
)
FAILED = Answer(error="server error after 3 retries")
REFUSED = Answer(error="refusal")
ATTACKS = ["decop", "name_cloze", "prefix_lcs_word", "prefix_lcs_token", "familiarity", "samia", "cdd"]


def score(signal: QuerySignal, text: str, answers: list[Answer]) -> float:
    """The document score given the answers to the signal's queries, in query order."""
    queries = signal.queries(text)
    assert len(queries) == len(answers)
    return signal.score(ScoredDocument(text=text, answers={q.key: a for q, a in zip(queries, answers)}))


def halves(passage: str) -> tuple[str, str]:
    words = passage.split()
    return " ".join(words[: len(words) // 2]), " ".join(words[len(words) // 2 :])


# --- registry and the base class --------------------------------------------------------------


def test_attacks_are_registered_as_output_only_and_off_by_default():
    for name in ATTACKS:
        cls = REGISTRY[name]
        assert issubclass(cls, QuerySignal)
        assert cls.needs == {"answers"}
        assert cls.by_default is False
    assert not {s.name for s in make_signals(None, offered={"answers", "prompt_logprobs"})} & set(ATTACKS)
    assert [s.name for s in make_signals(["decop", "cdd"], offered={"answers"})] == ["decop", "cdd"]


def test_split_cuts_full_runs_of_words_and_keeps_a_short_text_whole():
    signal = NameCloze(passage_words=8, passages=5)
    words = [f"w{i}" for i in range(20)]
    assert signal.split(" ".join(words)) == [" ".join(words[:8]), " ".join(words[8:16])]  # the short tail is dropped
    assert NameCloze(passage_words=8, passages=1).split(" ".join(words)) == [" ".join(words[:8])]
    assert signal.split("only five words in it") == ["only five words in it"]
    assert signal.split("") == []


def test_document_score_is_the_mean_of_scored_passages():
    text = "the old painter met Vincent near Vincent today , said one" + " nobody here has any name at all , ok ?"
    signal = NameCloze(passage_words=10, passages=2)
    first, second = signal.split(text)
    assert masked_name(first) == "Vincent" and masked_name(second) is None  # the second passage asks nothing
    assert score(signal, text, [Answer("Vincent")]) == 1.0
    assert score(signal, text, [Answer("Pierre")]) == 0.0
    assert math.isnan(score(signal, text, [FAILED]))


@pytest.mark.parametrize(
    "make",
    [
        lambda: DeCop(passage_words=7),
        lambda: DeCop(passages=0),
        lambda: DeCop(passages=101),
        lambda: DeCop(orders="random"),
        lambda: PrefixLcsWord(mode="completion"),
        lambda: PrefixLcsToken(mode="CHAT"),
        lambda: Familiarity(scale="1-5"),
        lambda: SaMIA(samples=0),
        lambda: SaMIA(samples=101),
        lambda: SaMIA(samples=2.5),
        lambda: SaMIA(mode="raw"),
        lambda: CDD(samples=0),
        lambda: CDD(alpha=-0.1),
        lambda: CDD(alpha=1.5),
        lambda: CDD(alpha=float("nan")),
        lambda: CDD(mode="x"),
    ],
)
def test_parameters_out_of_range_are_refused(make):
    with pytest.raises(VerifierError):
        make()


@pytest.mark.parametrize("name", ATTACKS)
def test_queries_are_deterministic_and_every_failure_is_nan(name):
    signal = REGISTRY[name]()
    first, again = signal.queries(PASSAGE), signal.queries(PASSAGE)
    assert first and [q.key for q in first] == [q.key for q in again]
    assert math.isnan(score(signal, PASSAGE, [FAILED] * len(first)))
    assert math.isnan(score(signal, PASSAGE, [REFUSED] * len(first)))


# --- DE-COP -----------------------------------------------------------------------------------


def verbatim_letter(query: Query, passage: str) -> str:
    [letter] = [L for L in LETTERS if f"{L}. {passage}\n" in query.content]
    return letter


def test_decop_asks_all_24_orders_with_the_verbatim_passage_in_each_position_equally():
    queries = DeCop().queries(PASSAGE)
    assert len(queries) == 24 and len({q.content for q in queries}) == 24
    assert all(q.kind == CHAT and q.temperature == 0 and q.max_tokens <= 16 for q in queries)
    assert Counter(verbatim_letter(q, PASSAGE) for q in queries) == {"A": 6, "B": 6, "C": 6, "D": 6}
    cyclic = DeCop(orders="cyclic").queries(PASSAGE)
    assert sorted(verbatim_letter(q, PASSAGE) for q in cyclic) == list(LETTERS)


def test_decop_paraphrases_are_three_distinct_rewordings():
    others = paraphrases(PASSAGE, 3)
    assert len(set(others)) == 3 and PASSAGE not in others
    assert all(len(p.split()) >= len(PASSAGE.split()) - 5 for p in others)
    assert all(p in DeCop().queries(PASSAGE)[0].content for p in others)


def test_decop_scores_the_share_of_verbatim_choices_among_readable_answers():
    signal = DeCop()
    queries = signal.queries(PASSAGE)
    right = [verbatim_letter(q, PASSAGE) for q in queries]
    styles = ["{}", "({})", "Answer: {}", "{})"]  # the last one lowercased: "b)"
    memorised = [
        Answer(styles[i % 4].format(letter.lower() if i % 4 == 3 else letter)) for i, letter in enumerate(right)
    ]
    assert score(signal, PASSAGE, memorised) == 1.0
    wrong = [Answer(LETTERS[(LETTERS.index(letter) + 1) % 4]) for letter in right]  # always a paraphrase
    assert score(signal, PASSAGE, wrong) == 0.0
    assert score(signal, PASSAGE, [Answer("A")] * 24) == 0.25  # a letter-biased model scores chance
    assert math.isnan(score(signal, PASSAGE, [Answer("I cannot tell which one is original")] * 24))
    # unreadable answers and failures are left out, never counted as wrong
    half = [Answer(letter) if i % 2 else (FAILED if i % 4 else Answer("no idea")) for i, letter in enumerate(right)]
    assert score(signal, PASSAGE, half) == 1.0


def test_decop_asks_nothing_when_the_passage_cannot_be_paraphrased():
    plain = "zebra quartz nimbus glyph fjord vortex kayak jumbo plinth"
    assert paraphrases(plain, 3) == ()
    assert DeCop().queries(plain) == []
    assert math.isnan(DeCop().score(ScoredDocument(text=plain)))


@pytest.mark.parametrize(
    ("reply", "index"),
    [
        ("B", 1),
        ("(B)", 1),
        ("Answer: B", 1),
        ("b)", 1),
        ("B.", 1),
        ("**C**", 2),
        ("The answer is D.", 3),
        ("Answer: (c)", 2),
        ("Option A", 0),
        ("Passage B is the original.", 1),
        ("I think it is C", 2),
        ("B and C", None),
        ("maybe", None),
        ("The answer is a passage", None),
        ("", None),
    ],
)
def test_decop_reads_a_letter_robustly(reply, index):
    assert parse_letter(reply) == index


# --- name cloze -------------------------------------------------------------------------------


def test_name_cloze_masks_every_occurrence_of_the_most_frequent_name():
    assert masked_name(PASSAGE) == "Vincent"  # Vincent, Morrow and Theo twice each: the first wins
    [query] = NameCloze().queries(PASSAGE)
    assert query.kind == CHAT and query.temperature == 0
    shown = query.content.split("Passage: ", 1)[1]
    assert "Vincent" not in query.content and shown == PASSAGE.replace("Vincent", MASK) and shown.count(MASK) == 2
    assert "Morrow" in query.content and "Theo" in query.content


def test_name_cloze_skips_sentence_openers_function_words_and_honorifics():
    assert masked_name("Then the rain stopped. After that nobody came. The end") is None
    assert masked_name("They said that Mr. Holmes was late, and Mr. Holmes agreed. In") == "Holmes"
    assert masked_name("we met in May and I saw The Times there") == "Times"
    assert masked_name("all lower case words and no names at all") is None


def test_name_cloze_scores_exact_match():
    signal = NameCloze()
    for reply in ("Vincent", "vincent", " Vincent. ", "<name>Vincent</name>", '"VINCENT"'):
        assert score(signal, PASSAGE, [Answer(reply)]) == 1.0, reply
    for reply in ("Theo", "Vincent van Gogh", "<name>Morrow</name>"):
        assert score(signal, PASSAGE, [Answer(reply)]) == 0.0, reply
    assert math.isnan(score(signal, PASSAGE, [Answer("???")]))
    no_name = "the rain fell on the quiet town all night and nobody went out until the morning came"
    assert NameCloze().queries(no_name) == [] and math.isnan(NameCloze().score(ScoredDocument(text=no_name)))


# --- prefix probing ---------------------------------------------------------------------------


def test_prefix_probe_queries_the_first_half():
    prefix, suffix = halves(PASSAGE)
    [chat] = PrefixLcsWord().queries(PASSAGE)
    assert chat.kind == CHAT and prefix in chat.content and suffix not in chat.content and chat.temperature == 0
    [text] = PrefixLcsToken(mode="text").queries(PASSAGE)
    assert text.kind == TEXT and text.content == prefix
    # the word and token signals, and CDD's greedy output, share one query (one cached answer)
    assert PrefixLcsToken().queries(PASSAGE)[0].key == chat.key == CDD().queries(PASSAGE)[0].key


@pytest.mark.parametrize("signal", [PrefixLcsWord(), PrefixLcsToken(), PrefixLcsWord(mode="text")])
def test_prefix_lcs_is_one_for_the_true_suffix_and_low_for_unrelated_text(signal):
    prefix, suffix = halves(PASSAGE)
    assert score(signal, PASSAGE, [Answer(suffix)]) == 1.0
    assert score(signal, PASSAGE, [Answer(f"{prefix} {suffix}")]) == 1.0  # an echoed prefix is dropped
    assert score(signal, PASSAGE, [Answer(f"... {suffix} And then the story went on for pages.")]) == 1.0
    assert score(signal, PASSAGE, [Answer(UNRELATED)]) < 0.2
    half = " ".join(suffix.split()[: len(suffix.split()) // 2])
    assert 0.4 < score(signal, PASSAGE, [Answer(half)]) < 0.6
    assert math.isnan(score(signal, PASSAGE, [Answer(error="empty completion")]))


def test_prefix_lcs_token_splits_punctuation_from_words():
    _, suffix = halves(PASSAGE)
    unpunctuated = suffix.replace(",", "").replace(".", "")
    word, token = (score(s, PASSAGE, [Answer(unpunctuated)]) for s in (PrefixLcsWord(), PrefixLcsToken()))
    assert word < token < 1.0


# --- SaMIA ------------------------------------------------------------------------------------


def test_rouge1_f1():
    assert rouge1_f1("The cat sat", "the cat sat") == 1.0
    assert rouge1_f1("the cat", "the cat sat on the mat") == pytest.approx(2 * 1 * (2 / 6) / (1 + 2 / 6))
    assert rouge1_f1("dogs bark", "the cat sat") == 0.0
    assert rouge1_f1("", "the cat") == 0.0


def test_samia_samples_at_temperature_one_and_averages_rouge():
    signal = SaMIA()
    queries = signal.queries(PASSAGE)
    assert [q.sample for q in queries] == list(range(10)) and {q.temperature for q in queries} == {1.0}
    assert len({q.key for q in queries}) == 10 and len(SaMIA(samples=3).queries(PASSAGE)) == 3
    _, suffix = halves(PASSAGE)
    member = score(signal, PASSAGE, [Answer(suffix)] * 10)
    non_member = score(signal, PASSAGE, [Answer(UNRELATED)] * 10)
    assert member == 1.0 and non_member < 0.2
    mixed = [Answer(suffix)] * 5 + [Answer(UNRELATED)] * 5
    assert score(signal, PASSAGE, mixed) == pytest.approx((1.0 + non_member) / 2)
    assert score(signal, PASSAGE, [Answer(suffix)] * 3 + [FAILED] * 7) == 1.0  # failed samples are left out


# --- CDD --------------------------------------------------------------------------------------


def test_cdd_asks_one_greedy_output_and_samples_at_temperature_0_8():
    queries = CDD().queries(PASSAGE)
    assert len(queries) == 11 and queries[0].temperature == 0
    assert [(q.temperature, q.sample) for q in queries[1:]] == [(0.8, i) for i in range(10)]


def test_cdd_peakedness():
    signal = CDD()
    greedy = " ".join(f"w{i}" for i in range(40))  # l = 40 words: alpha * l = 2 edits allowed
    two_edits = greedy.replace("w3 ", "x3 ").replace("w7 ", "x7 ")
    three_edits = two_edits.replace("w9 ", "x9 ")
    assert score(signal, PASSAGE, [Answer(greedy)] * 11) == 1.0  # a peaked distribution: member-like
    assert score(signal, PASSAGE, [Answer(greedy)] + [Answer(two_edits)] * 5 + [Answer(three_edits)] * 5) == 0.5
    assert score(signal, PASSAGE, [Answer(greedy)] + [Answer(UNRELATED)] * 10) == 0.0
    assert score(CDD(alpha=0.1), PASSAGE, [Answer(greedy)] + [Answer(three_edits)] * 10) == 1.0
    assert score(signal, PASSAGE, [Answer(greedy)] + [FAILED] * 9 + [Answer(UNRELATED)]) == 0.0
    assert math.isnan(score(signal, PASSAGE, [FAILED] + [Answer(greedy)] * 10))  # no greedy output
    assert math.isnan(score(signal, PASSAGE, [Answer(greedy)] + [REFUSED] * 10))  # no sample


# --- familiarity ranking ----------------------------------------------------------------------


def familiarity_reply(signal: Familiarity, original: int, paraphrase: int, random: int) -> Answer:
    by_text = {0: original, 1: paraphrase, 2: random}
    return Answer(", ".join(str(by_text[i]) for i in signal.order(PASSAGE)))


def test_familiarity_shows_the_passage_a_paraphrase_and_its_shuffled_words():
    [query] = Familiarity().queries(PASSAGE)
    assert query.kind == CHAT and query.temperature == 0
    assert PASSAGE in query.content and paraphrases(PASSAGE, 1)[0] in query.content
    shuffled = shuffled_words(PASSAGE)
    assert shuffled in query.content and shuffled != PASSAGE and sorted(shuffled.split()) == sorted(PASSAGE.split())
    assert sorted(Familiarity.order(PASSAGE)) == [0, 1, 2]


def test_familiarity_scores_original_minus_the_decoys():
    ten = Familiarity()
    assert score(ten, PASSAGE, [familiarity_reply(ten, 10, 4, 0)]) == 8.0
    assert score(ten, PASSAGE, [familiarity_reply(ten, 5, 9, 1)]) == 0.0
    assert score(ten, PASSAGE, [familiarity_reply(ten, 2, 9, 7)]) < 0  # the paraphrase preferred: non-member-like
    order = ten.order(PASSAGE)
    labelled = {0: "9/10", 1: "3/10", 2: "0/10"}
    assert score(ten, PASSAGE, [Answer(", ".join(f"{'ABC'[k]}: {labelled[i]}" for k, i in enumerate(order)))]) == 7.5
    three = Familiarity(scale="1-3")
    assert score(three, PASSAGE, [familiarity_reply(three, 1, 2, 3)]) == 1.5  # ranked first: rating 3 vs 2 and 1
    assert score(three, PASSAGE, [familiarity_reply(three, 3, 1, 2)]) == -1.5
    for reply in ("I have never seen any of them", "11, 3, 2", "4, 2", "1, 2, 3, 4"):
        assert math.isnan(score(ten, PASSAGE, [Answer(reply)])), reply
    assert math.isnan(score(three, PASSAGE, [Answer("0, 1, 2")]))
