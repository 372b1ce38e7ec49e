"""What a claim's models and evidence can supply, known from the claim alone (no model loaded).

The policy engine checks every route's signals against it before the walk, so a claim whose
target can compute none of them is refused in one line before anything is scored.
"""

from __future__ import annotations

from verifier.claims import ClaimManifest
from verifier.signals import NONMEMBER_PREFIX, TOKEN_FREQUENCIES
from verifier.targets import kind_of
from verifier.targets.base import PROMPT_LOGPROBS, TOP_K_LOGPROBS, VOCAB_STATS


def offered_capabilities(claim: ClaimManifest) -> frozenset[str]:
    """What the claim's local target kind, reference model and evidence let a route compute,
    known before anything loads (an API target's own offer is probed when it is loaded)."""
    offered = set(kind_of(claim.model.target).capabilities)
    if claim.model.api is not None and not getattr(claim.model.api, "logprobs", True):
        offered -= {PROMPT_LOGPROBS, TOP_K_LOGPROBS, VOCAB_STATS}  # answers only, by the claim's word
    if claim.model.reference:
        offered.add("reference")
    if claim.evidence.prefix or claim.evidence.heldout:  # a route may draw prefix documents from them
        offered.add(NONMEMBER_PREFIX)
    offered.add(TOKEN_FREQUENCIES)  # a table named, or bundled for the tokenizer: the route finds out
    return frozenset(offered)
