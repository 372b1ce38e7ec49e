"""Evidence reports: HTML and PDF rendered from findings."""

from verifier.report.render import render_html, render_pdf

__all__ = ["render_html", "render_pdf"]
