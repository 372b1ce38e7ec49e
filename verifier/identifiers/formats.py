"""Natural identifiers: random strings documents already carry, tested against fresh draws of their format.

Digests, version-4 UUIDs, short-URL paths and legacy OpenAI-style keys are (when genuinely
random) draws from a known generator. Score each one in its context under the model, against the same context with
freshly drawn identifiers of the same format: under H0 (the model was not trained on text
containing the identifier) the real one is exchangeable with the fresh ones, and its rank
gives an exact p-value with no held-out set at all (the "hidden in plain sight" idea).

What keeps it valid: the format's sampler must match how the real identifiers were made, and
every filter is applied to fresh draws and real identifiers alike (a filter applied to both
keeps them exchangeable). Fresh draws keep the real identifier's character class (digit,
lower-case or upper-case letter) at every position: a uniformly drawn identifier is, given that
pattern, uniform within each class, so the real one stays exchangeable with them, and a model's
general liking for digits or lower case cancels out (against unconditioned draws, any string of
digits looked "memorised"). Filters drop what is not random: well-known constants (digests of
the empty string, the nil UUID, documentation examples), runs of one character or progressions
of one step (12345, abcde, 13579), strings whose own parts predict each other (a run of four
characters that recurs, forwards or mirrored: a repeated block a model continues from its first
copy without training), digests of only digits or only letters, strings holding an
English word of five letters or more (vanity short URLs, ``...EXAMPLE`` keys), and 32-hex strings
laid out like a version-4 UUID without dashes (not uniform digits), and hex strings that decode to
printable text (hex-encoded ASCII: models find it likelier than fresh hex for reasons other than
training). What the context gives away is shared: where the context shows three or more of an
identifier's characters in a row (a short commit hash in an "ambiguous" message before the full
one, a redacted key), the fresh draws keep those characters and must show the context exactly the
same runs - the real identifier is uniform among the strings that meet that condition, so the rank
stays exact and a model copying the revealed part favours real and fresh alike; an identifier with
fewer than four characters left to draw is not tested. A short link's first character is kept as
well: shorteners hand out paths in sequence (2015's bit.ly paths begin with 1), so it is not
uniform. Formats with structure a uniform sampler
would not reproduce are not offered: AWS key ids (they encode the account) and GitHub tokens (a
checksum). The fresh draws are seeded by the identifier itself, never by anything the claimant
chooses. What it cannot check: that an identifier appears only in the suspect documents (a
popular commit hash tests every page that quotes it), that it was made by the generator its format
suggests (a hand-made short link with digits passes the filters), or that nobody chose the
identifiers after querying the model.
"""

from __future__ import annotations

import hashlib
import re
import string
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache

import numpy as np

from verifier.boundary.resources import word_list
from verifier.stats.rank_trials import words_before

ALNUM = string.ascii_letters + string.digits
LOWER_ALNUM = string.ascii_lowercase + string.digits
OPENAI_INFIX = "T3BlbkFJ"  # base64 of "OpenAI", fixed inside legacy keys
HEX_LOWER, HEX_UPPER = "0123456789abcdef", "0123456789ABCDEF"
KNOWN_CONSTANTS = frozenset(
    {
        "d41d8cd98f00b204e9800998ecf8427e",  # MD5 of the empty string
        "da39a3ee5e6b4b0d3255bfef95601890afd80709",  # SHA-1 of the empty string
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",  # SHA-256 of the empty string
        "00000000-0000-0000-0000-000000000000",
        "akiaiosfodnn7example",  # AWS documentation's example key
        "550e8400-e29b-41d4-a716-446655440000",  # the UUID of Wikipedia's and many documentation examples
    }
)


CLASSES = (string.digits, string.ascii_lowercase, string.ascii_uppercase)


def _redraw(part: str, alphabet: str, rng: np.random.Generator) -> str:
    """``part`` with every character drawn afresh, uniformly among the characters of ``alphabet`` of
    its class (digit, lower-case, upper-case letter)."""
    pools = {cls: [c for c in alphabet if c in cls] for cls in CLASSES}
    out = []
    for ch in part:
        pool = next((pools[cls] for cls in CLASSES if ch in cls), None)
        out.append(pool[int(rng.integers(len(pool)))] if pool else ch)
    return "".join(out)


def _uniform(alphabet: str, length: int, rng: np.random.Generator) -> str:
    return "".join(alphabet[i] for i in rng.integers(0, len(alphabet), length))


@dataclass(frozen=True)
class IdentifierFormat:
    """A format: how to find it, how to draw a fresh one like a real one, and how to make one from scratch."""

    name: str
    pattern: re.Pattern[str]
    sample: Callable[[str, np.random.Generator], str]  # (a real identifier, rng) -> a fresh one with its classes
    new: Callable[[np.random.Generator], str]  # rng -> a new identifier, uniform over the format (testbeds)


def _uuid4(real: str, rng: np.random.Generator) -> str:
    alphabet = HEX_UPPER if real.isupper() else HEX_LOWER
    digits = list(_redraw(real.replace("-", ""), alphabet, rng))
    digits[12] = "4"
    digits[16] = _redraw(real[19], alphabet[8:12], rng)  # the variant: 8, 9, a or b, of the real one's class
    text = "".join(digits)
    return f"{text[:8]}-{text[8:12]}-{text[12:16]}-{text[16:20]}-{text[20:]}"


def _new_uuid4(rng: np.random.Generator) -> str:
    text = list(_uniform(HEX_LOWER, 32, rng))
    text[12], text[16] = "4", HEX_LOWER[8 + int(rng.integers(4))]
    return "-".join("".join(text[i:j]) for i, j in ((0, 8), (8, 12), (12, 16), (16, 20), (20, 32)))


def _hex_digest(real: str, rng: np.random.Generator) -> str:
    return _redraw(real, HEX_UPPER if real.isupper() else HEX_LOWER, rng)


def _short_url(real: str, rng: np.random.Generator) -> str:
    host, _, path = real.partition("/")  # the first character kept: paths are handed out in sequence, not uniformly
    return f"{host}/{path[0]}" + _redraw(path[1:], LOWER_ALNUM if host == "tinyurl.com" else ALNUM, rng)


def _openai_key(real: str, rng: np.random.Generator) -> str:
    return "sk-" + _redraw(real[3:23], ALNUM, rng) + OPENAI_INFIX + _redraw(real[31:], ALNUM, rng)


FORMATS = (
    IdentifierFormat(
        "uuid4",
        re.compile(
            r"(?<![0-9A-Za-z-])[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}(?![0-9A-Za-z-])"
            r"|(?<![0-9A-Za-z-])[0-9A-F]{8}-[0-9A-F]{4}-4[0-9A-F]{3}-[89AB][0-9A-F]{3}-[0-9A-F]{12}(?![0-9A-Za-z-])"
        ),
        _uuid4,
        _new_uuid4,
    ),
    IdentifierFormat(
        "hex_digest",
        re.compile(
            r"(?<![0-9A-Za-z])(?:[0-9a-f]{64}|[0-9a-f]{40}|[0-9a-f]{32}|[0-9A-F]{64}|[0-9A-F]{40}|[0-9A-F]{32})(?![0-9A-Za-z])"
        ),
        _hex_digest,
        lambda rng: _uniform(HEX_LOWER, 40, rng),
    ),
    IdentifierFormat(
        "short_url",
        re.compile(
            r"(?<![0-9A-Za-z.])(?:(?:bit\.ly|t\.co|goo\.gl|ow\.ly|buff\.ly)/[A-Za-z0-9]{5,12}"
            r"|tinyurl\.com/[a-z0-9]{6,10})(?![0-9A-Za-z/])"
        ),
        _short_url,
        lambda rng: "bit.ly/" + _uniform(ALNUM, 7, rng),
    ),
    IdentifierFormat(
        "openai_key",
        re.compile(r"(?<![0-9A-Za-z-])sk-[A-Za-z0-9]{20}T3BlbkFJ[A-Za-z0-9]{20}(?![0-9A-Za-z])"),
        _openai_key,
        lambda rng: "sk-" + _uniform(ALNUM, 20, rng) + OPENAI_INFIX + _uniform(ALNUM, 20, rng),
    ),
)
BY_NAME = {f.name: f for f in FORMATS}


def random_looking(identifier: str) -> bool:
    """The filter applied alike to real identifiers and fresh draws (so they stay exchangeable)."""
    lowered = identifier.lower()
    if lowered in KNOWN_CONSTANTS or re.search(r"(.)\1{4}", lowered):
        return False
    if re.fullmatch(r"[0-9a-f]{32}", lowered) and lowered[12] == "4" and lowered[16] in "89ab":
        return False  # a version-4 UUID without its dashes: not uniform hex
    if re.fullmatch(r"[0-9a-f]{32,64}", lowered) and (lowered.isdigit() or not re.search(r"\d", lowered)):
        return False  # a digest of only digits (a long number, the digits of pi) or only letters is no digest
    if re.fullmatch(r"[0-9a-f]{32,64}", lowered) and (
        _printable_share(lowered) >= PRINTABLE_SHARE or _patterned(lowered)
    ):
        return False  # hex-encoded text or other structure: likelier than fresh hex to any model, trained or not
    if _sequential(lowered) or _self_predictable(lowered):
        return False
    words = _long_words()
    return not any(
        run[i:j] in words
        for run in re.findall(r"[a-z]{5,}", lowered)
        for i in range(len(run) - 4)
        for j in range(i + 5, len(run) + 1)
    )


def _sequential(text: str, run: int = 5) -> bool:
    """Whether ``text`` holds ``run`` characters in a progression of one step (12345, abcde,
    98765, 13579, acegi): a model continues those without having seen the string."""
    steps = [ord(b) - ord(a) for a, b in zip(text, text[1:])]
    return any(
        steps[i] != 0 and all(d == steps[i] for d in steps[i : i + run - 1]) for i in range(len(steps) - run + 2)
    )


PRINTABLE_SHARE = 0.75  # bytes of printable ASCII a hex string may decode to (uniform hex: 37% expected)


def _printable_share(hex_text: str) -> float:
    """The share of the bytes ``hex_text`` decodes to that are printable ASCII (a uniform 32-hex string reaches
    75% with probability about 1e-3, a 64-hex one about 1e-6)."""
    data = bytes.fromhex(hex_text[: len(hex_text) // 2 * 2])
    return sum(0x20 <= b < 0x7F for b in data) / max(1, len(data))


PERIODS = (2, 3, 4, 6)
PERIODIC_LEVEL = 1e-4  # uniform hex digests of 32-64 characters fail it 0.02-0.04% of the time (simulated)
FEWEST_DISTINCT = {32: 10, 40: 11, 64: 13}  # below these, a uniform digest's chance is about 0.1% (simulated)


def _patterned(hex_text: str) -> bool:
    """Whether a hex string has structure uniform hex lacks: one character recurring at a fixed period (UTF-8 lead
    bytes of CJK or Cyrillic text, UTF-16's zero bytes: a binomial tail below ``PERIODIC_LEVEL`` at any period and
    phase), or too few distinct characters (a narrow alphabet). Fresh draws pass the same test, so real and fresh stay
    exchangeable; it only sets aside what a model would favour untrained."""
    if len(set(hex_text)) < FEWEST_DISTINCT.get(len(hex_text), 10):
        return True
    for period in PERIODS:
        for phase in range(period):
            part = hex_text[phase::period]
            if max(part.count(c) for c in set(part)) >= _periodic_limit(len(part)):
                return True
    return False


@cache
def _periodic_limit(length: int) -> int:
    """The fewest repeats of one character among ``length`` uniform hex characters whose chance (any of the 16)
    is below ``PERIODIC_LEVEL``."""
    from scipy.stats import binom

    return next(k for k in range(1, length + 2) if 16 * binom.sf(k - 1, length, 1 / 16) < PERIODIC_LEVEL)


SELF_REPEAT = 4


def _self_predictable(text: str) -> bool:
    """Whether part of ``text`` predicts another part of it: a run of four characters that occurs
    again, forwards or mirrored (``4c123b4c123b``, ``ab12c21ba``). Any model that copies from its
    context continues such a string from its first part, trained on it or not, while fresh draws
    that keep only each position's class cannot be continued that way: the null "never trained on
    it" would not hold for the real identifier and its draws alike. About 3% of uniform 64-hex
    digests hold such a repeat by chance and are set aside with the rest (as fresh draws are)."""
    bare = re.sub(r"[^0-9a-z]", "", text)
    grams = [bare[i : i + SELF_REPEAT] for i in range(len(bare) - SELF_REPEAT + 1)]
    seen: dict[str, int] = {}
    for i, gram in enumerate(grams):
        if gram in seen or gram[::-1] in seen and seen[gram[::-1]] + SELF_REPEAT <= i:
            return True
        seen.setdefault(gram, i)
    return False


@cache
def _long_words() -> frozenset[str]:
    return frozenset(w for w in word_list() if len(w) >= 5) | {"example", "dummy", "sample", "secret", "token"}


@dataclass(frozen=True)
class Found:
    """One identifier in one document, with the text before it (its scoring context) and the positions of its
    characters that context shows (runs of ``REVEALED_RUN`` or more): fresh draws keep those."""

    format: str
    identifier: str
    document: int
    context: str
    revealed: frozenset[int] = frozenset()


def _bare(text: str) -> str:
    """Letters and digits only, case-folded, look-alikes folded (full-width and ligatures by NFKC, other scripts'
    look-alikes and digits by anyascii's transliteration, so a Cyrillic 'а' is an 'a', never a gap that joins its
    neighbours): how a model can copy a string, whatever separators, case or invisible characters it was shown with."""
    from anyascii import anyascii

    return re.sub(r"[^0-9a-z]", "", anyascii(unicodedata.normalize("NFKC", text)).casefold())


HEX_TOKEN = re.compile(r"(?:0x|\\x|%|&#x|\b)([0-9a-fA-F]{2,})\b")
DECIMAL_BYTES = re.compile(r"\b(?:25[0-5]|2[0-4]\d|1?\d?\d)(?:\s*[,;\s]\s*(?:25[0-5]|2[0-4]\d|1?\d?\d)){2,}\b")
BASE64_TOKEN = re.compile(r"(?<![A-Za-z0-9+/])[A-Za-z0-9+/]{8,}={0,2}(?![A-Za-z0-9+/=])")


def _views(text: str) -> tuple[str, ...]:
    """The forms in which a context can show an identifier's characters to a model that copies: its bare letters
    and digits, forwards and reversed; its hex tokens joined (``0x78, 0xdd``, ``\\x78\\xdd``, ``%78%DD``, ``78 then
    dd``), forwards, reversed and byte-reversed (little-endian); decimal byte lists and base64 tokens as the hex of
    their bytes. A run of the identifier in any of them counts as shown."""
    import base64
    import binascii

    bare = _bare(text)
    tokens = "".join(m.group(1) for m in HEX_TOKEN.finditer(text)).casefold()
    decoded = [bytes(int(n) for n in re.findall(r"\d+", m.group(0))).hex() for m in DECIMAL_BYTES.finditer(text)]
    for m in BASE64_TOKEN.finditer(text):
        try:
            decoded.append(base64.b64decode(m.group(0) + "=" * (-len(m.group(0)) % 4), validate=True).hex())
        except (binascii.Error, ValueError):
            continue
    pairs = [tokens[i : i + 2] for i in range(0, len(tokens) - 1, 2)]
    return (bare, bare[::-1], tokens, tokens[::-1], "".join(reversed(pairs)), *decoded)


def _grams(text: str, run: int) -> set[str]:
    bare = _bare(text)
    return {bare[i : i + run] for i in range(len(bare) - run + 1)}


REVEALED_RUN = 3  # shorter runs are in any context by chance and give a copying model next to nothing
MIN_FREE = 4  # characters an identifier must have left to draw once what its context shows is kept


def revealed(views: tuple[str, ...], identifier: str) -> frozenset[int]:
    """The positions in ``identifier`` of its characters inside runs of ``REVEALED_RUN`` or more that the context
    (given as its ``_views``) shows in any form: what a model could copy from the context instead of recalling it."""
    places = [i for i, ch in enumerate(identifier) if ch.isascii() and ch.isalnum()]
    bare = "".join(identifier[i] for i in places).casefold()
    shown: set[int] = set()
    for start in range(len(bare) - REVEALED_RUN + 1):
        end = start + REVEALED_RUN
        while end <= len(bare) and any(bare[start:end] in view for view in views):
            end += 1
        if end - 1 - start >= REVEALED_RUN:
            shown.update(places[start : end - 1])
    return frozenset(shown)


VARIANT_RUN = 12


def find_identifiers(texts: list[str], context_words: int) -> tuple[list[Found], dict[str, int]]:
    """Each distinct random-looking identifier once (at its first occurrence; identifiers sharing 12
    characters in a row are one), and counts of what was set aside."""
    found: list[Found] = []
    seen: set[str] = set()  # 12-character runs of the identifiers already met, compared bare
    dropped = {"not random-looking": 0, "repeated": 0, "context shows most of it": 0}
    for doc, text in enumerate(texts):
        hits, last_end = [], -1
        for start, end, fmt in sorted(
            ((m.start(), m.end(), f) for f in FORMATS for m in f.pattern.finditer(text)), key=lambda h: (h[0], -h[1])
        ):
            if (
                start >= last_end
            ):  # overlapping matches (a key holding a digest) are one identifier: the longest first match
                hits.append((start, end, fmt))
                last_end = end
        for start, end, fmt in hits:
            identifier = text[start:end]
            grams = _grams(identifier, VARIANT_RUN)
            if grams & seen:  # the same value again, in another case, cut shorter or shifted: one test, not several
                dropped["repeated"] += 1
                continue
            seen |= grams
            if not random_looking(identifier):
                dropped["not random-looking"] += 1
                continue
            context = words_before(text, start, context_words)
            shown = revealed(_views(context), identifier)
            if len(_drawn(identifier, fmt.name) - shown) < MIN_FREE:
                dropped["context shows most of it"] += 1
                continue
            found.append(Found(fmt.name, identifier, doc, context, shown))
    return found, dropped


def _drawn(identifier: str, fmt: str) -> set[int]:
    """The positions of ``identifier`` its format's sampler draws afresh (not the layout it keeps: a UUID's version
    and variant, a key's prefix and infix, a short link's host and first character)."""
    if fmt == "short_url":
        return set(range(identifier.index("/") + 2, len(identifier)))
    if fmt == "openai_key":
        return set(range(3, 23)) | set(range(31, len(identifier)))
    kept = {14, 19} if fmt == "uuid4" else set()
    return {i for i, ch in enumerate(identifier) if ch.isalnum() and i not in kept}


def fresh_draws(item: Found, count: int) -> list[str]:
    """``count`` distinct fresh identifiers of ``item``'s format, passing the same filter, none equal
    to it, each keeping the characters the context shows and showing the context no other run (so the real one
    is uniform among the strings they are drawn from); seeded by the identifier, so no choice of seed by whoever
    runs the test can move them."""
    rng = np.random.default_rng(int.from_bytes(hashlib.sha256(item.identifier.encode()).digest()[:8], "big"))
    sample = BY_NAME[item.format].sample
    pattern = BY_NAME[item.format].pattern
    draws: list[str] = []
    seen = {item.identifier}
    context = _views(item.context)  # once, not per candidate
    for _ in range(count * 50):
        candidate = _keep(sample(item.identifier, rng), item.identifier, item.revealed)
        if (
            candidate not in seen
            and random_looking(candidate)
            and pattern.fullmatch(candidate)
            and revealed(context, candidate) == item.revealed
        ):
            seen.add(candidate)
            draws.append(candidate)
            if len(draws) == count:
                return draws
    raise ValueError(f"could not draw {count} fresh identifiers of format {item.format}")


def _keep(candidate: str, real: str, positions: frozenset[int]) -> str:
    """``candidate`` with the characters of ``real`` at ``positions`` (formats keep their layout, so positions
    carry over)."""
    if not positions:
        return candidate
    chars = list(candidate)
    for i in positions:
        chars[i] = real[i]
    return "".join(chars)
