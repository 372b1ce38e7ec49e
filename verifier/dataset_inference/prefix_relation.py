"""Whether the prefix documents of a prefixed signal (ReCaLL) bear on one set more than the other.

A prefixed signal scores every document after the same prefix, which keeps suspect and held-out
documents exchangeable only if the prefix is as related to one set as to the other. A document
the prefix (nearly) contains is predicted better after it by any model that copies from its
context, trained on it or not, and ReCaLL reads a better conditional likelihood as *less*
member-like. An outside attack used this: a claim's prefix set (``claim_prefix``) held held-out
documents with every fifth word replaced - under the near-duplicate bar of the set hygiene -
and a model trained on neither set gave SUPPORTED at p = 0.002. Two model-free defences, each
symmetric in the sets (so the test stays exact under the null), over two measures of how close
a document is to the prefix: its largest TF-IDF cosine to a prefix document (word 1-2-grams, on
the hygiene's normalised text: shared topics and wording) and its **copy coverage**, the share of
its words inside a run of ``COPY_WORDS`` or more words that occurs verbatim in the prefix (what a
model copying from its context can use; a second outside attack kept 40% of held-out documents
as in-order 5-word runs between shuffled word pairs of suspect documents, which the cosine alone
saw as balanced, and got SUPPORTED again):

- **derived documents**: a document of any set at ``DERIVED`` or more on either measure leaves
  every set (an edited copy of a WikiMIA text scores a cosine of 0.81-0.87 against its original;
  the nearest of the other 541 WikiMIA-64 texts a median 0.12, the 99th percentile 0.61);
- **balance**: on each measure, the remaining documents' closeness is compared between the
  suspect and held-out sets, two-sided Mann-Whitney. Null hypothesis: the prefix is as close to
  suspect documents as to held-out ones. Where either test rejects at ``BALANCE_ALPHA`` / 2
  (Bonferroni over the two), no prefixed signal is computed.

No surface measure sees every relation (a paraphrase a model still profits from): a prefix the
claimant chose while seeing the sets stays weaker than one the route draws, which is why the
claim's own prefix set needs ``claim_prefix`` and is reported as a weaker policy.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.stats import mannwhitneyu
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.metrics.pairwise import cosine_similarity

from verifier.dataset_inference.hygiene import normalise

DERIVED = 0.5
COPY_WORDS = 3
BALANCE_ALPHA = 0.05
WORD = re.compile(r"\w+")


@dataclass(frozen=True)
class PrefixRelation:
    """How close each set's documents are to the prefix, and what follows."""

    derived: dict[str, list[int]]  # role -> indices of its documents derived from a prefix document (removed)
    closer_heldout_auc: dict[
        str, float
    ]  # measure -> P(a held-out document is closer than a suspect one), ties counted half
    p_values: dict[str, float]  # measure -> two-sided Mann-Whitney over the documents left

    @property
    def balanced(self) -> bool:
        return min(self.p_values.values()) >= BALANCE_ALPHA / len(self.p_values)

    def as_finding(self) -> dict[str, object]:
        return {
            "derived_removed": {role: len(idx) for role, idx in self.derived.items()},
            "derived_at": DERIVED,
            "copy_words": COPY_WORDS,
            "closer_heldout_auc": {k: round(v, 4) for k, v in self.closer_heldout_auc.items()},
            "p_values": {k: round(v, 6) for k, v in self.p_values.items()},
            "alpha": BALANCE_ALPHA,
            "balanced": self.balanced,
            "null_hypothesis": "the prefix documents are as close to suspect documents as to held-out ones "
            "(TF-IDF cosine; share of words in runs copied verbatim)",
        }

    def reason(self) -> str:
        measure = min(self.p_values, key=self.p_values.get)
        auc = self.closer_heldout_auc[measure]
        side = "held-out" if auc > 0.5 else "suspect"
        return (
            f"the prefix documents are closer to the {side} documents than to the others ({measure}: closeness AUC "
            f"{auc:.2f}, "
            f"Mann-Whitney p = {self.p_values[measure]:.3g} < {BALANCE_ALPHA / len(self.p_values):.3g}): a prefixed "
            "signal would "
            "differ between the sets for a reason other than training"
        )


def cosine(prefix: list[str], sets: dict[str, list[str]]) -> dict[str, np.ndarray]:
    """Each (normalised) document's largest TF-IDF cosine to a prefix document, by role (the
    vocabulary is fit on every text at once, blind to which set a text is in)."""
    try:
        vectorizer = TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True).fit(
            prefix + [t for docs in sets.values() for t in docs]
        )
    except ValueError:  # no word in any text: nothing is close to anything
        return {role: np.zeros(len(docs)) for role, docs in sets.items()}
    anchors = vectorizer.transform(prefix)
    return {
        role: cosine_similarity(vectorizer.transform(docs), anchors).max(axis=1) if docs else np.zeros(0)
        for role, docs in sets.items()
    }


def copy_coverage(prefix: list[str], sets: dict[str, list[str]]) -> dict[str, np.ndarray]:
    """Each (normalised) document's share of words covered by a run of ``COPY_WORDS`` words found
    verbatim in some prefix document, by role."""
    runs = {
        tuple(words[i : i + COPY_WORDS])
        for text in prefix
        for words in [WORD.findall(text)]
        for i in range(len(words) - COPY_WORDS + 1)
    }

    def covered(text: str) -> float:
        words = WORD.findall(text)
        hit = np.zeros(len(words), dtype=bool)
        for i in range(len(words) - COPY_WORDS + 1):
            if tuple(words[i : i + COPY_WORDS]) in runs:
                hit[i : i + COPY_WORDS] = True
        return float(hit.mean()) if len(words) else 0.0

    return {role: np.array([covered(t) for t in docs], dtype=np.float64) for role, docs in sets.items()}


def prefix_relation(prefix: Sequence[str], sets: dict[str, Sequence[str]]) -> PrefixRelation:
    """The documents to remove as derived from the prefix, and the balance tests on the rest
    (``sets`` holds at least "suspect" and "heldout")."""
    anchors = [normalise(t) for t in prefix]
    texts = {role: [normalise(t) for t in docs] for role, docs in sets.items()}  # once, for both measures
    measures = {"cosine": cosine(anchors, texts), "copy_coverage": copy_coverage(anchors, texts)}
    derived = {
        role: [int(i) for i in np.flatnonzero(np.logical_or.reduce([m[role] >= DERIVED for m in measures.values()]))]
        for role in sets
    }
    aucs, p_values = {}, {}
    for name, close in measures.items():
        suspect, heldout = (np.delete(close[r], derived[r]) for r in ("suspect", "heldout"))
        if len(suspect) == 0 or len(heldout) == 0 or np.ptp(np.r_[suspect, heldout]) == 0:
            aucs[name], p_values[name] = 0.5, 1.0
            continue
        test = mannwhitneyu(heldout, suspect, alternative="two-sided")
        aucs[name] = float(test.statistic) / (len(suspect) * len(heldout))
        p_values[name] = float(test.pvalue) if np.isfinite(test.pvalue) else 1.0
    return PrefixRelation(derived, aucs, p_values)
