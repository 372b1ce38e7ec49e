"""The forms a text is stored in, read back as the text itself before it is compared.

Corpora and benchmark files rarely store running text only: a web page keeps its markup, a
tagging benchmark stores one token per line with its tags (CoNLL), a dump stores JSON. Compared
as they stand, the tags and field names become words of their own and break every n-gram, so a
copy in another form looks absent. ``read_form`` therefore reads both sides - every corpus
document when an index is built and every suspect document when it is looked up - the same way,
in this order:

- encoded text: percent-encoding, backslash escapes and base64 runs that decode to UTF-8 text;
- JSON (an object or array as the whole text): its string values in order;
- markup (HTML, XML, TEI, RSS: at least three tags): all the text it holds - between the tags,
  and in comments, CDATA sections, scripts and styles - with inline tags (``<b>``, ``<span>``)
  joining what they split; or else token-per-line files (CoNLL, CoNLL-U): the token column;
- words hyphenated over a line end (``exam-`` / ``ple``) joined;
- look-alike letters: in a word that holds Latin letters, and in a Latin text also in words made
  of them only, letters Unicode lists as confusable with a Latin letter (a Cyrillic "а" in
  "plаin") and Latin small capitals (ᴛʜᴇ) are read as that letter.

Forms that can hide a copy but cannot be read back are named instead (``Reading.unread``): words
still mixing letters of two scripts after that, words mostly of look-alike letters in a Latin
text, encoded runs that did not decode, and forms no reading restores (``uncompared``: letters
spaced apart, words run together, upside-down text). A suspect document in such a form can be
found present, never clean; the index build counts corpus documents in such forms, so an absence
is not verified against a corpus that may hide copies in them.
"""

from __future__ import annotations

import functools
import json
import re
import unicodedata
from collections import Counter
from dataclasses import dataclass, replace
from html.parser import HTMLParser

FORMS_VERSION = "forms/6"
# A word broken over a line end with a hyphen (``exam-\nple``, as printed books and OCR store
# them) is read joined; the continuation must be a lower-case letter, so "Jean-\nPaul" stays two.
# (The pattern starts with its literal "-" so the engine skips to hyphens; the letter before is a lookbehind.)
_LINE_HYPHEN = re.compile(r"-(?<=[^\W\d_]-)[ \t]*\r?\n[ \t]*(?=[^\W\d_A-Z])")
MIN_TAGS = 3
MAX_INFLATED = 8 << 20
MIN_TABLE_LINES = 3
_TAG = re.compile(r"</?[A-Za-z][\w:.-]*(?:\s+[^<>]*?)?/?>|<!--.*?-->|<!\[CDATA\[|<\?xml[^>]*\?>", re.S)
_INLINE = frozenset(
    "a abbr b bdi bdo big cite code del dfn em font i ins kbd mark q s samp small span strike strong sub sup "
    "tt u var wbr hi".split()
)
_LINE_BOUNDARIES = (
    "\n",
    "\r",
    "\v",
    "\f",
    "\x1c",
    "\x1d",
    "\x1e",
    "\x85",
    "\u2028",
    "\u2029",
)  # where str.splitlines splits
_COMMENT_LINE = re.compile(r"^\s*(?:#|-DOCSTART-)")
_RUNNING_NUMBER = re.compile(r"^\d+(?:[-.]\d+)?$")
_PERCENT = re.compile(r"%[0-9A-Fa-f]{2}")
_ESCAPE = re.compile(r"\\u[0-9A-Fa-f]{4}|\\x[0-9A-Fa-f]{2}|\\[ntr]")
_BASE64 = re.compile(r"(?<![A-Za-z0-9+/])[A-Za-z0-9+/]{80,}={0,2}")
_ENCODED = (
    ("percent-encoded text", re.compile(r"(?:%[0-9A-Fa-f]{2}){4,}")),
    ("backslash-escaped text", re.compile(r"(?:\\u[0-9A-Fa-f]{4}|\\x[0-9A-Fa-f]{2}){4,}")),
    ("base64-encoded text", _BASE64),
)
_TEXT_ATTRIBUTES = frozenset(
    "srcdoc content alt title value placeholder label summary aria-label aria-description abbr".split()
)
_SCRIPTS = ("LATIN", "CYRILLIC", "GREEK", "ARMENIAN", "CHEROKEE", "COPTIC", "GEORGIAN")


@dataclass(frozen=True)
class Reading:
    """A text as read for comparison: ``form`` says how it was read ("plain", "markup",
    "token-per-line", "json"); ``unread`` names forms found in it that cannot be read back."""

    text: str
    form: str
    unread: tuple[str, ...] = ()
    marked: bool = False  # compared in the romanised namespace of other scripts (``romanised``)


class _Text(HTMLParser):
    """All the text markup holds: element text, and also comments, CDATA sections, scripts,
    styles and noscript blocks (a page can keep its article in any of them: JSON-LD in a script,
    an RSS description in CDATA). Block tags separate words, inline tags do not."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.attributes: list[str] = []

    def handle_starttag(self, tag: str, attrs) -> None:  # noqa: ANN001 - HTMLParser's own signature
        # Rows end a line and cells start a column, so a <table> is read along both axes (``_columns``).
        if tag not in _INLINE:
            self.parts.append("\t" if tag in ("td", "th") else "\n" if tag == "tr" else " ")
        self._attributes(attrs)

    def handle_endtag(self, tag: str) -> None:
        if tag not in _INLINE:
            self.parts.append(" ")

    def handle_startendtag(self, tag: str, attrs) -> None:  # noqa: ANN001 - HTMLParser's own signature
        if tag not in _INLINE:
            self.parts.append(" ")
        self._attributes(attrs)

    def _attributes(self, attrs: list[tuple[str, str | None]]) -> None:
        """Attribute values that hold text (``alt``, ``title``, ``content``, ``data-*``, a
        ``srcdoc`` page): kept apart, read as a reading of their own."""
        for name, value in attrs:
            if value and (name in _TEXT_ATTRIBUTES or name.startswith("data-")):
                self.attributes.append(value)

    def handle_data(self, data: str) -> None:
        self.parts.append(data)

    def handle_comment(self, data: str) -> None:
        self.parts.append(f" {data} ")

    def unknown_decl(self, data: str) -> None:
        self.parts.append(f" {data.removeprefix('CDATA[')} ")

    def parse_marked_section(self, i: int, report: int = 1) -> int:
        """``<![`` with a keyword the parser does not know (``<![A-Z0-9]`` in a regex quoted by a
        page) is text, as browsers read it; the standard library raises AssertionError instead."""
        try:
            return super().parse_marked_section(i, report)
        except AssertionError:
            self.handle_data("<![")
            return i + 3


def _markup(text: str) -> str | None:
    parsed = _parse_markup(text)
    return None if parsed is None else parsed[0]


def _parse_markup(text: str, depth: int = 0) -> tuple[str, list[str]] | None:
    """The text markup holds and its attribute values (a ``srcdoc`` page read in turn, two levels
    deep), or None when the text is not markup."""
    if text.count("<") < MIN_TAGS or len(_TAG.findall(text)) < MIN_TAGS:
        return None
    parser = _Text()
    try:
        parser.feed(text)
        parser.close()
    except AssertionError:  # another construct the standard parser gives up on: the text is read as it is
        return None
    values: list[str] = []
    for value in parser.attributes:
        inner = _parse_markup(value, depth + 1) if depth < 2 else None
        values += [value] if inner is None else [inner[0], *inner[1]]
    return "".join(parser.parts), values


def _token_column(text: str) -> str | None:
    """The token column of a token-per-line text, or None when it is not one: at least three
    lines, nearly all (90%) of the non-comment lines of one width (2 or more columns), the token
    column holding single tokens, and the other columns annotations - tab-separated with three
    or more columns (CoNLL-U), or tags without lower-case letters (CoNLL-2003's ``NNP B-NP O``).
    Lines of running text in columns (a poem of three-word lines, a two-column glossary) are not
    read this way: their other columns are words."""
    if (most := sum(map(text.count, _LINE_BOUNDARIES)) + 1) < MIN_TABLE_LINES:  # at least the lines splitlines makes
        return None
    # A width shared by 90% of the lines leaves at most a tenth of ``most`` (which bounds the lines
    # counted) to other widths, in any prefix too: a text whose first lines already hold more
    # lines of other widths than that (prose, source code) is refused there - exactly, never a table.
    lines: list[str] = []
    slack = 0.1 * most
    counts: tuple[Counter, Counter] = (Counter(), Counter())
    best = [0, 0]
    for line in text.splitlines():
        if not line.strip() or _COMMENT_LINE.match(line):
            continue
        lines.append(line)
        for mode, width in enumerate((line.count("\t") + 1, len(line.split()))):
            if width >= 2:
                counts[mode][width] += 1
                best[mode] = max(best[mode], counts[mode][width])
        if len(lines) - max(best) > slack:
            return None
    if len(lines) < MIN_TABLE_LINES:
        return None
    for tabs in (True, False):
        widths = [line.count("\t") + 1 for line in lines] if tabs else [len(line.split()) for line in lines]
        width, share = Counter(widths).most_common(1)[0]
        if width < 2 or share < 0.9 * len(lines):
            continue
        rows = [line.split("\t") if tabs else line.split() for line in lines]
        table = [[cell.strip() for cell in r] for r in rows if len(r) == width]
        column = next((c for c in range(width) if not all(_RUNNING_NUMBER.match(r[c]) for r in table)), None)
        if column is None:
            continue
        others = [cell for r in table for c, cell in enumerate(r) if c != column and not (c < column)]
        tag_like = sum(not any(ch.islower() for ch in cell) for cell in others) >= 0.9 * max(len(others), 1)
        if not (tag_like or tabs and width >= 3):
            continue
        # Multi-word tokens of CoNLL-U ("1-2 du") repeat the words that follow: skipped.
        tokens = [r[column] for r in table if not (column and "-" in r[0] and _RUNNING_NUMBER.match(r[0]))]
        if sum(" " in t for t in tokens) > 0.1 * len(tokens):
            continue  # a table of sentences, not of tokens
        return " ".join(tokens)
    return None


def _percent(text: str) -> str | None:
    """Percent-encoded text (a URL-encoded copy: ``The%20cat``) decoded, when it holds at least
    four escapes."""
    if len(_PERCENT.findall(text)) < 4:
        return None
    from urllib.parse import unquote

    return unquote(text)


def _escapes(text: str) -> str | None:
    """Backslash escapes (``\\u00e9``, ``\\n``: text copied out of a JSON or source file) decoded,
    when there are at least four."""
    if len(_ESCAPE.findall(text)) < 4:
        return None
    plain = {"n": "\n", "t": "\t", "r": "\r"}
    return _ESCAPE.sub(lambda m: plain[m.group(0)[1]] if len(m.group(0)) == 2 else chr(int(m.group(0)[2:], 16)), text)


def _base64(text: str) -> str | None:
    """Runs of base64 that decode to UTF-8 text, replaced by that text."""
    import base64
    import binascii

    if max(map(len, text.split()), default=0) < 80:  # a run holds no space: no token that long, no run (checked in C)
        return None
    changed = False

    def decode(match: re.Match[str]) -> str:
        nonlocal changed
        run = match.group(0)
        try:
            decoded = _text_of(base64.b64decode(run + "=" * (-len(run) % 4), validate=True))
        except (binascii.Error, ValueError):
            return run
        if decoded is None or sum(ch.isprintable() or ch.isspace() for ch in decoded) < 0.95 * len(decoded):
            return run
        changed = True
        return f" {decoded} "

    out = _BASE64.sub(decode, text)
    return out if changed else None


def _text_of(data: bytes, errors: str = "strict") -> str | None:
    """UTF-8 text in decoded bytes, read through gzip or zlib compression first (a compressed
    copy in a data field is text a simple rule restores); None for anything else."""
    import zlib

    if data[:2] == b"\x1f\x8b" or data[:1] == b"\x78":
        inflate = zlib.decompressobj(wbits=31 if data[:1] == b"\x1f" else 15)
        try:
            data = inflate.decompress(data, MAX_INFLATED)  # bounded: a small run cannot expand into gigabytes
        except zlib.error:
            return None
    try:
        return data.decode("utf-8", errors=errors)
    except UnicodeDecodeError:
        return None


def _json_strings(text: str) -> str | None:
    stripped = text.strip()
    if stripped[:1] not in ("{", "[") or len(stripped) < 2:
        return None
    try:
        value = json.loads(stripped)
    except (ValueError, RecursionError):
        return None
    strings: list[str] = []
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            strings.append(item)
        elif isinstance(item, dict):
            stack.extend(reversed(list(item.values())))
        elif isinstance(item, list):
            stack.extend(reversed(item))
    return " ".join(strings) if strings else None


@functools.cache
def _lookalikes() -> dict[str, str]:
    """Letters of other alphabetic scripts that Unicode's confusables list as one Latin letter
    (from the ``confusable-homoglyphs`` package's copy of the Unicode data)."""
    from importlib.resources import files

    data = json.loads(files("confusable_homoglyphs").joinpath("confusables.json").read_text(encoding="utf-8"))
    # Latin small capitals (ᴛʜᴇ) are letters' styles the confusables data lists only in part: by name.
    table = {
        chr(cp): m.group(1).lower()
        for cp in range(0x80, 0x20000)
        if (m := re.fullmatch(r"LATIN LETTER SMALL CAPITAL ([A-Z])", unicodedata.name(chr(cp), "")))
    }
    for char, glyphs in data.items():
        if (
            len(char) != 1
            or char.isascii()
            or not char.isalpha()
            or char in table
            or not unicodedata.name(char, "").startswith(_SCRIPTS)
        ):
            continue
        latin = [g["c"] for g in glyphs if len(g["c"]) == 1 and g["c"].isascii() and g["c"].isalpha()]
        if latin:
            table[char] = latin[0]
    return table


def script_of(ch: str) -> str | None:
    """The script of a letter, among those look-alikes come from (None for others)."""
    return next((s for s in _SCRIPTS if unicodedata.name(ch, "").startswith(s)), None)


def _fold_lookalikes(text: str) -> tuple[str, list[str]]:
    """``text`` with look-alike letters read as Latin in words holding Latin letters, and what
    still hides words: a word mixing scripts after that, or look-alike-only words in Latin text.

    Work is per distinct character and per distinct non-ASCII word (an index build reads every
    corpus document): a text whose non-ASCII letters are all Latin and none a look-alike (accents,
    typographic quotes) has nothing to fold and no second script, and is returned at once."""
    table = _lookalikes()
    odd = {ch for ch in set(text) if not ch.isascii()}
    if not odd & table.keys() and not {script_of(ch) for ch in odd if ch.isalpha()} - {None, "LATIN"}:
        return text, []
    latin = {
        ch: ch in table or unicodedata.normalize("NFKD", ch)[:1].isascii() for ch in odd
    }  # a look-alike, or Latin with marks
    word = re.compile(r"[^\W\d_]+")
    words = word.findall(text)
    counts = Counter(w for w in words if not w.isascii())
    latin_words = (
        len(words)
        - sum(counts.values())
        + sum(k for w, k in counts.items() if all(ch.isascii() or latin[ch] for ch in w))
    )
    latin_text = latin_words >= 0.9 * len(words)
    # Look-alikes are read as Latin inside words holding Latin letters, and in a Latin text also in
    # words made of them only ("а" for "a", small capitals "ᴛʜᴇ").
    folded_words: dict[str, str] = {}
    mixed = hidden = 0
    for w, k in counts.items():
        f = w
        if any(ch.isascii() for ch in w) or latin_text and all(ch.isascii() or latin[ch] for ch in w):
            f = "".join(table.get(ch, ch) for ch in w)
            if f != w:
                folded_words[w] = f
        if f.isascii():
            continue
        mixed += k * (len({script_of(ch) for ch in f} - {None}) > 1)
        hidden += k * (latin_text and sum(ch in table for ch in f) >= len(f) / 2)
    folded = text
    if folded_words:
        parts = re.split(r"([^\W\d_]+)", text)
        folded = "".join(folded_words.get(part, part) for part in parts)
    unread = []
    if mixed >= max(2, 0.01 * len(words)):  # one stylised name ("ЯUSSKAJA") is no disguise
        unread.append("words mixing letters of two scripts (look-alike letters)")
    if hidden >= max(2, 0.01 * len(words)):
        unread.append("words written mostly in look-alike letters of another script")
    return folded, unread


_UNSEGMENTED = re.compile(r"[^\W\d_]{60}")
_LETTER = re.compile(r"[^\W\d_]")
_TURNED = re.compile(r"[\u0250-\u02af\u01dd\u1d00-\u1d7f]")  # IPA extensions, turned e, phonetic extensions


def uncompared(text: str) -> str | None:
    """A form no reading restores, in which a copy is invisible to word matching: text with every
    letter spaced apart (a PDF's letter-spacing), text run together without spaces, or text in
    turned or phonetic letters (upside-down text). None for ordinary text."""
    words = text.split()
    lengths = Counter(map(len, words))  # counted in C: the checks below look only at the tokens that can matter
    if (
        len(words) >= 10
        and lengths[1] >= 0.6 * len(words)
        and sum(len(w) == 1 and w.isalpha() for w in words) >= 0.6 * len(words)
    ):
        return "letters spaced apart"
    if any(n >= 60 for n in lengths) and any(
        _UNSEGMENTED.search(w) for w in words if len(w) >= 60
    ):  # a run of letters is inside one token
        return "words run together without spaces"
    if (turned := len(_TURNED.findall(text))) >= 4:  # letters counted only where turned ones are (a pass per character)
        letters = len(_LETTER.findall(text))
        if letters >= 20 and turned >= 0.2 * letters:
            return "turned or phonetic letters"
    return None


def _main(text: str) -> tuple[str, list[str]]:
    """The text read through the readers that restore one running text (decoders, JSON, markup
    or else token-per-line, line-end hyphens, look-alike letters), and the forms read."""
    forms, read = [], text
    for name, reader in (("percent-encoded", _percent), ("backslash-escaped", _escapes), ("base64", _base64)):
        found = reader(read)
        if found is not None:
            forms.append(name)
            read = found
    for name, reader in (("json", _json_strings), ("markup", _markup), ("token-per-line", _token_column)):
        if name == "token-per-line" and "markup" in forms:
            break
        found = reader(read)
        if found is not None:
            forms.append(name)
            read = found
    if "-" in read and _LINE_HYPHEN.search(read):
        forms.append("line-end hyphens")
        read = _LINE_HYPHEN.sub("", read)
    return read, forms


def read_form(text: str, *, look_for_unread: bool = True) -> Reading:
    """``text`` as read for comparison (see the module doc): JSON's strings first, then markup or
    else the token column of what that left; the unread forms are looked for in what was read
    (an index build reads corpus documents without looking for them). The main reading only:
    ``readings`` adds the raw text and every other reading."""
    read, forms = _main(text)
    unread: tuple[str, ...] = ()
    if not read.isascii():
        folded, hiding = _fold_lookalikes(read)
        if folded != read:
            forms.append("look-alikes")
            read = folded
        unread += tuple(hiding)
    if look_for_unread:
        unread = tuple(name for name, pattern in _ENCODED if pattern.search(read)) + unread
        if (hidden := uncompared(read)) is not None:
            unread += (hidden,)
    return Reading(read, " ".join(forms) or "plain", unread if look_for_unread else ())


# Readers that keep only part of what they read (a field, a column, the text between tags): after
# one of them the raw text is compared too. The decoders, line-end hyphens and look-alikes keep
# every word.
_PARTIAL_READERS = frozenset({"json", "markup", "token-per-line"})
_MARKDOWN_RULE = re.compile(r"^[\s|:+-]*-{3,}[\s|:+-]*$")
_FIELD_LABEL = re.compile(r"^\s*[A-Za-z]{1,2}:\s")
_SYLLABLE = re.compile(r"(?<=[^\W\d_])-(?=[^\W\d_])")
_HEX_OFFSET = re.compile(r"^[0-9A-Fa-f]{4,16}:?[ \t]+", re.M)
_HEX_LINE_START = re.compile(r"\n[0-9A-Fa-f]{4,16}:?[ \t]")
_HEX_32 = re.compile(r"[0-9A-Fa-f]{32}")
_HEX_TOKEN = re.compile(r"(?:[0-9A-Fa-f]{2}){1,8}")
_HEX_RUN = re.compile(r"(?<![0-9A-Za-z])[0-9A-Fa-f]{64,}(?![0-9A-Za-z])")
_NOT_ASCII_LETTERS = bytes(c for c in range(128) if not chr(c).isalpha())
SNIFF_LINES = 40
MIN_HEX_LINES = 3
UNDECODED_HEX_CHARS = 128  # a hex run this long that is not text is counted as not compared (a digest is 64)


def _split_cells(lines: list[str], text: str) -> list[list[list[str]]]:
    """The ways the lines may split into cells, most specific first: tabs, pipes (markdown),
    commas (CSV), fixed-width columns (aligned by spaces), runs of whitespace."""
    import csv

    ways: list[list[list[str]]] = []
    if "\t" in text:
        ways.append([line.split("\t") for line in lines])
    if sum("|" in line for line in lines) >= 0.9 * len(lines):
        ways.append([line.strip().strip("|").split("|") for line in lines])
    if sum("," in line for line in lines) >= 0.9 * len(lines):
        ways.append(list(csv.reader(lines)))
    if sum("  " in line.strip() for line in lines) >= 0.5 * len(lines):
        ways.append(_fixed_width(lines))
    ways.append([line.split() for line in lines])
    return ways


def _fixed_width(lines: list[str]) -> list[list[str]]:
    """Cells of text aligned in columns: the columns are cut where every line has a space."""
    import numpy as np

    width = max(map(len, lines))
    grid = np.frombuffer(
        "".join(line.ljust(width) for line in lines).encode("utf-32-le", errors="surrogatepass"), dtype=np.uint32
    )
    blank = (grid.reshape(len(lines), width) == 32).all(axis=0)
    cuts = [i for i in range(1, width) if blank[i] != blank[i - 1]]
    bounds = list(zip([0, *cuts], [*cuts, width]))
    cells = [(lo, hi) for lo, hi in bounds if not blank[lo]]
    return [[line[lo:hi] for lo, hi in cells] for line in lines]


def _columns(text: str, share_needed: float = 0.9) -> str | None:
    """A table read column by column (each column's cells in order, a line per column), so a
    sentence column, a word column (CTM, CoNLL, OCR output) or a text written down a column is
    one run of text; None when the text is no table (fewer than three lines, or no way of
    cutting 90% of its lines into the same number of cells, at least two)."""
    if sum(map(text.count, _LINE_BOUNDARIES)) + 1 < MIN_TABLE_LINES:
        return None
    every = text.splitlines()
    if len(every) > 2 * SNIFF_LINES and not _columns("\n".join(every[:SNIFF_LINES]), 0.8):
        return None  # a long text whose first lines are no table (80% of one width) is none: not cut whole
    lines = [
        line for line in every if line.strip() and not _COMMENT_LINE.match(line) and not _MARKDOWN_RULE.match(line)
    ]
    if len(lines) < MIN_TABLE_LINES:
        return None
    for rows in _split_cells(lines, text):
        width, share = Counter(map(len, rows)).most_common(1)[0]
        if width >= 2 and share >= share_needed * len(rows):
            table = [row for row in rows if len(row) == width]
            return "\n".join(" ".join(row[c].strip() for row in table) for c in range(width))
    return None


def _hex_dump(text: str) -> str | None:
    """The text a hex dump holds (``xxd``, ``hexdump -C``: an offset, then the bytes; or plain
    runs of hex digits), decoded as UTF-8 where it is text."""
    parts: list[bytes] = []
    offsets = (
        [(m.end(), int(m.group(0).strip().rstrip(":"), 16)) for m in _HEX_OFFSET.finditer(text)]
        if ("0: " in text or "0  " in text) and _HEX_LINE_START.search(text)  # offsets end in 0 (16 bytes a line)
        else []
    )
    if len(offsets) >= MIN_HEX_LINES:
        steps = Counter(b - a for (_, a), (_, b) in zip(offsets, offsets[1:]))
        step = steps.most_common(1)[0][0]
        if 0 < step <= 64:
            for (at, offset), following in zip(offsets, [*(o for _, o in offsets[1:]), None]):
                want = step if following is None else following - offset
                line = text[at : text.find("\n", at) if "\n" in text[at:] else len(text)]
                got = bytearray()
                for token in line.split():
                    if len(got) >= want or not _HEX_TOKEN.fullmatch(token):
                        break
                    got += bytes.fromhex(token)
                parts.append(bytes(got[:want]))
    else:
        parts = [
            bytes.fromhex(run[: len(run) // 2 * 2]) for run in _HEX_RUN.findall(re.sub(r"[ \t]*\n[ \t]*", "", text))
        ]
    # A dump's last line is short: characters of its text column that look like hex may be read as
    # a byte or two more, so bytes that are not UTF-8 are replaced rather than refusing the dump.
    decoded = _text_of(b"".join(parts), errors="replace") if parts else None
    if not decoded or sum(ch.isprintable() or ch.isspace() for ch in decoded) < 0.95 * len(decoded):
        return None
    return decoded


def _syllables(text: str) -> str | None:
    """Words split into syllables by hyphens (sung lyrics: ABC notation's ``w:`` lines, hyphenation
    dictionaries) joined again, when at least one word in 25 is split."""
    if text.count("-") < max(3, text.count(" ") / 25):  # counted in C: most texts stop here
        return None
    splits = len(_SYLLABLE.findall(text))
    if splits < max(3, len(text.split()) / 25):
        return None
    lines = text.splitlines()
    if sum(bool(_FIELD_LABEL.match(line)) for line in lines) >= 0.9 * len(lines):
        text = "\n".join(_FIELD_LABEL.sub("", line) for line in lines)  # ABC's "w:" before every line of lyrics
    return _SYLLABLE.sub("", text)


def romanised(text: str) -> Reading | None:
    """``text`` in a common Latin-letter form (anyascii's transliteration), when at least 1% of its
    letters are not ASCII: a text mostly in another script (20% of its letters or more) gives a
    reading compared in a namespace of its own (``marked``: the romanisation of a Cyrillic page is
    compared with the romanisation of a Latin one, never with running English), a Latin text
    with diacritics its letters without them."""
    if text.isascii():
        return None
    ascii_only = text.encode("ascii", errors="ignore")
    if len(text) - len(ascii_only) < 0.002 * len(
        text
    ):  # counted in C: under 1% of the letters of a text a fifth letters
        return None
    others = {ch: text.count(ch) for ch in set(text) if ord(ch) > 0x7F and ch.isalpha()}
    letters = len(ascii_only.translate(None, _NOT_ASCII_LETTERS)) + sum(others.values())
    if not letters or sum(others.values()) < 0.01 * letters:
        return None
    from anyascii import anyascii

    foreign = sum(k for ch, k in others.items() if script_of(ch) != "LATIN")
    return Reading(anyascii(text), "romanised", marked=foreign >= 0.2 * letters)


def readings(text: str, *, look_for_unread: bool = True) -> list[Reading]:
    """Every reading of ``text`` that is compared: the main one (``read_form``) first, then the
    raw text where a reader kept only part of it, then tables column by column, attribute
    values, hex dumps, words split into syllables, and the romanised form. Readings add, never
    replace: what one reader drops, another reading still holds."""
    main = read_form(text, look_for_unread=look_for_unread)
    out = [main]
    if set(main.form.split(" ")) & _PARTIAL_READERS:
        out.append(Reading(text, "raw"))
    if "markup" in main.form and (parsed := _parse_markup(_main(text)[0] if "json" in main.form else text)):
        if parsed[1]:
            out.append(Reading("\n".join(parsed[1]), "attribute values"))
    for name, reader, source in (
        ("columns", _columns, main.text if "markup" in main.form else text),
        ("hex dump", _hex_dump, text),
        ("syllables joined", _syllables, main.text),
    ):
        found = reader(source)
        if found is not None:
            out.append(Reading(found, name))
    for reading in list(out):
        if (other := romanised(reading.text)) is not None:
            out.append(replace(other, form=f"{reading.form} romanised"))
    seen: set[tuple[str, bool]] = set()
    kept = []
    for reading in out:
        key = (reading.text, reading.marked)
        if key not in seen:
            seen.add(key)
            kept.append(reading)
    return kept


def suspect_readings(text: str) -> list[Reading]:
    """The readings a suspect document is looked up in: ``readings``, and its main reading's
    romanised form in both namespaces (against romanised pages of other scripts, and against
    Latin text), so a copy in another writing system is found whichever side was romanised."""
    read = readings(text)
    from anyascii import anyascii

    latin = anyascii(read[0].text)
    seen = {(r.text, r.marked) for r in read}
    for marked in (False, True):
        if (latin, marked) not in seen and latin.strip():
            read.append(Reading(latin, "romanised", marked=marked))
    return read


def not_compared(text: str, read: list[Reading]) -> dict[str, int]:
    """Bytes of ``text`` no reading turned into comparable text, by kind: encoded runs that did
    not decode (base64, hex), and whole texts in a form no reading restores (``uncompared``)."""
    main = read[0].text
    out: dict[str, int] = {}
    if hidden := uncompared(main):
        out[hidden] = len(text.encode("utf-8", errors="surrogatepass"))
        return out
    hexed = any(r.form == "hex dump" for r in read)
    runs = [m.group(0) for m in _BASE64.finditer(main)] if max(map(len, main.split()), default=0) >= 80 else []
    if runs:
        out["base64 data that is not text"] = sum(map(len, runs))
    if not hexed and max(map(len, main.split()), default=0) >= UNDECODED_HEX_CHARS:
        hex_runs = [r for r in _HEX_RUN.findall(main) if len(r) >= UNDECODED_HEX_CHARS]
        if hex_runs:
            out["hex data that is not text"] = sum(map(len, hex_runs))
    return out
