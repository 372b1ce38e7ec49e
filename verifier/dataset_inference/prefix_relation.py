"""Whether the prefix documents of a prefixed signal (ReCaLL) bear on one set more than the other.

A prefixed signal scores every document after the same prefix, which keeps suspect and held-out
documents exchangeable only if the prefix is as related to one set as to the other. A document
the prefix (nearly) contains is predicted better after it by any model that copies from its
context, trained on it or not, and ReCaLL reads a better conditional likelihood as *less*
member-like. An outside attack used this: a claim's prefix set (``claim_prefix``) held held-out
documents with every fifth word replaced - under the near-duplicate bar of the set hygiene -
and a model trained on neither set gave SUPPORTED at p = 0.002. Two model-free defences, each
symmetric in the sets (so the test stays exact under the null):

- **derived documents**: a document of any set whose TF-IDF cosine (word 1-2-grams, on the
  hygiene's normalised text) to a prefix document reaches ``DERIVED_COSINE`` leaves every set
  (an edited copy of a WikiMIA text scores 0.81-0.87 against its original; the closest of 500
  other WikiMIA texts a median 0.12, the 99th percentile 0.61);
- **balance**: each remaining document's closeness to the prefix (its largest cosine to a prefix
  document) is compared between the suspect and held-out sets, two-sided Mann-Whitney. Null
  hypothesis: the prefix is as close to suspect documents as to held-out ones. Where it is
  rejected at ``BALANCE_ALPHA``, no prefixed signal is computed (topics, paraphrases and
  partial copies shared with one set only: what no per-document bar sees).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.stats import mannwhitneyu
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.metrics.pairwise import cosine_similarity

from verifier.dataset_inference.hygiene import normalise

DERIVED_COSINE = 0.5
BALANCE_ALPHA = 0.05


@dataclass(frozen=True)
class PrefixRelation:
    """How close each set's documents are to the prefix, and what follows."""

    derived: dict[str, list[int]]  # role -> indices of its documents derived from a prefix document (removed)
    closer_heldout_auc: float  # P(a held-out document is closer to the prefix than a suspect one), ties counted half
    p_value: float  # two-sided Mann-Whitney over the documents left

    @property
    def balanced(self) -> bool:
        return self.p_value >= BALANCE_ALPHA

    def as_finding(self) -> dict[str, object]:
        return {"derived_removed": {role: len(idx) for role, idx in self.derived.items()}, "derived_cosine": DERIVED_COSINE,
                "closer_heldout_auc": round(self.closer_heldout_auc, 4), "p_value": round(self.p_value, 6), "alpha": BALANCE_ALPHA,
                "balanced": self.balanced,
                "null_hypothesis": "the prefix documents are as close (TF-IDF cosine) to suspect documents as to held-out ones"}

    def reason(self) -> str:
        side = "held-out" if self.closer_heldout_auc > 0.5 else "suspect"
        return (f"the prefix documents are closer to the {side} documents than to the others (closeness AUC "
                f"{self.closer_heldout_auc:.2f}, Mann-Whitney p = {self.p_value:.3g} < {BALANCE_ALPHA}): a prefixed signal would "
                "differ between the sets for a reason other than training")


def closeness(prefix: Sequence[str], sets: dict[str, Sequence[str]]) -> dict[str, np.ndarray]:
    """Each document's largest TF-IDF cosine to a prefix document, by role (the vocabulary is fit on
    every text at once, blind to which set a text is in)."""
    texts = {role: [normalise(t) for t in docs] for role, docs in sets.items()}
    every = [normalise(t) for t in prefix] + [t for docs in texts.values() for t in docs]
    try:
        vectorizer = TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True).fit(every)
    except ValueError:  # no word in any text: nothing is close to anything
        return {role: np.zeros(len(docs)) for role, docs in texts.items()}
    anchors = vectorizer.transform([normalise(t) for t in prefix])
    return {role: cosine_similarity(vectorizer.transform(docs), anchors).max(axis=1) if docs else np.zeros(0)
            for role, docs in texts.items()}


def prefix_relation(prefix: Sequence[str], sets: dict[str, Sequence[str]]) -> PrefixRelation:
    """The documents to remove as derived from the prefix, and the balance test on the rest
    (``sets`` holds at least "suspect" and "heldout")."""
    close = closeness(prefix, sets)
    derived = {role: [int(i) for i in np.flatnonzero(values >= DERIVED_COSINE)] for role, values in close.items()}
    suspect, heldout = (np.delete(close[r], derived[r]) for r in ("suspect", "heldout"))
    if len(suspect) == 0 or len(heldout) == 0 or np.ptp(np.r_[suspect, heldout]) == 0:
        return PrefixRelation(derived, 0.5, 1.0)
    test = mannwhitneyu(heldout, suspect, alternative="two-sided")
    auc = float(test.statistic) / (len(suspect) * len(heldout))
    return PrefixRelation(derived, auc, float(test.pvalue) if np.isfinite(test.pvalue) else 1.0)
