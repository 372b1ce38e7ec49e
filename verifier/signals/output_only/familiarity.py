"""Familiarity ranking (Janicki et al., "Detecting Data Contamination in Large Language Models",
their new method): the model rates three texts - the passage, a paraphrase of it and a random
chunk - for how likely it is to have seen them; a model that has read the passage should put the
original above its paraphrase, not only above the random chunk.

Procedure: one greedy chat query shows the three texts, labelled A-C in an order shuffled with a
seed drawn from the passage's SHA-256 (the paper shuffles them against position bias), and asks
for one integer per text:
- ``scale = "0-10"``: a score from 0 (surely never seen) to 10 (surely seen word for word), no two
  texts alike (the paper's 0-10 prompt);
- ``scale = "1-3"``: a rank, 1 for the text most likely seen, 3 for the least (the paper's first
  prompt); a rank r is read as the rating 4 - r, so that higher is more familiar on both scales.
The paraphrase comes from the offline synonym rephraser (as in DE-COP, ``decop.paraphrases``); the
random chunk is the passage's own words shuffled with a seeded generator.

Score: rating(original) - mean(rating(paraphrase), rating(random chunk)); higher = more
member-like (in [-10, 10] on the 0-10 scale, [-1.5, 1.5] on the 1-3 one). The reply must hold
exactly three integers in the scale's range (after dropping a "/10" after a score); anything else -
as well as a refusal, an error, or a passage the rephraser cannot vary - is NaN for the passage,
not a low score.

Deviations from the paper, and why:
- a continuous score instead of the paper's all-or-nothing "exact gold ordering" label: the route
  compares score distributions, and the difference keeps how far above the decoys the original
  was put (the paper itself reads the 0-10 ratings this way in its accuracy analysis);
- the random chunk is the passage's words shuffled, not a chunk of another document: a passage's
  queries must depend on that passage alone (so that they are the same in any run and any set of
  documents); a shuffle of the same words is a decoy with the same vocabulary and no syntax;
- no title hook (the paper names the source paper or article): audited documents come without
  reliable titles, so the prompt asks about familiarity in general.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

import numpy as np

from verifier.signals.base import QuerySignal, register
from verifier.signals.output_only.decop import paraphrases, passage_seed
from verifier.targets.queries import CHAT, Answer, Query

ANSWER_TOKENS = 16
INTEGER = re.compile(r"-?\d+")
OUT_OF_TEN = re.compile(r"\s*/\s*10\b")
SCALES = {"1-3": (1, 3), "0-10": (0, 10)}


def shuffled_words(passage: str) -> str:
    words = passage.split()
    order = np.random.default_rng(passage_seed(passage, "familiarity-shuffle:")).permutation(len(words))
    return " ".join(words[i] for i in order)


@register
@dataclass(frozen=True)
class Familiarity(QuerySignal):
    name = "familiarity"
    scale: Literal["0-10", "1-3"] = "0-10"  # "0-10": a score per text; "1-3": a rank per text (1 = most familiar)

    @staticmethod
    def order(passage: str) -> list[int]:
        """Which text stands at A, B, C: 0 = the passage, 1 = the paraphrase, 2 = the random chunk."""
        return [int(i) for i in np.random.default_rng(passage_seed(passage, "familiarity-order:")).permutation(3)]

    def prompt(self, texts: list[str]) -> str:
        listed = "\n\n".join(f"Text {letter}: {text}" for letter, text in zip("ABC", texts))
        if self.scale == "0-10":
            task = (
                "Score each of the three texts below from 0 to 10 for how likely it is that you have seen it, word "
                "for word, "
                "before: 10 if you are sure you have, 0 if you are sure you have not. Give no two texts the same "
                "score. "
            )
            example = "7, 2, 9"
        else:
            task = (
                "Rank the three texts below by how likely it is that you have seen them, word for word, before: 1 for "
                "the "
                "most likely, 3 for the least likely. "
            )
            example = "3, 1, 2"
        return (
            f"{task}The texts are in no particular order.\n\n{listed}\n\nReply only with three integers separated by "
            f"commas, for texts A, B and C in that order (for example: {example})."
        )

    def passage_queries(self, passage: str) -> list[Query]:
        paraphrase = paraphrases(passage, 1)
        if not paraphrase:
            return []
        texts = (passage, paraphrase[0], shuffled_words(passage))
        return [Query(CHAT, self.prompt([texts[i] for i in self.order(passage)]), max_tokens=ANSWER_TOKENS)]

    def ratings(self, text: str) -> list[int] | None:
        """The three integers of a reply, each in the scale's range, or None."""
        values = [int(v) for v in INTEGER.findall(OUT_OF_TEN.sub("", text))]
        low, high = SCALES[self.scale]
        if len(values) != 3 or not all(low <= v <= high for v in values):
            return None
        return values if self.scale == "0-10" else [4 - v for v in values]

    def score_passage(self, passage: str, answers: list[Answer]) -> float:
        if len(answers) != 1 or not answers[0].ok or (given := self.ratings(answers[0].text)) is None:
            return float("nan")
        by_text = dict(zip(self.order(passage), given))
        return float(by_text[0] - (by_text[1] + by_text[2]) / 2)
