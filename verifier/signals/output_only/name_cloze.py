"""Name cloze (Chang et al. 2023), as evaluated by Janicki et al. ("Detecting Data Contamination in
Large Language Models"): a proper name in the passage is masked and the model is asked to fill it
in. A name is the word least likely to be guessed from the surrounding text alone, so filling it
exactly suggests the model has read the passage.

Procedure: the candidates are capitalised words (a capital followed by at least one lowercase
letter, hyphenated compounds kept whole) that do not open a sentence and are not function words,
pronouns, honorifics, or day and month names. The most frequent candidate is masked (ties: the
first to appear), every occurrence of it, sentence-initial ones included, so that no copy gives it
away; the model is asked greedily for that one name. A passage with no candidate asks nothing and
scores NaN.

Score: 1.0 when the reply (the text inside ``<name>`` tags if it used them, else the whole reply)
equals the name after lowercasing and removing everything but letters and digits, else 0.0;
higher = more member-like. A refused or failed query, or a reply with nothing left after that
cleaning, is NaN, not 0.

Deviations from the paper, and why:
- one name per passage, whatever the number of names in it: Chang et al. chose passages holding
  exactly one name, Janicki et al. also masked every name at once; an audit scores the passages it
  is given, so it masks one (the single-mask setup, which Janicki et al. found the more accurate);
- names are found by capitalisation rules, not a named-entity tagger (no model is loaded): a
  capitalised common noun in a title, a demonym ("British") or one word of a longer name
  ("United" of "United States") can be taken for a name. On the bundled WikiMIA passages of 64
  words, 536 of 542 get a candidate.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from verifier.signals.base import QuerySignal, register
from verifier.targets.queries import CHAT, Answer, Query

MASK = "[MASK]"
ANSWER_TOKENS = 16
WORD = re.compile(r"[^\W\d_]+(?:-[^\W\d_]+)*")
SENTENCE_END = ".!?"
CLOSERS = "\"'”’)]"
# Words that are capitalised mid-sentence without being names (titles, "I", headings).
NOT_NAMES = frozenset(
    """
a an the and or but nor so yet for of in on at to by from with without into onto upon over under about above below after
before between through during since until while as if than then that this these those there here where when which who
whom
whose what why how all any both each every few many more most much no not none some such other another one two three
i me my mine we us our ours you your yours he him his she her hers it its they them their theirs
is are was were be been being am do does did have has had will would shall should can could may might must
mr mrs ms dr prof sir madam lady lord saint st mister miss
monday tuesday wednesday thursday friday saturday sunday january february march april may june july august september
october november december
""".split()
)
ABBREVIATIONS = frozenset(
    {"Mr.", "Mrs.", "Ms.", "Dr.", "Prof.", "St.", "Sr.", "Jr.", "Mt.", "Gen.", "Col.", "Capt.", "Lt.", "Rev."}
)


def _sentence_initial(text: str, start: int) -> bool:
    before = text[:start].rstrip()
    trimmed = before.rstrip(CLOSERS + "\"'“‘(")  # quotes and brackets between a full stop and the word
    if not trimmed:
        return True
    if trimmed[-1] not in SENTENCE_END:
        return False
    return trimmed.split()[-1] not in ABBREVIATIONS  # "Mr. Smith" does not open a sentence


def masked_name(passage: str) -> str | None:
    """The name to mask: the most frequent candidate (first to appear on a tie), or None."""
    candidates = [
        m.group()
        for m in WORD.finditer(passage)
        if m.group()[0].isupper()
        and any(c.islower() for c in m.group()[1:])
        and m.group().lower() not in NOT_NAMES
        and not _sentence_initial(passage, m.start())
    ]
    if not candidates:
        return None
    counts = Counter(candidates)
    return max(counts, key=lambda name: (counts[name], -candidates.index(name)))


def mask(passage: str, name: str) -> str:
    """``passage`` with every whole-word occurrence of ``name`` replaced by the mask."""
    return WORD.sub(lambda m: MASK if m.group() == name else m.group(), passage)


def normalise(text: str) -> str:
    return "".join(c for c in text.lower() if c.isalnum())


def reply_name(text: str) -> str:
    tagged = re.search(r"<name>(.*?)</name>", text, re.IGNORECASE | re.DOTALL)
    return normalise(tagged.group(1) if tagged else text)


@register
@dataclass(frozen=True)
class NameCloze(QuerySignal):
    name = "name_cloze"

    @staticmethod
    def prompt(masked: str) -> str:
        return (
            "In the passage below, one proper name has been replaced by [MASK] (where [MASK] appears more than once, "
            "it is the same name each time). The name is a single word. Which name is it? Give your best guess even if "
            "you are unsure, and reply with the name alone, in the form <name>Name</name>.\n\n"
            f"Passage: {masked}"
        )

    def passage_queries(self, passage: str) -> list[Query]:
        target = masked_name(passage)
        if target is None:
            return []
        return [Query(CHAT, self.prompt(mask(passage, target)), max_tokens=ANSWER_TOKENS)]

    def score_passage(self, passage: str, answers: list[Answer]) -> float:
        target = masked_name(passage)
        if target is None or len(answers) != 1 or not answers[0].ok:
            return float("nan")
        guess = reply_name(answers[0].text)
        if not guess:
            return float("nan")
        return 1.0 if guess == normalise(target) else 0.0
