"""Routes of the decision tree, registered by name; the policy YAML orders and parameterises them.

``PLANNED`` lists routes a policy may name that this version does not implement (none at
present), with the evidence they will need: the engine reports them as "not available" when that
evidence is given, and nothing pretends to run them.
"""

from dataclasses import dataclass

from verifier.findings import RouteOutcome
from verifier.routes.base import ROUTES, Route, RouteParams
from verifier.verdicts import Verdict


@dataclass(frozen=True)
class Planned:
    """A route a policy may already name: the evidence it will need, its params, what it may reach."""

    requires: frozenset[str]
    Params: type[RouteParams]
    reachable: frozenset[Verdict]


PLANNED: dict[str, Planned] = {}

__all__ = ["PLANNED", "ROUTES", "Route", "RouteOutcome", "RouteParams"]
