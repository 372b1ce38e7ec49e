"""The policy engine and its YAML policies (see policies/)."""

from verifier.policy.engine import RouteRecord, decision, walk
from verifier.policy.schema import Policy, Verdict, cap_verdict, load_policy, resolve_policy_path

__all__ = ["Policy", "RouteRecord", "Verdict", "cap_verdict", "decision", "load_policy", "resolve_policy_path", "walk"]
