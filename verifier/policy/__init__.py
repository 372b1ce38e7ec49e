"""The policy engine and its YAML policies (see verifier/policies/).

``verifier.policy.schema`` reads and validates policies; ``verifier.policy.engine`` walks the
tree (it imports the routes), so it is not imported here.
"""

from verifier.policy.schema import Policy, PolicyRoute, departures_from_default, load_policy, resolve_policy_path

__all__ = ["Policy", "PolicyRoute", "load_policy", "resolve_policy_path", "departures_from_default"]
