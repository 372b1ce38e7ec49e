"""Routes of the decision tree, registered by name; the policy YAML orders and parameterises them.

Routes named in a policy but not implemented in this version (corpus lookup, marks) are reported
as "not available" by the engine: nothing pretends to run them.
"""

from verifier.routes import dataset_inference, date_shift, disclosure  # noqa: F401
from verifier.routes.base import ROUTES, Route, RouteContext, RouteOutcome

__all__ = ["ROUTES", "Route", "RouteContext", "RouteOutcome"]
