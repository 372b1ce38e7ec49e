"""Routes of the decision tree, registered by name; the policy YAML orders and parameterises them.

Routes a policy may name that this version does not implement yet (corpus lookup, marks) are
``PLANNED``, with the evidence they will need: the engine reports them as "not available" when
that evidence is given, and nothing pretends to run them.
"""

from verifier.routes import dataset_inference, date_shift, disclosure  # noqa: F401
from verifier.routes.base import ROUTES, Route, RouteContext, RouteOutcome, RouteParams

PLANNED = {"corpus_lookup": frozenset({"suspect", "corpus"}), "marks": frozenset({"marks"})}

__all__ = ["PLANNED", "ROUTES", "Route", "RouteContext", "RouteOutcome", "RouteParams"]
