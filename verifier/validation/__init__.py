"""The method-validation table: each route's measured error rates, shipped with the package.

A court or regulator asks how often a method is wrong. The benchmarks measure that on testbeds
whose membership is known (``benchmarks/soundness.py``, ``fraction.py``, ``lookup_soundness.py``)
and write their rows here with the commit, date and testbeds they ran on (``record``). An audit
reads the rows of the route that decided it nearest its own set size (``for_audit``) into its
findings, so the report shows them and the signature covers them; nothing is recomputed during
an audit. The file is validated on every read: a table edited by hand into another shape is
refused, not shown.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
from datetime import date
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from verifier.boundary.resources import resource
from verifier.errors import VerifierError, first_validation_error

FORMAT = "verifier-validation/1"


class Run(BaseModel):
    """Where a benchmark's rows come from."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    benchmark: str
    commit: str
    date: str
    command: str
    testbeds: list[str] = Field(description="digests of the testbeds (or names of the data sets) measured on")


class Regime(BaseModel):
    """Where a row was measured: the kind of model and how it saw the members. Error rates and power measured on a
    small model trained for epochs on its members do not carry over to a large model that saw each document once
    among trillions of tokens; a report says which regime its numbers come from and how far the audit is from it."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    model: str = Field(description="what was trained and how (from scratch, continued pretraining)")
    parameters: int = Field(ge=1)
    passes: float = Field(gt=0, description="times each member was seen in training")
    member_token_share: float = Field(gt=0, le=1, description="the members' share of the training tokens")

    def sentence(self) -> str:
        seen = "once" if self.passes == 1 else f"{self.passes:g} times"
        return (
            f"a {_size(self.parameters)}-parameter model ({self.model}) that saw each member {seen}, the members "
            f"{self.member_token_share:.0%} of its training tokens"
        )


def _size(parameters: int) -> str:
    for unit, scale in (("B", 1e9), ("M", 1e6), ("k", 1e3)):
        if parameters >= scale:
            return f"{parameters / scale:.3g}{unit}"
    return str(parameters)


class Row(BaseModel):
    """One measured quantity: a rate (a share of audits, with its Wilson 95% interval over all of
    them) or a mean (with a normal 95% interval), and its spread (min-max) across independent builds."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)
    route: str
    quantity: str  # e.g. "false verdict rate", "power", "bound coverage"
    scenario: str
    n: int = Field(ge=1, description="documents per set (or per audit) of the row")
    value: float
    ci: tuple[float, float] | None = None
    spread: tuple[float, float] | None = None
    trials: int = Field(ge=1)
    builds: int = Field(1, ge=1)
    benchmark: str
    regime: Regime | None = Field(None, description="the trained models it was measured on (None: no model trained)")


class Table(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    format: str = FORMAT
    runs: list[Run] = Field(default_factory=list)
    rows: list[Row] = Field(default_factory=list)


def table_path() -> Path:
    return resource("validation", "table.json")


def load_table(path: Path | None = None) -> Table:
    """The shipped table (or ``path``), validated."""
    path = path or table_path()
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        table = Table.model_validate(data)
    except (OSError, ValueError) as exc:
        detail = first_validation_error(exc) if isinstance(exc, ValidationError) else str(exc)
        raise VerifierError(f"{path.name}: not a method-validation table ({detail})") from None
    if table.format != FORMAT:
        raise VerifierError(f"{path.name}: format {table.format!r}, this verifier reads {FORMAT!r}")
    return table


def record(
    benchmark: str, rows: list[dict[str, Any]], testbeds: list[str], command: str, path: Path | None = None
) -> None:
    """Replace ``benchmark``'s run and rows in the table (its other benchmarks' rows are kept)."""
    path = path or table_path()
    table = load_table(path) if path.exists() else Table()
    run = Run(benchmark=benchmark, commit=_commit(), date=date.today().isoformat(), command=command, testbeds=testbeds)
    new = [Row(benchmark=benchmark, **row) for row in rows]
    table = Table(
        runs=[r for r in table.runs if r.benchmark != benchmark] + [run],
        rows=[r for r in table.rows if r.benchmark != benchmark] + new,
    )
    path.write_text(json.dumps(table.model_dump(mode="json"), indent=1) + "\n", encoding="utf-8")


# The quantities that bear on a verdict, by what the verdict asserts, each with what it means for the
# reader: a verdict that asserts is read beside its route's chance of asserting wrongly (and of
# detecting what is there); "no result" beside the chance a real effect would have been seen; a
# method refusal beside how often the route refuses, rightly and wrongly.
BEARING = {
    "asserts": (
        ("false verdict rate (rule set (default))", "a wrong SUPPORTED or CONTRADICTED where nothing was trained on"),
        ("false verdict rate (whole rule set", "a wrong SUPPORTED or CONTRADICTED on shifted or edited sets"),
        ("wrong VERIFIED or CONTRADICTED", "a wrong VERIFIED or CONTRADICTED for one document"),
        ("false verdict rate (identifiers", "a wrong SUPPORTED from identifiers never trained on"),
        ("power (rule set (default))", "training that did happen detected"),
        ("power (identifiers", "identifiers the model was trained on detected"),
        ("false detection rate (output-only marks", "an output-only mark never trained on ranked first by chance"),
        ("power (output-only marks", "an output-only mark the model was trained on detected"),
    ),
    "no result": (
        (
            "power (rule set (default))",
            "training that did happen detected (so the chance it was missed is 1 minus this)",
        ),
        ("false verdict rate (rule set (default))", "a wrong SUPPORTED or CONTRADICTED where nothing was trained on"),
        (
            "power (identifiers",
            "identifiers the model was trained on detected (so the chance they were missed is 1 minus this)",
        ),
        (
            "power (output-only marks",
            "an output-only mark the model was trained on detected (so the chance it was missed is 1 minus this)",
        ),
    ),
    "refused": (
        ("refusal rate", "a dated comparison refused, as it should be"),
        ("false refusal rate", "a same-period comparison refused wrongly"),
    ),
}
VERDICT_BEARING = {
    "VERIFIED": "asserts",
    "SUPPORTED": "asserts",
    "CONTRADICTED": "asserts",
    "INCONCLUSIVE": "no result",
    "UNVERIFIABLE": "no result",
    "REJECTED-METHOD": "refused",
}


def bearing_rows(rows: list[Row], verdict: str, n: int | None, regime: Regime | None = None) -> list[dict[str, Any]]:
    """The few rows that bear on ``verdict`` (of the rows nearest the audit's size): for each
    quantity, the least favourable scenario measured, with what the number means, how many
    scenarios it is the worst of and, where it is not ``regime`` (the one the report names), its own."""
    out = []
    for prefix, meaning in BEARING[VERDICT_BEARING[verdict]]:
        matching = [r for r in rows if r.quantity.startswith(prefix)]
        if not matching:
            continue
        power = prefix.startswith("power")
        worst = min(matching, key=lambda r: r.value) if power else max(matching, key=lambda r: r.value)
        out.append(
            worst.model_dump(mode="json")
            | {
                "meaning": meaning,
                "scenarios": len(matching),
                "sentence": (
                    f"{meaning}: {worst.value:.3f}"
                    + (f" [{worst.ci[0]:.3f}, {worst.ci[1]:.3f}]" if worst.ci else "")
                    + f" of {worst.trials} audits at {worst.n} documents per set ({worst.scenario}"
                    + (
                        f"; the {'lowest' if power else 'highest'} of {len(matching)} scenarios"
                        if len(matching) > 1
                        else ""
                    )
                    + ")"
                    + (f"; this audit has {n}" if n is not None else "")
                    + (
                        f"; measured on {worst.regime.sentence()}"
                        if worst.regime is not None and worst.regime != regime
                        else ""
                    )
                ),
            }
        )
    return out


def nearest_regime(regimes: list[Regime], parameters: int | None) -> Regime | None:
    """The measured regime closest to an audited model of ``parameters`` (None: unknown, as behind an API): nearest
    in log size, then the fewest passes and the smallest member share (the most pretraining-like); with the size
    unknown, the most pretraining-like - audited models are pretrained, not trained for epochs on a few documents."""
    if not regimes:
        return None

    def distance(r: Regime) -> tuple[float, float, float]:
        size = abs(float(np.log10(r.parameters / parameters))) if parameters else 0.0
        return (round(size, 1), r.passes, r.member_token_share)

    return min(regimes, key=distance)


def regime_sentence(regime: Regime | None, parameters: int | None) -> str:
    """What the rows' regime is, and how far the audited model is from it, in one sentence."""
    if regime is None:
        return "Measured without training a model (on corpora or data of known content)."
    if not parameters:
        audited = "this audit's model is behind an API, its size not known, so how far it is from that cannot be said"
    elif abs(np.log10(regime.parameters / parameters)) < 0.5:
        audited = f"this audit's model has {_size(parameters)} parameters, about that size"
    else:
        audited = (
            f"this audit's model has {_size(parameters)} parameters, and no model within 3x of its size is measured"
        )
    return (
        f"Measured on {regime.sentence()}; {audited}; a model pretrained on trillions of tokens, where each "
        "document is a far smaller share seen once, is not measured; published studies find membership harder to "
        "detect there than in any regime measured here."
    )


def for_audit(
    route: str | None, n: int | None, verdict: str | None = None, parameters: int | None = None
) -> dict[str, Any]:
    """The rows of ``route`` of the regime nearest the audited model (``parameters``, None when unknown) and nearest
    ``n`` (one per quantity and scenario), with where they come from and the table's digest, and the few that bear on
    ``verdict``: what an audit's findings carry."""
    path = table_path()
    table = load_table(path)
    rows = [r for r in table.rows if r.route == route]
    regime = nearest_regime(list({r.regime: None for r in rows if r.regime is not None}), parameters)
    candidates: dict[tuple[str, str], list[Row]] = {}
    for row in rows:
        candidates.setdefault((row.quantity, row.scenario), []).append(row)
    nearest: dict[tuple[str, str], Row] = {}
    for key, found in candidates.items():  # each quantity from the regime nearest the model that measured it
        closest = nearest_regime(list({r.regime: None for r in found if r.regime is not None}), parameters)
        for row in found:
            best = nearest.get(key)
            if row.regime not in (None, closest):
                continue
            if best is None or (n is not None and abs(row.n - n) < abs(best.n - n)):
                nearest[key] = row
    used = {r.benchmark for r in nearest.values()}
    return {
        "route": route,
        "n": n,
        "parameters": parameters,
        "regime": regime.model_dump(mode="json") if regime else None,
        "regime_sentence": regime_sentence(regime, parameters) if rows else "",
        "bearing": bearing_rows(list(nearest.values()), verdict, n, regime) if verdict else [],
        "table_sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
        "rows": [r.model_dump(mode="json") for r in nearest.values()],
        "runs": [r.model_dump(mode="json") for r in table.runs if r.benchmark in used],
    }


def _commit() -> str:
    try:
        found = subprocess.run(
            ["git", "rev-parse", "--short=12", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
            cwd=Path(__file__).resolve().parent,
        )
        return found.stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
