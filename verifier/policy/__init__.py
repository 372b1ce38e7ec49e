"""The policy engine and its YAML policies (see policies/).

``verifier.policy.schema`` holds the policy model and verdicts (routes import it);
``verifier.policy.engine`` walks the tree (it imports the routes), so it is not imported here.
"""

from verifier.policy.schema import Policy, Verdict, cap_verdict, load_policy, resolve_policy_path

__all__ = ["Policy", "Verdict", "cap_verdict", "load_policy", "resolve_policy_path"]
