"""Every check a registration must pass before its marks are tested, in one place for the route
and for ``verifier marks test``."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import date
from pathlib import Path

from verifier.errors import VerifierError
from verifier.marks.make import regenerate
from verifier.marks.registration import (
    Registration,
    Secrets,
    date_registration,
    predates_training,
    read_registration,
    read_secrets,
    rephrased_by,
)


def checked_registration(
    registration: Path,
    siblings: Path,
    released: date | None,
    cutoff: int | None,
    target_weights: Callable[[], str | None],
    pinned_sha256: str | None = None,
    rephraser_model: str | None = None,
    trust_dir: Path | None = None,
    require_timestamp: bool = False,
    files: tuple[bytes, bytes] | None = None,
) -> tuple[Registration, Secrets]:
    """The registration (dated: ``registration.dated``) and its secrets once signature, pin,
    timestamps, date, rephraser, commitments and regenerated pools all hold; otherwise one line
    naming the file. The date is the earliest pinned TSA's token, else the registrant's own, which
    ``require_timestamp`` refuses. ``target_weights`` is called only once the date has passed (it
    may load the model). ``files``: the registration's and the siblings' bytes as the caller read
    (and digested) them; by default they are read here."""
    found = read_registration(registration, pinned_sha256, trust_dir, files[0] if files else None)
    dated = date_registration(found, registration, trust_dir)
    found = replace(found, dated=dated)
    if require_timestamp and not dated.trusted:
        raise VerifierError(
            f"{registration.name}: refused: the policy requires a timestamp of a time-stamping authority the "
            "auditor pins, and the registration's date is only the registrant's own statement"
        )
    if reason := predates_training(
        dated.when, released, cutoff, by="a pinned time-stamping authority" if dated.trusted else "its signer"
    ):
        raise VerifierError(f"{registration.name}: refused: {reason}")
    if rephrased_by(found, target_weights()):
        raise VerifierError(f"{registration.name}: refused: the rephrasings were made by the model under test")
    secrets = read_secrets(siblings, found, files[1] if files else None)
    try:
        regenerate(found, secrets, rephraser_model)
    except VerifierError as exc:
        raise VerifierError(f"{siblings.name}: {exc}") from None
    return found, secrets
