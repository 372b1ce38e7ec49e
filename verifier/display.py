"""Untrusted text made safe to show: in a terminal and in the HTML/PDF report.

Claims, document sets and error messages carry user text. Shown raw, C0/C1 control characters
can move the cursor or recolour a terminal (an ANSI escape can paint a fake "OK" line), and
bidirectional overrides or zero-width characters can make a report read differently from what
it holds ("not" hidden, a statement reversed). Here control characters are dropped and the
invisible ones are shown by name, e.g. ``<U+202E>``.
"""

from __future__ import annotations

import re

# Bidi embeddings, overrides and isolates, marks, and zero-width characters.
INVISIBLE = re.compile("[\u061c\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff]")
# C0 controls except tab and newline, DEL, and C1 controls.
CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def visible(text: str) -> str:
    """``text`` with control characters removed and invisible formatting characters named."""
    return INVISIBLE.sub(lambda m: f"<U+{ord(m.group()):04X}>", CONTROL.sub("", text))
