"""Untrusted text made safe to show: in a terminal and in the HTML/PDF report.

Claims, document sets, bundles and error messages carry user text. Shown raw, C0/C1 control
characters can move the cursor or recolour a terminal (an ANSI escape or a bare newline can
paint a fake "OK" line), and bidirectional overrides, zero-width, tag and other invisible
characters can make a report read differently from what it holds ("not" hidden, a statement
reversed, text smuggled in tag characters). Here control characters are dropped, and the
invisible ones are shown by name, e.g. ``<U+202E>``.
"""

from __future__ import annotations

import re

# Bidi embeddings, overrides, isolates and marks; zero-width and other invisible formatting
# characters; soft hyphen; Hangul fillers; line/paragraph separators; Unicode tag characters.
INVISIBLE = re.compile(
    "[\u00ad\u061c\u115f\u180e\u200b-\u200f\u2028-\u202e\u2060-\u2064\u2066-\u2069\u3164\ufeff\U000e0000-\U000e007f]"
)
# C0 controls except tab and newline, DEL, and C1 controls.
CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def visible(text: str, single_line: bool = False) -> str:
    """``text`` with control characters removed and invisible formatting characters named;
    ``single_line`` also turns newlines and tabs into spaces (one printed line stays one line)."""
    if single_line:
        text = text.replace("\n", " ").replace("\t", " ")
    return INVISIBLE.sub(lambda m: f"<U+{ord(m.group()):04X}>", CONTROL.sub("", text))
