"""Findings -> HTML (Jinja2, autoescaped: document text and claims are untrusted) -> PDF (WeasyPrint).

Rendering never computes: every number comes from the findings; the templates only format.
"""

from __future__ import annotations

from typing import Any

from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape
from markupsafe import Markup

from verifier.boundary.display import visible
from verifier.boundary.resources import resource
from verifier.report.svg import FIGURES, VERDICT_COLOUR, tree_svg
from verifier.verdicts import GLOSSARY, Verdict

TEMPLATES = resource("templates")


def _environment() -> Environment:
    env = Environment(
        loader=FileSystemLoader(TEMPLATES),
        autoescape=select_autoescape(default=True, default_for_string=True),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        # Every {{ value }} of user text shows its invisible characters by name (then is escaped).
        finalize=lambda value: visible(value) if isinstance(value, str) and not isinstance(value, Markup) else value,
    )
    env.globals |= {
        "figure_svg": lambda section: FIGURES[section["figure"]](section["data"]),
        "tree_svg": tree_svg,
        "glossary": {verdict.value: GLOSSARY[verdict] for verdict in Verdict},
    }
    return env


def render_html(
    findings: dict[str, Any], findings_sha256: str, signer: str | None = None, run: dict[str, Any] | None = None
) -> str:
    """The report; ``signer`` is the signing key's fingerprint, ``run`` how this run got its numbers
    (both outside the findings, whose digest does not depend on them)."""
    # The stylesheet is ours (trusted) and inlined, so the report is one self-contained file.
    css = Markup((TEMPLATES / "report.css").read_text(encoding="utf-8") + _verdict_css())
    return (
        _environment()
        .get_template("report.html.j2")
        .render(f=findings, digest=findings_sha256, css=css, signer=signer, run=run or {})
    )


def render_summary_html(findings: dict[str, Any], findings_sha256: str, signer: str | None = None) -> str:
    """The report of a summary check (``verifier.summary.check``): the template's table first."""
    css = Markup((TEMPLATES / "report.css").read_text(encoding="utf-8") + _verdict_css())
    return (
        _environment()
        .get_template("summary.html.j2")
        .render(f=findings, digest=findings_sha256, css=css, signer=signer)
    )


def _verdict_css() -> str:
    """The verdict colours as CSS, from the one table the tree figure also draws with."""
    return "".join(
        f".badge.{v} {{ background: {c}; }} .verdict.{v} {{ border-color: {c}; }} "
        f".glossary tr.{v} th {{ color: {c}; }}\n"
        for v, c in VERDICT_COLOUR.items()
    )


def render_pdf(html: str) -> bytes:
    from weasyprint import HTML

    return HTML(string=html).write_pdf()
