"""The verdicts an audit can reach, and the one rule for capping them.

A route's table maps where its checks stopped to a verdict per claim kind; a policy then says
which verdicts each route may grant. A verdict the policy does not grant is lowered to
INCONCLUSIVE - never to another assertion: a cap cannot turn "no result" into a method
rejection nobody made, nor let CONTRADICTED through where only SUPPORTED was granted.
"""

from __future__ import annotations

from collections.abc import Collection
from enum import Enum


class Verdict(str, Enum):
    VERIFIED = "VERIFIED"  # corpus lookup: checkable by anyone
    SUPPORTED = "SUPPORTED"  # a sound statistical route supports the claim
    CONTRADICTED = "CONTRADICTED"  # a sound statistical route contradicts the claim
    INCONCLUSIVE = "INCONCLUSIVE"  # a sound route, no significant result
    REJECTED_METHOD = "REJECTED-METHOD"  # the evidence offered cannot test the claim (e.g. date shift)
    UNVERIFIABLE = "UNVERIFIABLE"  # disclosure only


# What no policy needs to grant: saying "no result" or "rests on disclosure" asserts nothing.
ALWAYS_ALLOWED = frozenset({Verdict.INCONCLUSIVE, Verdict.UNVERIFIABLE})


def cap_verdict(verdict: Verdict, grants: Collection[Verdict]) -> Verdict:
    """``verdict`` if the policy grants it (or it asserts nothing), else INCONCLUSIVE."""
    return verdict if verdict in grants or verdict in ALWAYS_ALLOWED else Verdict.INCONCLUSIVE
