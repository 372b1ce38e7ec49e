"""Test a model against marks (``verifier marks test``) and natural identifiers: exact rank tests.

Each trial is one published mark (or real identifier) with its siblings (or fresh draws), in the
same context. The target scores them all; the mark's rank among them gives an exact p-value
(``stats.rank``), and the trials' p-values are combined by the method the policy names.
The statistic is fixed in code, never chosen after seeing scores:
- canaries, traps and identifiers: the log-likelihood of context + mark (the context is the
  published text before the mark's first occurrence, the same for every sibling, so only the
  mark's own tokens can differ);
- rephrasings: the mean token log-probability of the whole rephrasing (they differ throughout,
  and in length).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

import numpy as np

from verifier.errors import VerifierError
from verifier.identifiers.formats import find_identifiers, fresh_draws, words_before
from verifier.marks.registration import Registration, Secrets
from verifier.stats.rank import Combine, combine, marks_needed, paired_tests, rank_p_value, smallest_p
from verifier.targets.cache import text_digest

# (role, texts, signal) -> one score per text, higher = more member-like
Scorer = Callable[[str, list[str], str], np.ndarray]
STATISTIC = {"canary": "log_likelihood", "trap": "log_likelihood", "identifier": "log_likelihood", "rephrasing": "loss"}
Status = Literal["significant", "not_significant", "design_too_small", "no_marks"]


@dataclass(frozen=True)
class Trial:
    """One mark: the published text (in context) and its siblings (in the same context)."""

    id: str
    kind: str  # canary | trap | rephrasing | identifier
    detail: str  # the format, or the identifier's format
    published: str
    siblings: list[str]


@dataclass(frozen=True)
class TrialResult:
    id: str
    kind: str
    detail: str
    n_siblings: int
    p_value: float
    standardised: float  # (published - mean of siblings) / their standard deviation
    tied: int  # siblings scoring exactly as the published mark (e.g. the mark cut off by max_tokens): counted against it


@dataclass
class MarksFinding:
    """What a rank test of marks established; plain data for the findings and the report."""

    status: Status
    null_hypothesis: str
    method: Combine
    alpha: float
    level: float
    p_value: float | None
    smallest_p: float
    n_marks: int
    results: list[TrialResult] = field(default_factory=list)
    excluded: dict[str, str] = field(default_factory=dict)  # mark id -> why it was not tested
    effect_size: float | None = None  # mean standardised score of the published marks among their siblings
    marks_needed: int | None = None
    target_power: float = 0.8
    paired: dict[str, Any] | None = None  # STAMP-style tests over rephrased documents
    by_kind: list[dict[str, Any]] = field(default_factory=list)

    def as_finding(self) -> dict[str, Any]:
        return asdict(self)


def context_before(document: str, mark: str, words: int) -> str | None:
    """The last ``words`` words before ``mark``'s first occurrence in ``document`` (None: absent)."""
    at = document.find(mark)
    return None if at < 0 else words_before(document, at, words)


def registered_trials(registration: Registration, secrets: Secrets, suspect: list[str],
                      context_words: int) -> tuple[list[Trial], dict[str, str]]:
    """One trial per registered mark; a mark that does not occur in its published document is
    reported and not tested (a fact about the registrant's documents, fixed before training).

    Every registered document must be in the suspect set: testing a subset of the marks would let
    whoever chose the subset keep the marks that happened to score well."""
    by_digest = {text_digest(t): t for t in suspect}
    missing = [m.document for m in registration.predicate.marks if m.document_sha256 not in by_digest]
    if len(missing) == len(registration.predicate.marks):
        raise VerifierError(f"refused: the registration is for other documents (none of its {len(missing)} published documents is in the suspect set)")
    if missing:
        raise VerifierError(f"refused: {len(missing)} of the {len(registration.predicate.marks)} registered documents are not in the suspect "
                            f"set (first: {missing[0]!r}); every registered mark must be tested, or marks could be chosen after seeing their scores")
    trials, excluded = [], {}
    by_id = {m.id: m for m in secrets.marks}
    for mark in registration.predicate.marks:
        secret = by_id[mark.id]
        document = by_digest[mark.document_sha256]
        siblings = [s.text for s in secret.siblings]
        if mark.kind == "rephrasing":
            if document != secret.published.text:
                excluded[mark.id] = "the published document is not the registered rephrasing"
                continue
            trials.append(Trial(mark.id, mark.kind, "rephrasing", document, siblings))
            continue
        context = context_before(document, secret.published.text, context_words)
        if context is None:
            excluded[mark.id] = f"the mark does not occur in its published document {mark.document!r}"
            continue
        trials.append(Trial(mark.id, mark.kind, mark.format or mark.kind, context + secret.published.text,
                            [context + s for s in siblings]))
    return trials, excluded


def identifier_trials(suspect: list[str], samples: int, context_words: int, max_identifiers: int) -> tuple[list[Trial], dict[str, int]]:
    """One trial per distinct random-looking identifier in the suspect set; beyond ``max_identifiers``,
    those with the smallest SHA-256 (a choice nobody can steer without changing the identifiers)."""
    found, dropped = find_identifiers(suspect, context_words)
    if len(found) > max_identifiers:
        dropped["over the limit of identifiers tested"] = len(found) - max_identifiers
        found = sorted(found, key=lambda item: hashlib.sha256(item.identifier.encode()).hexdigest())[:max_identifiers]
    trials = [Trial(f"identifier-{i}", "identifier", item.format, item.context + item.identifier,
                    [item.context + fresh for fresh in fresh_draws(item, samples)]) for i, item in enumerate(found)]
    return trials, dropped


def run_rank_tests(trials: list[Trial], scorer: Scorer, null_hypothesis: str, method: Combine, alpha: float, level: float,
                   target_power: float, seed: int, excluded: dict[str, str] | None = None) -> MarksFinding:
    """Score every trial, rank each published mark among its siblings, combine; the model is not
    queried when the design cannot reach ``alpha`` even if every mark ranked first."""
    usable = [t for t in trials if method == "fisher" or 1 / (len(t.siblings) + 1) <= level]
    kept = {t.id for t in usable}
    excluded = dict(excluded or {})
    for t in trials:
        if t.id not in kept:
            excluded[t.id] = f"{len(t.siblings)} siblings cannot reach the per-mark level {level} (smallest p = 1/{len(t.siblings) + 1})"
    floor = smallest_p([len(t.siblings) for t in usable], method, level)
    finding = MarksFinding("no_marks", null_hypothesis, method, alpha, level, None, floor, len(usable), excluded=excluded,
                           target_power=target_power)
    if not usable:
        return finding
    if floor > alpha:
        finding.status = "design_too_small"
        return finding
    results, scores = [], {}
    for statistic in sorted({STATISTIC[t.kind] for t in usable}):
        group = [t for t in usable if STATISTIC[t.kind] == statistic]
        published = scorer("marks", [t.published for t in group], statistic)
        siblings = scorer("siblings", [s for t in group for s in t.siblings], statistic)
        offset = 0
        for t, score in zip(group, published):
            own = siblings[offset: offset + len(t.siblings)]
            offset += len(t.siblings)
            spread = float(np.std(own, ddof=1)) if len(own) > 1 else 0.0
            standardised = (float(score) - float(np.mean(own))) / spread if spread > 0 else 0.0
            scores[t.id] = (float(score), float(np.mean(own)))
            results.append(TrialResult(t.id, t.kind, t.detail, len(t.siblings), rank_p_value(float(score), own), standardised,
                                       int(np.sum(own == score))))
    order = {t.id: i for i, t in enumerate(usable)}
    results.sort(key=lambda r: order[r.id])
    p_values = [r.p_value for r in results]
    finding.results = results
    finding.p_value = combine(p_values, method, level)
    finding.status = "significant" if finding.p_value <= alpha else "not_significant"
    finding.effect_size = float(np.mean([r.standardised for r in results]))
    finding.marks_needed = marks_needed(p_values, alpha, target_power, method, level, seed=seed)
    for kind in sorted({r.kind for r in results}):
        mine = [r for r in results if r.kind == kind]
        finding.by_kind.append({"kind": kind, "marks": len(mine), "combined_p": combine([r.p_value for r in mine], method, level),
                                "share_at_level": float(np.mean([r.p_value <= level for r in mine])),
                                "mean_standardised": float(np.mean([r.standardised for r in mine]))})
    rephrased = [t.id for t in usable if t.kind == "rephrasing"]
    paired = paired_tests([scores[i][0] for i in rephrased], [scores[i][1] for i in rephrased])
    finding.paired = asdict(paired) if paired is not None else None
    return finding
