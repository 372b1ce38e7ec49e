"""Route: content marked before training -> exact rank tests of the registered marks.

The second sound branch of the tree, usable by rights holders without the developer: canaries,
copyright traps and STAMP-style rephrasings made with ``verifier marks make`` before release,
tested through log-probs, and cue/reply and co-occurrence marks, tested from generated text alone
(any target that answers or samples: an API without log-probs included).
The registration must verify under a pinned key, predate the model's declared release or
training cutoff, and match the private siblings file and the suspect (published) documents;
otherwise it is refused as evidence with the reason and the walk goes on. A mark whose document
is not in the suspect set, or that does not occur in its document, is reported and not tested.
Then each published mark is ranked among its siblings under the target (``marks.evaluate``):
significant -> SUPPORTED for "trained_on", CONTRADICTED for "not_trained_on"/"decontaminated";
otherwise INCONCLUSIVE with the number of marks that would be needed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, StrictBool

from verifier.boundary.resources import resource
from verifier.claims import ClaimManifest, Role
from verifier.errors import VerifierError
from verifier.findings import Cell, Notes, RouteOutcome, Table
from verifier.marks.checks import checked_registration
from verifier.marks.evaluate import NULL, registered_trials
from verifier.marks.replies import (
    Asked,
    PromptFrom,
    Protocol,
    answer_scorer,
    control_prompts,
    sampler,
    servable_trials,
)
from verifier.routes._rank_tests import KINDS, RankTestParams, describe, scorer, sections, verdict_table
from verifier.routes.base import Route, register
from verifier.scoring.session import RouteContext
from verifier.stats.rank_trials import FROM_OUTPUTS, STATISTIC, run_rank_tests
from verifier.targets.base import ANSWERS, GENERATE
from verifier.trust.private_files import readable_by_others

# A bundled example's siblings ship with the package: said, not refused. A sibling seen by whoever
# trains the model can only hide a mark (trained on too, it ranks like the mark), never make an
# untrained mark rank first.
SIBLINGS_READABLE = (
    "The siblings file was readable by other accounts of the auditor's machine when the audit ran (a bundled "
    "example's, which ships with the package; any other is refused): siblings that reached the model's training can "
    "only hide a mark, so a finding of training stands, but a test that finds nothing may have been blinded."
)
REGISTRANT_DATE = (
    "The registration's date is its signer's statement: it shows the marks predate training only as far as that "
    "key's dates are trusted (a timestamp of a time-stamping authority the auditor pins makes it independent of the "
    "registrant; the policy's require_timestamp demands one)."
)
TIMESTAMPED = (
    "The registration's date is {tsa}: it shows the marks existed by then as far as that authority's clock and key are "
    "trusted, whatever the registrant wrote."
)
LIMITATIONS = [
    "A significant result shows the model was trained on the published marks, hence on text that carried them; which "
    "copy "
    "(the rights holder's publication or a re-post) the test cannot say.",
    REGISTRANT_DATE,
    "A non-significant result is not evidence of absence: marks seen rarely in training are often not memorised "
    "(the copyright-trap study detected only long traps repeated about 1,000 times in a 1.3B model).",
    "What a text pipeline erases, by kind: canaries, traps and cue/reply marks survive Unicode normalisation (they "
    "are plain words or ASCII) but not deduplication of their copies or a paraphrase that drops them; a "
    "co-occurrence mark survives a paraphrase that keeps its word pairs near each other, not one that drops the "
    "anchor it is prompted with; a rephrasing survives normalisation and deduplication but not a further paraphrase.",
    "Output-only marks show that the model wrote a secret it could only have from the marked text: from training, or "
    "from looking the document up - a model with browsing, retrieval or tools can find a published cue and copy its "
    "reply, so the claim must be about the model without them.",
    "A registrant chooses the secret seed: one who searched seeds for output-only marks a model writes without "
    "training is caught only as far as the control prompts show it (a candidate that comes back after any of them "
    "sets its mark aside).",
    "Output-only marks prompted after their published context (the default) rest on a context the registrant wrote "
    "knowing which candidate was published: one that primes it without naming it is caught only as far as the same "
    "context before control cues shows it; prompt: cue removes the context and, on small models, most of the power.",
    "One registration is one test: a registrant who tests several registrations and shows the best has had several "
    "chances; "
    "likewise one who tried many secret seeds before registering, keeping marks that a similar public model happened "
    "to "
    "favour, would bias the test - only public randomness fixed at registration time (a beacon) rules that out.",
]


class MarksParams(RankTestParams):
    """The route's params (alpha, combination, per-mark level, context) - see ``RankTestParams`` - and
    whether the registration's date must come from a time-stamping authority's clock."""

    require_timestamp: StrictBool = Field(
        False,
        json_schema_extra={"weaker": "false"},
        description="refuse a registration dated only by its registrant: its date must come from "
        "the timestamp token of a time-stamping authority the auditor pins",
    )
    samples: int = Field(
        8, ge=1, le=100, json_schema_extra={"weaker": "either"}, description="output-only marks: generations per cue"
    )
    temperature: float = Field(
        1.0, ge=0, le=2, json_schema_extra={"weaker": "either"}, description="output-only marks: sampling temperature"
    )
    max_tokens: int = Field(
        48, ge=4, le=512, json_schema_extra={"weaker": "either"}, description="output-only marks: tokens per generation"
    )
    mode: Literal["text", "chat"] = Field(
        "text",
        json_schema_extra={"weaker": "either"},
        description="output-only marks: continue the cue as text, or ask a chat model to continue it",
    )
    prompt: PromptFrom = Field(
        "context",
        json_schema_extra={"weaker": "either"},
        description="output-only marks: prompt with the cue after the context_words words before it in its "
        "published document (each such prompt with its own control prompts), or with the cue alone",
    )

    def protocol(self) -> Protocol:
        return Protocol(self.samples, self.temperature, self.max_tokens, self.mode, self.prompt)


@register
class MarksRoute(Route[MarksParams]):
    name = "marks"
    Params = MarksParams
    requires = frozenset({Role.SUSPECT, "marks"})
    claim_kinds = KINDS
    verdicts = verdict_table(["refused", "design_too_small", "no_marks"])
    plain = {
        "significant": "the model prefers the published marks over unpublished siblings made the same way, beyond "
        "what chance allows",
        "not_significant": "the model does not prefer the published marks over their unpublished siblings beyond "
        "chance",
    }
    needs_target = True

    @classmethod
    def signals_of(cls, params: MarksParams) -> list[str]:
        return ["log_likelihood", "loss"]

    @classmethod
    def not_computable(cls, params: MarksParams, offered: frozenset[str]) -> str | None:
        """Log-prob marks need log-probs; output-only marks need only text, so a target that answers
        or samples can always test those (which kinds a registration holds is known once it is read)."""
        return None if offered & {ANSWERS, GENERATE} else super().not_computable(params, offered)

    @classmethod
    def input_files(cls, claim: ClaimManifest) -> dict[str, Path]:
        marks = claim.evidence.marks
        return {} if marks is None else {"marks registration": marks.registration, "marks siblings": marks.siblings}

    def run(self, ctx: RouteContext, params: MarksParams) -> RouteOutcome:
        marks, model = ctx.claim.evidence.marks, ctx.claim.model
        siblings_readable = False
        try:
            spec = marks.rephraser
            registration, secrets = checked_registration(
                ctx.base_dir / marks.registration,
                ctx.base_dir / marks.siblings,
                model.released,
                model.training_cutoff,
                lambda: ctx.model().identity.digests.get("weights"),
                marks.sha256,
                str(ctx.base_dir / spec) if spec and (ctx.base_dir / spec).exists() else spec,
                require_timestamp=params.require_timestamp,
                files=(ctx.claim_files.read(marks.registration), ctx.claim_files.read(marks.siblings)),
            )  # the bytes the inputs digest
            siblings_readable = readable_by_others(ctx.base_dir / marks.siblings)
            if siblings_readable and not ctx.base_dir.resolve().is_relative_to(resource("examples").resolve()):
                # Refused like a signing key: whoever else can read the siblings can blind the test.
                # Only the bundled examples, whose siblings ship with the package, are read as they lie.
                raise VerifierError(
                    f"{marks.siblings}: the private siblings file must be owned and readable by you only (chmod 600 "
                    f"{marks.siblings.name}): whoever else can read the siblings can blind the test"
                )
            try:
                trials, excluded = registered_trials(
                    registration,
                    secrets,
                    ctx.load(ctx.claim.evidence.suspect).texts,
                    params.context_words,
                    params.prompt,
                )
            except VerifierError as exc:
                raise VerifierError(f"{marks.registration.name}: {exc}") from None
        except VerifierError as exc:
            return RouteOutcome(
                "refused",
                f"The registration is refused as evidence: {exc}.",
                {"refused": str(exc)},
                [Notes("Registration refused", [str(exc)])],
                list(LIMITATIONS),
            )
        offered = ctx.model().capabilities if trials else frozenset()
        trials, set_aside, access, untested = servable_trials(trials, offered)
        excluded |= set_aside
        asked = Asked()
        outputs = [t for t in trials if STATISTIC[t.kind] in FROM_OUTPUTS and t.id not in untested]
        controls = control_prompts(registration.sha256)
        finding = run_rank_tests(
            trials,
            scorer(ctx, secrets.seed_salt),
            NULL,
            params.combine,
            params.alpha,
            params.level,
            params.target_power,
            ctx.claim.seed,
            excluded,
            answer_scorer(sampler(ctx.model(), params.protocol(), ctx.cache, asked), asked, controls)
            if outputs
            else None,
            untested,
        )
        predicate, dated = registration.predicate, registration.dated
        metrics = {
            "registration": {
                "name": predicate.name,
                "created": predicate.created.isoformat(),
                "signer": registration.signer,
                "sha256": registration.sha256,
                "marks": len(predicate.marks),
                "dated": dated.as_finding(),
            },
            "test": finding.as_finding(),
            "access": access,
        }
        if outputs:
            metrics["challenges"] = {
                "protocol": params.protocol().describe(),
                "prompts": asked.prompts,
                "control_prompts": asked.controls,
                "set_aside_by_controls": len(asked.set_aside),
                "generations": asked.generations,
                "failed": asked.failed,
                "access": asked.access,
            }
        tested_from: list[list[Cell]] = [[f"{kind} marks tested from", how] for kind, how in sorted(access.items())]
        challenged: list[list[Cell]] = (
            [
                [
                    "output-only challenges",
                    f"{params.protocol().describe()}; {asked.prompts} prompts and {asked.controls} control prompts "
                    "asked",
                ],
                [
                    "marks set aside because a candidate came back after a control prompt (blind to which was "
                    "published)",
                    len(asked.set_aside),
                ],
                ["generations that failed (read as empty for every candidate)", sum(asked.failed.values())],
            ]
            if outputs
            else []
        )
        facts = Table(
            "Registration",
            ["field", "value"],
            [
                ["name", predicate.name],
                ["created (the registrant's signed statement)", predicate.created.isoformat()],
                ["existed by (the date the route uses)", f"{dated.when.isoformat()}, on the word of {dated.by}"],
                *[[f"timestamp {i}", t.describe()] for i, t in enumerate(dated.timestamps, 1)],
                ["signed by (pinned key fingerprint)", registration.signer],
                [
                    "registered marks / tested / not tested",
                    f"{len(predicate.marks)} / {finding.n_marks} / {len(finding.excluded)}",
                ],
                ["declared release / training cutoff", f"{model.released or '-'} / {model.training_cutoff or '-'}"],
                *tested_from,
                *challenged,
            ],
        )
        summary = describe(finding, "marks")
        limitations = [
            TIMESTAMPED.format(tsa=dated.by) if dated.trusted and line == REGISTRANT_DATE else line
            for line in LIMITATIONS
        ]
        if siblings_readable:
            metrics["siblings_file_private"] = False
            limitations.append(SIBLINGS_READABLE)
        return RouteOutcome(
            finding.status,
            summary[0].upper() + summary[1:] + ".",
            metrics,
            [facts, *sections(finding, "marks")],
            limitations,
            p_value=finding.p_value,
            alpha=finding.alpha,
            size=finding.n_marks,
        )
