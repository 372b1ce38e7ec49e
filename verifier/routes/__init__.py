"""Routes of the decision tree, registered by name; the policy YAML orders and parameterises them.

Routes a policy may name that this version does not implement yet (marks) are
``PLANNED``, with the evidence they will need: the engine reports them as "not available" when
that evidence is given, and nothing pretends to run them.
"""

from dataclasses import dataclass

from pydantic import Field

from verifier.routes import corpus_lookup, dataset_inference, date_shift, disclosure  # noqa: F401
from verifier.routes.base import ROUTES, Route, RouteContext, RouteOutcome, RouteParams
from verifier.verdicts import Verdict


class MarksParams(RouteParams):
    alpha: float = Field(0.05, gt=0, le=0.2, json_schema_extra={"weaker": "higher"})


@dataclass(frozen=True)
class Planned:
    """A route a policy may already name: the evidence it will need, its params, what it may reach."""

    requires: frozenset[str]
    Params: type[RouteParams]
    reachable: frozenset[Verdict]


PLANNED = {
    "marks": Planned(frozenset({"marks"}), MarksParams, frozenset({Verdict.SUPPORTED, Verdict.CONTRADICTED, Verdict.REJECTED_METHOD})),
}

__all__ = ["PLANNED", "ROUTES", "Route", "RouteContext", "RouteOutcome", "RouteParams"]
