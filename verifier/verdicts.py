"""The verdicts an audit can reach, and the one rule for capping them.

A route's table maps where its checks stopped to a verdict per claim kind; a policy then says
which verdicts each route may grant. A verdict the policy does not grant is lowered to
INCONCLUSIVE - never to another assertion: a cap cannot turn "no result" into a method
rejection nobody made, nor let CONTRADICTED through where only SUPPORTED was granted.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
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


# Page 1 of every report, for a reader who is not a statistician: what each verdict means and what
# it does not (the legend and the glossary), and the headline the plain-language lead opens with.
GLOSSARY: dict[Verdict, tuple[str, str]] = {
    Verdict.VERIFIED: (
        "checked by lookup in the published corpus the claim names; anyone can repeat it",
        "anything about data outside that corpus",
    ),
    Verdict.SUPPORTED: (
        "a sound statistical test found evidence for the claim, at the error rate stated",
        "that any one document was trained on",
    ),
    Verdict.CONTRADICTED: (
        "a sound statistical test (at the error rate stated) or a lookup found evidence against the claim",
        "who is at fault, or whether any use was lawful",
    ),
    Verdict.INCONCLUSIVE: (
        "a sound method ran and found no result either way",
        "whether the claim is true or false",
    ),
    Verdict.REJECTED_METHOD: (
        "the evidence offered cannot test the claim, so it was not tested",
        "that the claim is false: the method is rejected, not the claim",
    ),
    Verdict.UNVERIFIABLE: (
        "nothing testable was offered; the claim rests on its maker's word",
        "that the claim is false",
    ),
}
HEADLINE = {
    Verdict.VERIFIED: "The lookup confirms the claim:",
    Verdict.SUPPORTED: "The evidence supports the claim:",
    Verdict.CONTRADICTED: "The evidence contradicts the claim:",
    Verdict.INCONCLUSIVE: "The evidence does not establish the claim either way:",
    Verdict.REJECTED_METHOD: "The evidence offered cannot test the claim:",
    Verdict.UNVERIFIABLE: "The claim cannot be checked with what was offered:",
}
LEAD_WORDS = 60  # the lead's most words: read in ten seconds


def lead(verdict: Verdict | str, because: str, lowered: str | None = None, alpha: float | None = None) -> str:
    """The report's plain-language opening: the headline, why (the deciding route's plain words for
    where it stopped), why the verdict was lowered where the policy or a batch lowered it, how often
    the test says this where there is nothing to find (a test's verdict: ``alpha``), and what the
    verdict does not show."""
    verdict = Verdict(verdict)
    parts = [HEADLINE[verdict], because.rstrip(".") + "."]
    if lowered:
        parts.append(lowered.rstrip(".") + ".")
    if alpha is not None and verdict in (Verdict.SUPPORTED, Verdict.CONTRADICTED) and 0 < alpha < 1:
        parts.append(f"Where there is nothing to find, about 1 such test in {round(1 / alpha)} says this.")
    parts.append(f"This does not show {GLOSSARY[verdict][1]}.")
    return " ".join(parts)


# What a pipeline reads from ``verifier audit``: the verdict as an exit status, so a CI job can gate
# on a decontamination check. 1 and 2 stay what every command gives for a bug and for bad input.
EXIT_HOLDS = 0  # VERIFIED or SUPPORTED: the claim holds as far as the deciding route can say
EXIT_INTERNAL = 1  # a bug in verifier (one line; VERIFIER_DEBUG=1 shows the traceback)
EXIT_INPUT = 2  # bad input: a claim, file, option or model the user gave (one line naming it)
EXIT_CONTRADICTED = 3  # CONTRADICTED: the evidence contradicts the claim
EXIT_NO_RESULT = 4  # INCONCLUSIVE, REJECTED-METHOD or UNVERIFIABLE: the audit cannot say either way
EXIT_INTERRUPTED = 130  # Ctrl-C (128 + SIGINT); nothing half-written kept, a re-run resumes
EXIT_TERMINATED = 143  # SIGTERM (128 + SIGTERM)

_EXITS = {
    Verdict.VERIFIED: EXIT_HOLDS,
    Verdict.SUPPORTED: EXIT_HOLDS,
    Verdict.CONTRADICTED: EXIT_CONTRADICTED,
    Verdict.INCONCLUSIVE: EXIT_NO_RESULT,
    Verdict.REJECTED_METHOD: EXIT_NO_RESULT,
    Verdict.UNVERIFIABLE: EXIT_NO_RESULT,
}
# A batch exits with its worst claim: a contradicted claim outranks one the audit could not decide.
_SEVERITY = (EXIT_HOLDS, EXIT_NO_RESULT, EXIT_CONTRADICTED)


def exit_status(verdicts: Iterable[Verdict | str]) -> int:
    """The exit status of an audit that reached ``verdicts`` (one, or a batch's: the worst)."""
    codes = [_EXITS[Verdict(v)] for v in verdicts]
    return max(codes, key=_SEVERITY.index, default=EXIT_HOLDS)
