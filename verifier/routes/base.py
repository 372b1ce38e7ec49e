"""The route contract: what a route declares, what it gets (context), what it returns (outcome).

A route is one module: a ``Route`` subclass that declares
- ``Params``: a pydantic model of its policy parameters, with bounds (checked when the policy loads);
- ``requires``: the evidence keys it cannot run without (the engine skips it when one is absent);
- ``claim_kinds``: the kinds of claim its finding bears on (others skip it);
- ``verdicts``: the one table from each status it can end in to a verdict per claim kind
  (``None``: the route ran but decides nothing, and the walk goes on);
- ``plain``: for each status that gives a verdict, why, in words a lawyer reads in seconds and
  without numbers (the report's lead; the summary keeps the numbers);
- ``input_files``: the files besides the document sets it reads from a claim (a marks registration,
  a token frequency table), which plans commit to and findings digest;
- ``needs_target``: whether it queries the model; with the signals it computes (``signals_of``: by
  default the ``signals`` of its params), the engine checks before the walk that the claim's
  target can compute at least one of them.

``run`` returns a ``RouteOutcome`` (``verifier.findings``): a status from its table, a summary,
plain-data metrics for the findings, and report ``sections`` (tables, figures, highlighted spans,
notes) that the template renders generically: a new route's findings appear in the report without
template edits. Routes read models only through the context (``verifier.scoring.session``), which
loads the target once, scores through the shared cache, and keeps every scored row for the
evidence bundle (digests, never texts).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar

from pydantic import BaseModel, ConfigDict, Field, model_validator

from verifier.claims import ClaimKind, ClaimManifest
from verifier.findings import RouteOutcome
from verifier.plugins import Registry, part_modules
from verifier.signals import SignalNames, SignalParams, check_params_used, computable
from verifier.verdicts import Verdict

if TYPE_CHECKING:  # the session holds scored tables (pandas); the contract only names its type
    from verifier.scoring.session import RouteContext

ALL_KINDS = frozenset(ClaimKind)
# A route's plain words for a status, at most: with the headline, a test's level and what the verdict
# does not show, the report's lead stays within verdicts.LEAD_WORDS.
PLAIN_WORDS = 25


class RouteParams(BaseModel):
    """Base of every route's parameters: unknown keys are errors, values are frozen.

    A field whose looser setting weakens the route declares it, so a policy can be compared
    with the default: ``Field(..., json_schema_extra={"weaker": "higher"})`` (or "lower";
    "false" for a safeguard switched off, "true" for a risk switched on; "either" where any change
    can favour one side).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)


class SignalChoice(RouteParams):
    """Parameters of a route that computes membership signals: which, and with what settings."""

    signals: SignalNames = Field(
        description="the membership signals computed (each where the target can; the others are listed as not "
        "computable)"
    )
    signal_params: SignalParams = Field(
        default_factory=dict, description="parameters per signal, e.g. {blackspectrum: {k: 5}}"
    )

    @model_validator(mode="after")
    def _params_name_listed_signals(self) -> SignalChoice:
        check_params_used(self.signals, self.signal_params)
        return self


class NoParams(RouteParams):
    """A route without parameters."""


P = TypeVar("P", bound=RouteParams)


class Route(ABC, Generic[P]):
    """One branch of the decision tree (see the module docstring for what it declares), generic in
    its params: ``class CorpusLookupRoute(Route[CorpusLookupParams])`` gets them typed in ``run``."""

    name: ClassVar[str]
    Params: ClassVar[type[RouteParams]] = NoParams
    requires: ClassVar[frozenset[str]] = frozenset()
    claim_kinds: ClassVar[frozenset[ClaimKind]] = ALL_KINDS
    verdicts: ClassVar[Mapping[str, Mapping[ClaimKind, Verdict] | None]]
    plain: ClassVar[Mapping[str, str]] = {}
    needs_target: ClassVar[bool] = False

    @abstractmethod
    def run(self, ctx: RouteContext, params: P) -> RouteOutcome:
        """Test what this route can test; end in a status of ``verdicts``."""

    @classmethod
    def withdraw(cls, outcome: dict[str, Any]) -> None:
        """Withdraw, in a recorded outcome (the findings' plain data), what holds only beside the
        route's own verdict, once a batch's adjustment has weakened it. Nothing, by default."""

    @classmethod
    def input_files(cls, claim: ClaimManifest) -> dict[str, Path]:
        """The files besides the document sets that the route reads from ``claim``, by role
        (relative to the claim): plans commit to them, and findings and bundles name their digests.
        None, by default."""
        return {}

    @classmethod
    def precheck(cls, claim: ClaimManifest, params: P, sizes: Mapping[str, int]) -> str | None:
        """Why the claim's inputs cannot be tested by this route at all (e.g. sets below its minimum
        size), from the documents per evidence role, before any model loads; None when they can.
        Asked only of the route the walk will surely run, so an input error never pre-empts a route
        before it that would decide. Nothing, by default."""
        return None

    @classmethod
    def signals_of(cls, params: P) -> list[str]:
        """The signals the route computes with these params (checked against the target before the walk)."""
        return list(getattr(params, "signals", []))

    @classmethod
    def not_computable(cls, params: P, offered: frozenset[str]) -> str | None:
        """Why a target offering ``offered`` cannot compute the route's fixed statistic (None: it
        can). By default: none of ``signals_of`` is computable."""
        usable, why = computable(cls.signals_of(params), offered)
        return None if usable else "; ".join(f"{k}: {v}" for k, v in why.items())

    @classmethod
    def reachable(cls) -> set[Verdict]:
        """Every verdict the route's table can give."""
        return {v for row in cls.verdicts.values() if row for v in row.values()}

    @classmethod
    def verdict(cls, status: str | None, kind: ClaimKind) -> Verdict | None:
        if status is None:
            return None
        row = cls.verdicts[status]
        return None if row is None else row[kind]


def same_for(kinds: frozenset[ClaimKind], verdict: Verdict) -> dict[ClaimKind, Verdict]:
    """A table row giving one verdict whatever the claim kind (e.g. a method refusal)."""
    return dict.fromkeys(kinds, verdict)


# Every module of this folder but ``base``, then plugins: discovered when first read.
ROUTES: Registry[type[Route[Any]]] = Registry("routes", lambda: part_modules("verifier.routes"))


R = TypeVar("R", bound=type[Route[Any]])


def register(cls: R) -> R:
    """Class decorator: make a route available to policies by its ``name``; checks its tables."""
    if stray := set(cls.plain) - set(cls.verdicts):
        raise ValueError(f"route {cls.name!r}: plain names statuses its verdicts table lacks: {sorted(stray)}")
    if wordy := [status for status, text in cls.plain.items() if len(text.split()) > PLAIN_WORDS]:
        raise ValueError(
            f"route {cls.name!r}: plain[{wordy[0]!r}] has more than {PLAIN_WORDS} words (the lead's budget)"
        )
    for status, row in cls.verdicts.items():
        if row is not None and set(row) != set(cls.claim_kinds):
            raise ValueError(
                f"route {cls.name!r}: verdicts[{status!r}] must give a verdict for exactly {sorted(cls.claim_kinds)}"
            )
    ROUTES.add(cls.name, cls)
    return cls
