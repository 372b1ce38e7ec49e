"""The forms the same text takes in real corpora and benchmark files, as functions: the kit the
lookup's soundness is measured and tested with (``benchmarks/lookup_soundness.py``, the tests).

Each function takes real text and returns it the way a pipeline, a benchmark format or an
adversary stores it. None of them changes what a reader of the text would call its content, so
a lookup that calls a document absent after one of them has given a wrong VERIFIED.
"""

from __future__ import annotations

import base64
import gzip
import json
import random
import textwrap
from html import escape
from urllib.parse import quote

# Cyrillic and Greek letters a reader cannot tell from Latin ones (a few of Unicode's confusables).
LOOKALIKES = {"a": "\u0430", "e": "\u0435", "o": "\u043e", "p": "\u0440", "c": "\u0441", "x": "\u0445", "i": "\u0456"}


def as_records(text: str, width: int = 42) -> list[str]:
    """Subtitle-style records: lines of at most ``width`` characters, broken at spaces."""
    return textwrap.wrap(" ".join(text.split()), width=width, break_long_words=False) or [text]


def as_conll(text: str) -> str:
    """One token a line with a part-of-speech-like and a chunk-like tag (CoNLL-2003's layout)."""
    tokens = text.split()
    tags = ("NN", "VBZ", "DT", "JJ", "IN", "NNP")
    return (
        "-DOCSTART- -X- O O\n\n" + "\n".join(f"{t} {tags[i % len(tags)]} B-NP O" for i, t in enumerate(tokens)) + "\n"
    )


def as_conllu(text: str) -> str:
    """CoNLL-U: a comment line, then a numbered tab-separated row per token."""
    rows = [f"{i}\t{t}\t{t.lower()}\tX\t_\t_\t0\tdep\t_\t_" for i, t in enumerate(text.split(), 1)]
    return "# sent_id = 1\n" + "\n".join(rows) + "\n"


def as_markup(text: str) -> str:
    """Every word in a tagged element, as TEI word-level markup stores it."""
    return (
        "<text><body><p>"
        + " ".join(f'<w n="{i}">{escape(w)}</w>' for i, w in enumerate(text.split()))
        + "</p></body></text>"
    )


def as_html(text: str) -> str:
    """A web page: head, script, paragraphs with inline emphasis."""
    words = [escape(w) for w in text.split()]
    body = " ".join(f"<b>{w}</b>" if i % 7 == 3 else w for i, w in enumerate(words))
    return (
        "<html><head><title>page</title><script>var x = 1;</script></head><body><div "
        f"class='c'><p>{body}</p></div></body></html>"
    )


def with_lookalikes(text: str, every: int = 5, seed: int = 0) -> str:
    """Latin letters replaced by Cyrillic look-alikes in every ``every``-th word."""
    rng = random.Random(seed)
    words = text.split()
    for i in range(0, len(words), every):
        letters = [j for j, ch in enumerate(words[i]) if ch in LOOKALIKES]
        if letters:
            j = rng.choice(letters)
            words[i] = words[i][:j] + LOOKALIKES[words[i][j]] + words[i][j + 1 :]
    return " ".join(words)


def prefix(text: str, share: float) -> str:
    """The first ``share`` of a text's words."""
    words = text.split()
    return " ".join(words[: max(1, round(share * len(words)))])


def collage(texts: list[str], piece_words: int = 45) -> str:
    """Consecutive ``piece_words``-word pieces, each taken from the next text in turn."""
    return " ".join(" ".join(t.split()[:piece_words]) for t in texts)


def percent_encoded(text: str) -> str:
    """As a URL's query string stores it."""
    return quote(text)


def escaped(text: str) -> str:
    """As a JSON string literal written with ASCII escapes stores it."""
    return json.dumps(text)


def as_base64(text: str) -> str:
    """Base64 of the UTF-8 bytes, as a data field stores a blob."""
    return base64.b64encode(text.encode("utf-8")).decode("ascii")


def gzipped(text: str) -> str:
    """Base64 of gzip-compressed UTF-8, as a data field stores a compressed blob (read back)."""
    return base64.b64encode(gzip.compress(text.encode("utf-8"), mtime=0)).decode("ascii")


def compressed(text: str) -> str:
    """Base64 of bzip2-compressed UTF-8: a copy the lookup does not read back."""
    import bz2

    return base64.b64encode(bz2.compress(text.encode("utf-8"))).decode("ascii")


def hyphenated_lines(text: str, width: int = 60) -> str:
    """Printed-book layout: lines of about ``width`` characters, long words broken with a hyphen."""
    lines, line = [], ""
    for word in text.split():
        if len(line) + len(word) + 1 > width and len(word) > 5 and word.isalpha():
            cut = max(2, width - len(line) - 2)
            cut = min(cut, len(word) - 2)
            lines.append(f"{line} {word[:cut]}-".strip())
            line = word[cut:]
        elif len(line) + len(word) + 1 > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}".strip()
    return "\n".join(lines + [line])


def letter_spaced(text: str) -> str:
    """Every letter apart, words three spaces apart (a PDF's letter-spacing as extracted)."""
    return "   ".join(" ".join(word) for word in text.split())


def run_together(text: str) -> str:
    """All whitespace removed (a PDF extraction that lost the spaces)."""
    return "".join(text.split())


def small_capitals(text: str) -> str:
    """Lower-cased, letters written as Unicode small capitals where one exists (ᴛʜᴇ)."""
    import unicodedata

    caps = {}
    for letter in "abcdefghijklmnopqrstuvwxyz":
        try:
            caps[letter] = unicodedata.lookup(f"LATIN LETTER SMALL CAPITAL {letter.upper()}")
        except KeyError:
            pass
    return "".join(caps.get(ch, ch) for ch in text.lower())


def upside_down(text: str) -> str:
    """Reversed, in turned letters (a joke form some pages carry)."""
    turned = dict(zip("abcdefghijklmnopqrstuvwxyz", "ɐqɔpǝɟƃɥıɾʞlɯuodbɹsʇnʌʍxʎz"))
    return "".join(turned.get(ch, ch) for ch in reversed(text.lower()))


def interleaved_records(text: str, other: str, words: int = 6) -> list[str]:
    """Records of ``words`` words of ``text`` alternating, in file order, with records of ``other``."""
    a, b = text.split(), other.split()
    pieces = [" ".join(a[i : i + words]) for i in range(0, len(a), words)]
    fillers = [" ".join(b[i : i + words]) for i in range(0, len(b), words)]
    return [r for pair in zip(pieces, fillers + [""] * len(pieces)) for r in pair if r]


def sentences(text: str) -> list[str]:
    """The sentences of a text (split after . ! ? followed by a space)."""
    import re

    return [s for s in re.split(r"(?<=[.!?])\s+", " ".join(text.split())) if s]


def as_glue_tsv(texts: list[str], source: str = "gj04") -> str:
    """A CoLA-style TSV file: source, label, original mark, sentence; one sentence a row."""
    return "".join(
        f"{source}\t{i % 2}\t{'' if i % 2 else '*'}\t{s}\n" for t in texts for i, s in enumerate(sentences(t))
    )


def as_paired_tsv(texts: list[str]) -> str:
    """A PAWS/MRPC-style TSV file with a header: id, sentence1, sentence2, label; each text a
    sentence1, paired with the next text's first sentence."""
    rows = ["id\tsentence1\tsentence2\tlabel"]
    rows += [
        f"{i + 1}\t{' '.join(t.split())}\t{sentences(texts[(i + 1) % len(texts)])[0]}\t{i % 2}"
        for i, t in enumerate(texts)
    ]
    return "\n".join(rows) + "\n"


def as_tatoeba(texts: list[str], lang: str = "eng") -> str:
    """Tatoeba's sentences.csv layout: id <TAB> language <TAB> sentence, one sentence a row."""
    return "".join(f"{1000 + i}\t{lang}\t{s}\n" for i, s in enumerate(s for t in texts for s in sentences(t)))


def as_ctm(text: str, name: str = "rec01") -> str:
    """NIST CTM word alignments: file, channel, start, duration, word, confidence; a word a row."""
    return "".join(
        f"{name} 1 {0.31 * i:.2f} {0.29:.2f} {w} {0.9 + (i % 10) / 100:.2f}\n" for i, w in enumerate(text.split())
    )


def as_ocr_tsv(text: str) -> str:
    """Tesseract's TSV output: level, page, block, paragraph, line, word numbers, box, confidence, text."""
    head = "level\tpage_num\tblock_num\tpar_num\tline_num\tword_num\tleft\ttop\twidth\theight\tconf\ttext\n"
    return head + "".join(
        f"5\t1\t1\t1\t{i // 9 + 1}\t{i % 9 + 1}\t{40 + 70 * (i % 9)}\t{30 + 25 * (i // 9)}\t{8 * len(w)}\t18\t"
        f"{91 + i % 7}.{i % 10}\t{w}\n"
        for i, w in enumerate(text.split())
    )


def as_column_table(texts: list[str], cell_words: int = 5) -> str:
    """Texts written down the columns of an aligned table: each cell ``cell_words`` words of one
    text, one row per line, columns padded with spaces."""
    columns = [[" ".join(t.split()[i : i + cell_words]) for i in range(0, len(t.split()), cell_words)] for t in texts]
    rows = max(map(len, columns))
    widths = [max(map(len, c)) for c in columns]
    return "".join(
        "  ".join((c[r] if r < len(c) else "").ljust(w) for c, w in zip(columns, widths)).rstrip() + "\n"
        for r in range(rows)
    )


def in_attributes(text: str, where: int = 0) -> str:
    """A page whose only copy of the text is in attribute values: an image's alt text, a meta
    description, or an iframe's srcdoc page."""
    value = escape(" ".join(text.split()), quote=True)
    body = (
        f'<img src="a.png" alt="{value}">',
        f'<meta name="description" content="{value}">',
        f'<iframe srcdoc="&lt;p&gt;{value}&lt;/p&gt;"></iframe>',
    )[where % 3]
    return f"<html><head><title>page</title></head><body><div><p>Photo of the week.</p>{body}</div></body></html>"


def as_hex_dump(text: str) -> str:
    """``xxd``'s dump of the UTF-8 bytes: an offset, 16 bytes in groups of two, the printable characters."""
    data = text.encode("utf-8")
    lines = []
    for at in range(0, len(data), 16):
        chunk = data[at : at + 16]
        groups = " ".join(chunk[i : i + 2].hex() for i in range(0, len(chunk), 2))
        shown = "".join(chr(b) if 32 <= b < 127 else "." for b in chunk)
        lines.append(f"{at:08x}: {groups:<39}  {shown}")
    return "\n".join(lines) + "\n"


def as_syllables(text: str) -> str:
    """Lyrics under a tune, as ABC notation writes them (``w:`` lines): every word split into its
    syllables by hyphens (pyphen's English hyphenation dictionary), eight words a line."""
    import pyphen

    split = pyphen.Pyphen(lang="en_US")
    words = [split.inserted(w) for w in text.split()]
    return "".join(f"w: {' '.join(words[i : i + 8])}\n" for i in range(0, len(words), 8))


def shuffled_lines(text: str, seed: int = 0) -> str:
    """The text's lines in another order (OSCAR deduplicates and reorders lines within a file)."""
    lines = [line for line in text.splitlines() if line.strip()]
    random.Random(seed).shuffle(lines)
    return "\n".join(lines) + "\n"


def rot13(text: str) -> str:
    """ROT13, as forums and puzzle sites hide spoilers."""
    import codecs

    return codecs.encode(text, "rot13")


def mojibake(text: str) -> str:
    """UTF-8 bytes read as Windows-1252 (what ftfy repairs): a crawl that guessed the wrong encoding."""
    return text.encode("utf-8").decode("cp1252", errors="replace")


def quoted_printable(text: str) -> str:
    """A mail body in quoted-printable transfer encoding."""
    import quopri

    return quopri.encodestring(text.encode("utf-8"), quotetabs=True).decode("ascii")


def overstruck(text: str) -> str:
    """nroff's bold as a pager receives it: every letter of every other word struck twice (X\\bX)."""
    words = text.split()
    return " ".join("".join(f"{c}\b{c}" for c in w) if i % 2 == 0 else w for i, w in enumerate(words))


def squared_letters(text: str) -> str:
    """Latin letters drawn as negative squared capitals (U+1F170 block)."""
    return "".join(chr(0x1F170 + ord(c) - ord("a")) if "a" <= c <= "z" else c for c in text.lower())


def uuencoded(text: str) -> str:
    """The UTF-8 bytes uuencoded, as Usenet posts carried attachments."""
    import binascii

    data = text.encode("utf-8")
    lines = [binascii.b2a_uu(data[i : i + 45]).decode("ascii") for i in range(0, len(data), 45)]
    return "begin 644 post.txt\n" + "".join(lines) + "`\nend\n"
