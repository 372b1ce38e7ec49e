"""Can a model-free classifier tell two document sets apart? An exact test, and what it could miss.

Every set-level membership test assumes its comparison sets are exchangeable apart from training.
This check tries to refute that with a classifier that never sees the model but sees what the
model sees: case-sensitive word n-grams with punctuation, character 2-4-grams, and the dense
surface features of ``baselines.surface`` (casing, typography, whitespace, length, format).

Classifier: ridge regression on the 0/1 set label over those features (kernel form: the sum of
the three blocks' linear kernels), scored out-of-fold over 5 seeded random folds, averaged over 3
fold assignments. The featurisers
are fitted on the pooled texts without labels, so the out-of-fold scores are one fixed linear map
of the labels, ``scores = M @ labels``. That makes an exact permutation test cheap: the AUC of the
observed labelling against the AUCs of ``n_permutations`` random relabellings, all in one matrix
product.

Null hypothesis: the two sets are exchangeable for this classifier. Reported:
- ``auc``: out-of-fold AUC of the observed labelling, suspect = positive class;
- ``p_value``: (1 + #{relabelled AUC >= observed}) / (1 + n_permutations), exact;
- ``p_value_mirrored``: the same in the other tail, (1 + #{relabelled AUC <= observed}) / (1 +
  n_permutations). Random halves of one population sit near the null; sets built to mirror each
  other (documents matched in pairs, one side each) score far *below* it. Such a split was chosen,
  not drawn, and a chosen split can make any difference in the model's scores (``mirrored``);
- ``auc_corrected`` and its 95% interval: the AUC re-centred on the permutation null's median
  (cross-validated AUCs sit below 0.5 under the null) with the null's own spread, so the
  interval covers 0.5 in 95% of exchangeable pairs at any set size;
- ``smallest_detectable``: the corrected AUC this check would detect with 80% power at this n.
The interval and the smallest detectable AUC assume that under a shift the statistic's spread is
the null's, moved sideways: approximate, where the p-value is exact.
A check that detects nothing has not shown that the sets are alike; the decision rules in
``set_membership`` use ``exchangeable`` (nothing detected *and* the interval's upper end below a
margin that shrinks with n) and say how large a shift could have been missed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field

import numpy as np
from scipy.stats import rankdata
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.preprocessing import StandardScaler

from verifier.baselines.surface import SURFACE_FEATURES, surface_features
from verifier.errors import VerifierError

DEFAULT_PERMUTATIONS = 999
DEFAULT_ALPHA = 0.05
DEFAULT_MIRROR_ALPHA = 0.01  # lower tail: refuses about 1% of honest random splits
DEFAULT_MARGIN_SCALE = 2.0  # margin(n) = 0.5 + scale / sqrt(n), capped
DEFAULT_MARGIN_CAP = 0.70
MAX_PER_SET = 2500  # the kernel is [N, N]; larger sets are checked on a seeded subsample
FOLDS = 5
REPEATS = 3  # fold assignments averaged: less cross-validation noise, same exact test
RIDGE = 1.0


@dataclass(frozen=True)
class ExchangeabilityCheck:
    """The blind check of one pair of sets, as plain data."""

    auc: float
    auc_corrected: float
    ci_low: float
    ci_high: float
    p_value: float
    p_value_mirrored: float
    null_median: float
    smallest_detectable: float
    margin: float
    alpha: float
    detected: bool  # p < alpha: the sets are not exchangeable
    mirrored: bool  # p_value_mirrored < mirror_alpha: more alike than random halves, so matched, not drawn
    # Not detected and ci_high < margin: the check found no shift and could have seen one of the
    # margin's size. It does not rule out a shift the model sees and this classifier does not.
    exchangeable: bool
    n_first: int
    n_second: int
    n_checked_first: int
    n_checked_second: int
    n_permutations: int
    seed: int
    margin_rule: tuple[float, float] = (DEFAULT_MARGIN_SCALE, DEFAULT_MARGIN_CAP)  # (scale, cap) of margin_for
    null_hypothesis: str = (
        "the two sets are exchangeable for a model-free classifier of words, characters and surface form"
    )
    # The classifier's out-of-fold scores of the checked documents (first set first) and their
    # labels: the blind row of the report's comparison reuses them instead of fitting again.
    scores: np.ndarray = field(default_factory=lambda: np.empty(0), repr=False, compare=False)
    labels: np.ndarray = field(default_factory=lambda: np.empty(0), repr=False, compare=False)

    def as_finding(self) -> dict[str, object]:
        data = asdict(self)
        del data["scores"], data["labels"]
        return data

    def describe(self) -> str:
        """One clause for a summary, worded so absence of detection is not read as absence of shift."""
        numbers = (
            f"blind classifier AUC {self.auc_corrected:.3f} [{self.ci_low:.3f}, {self.ci_high:.3f}], "
            f"permutation p = {self.p_value:.3g}"
        )
        if self.detected:
            return f"the sets differ in ways a classifier that never sees the model can see ({numbers})"
        if self.mirrored:
            return (
                f"the sets are more alike than random halves of one population would be ({numbers}, lower-tail "
                f"p = {self.p_value_mirrored:.3g}): they look matched to each other, and a split chosen rather than "
                "drawn "
                f"can produce any difference in the model's scores"
            )
        if not self.exchangeable:
            return (
                f"no shift detected, but at this size the check could not rule out one large enough to matter "
                f"({numbers}; upper end above the margin {self.margin:.3f}; smallest detectable AUC "
                f"{self.smallest_detectable:.3f})"
            )
        return f"no shift detected ({numbers}; smallest detectable AUC {self.smallest_detectable:.3f})"


SIZE_LIMIT = 100_000


def size_to_establish(check: ExchangeabilityCheck) -> int | None:
    """Documents per set at which this check would establish exchangeability if the blind AUC stayed
    where it is and the null's spread shrank as 1 / sqrt(n) (as it does for a fixed population); None
    when no size would (the observed AUC is at or above the margin's cap) or the sets already suffice."""
    n = min(check.n_first, check.n_second)
    spread = check.ci_high - check.auc_corrected  # the null's half-width at n
    if check.detected or check.mirrored or check.exchangeable or spread <= 0:
        return None
    for size in np.unique(np.round(np.logspace(np.log10(n + 1), np.log10(SIZE_LIMIT), 200)).astype(int)):
        if check.auc_corrected + spread * np.sqrt(n / size) < margin_for(int(size), *check.margin_rule):
            return int(size)
    return None


def margin_for(n: int, scale: float = DEFAULT_MARGIN_SCALE, cap: float = DEFAULT_MARGIN_CAP) -> float:
    """The largest tolerated upper end of the blind AUC interval at n documents per set.

    It shrinks with n because a set-level test's power grows with n: a shift too small to
    matter at 50 documents can be mistaken for membership at 1,000.
    """
    return float(min(cap, 0.5 + scale / np.sqrt(max(1, n))))


def blind_kernel(texts: Sequence[str]) -> np.ndarray:
    """[N, N] linear kernel over word n-grams, character n-grams and surface features (each block ~unit diagonal)."""
    texts = list(texts)
    word = TfidfVectorizer(lowercase=False, token_pattern=r"(?u)\b\w+\b|[^\w\s]", ngram_range=(1, 2), sublinear_tf=True)
    char = TfidfVectorizer(analyzer="char", ngram_range=(2, 4), lowercase=False, sublinear_tf=True)
    surface = StandardScaler().fit_transform(surface_features(texts)) / np.sqrt(len(SURFACE_FEATURES))
    kernel = surface @ surface.T
    for vectorizer in (word, char):
        try:
            matrix = vectorizer.fit_transform(texts)
        except ValueError:  # no token at all (e.g. punctuation-free, one-character texts): the block adds nothing
            continue
        kernel += (matrix @ matrix.T).toarray()
    return kernel


def out_of_fold_operator(kernel: np.ndarray, folds: np.ndarray, ridge: float = RIDGE) -> np.ndarray:
    """M with out-of-fold ridge predictions = M @ labels, for any labelling (features fitted label-blind)."""
    n = len(kernel)
    operator = np.zeros((n, n))
    for fold in np.unique(folds):
        test, train = np.flatnonzero(folds == fold), np.flatnonzero(folds != fold)
        k_train = kernel[np.ix_(train, train)]
        centre = np.eye(len(train)) - 1.0 / len(train)  # intercept: the training labels' mean
        weights = np.linalg.solve(k_train + ridge * np.eye(len(train)), centre)
        operator[np.ix_(test, train)] = kernel[np.ix_(test, train)] @ weights + 1.0 / len(train)
    return operator


def column_aucs(scores: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """AUC of each column of ``scores`` [N, B] against the matching column of 0/1 ``labels`` [N, B]."""
    ranks = rankdata(scores, axis=0)
    positives = labels.sum(axis=0)
    negatives = len(labels) - positives
    return ((ranks * labels).sum(axis=0) - positives * (positives + 1) / 2) / (positives * negatives)


def check_exchangeable(
    first_texts: Sequence[str],
    second_texts: Sequence[str],
    alpha: float = DEFAULT_ALPHA,
    mirror_alpha: float = DEFAULT_MIRROR_ALPHA,
    n_permutations: int = DEFAULT_PERMUTATIONS,
    margin_scale: float = DEFAULT_MARGIN_SCALE,
    margin_cap: float = DEFAULT_MARGIN_CAP,
    seed: int = 0,
) -> ExchangeabilityCheck:
    """Test whether ``first_texts`` (positive class) and ``second_texts`` are exchangeable."""
    n1, n2 = len(first_texts), len(second_texts)
    if min(n1, n2) < FOLDS:
        raise VerifierError(f"blind exchangeability check: needs at least {FOLDS} documents per set, got {n1} and {n2}")
    rng = np.random.default_rng(seed)
    keep1 = np.sort(rng.permutation(n1)[:MAX_PER_SET])
    keep2 = np.sort(rng.permutation(n2)[:MAX_PER_SET])
    texts = list(first_texts) + list(second_texts)
    kernel = blind_kernel([texts[i] for i in np.r_[keep1, n1 + keep2]])
    c1, c2 = len(keep1), len(keep2)
    labels = np.r_[np.ones(c1), np.zeros(c2)]
    operator = (
        sum(out_of_fold_operator(kernel, rng.permutation(np.arange(c1 + c2) % FOLDS), RIDGE) for _ in range(REPEATS))
        / REPEATS
    )
    relabelled = np.stack([labels] + [rng.permutation(labels) for _ in range(n_permutations)], axis=1)
    relabelled_scores = operator @ relabelled
    aucs = column_aucs(relabelled_scores, relabelled)
    observed, null = float(aucs[0]), aucs[1:]
    q = dict(zip((0.025, 0.2, 0.5, 0.975, 1 - alpha), np.quantile(null, [0.025, 0.2, 0.5, 0.975, 1 - alpha])))
    corrected = float(np.clip(0.5 + observed - q[0.5], 0.0, 1.0))
    p_value = float((1 + (null >= observed).sum()) / (1 + n_permutations))
    margin = margin_for(min(n1, n2), margin_scale, margin_cap)
    ci_low = max(0.0, corrected - (q[0.975] - q[0.5]))
    ci_high = min(1.0, corrected + (q[0.5] - q[0.025]))
    p_value_mirrored = float((1 + (null <= observed).sum()) / (1 + n_permutations))
    detected, mirrored = p_value < alpha, p_value_mirrored < mirror_alpha
    return ExchangeabilityCheck(
        auc=round(observed, 6),
        auc_corrected=round(float(corrected), 6),
        ci_low=round(float(ci_low), 6),
        ci_high=round(float(ci_high), 6),
        p_value=p_value,
        p_value_mirrored=p_value_mirrored,
        null_median=round(float(q[0.5]), 6),
        smallest_detectable=round(float(0.5 + (q[1 - alpha] - q[0.5]) + (q[0.5] - q[0.2])), 6),
        margin=round(margin, 6),
        alpha=alpha,
        detected=detected,
        mirrored=mirrored,
        exchangeable=bool(not detected and not mirrored and ci_high < margin),
        n_first=n1,
        n_second=n2,
        n_checked_first=c1,
        n_checked_second=c2,
        n_permutations=n_permutations,
        seed=seed,
        margin_rule=(margin_scale, margin_cap),
        scores=relabelled_scores[:, 0],
        labels=labels.astype(int),
    )
