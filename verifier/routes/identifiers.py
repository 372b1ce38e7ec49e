"""Route: natural identifiers in the suspect set -> exact rank tests against fresh draws of their format.

Dataset inference without a held-out set: hashes, UUIDs, short-URL paths and API-key-like
tokens already in the suspect documents are scored in their context against freshly drawn
identifiers of the same format (``identifiers.trials``). It needs only the suspect set, so the
policy places it after dataset inference (which decides whenever a held-out set is given, so the
two never both test one claim): it decides when the suspect documents hold enough random-looking
identifiers to reach alpha; with none, or too few, it decides nothing and the walk goes on.
Identifiers chosen by someone who could query the model would pass every check, so the suspect
set must declare a year before the model's release (or not after its training cutoff).
"""

from __future__ import annotations

from datetime import date

from pydantic import Field

from verifier.claims import Role
from verifier.findings import Notes, RouteOutcome, Table
from verifier.identifiers.trials import NULL, identifier_trials
from verifier.routes._rank_tests import KINDS, RankTestParams, describe, scorer, sections, verdict_table
from verifier.routes.base import Route, register
from verifier.scoring.session import RouteContext
from verifier.stats.rank_trials import run_rank_tests

LIMITATIONS = [
    "The test is about the identifiers, not the documents: an identifier also published elsewhere (a popular commit "
    "hash, "
    "a shared link) tests every page that quotes it.",
    "It is valid when the identifiers were drawn at random from their format: version-4 UUIDs, digests, generated "
    "short "
    "links and keys. Hand-made strings that pass the filters (a vanity link with digits) break it, and so do "
    "identifiers "
    "chosen by someone who could query the model: the suspect documents must have been fixed before the model was "
    "available.",
    "Identifiers whose own parts predict each other (a block of four or more characters that recurs, forwards or "
    "mirrored, "
    "or a progression such as 13579) are not tested: a model that copies from its context continues them from their "
    "first "
    "part without having been trained on them, while fresh draws that keep only each position's character class "
    "cannot be "
    "continued so, so the null would not hold for both alike. Other structure a model could exploit without training "
    "(a "
    "pattern these filters do not name) would break the test in the same way.",
    "A non-significant result is not evidence of absence: an identifier seen once in training is rarely memorised.",
]


def _undated(year: int | None, released: date | None, cutoff: int | None) -> str | None:
    """Why the suspect documents cannot be shown to predate the model (None: they can, as declared)."""
    if year is None:
        return (
            "the suspect set declares no year, so its identifiers cannot be shown to predate the model "
            "(identifiers chosen after querying it would pass every check)"
        )
    if released is None and cutoff is None:
        return "the claim declares neither the model's release date nor its training cutoff"
    if released is not None and year >= released.year:
        return f"the suspect documents are declared from {year}, not before the model's release ({released:%Y-%m-%d})"
    if cutoff is not None and year > cutoff:
        return f"the suspect documents are declared from {year}, after the model's training cutoff ({cutoff})"
    return None


class IdentifierParams(RankTestParams):
    samples: int = Field(
        99,
        ge=19,
        le=9999,
        json_schema_extra={"weaker": "either"},
        description="fresh identifiers drawn per real one (the smallest p-value is 1/(samples+1))",
    )
    max_identifiers: int = Field(
        500, ge=1, le=100_000, description="the first identifiers tested (bounds the model's work)"
    )


@register
class IdentifiersRoute(Route[IdentifierParams]):
    name = "identifiers"
    Params = IdentifierParams
    requires = frozenset({Role.SUSPECT})
    claim_kinds = KINDS
    verdicts = verdict_table(["design_too_small", "no_marks", "undated"])
    plain = {
        "significant": "the model prefers the documents' real identifiers over fresh random ones of the same format, "
        "beyond what chance allows",
        "not_significant": "the model does not prefer the documents' real identifiers over fresh random ones beyond "
        "chance",
    }
    needs_target = True

    @classmethod
    def signals_of(cls, params: IdentifierParams) -> list[str]:
        return ["log_likelihood"]

    def run(self, ctx: RouteContext, params: IdentifierParams) -> RouteOutcome:
        if reason := _undated(
            ctx.claim.evidence.suspect.year, ctx.claim.model.released, ctx.claim.model.training_cutoff
        ):
            return RouteOutcome(
                "undated",
                f"Natural identifiers not tested: {reason}.",
                {"refused": reason},
                [Notes("Natural identifiers not tested", [reason])],
            )
        texts = ctx.load(ctx.claim.evidence.suspect).texts
        trials, dropped = identifier_trials(texts, params.samples, params.context_words, params.max_identifiers)
        setaside = {k: v for k, v in dropped.items() if v}
        found = Table(
            "Identifiers in the suspect set",
            ["item", "count"],
            [
                ["random-looking identifiers found (each distinct one once)", len(trials)],
                *[[f"set aside: {k}", v] for k, v in setaside.items()],
                *[[f"format {f}", sum(t.detail == f for t in trials)] for f in sorted({t.detail for t in trials})],
            ],
        )
        if not trials:
            return RouteOutcome(
                "no_marks",
                "The suspect documents hold no random-looking identifiers to test.",
                {"identifiers": 0, "set_aside": setaside},
                [found],
            )
        finding = run_rank_tests(
            trials, scorer(ctx), NULL, params.combine, params.alpha, params.level, params.target_power, ctx.claim.seed
        )
        summary = describe(finding, "identifiers")
        notes = Notes("What this test shows", list(LIMITATIONS))
        return RouteOutcome(
            finding.status,
            summary[0].upper() + summary[1:] + ".",
            {
                "identifiers": len(trials),
                "set_aside": setaside,
                "samples": params.samples,
                "test": finding.as_finding(),
            },
            [found, *sections(finding, "identifiers"), notes],
            list(LIMITATIONS),
            p_value=finding.p_value,
            alpha=finding.alpha,
            size=finding.n_marks,
        )
