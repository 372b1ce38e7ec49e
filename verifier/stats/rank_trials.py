"""Exact rank tests over trials: one published mark or real identifier among its unpublished siblings.

The engine the marks and identifiers subsystems share (each builds its own trials).

Each trial is one published mark (or real identifier) with its siblings (or fresh draws), in the
same context. The target scores them all; the mark's rank among them gives an exact p-value
(``stats.rank``), and the trials' p-values are combined by the method the policy names.
The statistic is fixed in code, never chosen after seeing scores:
- canaries, traps and identifiers: the log-likelihood of context + mark (the context is the
  published text before the mark's first occurrence, the same for every sibling, so only the
  mark's own tokens can differ);
- rephrasings: the mean token log-probability of the whole rephrasing (they differ throughout,
  and in length);
- output-only marks (cue/reply, co-occurrence): a score read from the model's generations for
  the trial's prompt (the same prompt for the published candidate and its siblings), per
  candidate: how much of a reply the generations reproduce, or how often a candidate's pairs
  co-occur in them (``marks.replies``). The generations do not depend on which candidate was
  published, so under H0 the published one's rank is uniform among them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

import numpy as np

from verifier.stats.rank import Combine, combine, marks_needed, paired_tests, rank_p_value, smallest_p

# (role, texts, signal) -> one score per text, higher = more member-like
Scorer = Callable[[str, list[str], str], np.ndarray]
# (trials of output-only kinds) -> per trial, the published candidate's score and its siblings'
AnswerScorer = Callable[[list["Trial"]], list[tuple[float, np.ndarray]]]
STATISTIC = {
    "canary": "log_likelihood",
    "trap": "log_likelihood",
    "identifier": "log_likelihood",
    "rephrasing": "loss",
    "cue_reply": "replies",
    "cooccurrence": "pairs",
}
FROM_OUTPUTS = frozenset({"replies", "pairs"})  # statistics read from generated text, not log-probs
Status = Literal["significant", "not_significant", "design_too_small", "no_marks"]


@dataclass(frozen=True)
class Trial:
    """One mark: the published text (in context) and its siblings (in the same context)."""

    id: str
    kind: str  # canary | trap | rephrasing | identifier
    detail: str  # the format, or the identifier's format
    published: str
    siblings: list[str]
    prompt: str | None = None  # output-only marks: what the model is asked to continue
    controls: tuple[
        str, ...
    ] = ()  # output-only marks: prompts no candidate may come back after (set aside if one does)


@dataclass(frozen=True)
class TrialResult:
    id: str
    kind: str
    detail: str
    n_siblings: int
    p_value: float
    standardised: float  # (published - mean of siblings) / their standard deviation
    tied: (
        int  # siblings scoring exactly as the published mark (e.g. the mark cut off by max_tokens): counted against it
    )


@dataclass
class RankFinding:
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


def words_before(text: str, at: int, words: int) -> str:
    """The last ``words`` words before position ``at`` (none for 0), ending with the space that preceded ``at`` if
    any."""
    before = text[:at]
    kept = before.split()[-words:] if words > 0 else []
    return " ".join(kept) + (" " if kept and before[-1:].isspace() else "")


def run_rank_tests(
    trials: list[Trial],
    scorer: Scorer,
    null_hypothesis: str,
    method: Combine,
    alpha: float,
    level: float,
    target_power: float,
    seed: int,
    excluded: dict[str, str] | None = None,
    answer_scorer: AnswerScorer | None = None,
    untested: frozenset[str] | set[str] = frozenset(),
) -> RankFinding:
    """Score every trial (output-only kinds through ``answer_scorer``, which sets a trial aside by
    giving its published candidate a NaN score), rank each published mark among its siblings,
    combine; ``untested`` trials (the target cannot test them) enter the combination at p = 1,
    unscored. The model is not queried when the design cannot reach ``alpha`` even if every mark
    ranked first."""
    usable = [t for t in trials if method == "fisher" or 1 / (len(t.siblings) + 1) <= level]
    kept = {t.id for t in usable}
    excluded = dict(excluded or {})
    for t in trials:
        if t.id not in kept:
            excluded[t.id] = (
                f"{len(t.siblings)} siblings cannot reach the per-mark level {level} (smallest p = "
                f"1/{len(t.siblings) + 1})"
            )
    floor = smallest_p([len(t.siblings) for t in usable], method, level)
    finding = RankFinding(
        "no_marks",
        null_hypothesis,
        method,
        alpha,
        level,
        None,
        floor,
        len(usable),
        excluded=excluded,
        target_power=target_power,
    )
    if not usable:
        return finding
    if floor > alpha:
        finding.status = "design_too_small"
        return finding
    results, scores = [], {}
    scored: list[tuple[Trial, float, np.ndarray]] = [
        (t, 0.0, np.zeros(len(t.siblings))) for t in usable if t.id in untested
    ]
    for statistic in sorted({STATISTIC[t.kind] for t in usable if t.id not in untested} - FROM_OUTPUTS):
        group = [t for t in usable if STATISTIC[t.kind] == statistic and t.id not in untested]
        published = scorer("marks", [t.published for t in group], statistic)
        siblings = scorer("siblings", [s for t in group for s in t.siblings], statistic)
        offset = 0
        for t, score in zip(group, published):
            scored.append((t, float(score), siblings[offset : offset + len(t.siblings)]))
            offset += len(t.siblings)
    answered = [t for t in usable if STATISTIC[t.kind] in FROM_OUTPUTS and t.id not in untested]
    if answered:
        if answer_scorer is None:
            raise ValueError("output-only marks need an answer scorer")
        for t, (p, own) in zip(answered, answer_scorer(answered)):
            if np.isfinite(p):
                scored.append((t, float(p), np.asarray(own)))
            else:
                finding.excluded[t.id] = (
                    "a candidate came back after a control prompt (set aside, blind to which was published)"
                )
    if not scored:
        return finding
    for t, score, own in scored:
        spread = float(np.std(own, ddof=1)) if len(own) > 1 else 0.0
        standardised = (score - float(np.mean(own))) / spread if spread > 0 else 0.0
        scores[t.id] = (score, float(np.mean(own)))
        tied = int(np.sum(own == score))
        results.append(
            TrialResult(t.id, t.kind, t.detail, len(t.siblings), rank_p_value(score, own), standardised, tied)
        )
    finding.n_marks = len(scored)
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
        finding.by_kind.append(
            {
                "kind": kind,
                "marks": len(mine),
                "combined_p": combine([r.p_value for r in mine], method, level),
                "share_at_level": float(np.mean([r.p_value <= level for r in mine])),
                "mean_standardised": float(np.mean([r.standardised for r in mine])),
            }
        )
    rephrased = [t.id for t in usable if t.kind == "rephrasing"]
    paired = paired_tests([scores[i][0] for i in rephrased], [scores[i][1] for i in rephrased])
    finding.paired = asdict(paired) if paired is not None else None
    return finding
