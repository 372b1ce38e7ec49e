"""What the two rank-test routes share: their parameters, their verdict table and their report.

Both routes (registered marks, natural identifiers) test H0 "not trained on" with a null drawn
from the mark's own generator, so a significant result is evidence of training, never of its
absence: a non-significant one is INCONCLUSIVE with the number of marks that would have been
needed, and nothing here can reach SUPPORTED for a "not trained on" claim.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from pydantic import Field

from verifier.claims import ClaimKind
from verifier.findings import Cell, Notes, Section, Table
from verifier.routes.base import RouteParams, same_for
from verifier.scoring.session import RouteContext
from verifier.stats.formats import num, pval
from verifier.stats.rank_trials import STATISTIC, RankFinding
from verifier.trust.tags import tag
from verifier.verdicts import Verdict

KINDS = frozenset({ClaimKind.TRAINED_ON, ClaimKind.NOT_TRAINED_ON, ClaimKind.DECONTAMINATED})
TRAINED = {
    ClaimKind.TRAINED_ON: Verdict.SUPPORTED,
    ClaimKind.NOT_TRAINED_ON: Verdict.CONTRADICTED,
    ClaimKind.DECONTAMINATED: Verdict.CONTRADICTED,
}
SHOWN_MARKS = 150
STATISTIC_WORDS = {
    "log_likelihood": "log-likelihood of the mark in its published context",
    "loss": "mean token log-probability of the whole text",
    "replies": "from generated text only: the longest run of a reply's opening words (two or more) in each "
    "generation for its cue, summed",
    "pairs": "from generated text only: the candidate's word pairs found within 8 words of each other in each "
    "generation for its anchor, summed",
}


class RankTestParams(RouteParams):
    alpha: float = Field(
        0.05,
        gt=0,
        le=0.2,
        json_schema_extra={"weaker": "higher"},
        description="the level the combined p-value must reach",
    )
    combine: Literal["fisher", "binomial"] = Field(
        "fisher", json_schema_extra={"weaker": "either"}, description="how independent marks' p-values are combined"
    )
    level: float = Field(
        0.05,
        gt=0,
        le=0.5,
        json_schema_extra={"weaker": "either"},
        description="binomial: the per-mark level a mark must reach to count",
    )
    context_words: int = Field(
        32,
        ge=0,
        le=200,
        json_schema_extra={"weaker": "either"},
        description="words of published text before a mark scored with it",
    )
    target_power: float = Field(
        0.8, gt=0, lt=1, description="the power at which the report plans how many marks would be needed"
    )


def verdict_table(no_result: list[str]) -> dict[str, dict[ClaimKind, Verdict] | None]:
    """significant -> trained; not significant -> INCONCLUSIVE; ``no_result`` statuses decide nothing."""
    return {
        "significant": TRAINED,
        "not_significant": same_for(KINDS, Verdict.INCONCLUSIVE),
        **dict.fromkeys(no_result),
    }


def scorer(ctx: RouteContext, secret_key: str | None = None):  # noqa: ANN202 - a marks.evaluate.Scorer
    """Score through the audit's cache; every scored text is recorded for the bundle by its SHA-256,
    siblings (secret until tested) by an HMAC keyed with ``secret_key``: whoever holds the siblings
    file can match them, nobody else can test guesses against the bundle."""

    def keyed(text: str) -> str:
        return tag(secret_key.encode(), text.encode())

    def score(role: str, texts: list[str], signal: str) -> np.ndarray:
        if role == "siblings" and secret_key is not None:
            return ctx.features(role, texts, [signal], digest=keyed)[:, 0]
        return ctx.features(role, texts, [signal])[:, 0]

    return score


# What a route calls its marks and their null draws, in sentences and tables.
WORDS = {
    "marks": ("published marks", "siblings", "siblings"),
    "identifiers": ("real identifiers", "fresh draws of their formats", "fresh draws"),
}


def describe(finding: RankFinding, what: str) -> str:
    """The one-sentence summary of a finished rank test (``what``: "marks" or "identifiers")."""
    tested, null, _ = WORDS[what]
    if finding.status == "design_too_small":
        return (
            f"{finding.n_marks} {what} cannot reach alpha {finding.alpha}: even if every one ranked first among its "
            f"{null}, the combined p-value would be {finding.smallest_p:.3g}; the model was not queried"
        )
    needed = (
        f"about {finding.marks_needed} {what} would give power {finding.target_power:.0%} if the observed effect is "
        "real"
        if finding.marks_needed
        else f"the {what} do not lean the member way, so no number of them would detect it"
    )
    verdict = (
        f"the {tested} rank above their {null}" if finding.status == "significant" else "no significant difference"
    )
    return (
        f"{verdict}: combined p = {finding.p_value:.3g} ({finding.method}, {finding.n_marks} {what}, alpha "
        f"{finding.alpha}; "
        f"H0: {finding.null_hypothesis}); effect size {finding.effect_size:.2f} standard deviations"
        + ("" if finding.status == "significant" else f"; {needed}")
    )


def sections(finding: RankFinding, what: str) -> list[Section]:
    """Report sections of a rank test: the test, per kind, per mark, the STAMP-style paired tests, exclusions."""
    statistics = sorted({STATISTIC[r.kind] for r in finding.results}) or ["log_likelihood"]
    rows: list[list[Cell]] = [
        ["null hypothesis (H0)", finding.null_hypothesis],
        ["statistic", "; ".join(STATISTIC_WORDS[s] for s in statistics)],
        ["p-value of each", f"exact: (1 + {WORDS[what][1]} scoring at least as high) / (their number + 1)"],
        [
            "combination",
            "Fisher's method" if finding.method == "fisher" else f"binomial count of marks with p <= {finding.level}",
        ],
        [f"{what} tested", finding.n_marks],
        [
            f"{what} tied with a sibling (counted against the mark: cut off by max_tokens; for an output-only mark, "
            "usually every candidate at 0, none came back)",
            sum(r.tied > 0 for r in finding.results),
        ],
        ["smallest p-value this design could give", pval(finding.smallest_p)],
        [
            "combined p-value",
            pval(finding.p_value) + f" (alpha {finding.alpha})" if finding.p_value is not None else "not computed",
        ],
        [
            f"effect size (mean standardised score of the {WORDS[what][0]} among their {WORDS[what][1]})",
            num(finding.effect_size, 3),
        ],
        [
            f"{what} needed for power {finding.target_power:.0%} (resampling the observed p-values)",
            finding.marks_needed if finding.marks_needed is not None else "none: no member-like effect",
        ],
    ]
    out: list[Section] = [Table("Rank test", ["item", "value"], rows)]
    if finding.by_kind:
        out.append(
            Table(
                "By kind of mark",
                ["kind", "marks", "combined p", f"share with p <= {finding.level}", "mean standardised score"],
                [
                    [
                        k["kind"],
                        k["marks"],
                        pval(k["combined_p"]),
                        num(k["share_at_level"], 3),
                        num(k["mean_standardised"], 2),
                    ]
                    for k in finding.by_kind
                ],
            )
        )
    if finding.results:
        shown = finding.results[:SHOWN_MARKS]
        note = f"the first {SHOWN_MARKS} of {len(finding.results)}" if len(finding.results) > SHOWN_MARKS else None
        out.append(
            Table(
                f"Per {what[:-1]}",
                [what[:-1], "kind", "format", WORDS[what][2], "ties", "p-value", "standardised score"],
                [
                    [r.id, r.kind, r.detail, r.n_siblings, r.tied, pval(r.p_value), num(r.standardised, 2)]
                    for r in shown
                ],
                note=note,
            )
        )
    if finding.paired:
        p = finding.paired
        out.append(
            Table(
                "STAMP-style paired tests over rephrased documents (published minus mean of private rephrasings)",
                [
                    "documents",
                    "mean difference",
                    "Cohen's d_z",
                    "paired t-test p (one-sided)",
                    "Wilcoxon signed-rank p (one-sided)",
                ],
                [
                    [
                        p["n_documents"],
                        num(p["mean_difference"], 4),
                        num(p["effect_size"], 3),
                        pval(p["t_p_value"]),
                        pval(p["wilcoxon_p_value"]),
                    ]
                ],
                note="Shown as STAMP reports them; their nulls are approximate, so the verdict rests on the exact "
                "rank test.",
            )
        )
    if finding.excluded:
        items = [f"{key}: {why}" for key, why in list(finding.excluded.items())[:SHOWN_MARKS]]
        out.append(Notes(f"Not tested ({len(finding.excluded)})", items))
    return out
