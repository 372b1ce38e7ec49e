"""Every check a registration must pass before its marks are tested, in one place for the route
and for ``verifier marks test``."""

from __future__ import annotations

from collections.abc import Callable
from datetime import date
from pathlib import Path

from verifier.errors import VerifierError
from verifier.marks.make import regenerate
from verifier.marks.registration import Registration, Secrets, predates_training, read_registration, read_secrets, rephrased_by


def checked_registration(registration: Path, siblings: Path, released: date | None, cutoff: int | None,
                         target_weights: Callable[[], str | None], pinned_sha256: str | None = None,
                         rephraser_model: str | None = None, trust_dir: Path | None = None) -> tuple[Registration, Secrets]:
    """The registration and its secrets once signature, pin, date, rephraser, commitments and
    regenerated pools all hold; otherwise one line naming the file. ``target_weights`` is called
    only once the registration's date has passed (it may load the model)."""
    found = read_registration(registration, pinned_sha256, trust_dir)
    if reason := predates_training(found.predicate.created, released, cutoff):
        raise VerifierError(f"{registration.name}: refused: {reason}")
    if rephrased_by(found, target_weights()):
        raise VerifierError(f"{registration.name}: refused: the rephrasings were made by the model under test")
    secrets = read_secrets(siblings, found)
    try:
        regenerate(found, secrets, rephraser_model)
    except VerifierError as exc:
        raise VerifierError(f"{siblings.name}: {exc}") from None
    return found, secrets
