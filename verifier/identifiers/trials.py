"""Natural identifiers as rank-test trials: each real identifier, in its context, among fresh draws
of its format (the identifiers route and ``verifier marks identifiers``)."""

from __future__ import annotations

import hashlib

from verifier.identifiers.formats import find_identifiers, fresh_draws
from verifier.stats.rank_trials import Trial

NULL = (
    "the model was not trained on text containing these identifiers (each is exchangeable with fresh draws of its "
    "format)"
)


def identifier_trials(
    suspect: list[str], samples: int, context_words: int, max_identifiers: int
) -> tuple[list[Trial], dict[str, int]]:
    """One trial per distinct random-looking identifier in the suspect set; beyond ``max_identifiers``,
    those with the smallest SHA-256 (a choice nobody can steer without changing the identifiers)."""
    found, dropped = find_identifiers(suspect, context_words)
    if len(found) > max_identifiers:
        dropped["over the limit of identifiers tested"] = len(found) - max_identifiers
        found = sorted(found, key=lambda item: hashlib.sha256(item.identifier.encode()).hexdigest())[:max_identifiers]
    trials: list[Trial] = []
    dropped["no fresh draws show the context what it shows"] = 0
    for item in found:
        try:
            draws = fresh_draws(item, samples)
        except ValueError:  # the context shows so much that too few strings meet the condition: not testable
            dropped["no fresh draws show the context what it shows"] += 1
            continue
        trials.append(
            Trial(
                f"identifier-{len(trials)}",
                "identifier",
                item.format,
                item.context + item.identifier,
                [item.context + fresh for fresh in draws],
            )
        )
    return trials, dropped
