"""Inline SVG figures drawn from numbers already in the findings (drawing, not computing).

Every string placed in a figure is escaped: names come from policies and claims, which are
user input.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from markupsafe import Markup, escape

W, H, PAD = 320, 240, 36
COLOURS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#17becf"]
BLIND = "#7f7f7f"
# One colour per verdict, for badges, the verdict box and the route that decided: a reader learns
# it once (green holds, red contradicted, amber undecided, purple method rejected, grey rests on word).
VERDICT_COLOUR = {
    "VERIFIED": "#1a7f37",
    "SUPPORTED": "#1a7f37",
    "CONTRADICTED": "#cf222e",
    "INCONCLUSIVE": "#9a6700",
    "REJECTED-METHOD": "#8250df",
    "UNVERIFIABLE": "#57606a",
}
# The other routes stay pale, so the decided one is the only coloured box.
STATUS_FILL = {
    "ran": "#ddf4ff",
    "skipped": "#eaeef2",
    "not_available": "#eaeef2",
    "not_reached": "#f6f8fa",
}


def _frame(
    title: str,
    x_label: str,
    y_label: str,
    body: str,
    x_ticks: Sequence[tuple[float, str]],
    y_ticks: Sequence[tuple[float, str]],
) -> Markup:
    ticks = "".join(
        f'<line x1="{x:.1f}" y1="{H - PAD}" x2="{x:.1f}" y2="{H - PAD + 4}" stroke="#555"/>'
        f'<text x="{x:.1f}" y="{H - PAD + 15}" font-size="9" text-anchor="middle">{escape(label)}</text>'
        for x, label in x_ticks
    ) + "".join(
        f'<line x1="{PAD - 4}" y1="{y:.1f}" x2="{PAD}" y2="{y:.1f}" stroke="#555"/>'
        f'<text x="{PAD - 6}" y="{y + 3:.1f}" font-size="9" text-anchor="end">{escape(label)}</text>'
        for y, label in y_ticks
    )
    return Markup(
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {W} {H}" width="{W}" height="{H}" role="img" '
        f'aria-label="{escape(title)}">'
        f'<rect x="{PAD}" y="10" width="{W - 2 * PAD}" height="{H - PAD - 10}" fill="none" stroke="#555"/>'
        f"{ticks}{body}"
        f'<text x="{W / 2}" y="{H - 4}" font-size="10" text-anchor="middle">{escape(x_label)}</text>'
        f'<text x="10" y="{(H - PAD) / 2}" font-size="10" text-anchor="middle" transform="rotate(-90 10 '
        f'{(H - PAD) / 2})">{escape(y_label)}</text>'
        "</svg>"
    )


def _x(v: float, lo: float = 0.0, hi: float = 1.0) -> float:
    return PAD + (v - lo) / (hi - lo or 1) * (W - 2 * PAD)


def _y(v: float, lo: float = 0.0, hi: float = 1.0) -> float:
    return H - PAD - (v - lo) / (hi - lo or 1) * (H - PAD - 10)


def _legend(entries: Sequence[tuple[str, str, bool]], x: float = PAD + 8, y: float = 18) -> str:
    dash = ' stroke-dasharray="4 2"'
    return "".join(
        f'<line x1="{x}" y1="{y + 11 * i}" x2="{x + 14}" y2="{y + 11 * i}" stroke="{colour}" '
        f'stroke-width="2"{dash if dashed else ""}/>'
        f'<text x="{x + 18}" y="{y + 3 + 11 * i}" font-size="8">{escape(name)}</text>'
        for i, (name, colour, dashed) in enumerate(entries)
    )


def roc_svg(roc: dict[str, Any]) -> Markup:
    """ROC curves of every signal (solid) and blind baseline (dashed, grey), with the chance line."""
    lines, legend = (
        [f'<line x1="{_x(0)}" y1="{_y(0)}" x2="{_x(1)}" y2="{_y(1)}" stroke="#bbb" stroke-dasharray="2 2"/>'],
        [],
    )
    for i, (name, curve) in enumerate(roc.items()):
        blind = curve["kind"] == "blind"
        colour = BLIND if blind else COLOURS[i % len(COLOURS)]
        points = " ".join(f"{_x(f):.1f},{_y(t):.1f}" for f, t in zip(curve["fpr"], curve["tpr"]))
        dash = ' stroke-dasharray="4 2"' if blind else ""
        lines.append(f'<polyline points="{points}" fill="none" stroke="{colour}" stroke-width="1.5"{dash}/>')
        legend.append((f"{name} (blind)" if blind else name, colour, blind))
    ticks = [(_x(v), f"{v:.1f}") for v in (0, 0.5, 1)]
    corner = _legend(
        legend, x=W - PAD - 105, y=H - PAD - 8 - 11 * (len(legend) - 1)
    )  # ROC curves leave the lower right empty
    return _frame(
        "ROC curves",
        "false-positive rate",
        "true-positive rate",
        "".join(lines) + corner,
        ticks,
        [(_y(v), f"{v:.1f}") for v in (0, 0.5, 1)],
    )


def histogram_svg(hist: dict[str, Any], labels: tuple[str, str] = ("suspect", "comparison")) -> Markup:
    """Two overlaid score histograms on shared bins."""
    edges, a, b = hist["edges"], hist["suspect"], hist["comparison"]
    lo, hi, top = edges[0], edges[-1], max(max(a), max(b), 1)
    bars = []
    for counts, colour in ((a, COLOURS[0]), (b, COLOURS[1])):
        for left, right, count in zip(edges, edges[1:], counts):
            y = _y(count, 0, top)
            bars.append(
                f'<rect x="{_x(left, lo, hi):.1f}" y="{y:.1f}" '
                f'width="{max(_x(right, lo, hi) - _x(left, lo, hi), 0.5):.1f}" '
                f'height="{H - PAD - y:.1f}" fill="{colour}" fill-opacity="0.45"/>'
            )
    legend = _legend([(labels[0], COLOURS[0], False), (labels[1], COLOURS[1], False)])
    x_ticks = [(_x(v, lo, hi), f"{v:.3g}") for v in (lo, (lo + hi) / 2, hi)]
    return _frame(
        "score histogram",
        "score (higher = more member-like)",
        "documents",
        "".join(bars) + legend,
        x_ticks,
        [(_y(0, 0, top), "0"), (_y(top, 0, top), str(top))],
    )


def power_svg(data: dict[str, Any]) -> Markup:
    """Estimated power against documents per set (log scale), with the target power as a line."""
    n, p, target = data["curve"]["n"], data["curve"]["power"], data.get("target_power")
    lo, hi = math.log10(n[0]), math.log10(n[-1])
    points = " ".join(f"{_x(math.log10(k), lo, hi):.1f},{_y(v):.1f}" for k, v in zip(n, p))
    body = f'<polyline points="{points}" fill="none" stroke="{COLOURS[0]}" stroke-width="1.5"/>'
    if target is not None:
        body += (
            f'<line x1="{PAD}" y1="{_y(target):.1f}" x2="{W - PAD}" y2="{_y(target):.1f}" '
            'stroke="#bbb" stroke-dasharray="3 2"/>'
        )
    x_ticks = [(_x(math.log10(k), lo, hi), f"{k:,}") for k in (20, 100, 1000, 10000, 100000) if n[0] <= k <= n[-1]]
    return _frame(
        "power curve",
        "documents per set (log scale)",
        "power",
        body,
        x_ticks,
        [(_y(v), f"{v:.1f}") for v in (0, 0.5, 1)],
    )


def tree_svg(path: Sequence[dict[str, Any]]) -> Markup:
    """The decision tree as a column of routes, coloured by what happened at each."""
    box_h, gap, width = 34, 14, 560
    height = len(path) * (box_h + gap)
    parts = []
    for i, node in enumerate(path):
        y = i * (box_h + gap)
        decided = node["status"] == "decided"
        shown = node.get("adjusted_verdict") or node.get("verdict")  # a batch's adjustment, where it weakened it
        fill = VERDICT_COLOUR.get(shown or "", "#57606a") if decided else STATUS_FILL.get(node["status"], "#fff")
        text_colour = "#fff" if decided else "#24292f"
        verdict = f" \u2192 {shown}" if shown else ""
        if shown != node.get("verdict"):
            verdict += f" (alone {node['verdict']})"
        label = f"{node['route']}  [{node['status'].replace('_', ' ')}]{verdict}"
        parts.append(
            f'<rect x="1" y="{y + 1}" width="{width - 2}" height="{box_h}" rx="6" fill="{fill}" stroke="#57606a"/>'
            f'<text x="12" y="{y + 15}" font-size="12" font-weight="bold" fill="{text_colour}">{escape(label)}</text>'
            f'<text x="12" y="{y + 28}" font-size="9" fill="{text_colour}">needs: '
            f"{escape(', '.join(node['needs']) or 'nothing')}</text>"
        )
        if i + 1 < len(path):
            parts.append(
                f'<line x1="40" y1="{y + box_h + 1}" x2="40" y2="{y + box_h + gap}" stroke="#57606a" '
                'marker-end="url(#arrow)"/>'
            )
    marker = (
        '<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="6" markerHeight="6" '
        'orient="auto"><path d="M0,0 L10,5 L0,10 z" fill="#57606a"/></marker></defs>'
    )
    return Markup(
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" width="{width}" height="{height}" '
        f'role="img" aria-label="path through the decision tree">{marker}{"".join(parts)}</svg>'
    )


# Figure kinds a route's ``Figure`` section may name; each draws only the numbers it is given.
FIGURES = {"roc": roc_svg, "histogram": histogram_svg, "power": power_svg}
