"""The findings vocabulary every floor may use: report sections, a route's outcome, an audit's result.

Findings are plain data. A route (or an engine below it) returns a ``RouteOutcome`` whose
``sections`` are tables, figures, highlighted spans and notes that the report template renders by
``kind``, so a new route's findings appear in the report without template edits; the audit gathers
them into an ``AuditResult`` that the trust floor writes into a bundle. Nothing here computes, and
this module imports nothing from verifier, so the floors below the routes (engines, trust) can name
these nouns without reaching up.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:  # the scores table is a DataFrame; naming its type imports no pandas
    import pandas as pd

# The findings' format, named in every findings document: a key renamed, added or moved makes a new one.
FINDINGS_FORMAT = "verifier-findings/9"

Cell = str | int | float | None


@dataclass
class Table:
    title: str
    columns: list[str]
    rows: list[list[Cell]]
    row_classes: list[str] | None = None  # e.g. "blind" for model-free rows
    note: str | None = None
    kind: Literal["table"] = "table"


@dataclass
class Figure:
    """``figure`` names a drawing in ``report.svg.FIGURES``; ``data`` holds every number it draws."""

    figure: str
    data: dict[str, Any]
    caption: str
    kind: Literal["figure"] = "figure"


@dataclass
class Spans:
    """A text with highlighted character spans [start, end) and a label each (e.g. verbatim matches)."""

    title: str
    text: str
    spans: list[tuple[int, int, str]]
    note: str | None = None
    kind: Literal["spans"] = "spans"


@dataclass
class Notes:
    title: str
    items: list[str]
    kind: Literal["notes"] = "notes"


Section = Table | Figure | Spans | Notes


@dataclass
class RouteOutcome:
    """What a route found. ``status`` is a key of its route's ``verdicts`` table."""

    status: str | None
    summary: str
    metrics: dict[str, Any] = field(default_factory=dict)
    sections: list[Section] = field(default_factory=list)
    limitations: list[str] = field(default_factory=list)
    # A statistical route's test, where the status rests on one: its p-value and level (a batch
    # audit adjusts them across claims), and the documents or marks it rests on (the size at which
    # the method-validation table is read). None for a finding that is not a test at a level.
    p_value: float | None = None
    alpha: float | None = None
    size: int | None = None


@dataclass
class AuditResult:
    """One audit's findings and what the bundle carries beside them (written by ``trust.bundle``)."""

    findings: dict[str, Any]
    scores: pd.DataFrame  # one row per scored document: role, text digest, signals (no text)
    claim_bytes: bytes  # the validated claim as YAML, local model paths reduced to names
    policy_bytes: bytes  # the policy file as read and validated
    usage: dict[str, Any] = field(
        default_factory=dict
    )  # API targets' request counters by role (run record, not findings)
    plan_bytes: bytes | None = None  # the signed plan the audit was checked against, if any (carried in the bundle)
    plan_tokens: tuple[
        tuple[str, bytes], ...
    ] = ()  # the plan's timestamps (plan.timestamp-<n>.tsr), carried and signed with it
