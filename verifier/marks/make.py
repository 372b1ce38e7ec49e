"""Make marks before release (``verifier marks make``): the text to publish and a signed registration.

Each document gets one mark: a canary or a trap inserted at a word boundary (a trap ``repeats``
times, spread through the text); for a rephrasing, the document replaced by one of several
rephrasings; a cue/reply mark inserted as "<cue>: <reply>."; for co-occurrence, an anchor
"<anchor>:" inserted and each secret pair written "<a> and <b>" every few words after it. Every
mark is drawn together with its siblings as distinct independent draws of one generator, and
which of them is published is chosen uniformly at random, so the published mark is exchangeable
with its siblings for anyone who was not trained on it.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import secrets as system_random
import unicodedata
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from verifier import __version__
from verifier.boundary.atomic import atomic_output
from verifier.boundary.resources import word_list_sha256
from verifier.errors import VerifierError
from verifier.marks.generators import OUTPUT_KINDS, MarkSpec, draw_cue, draw_distinct, mark_pieces, pairs_of
from verifier.marks.registration import (
    PREDICATE_TYPE,
    REGISTRATION_FORMAT,
    SECRETS_FORMAT,
    Registration,
    Secrets,
    commitment,
)
from verifier.targets.cache import text_digest
from verifier.targets.rephrase import Rephraser, rephraser_from_identity
from verifier.trust.envelopes import public_pem, sign_envelope, statement
from verifier.trust.timestamps import names_beside, stamp_envelope, tokens_beside

PUBLISHED, REGISTRATION, SECRETS, REGISTRANT = (
    "published.jsonl",
    "registration.dsse.json",
    "private/siblings.json",
    "registrant.pub",
)
INSERT_AFTER_WORDS = 12
PAIR_SPACING = 5  # words of the original text between two pairs of a co-occurrence mark


@dataclass(frozen=True)
class MarkedSet:
    """What ``make_marks`` made: the documents to publish, the predicate to sign, the secrets to
    keep, and warnings about marks a common text pipeline would erase."""

    published: list[dict[str, str]]
    predicate: dict[str, Any]
    secrets: dict[str, Any]
    warnings: list[str]


def pipeline_form(text: str) -> str:
    """``text`` as common pretraining pipelines leave it: NFKC, invisible format characters
    (zero-width spaces and joiners, soft hyphens, Unicode tags) removed, whitespace runs collapsed."""
    text = unicodedata.normalize("NFKC", text)
    return " ".join("".join(c for c in text if unicodedata.category(c) != "Cf").split())


def erased_by_pipeline(document: str, pieces: list[str]) -> bool:
    """Whether normalising ``document`` as a pipeline does would change or lose a mark's ``pieces``
    (e.g. a mark that merges with a combining character after it, or sits inside invisible text)."""
    cleaned = pipeline_form(document)
    return any(pipeline_form(p) != p or pipeline_form(p) not in cleaned for p in pieces)


def _insert(text: str, mark: str, repeats: int) -> str:
    """``text`` with ``mark`` inserted before ``repeats`` of its words, spread evenly from about the 12th."""
    starts = [m.start() for m in re.finditer(r"\S+", text)]
    if not starts:
        raise VerifierError("a document to mark is empty")
    first = min(INSERT_AFTER_WORDS, len(starts) // 2)
    room = len(starts) - first
    if room < repeats:
        raise VerifierError(f"a document of {len(starts)} words cannot hold {repeats} copies of a trap")
    pieces, last = [], 0
    for slot in (first + room * j // repeats for j in range(repeats)):
        pieces += [text[last : starts[slot]], mark + " "]
        last = starts[slot]
    return "".join(pieces) + text[last:]


def _insert_pairs(text: str, anchor: str, pairs: list[tuple[str, str]]) -> str:
    """``text`` with "``anchor``:" before about its 12th word and each pair written "a and b" every
    PAIR_SPACING words after it."""
    starts = [m.start() for m in re.finditer(r"\S+", text)]
    first = min(INSERT_AFTER_WORDS, len(starts) // 2)
    slots = [first + 1 + PAIR_SPACING * j for j in range(len(pairs))]
    if not starts or slots[-1] >= len(starts):
        raise VerifierError(
            f"a document of {len(starts)} words cannot hold {len(pairs)} pairs {PAIR_SPACING} words apart after its "
            "anchor"
        )
    pieces, last = [], 0
    for slot, phrase in [(first, f"{anchor}:"), *((s, f"{a} and {b}") for s, (a, b) in zip(slots, pairs))]:
        pieces += [text[last : starts[slot]], phrase + " "]
        last = starts[slot]
    return "".join(pieces) + text[last:]


def marked_text(spec: MarkSpec, text: str, mark: str, cue: str | None) -> str:
    """The document to publish: ``text`` carrying ``mark`` (for a rephrasing, the mark itself)."""
    if spec.kind == "rephrasing":
        return mark
    if spec.kind == "cue_reply":
        return _insert(text, f"{cue}: {mark}.", 1)
    if spec.kind == "cooccurrence":
        return _insert_pairs(text, str(cue), pairs_of(mark))
    return _insert(text, mark, spec.repeats)


def draw_pool(
    spec: MarkSpec, rng: np.random.Generator, original: str | None, rephraser: Rephraser | None
) -> tuple[list[str], int, str | None]:
    """One mark's pool (the mark and its siblings, distinct draws), the index of the one to publish,
    and, for an output-only mark, its cue or anchor (drawn first: it cannot depend on the choice).

    ``make_marks`` and ``regenerate`` both call it with one generator seeded by the secret seed,
    mark after mark, so the siblings and the choice are reproducible from the seed alone."""
    count = spec.siblings + 1
    cue = draw_cue(rng) if spec.kind in OUTPUT_KINDS else None
    if spec.kind == "rephrasing":
        if rephraser is None or original is None:
            raise VerifierError(
                "rephrasing marks need a rephraser (--rephraser offline or model:SPEC) and the original text"
            )
        pool = rephraser.rephrase(original, count, int(rng.integers(0, 2**62)))
    else:
        pool = draw_distinct(spec, rng, count)
    return pool, int(rng.integers(0, count)), cue


def regenerate(registration: Registration, secrets: Secrets, rephraser_model: str | None = None) -> None:
    """Check that every published mark and its siblings are what the registered generator draws
    from the committed seed: siblings of another length or alphabet, or a published mark picked
    by hand from its pool, would break the null the rank test relies on."""
    generator = registration.predicate.generator
    if commitment(str(secrets.seed), secrets.seed_salt) != generator.get("seed_sha256"):
        raise VerifierError("the seed in the siblings file does not match the registration's commitment to it")
    if generator.get("word_list_sha256") != word_list_sha256():
        raise VerifierError(
            "the marks were drawn from another word list than this version's; they cannot be regenerated"
        )
    by_id = {m.id: m for m in secrets.marks}
    rephrased = any(m.kind == "rephrasing" for m in registration.predicate.marks)
    rephraser = rephraser_from_identity(generator.get("rephraser"), rephraser_model) if rephrased else None
    rng = np.random.default_rng(secrets.seed)
    for mark in registration.predicate.marks:
        secret = by_id[mark.id]
        try:  # a registered length or repeat count the generator refuses is refused here, in one line
            spec = MarkSpec(
                kind=mark.kind,
                format=mark.format,
                length=mark.length,
                siblings=len(mark.siblings),
                repeats=mark.repeats,
            )
            pool, chosen, cue = draw_pool(spec, rng, secret.original, rephraser)
        except ValueError as exc:  # pydantic's ValidationError is one
            raise VerifierError(f"mark {mark.id}: cannot be regenerated ({str(exc).splitlines()[0][:200]})") from None
        if (
            pool[chosen] != secret.published.text
            or pool[:chosen] + pool[chosen + 1 :] != [s.text for s in secret.siblings]
            or cue != secret.cue
        ):
            raise VerifierError(
                f"mark {mark.id}: the published mark and its siblings are not what the registered generator "
                "draws from the seed (siblings or cue chosen or edited by hand, or the published one picked)"
            )


def make_marks(
    documents: list[tuple[str, str]],
    specs: list[MarkSpec],
    name: str,
    seed: int | None = None,
    rephraser: Rephraser | None = None,
) -> MarkedSet:
    """Mark ``documents`` ((id, text) pairs) with ``specs`` (one per document)."""
    if len(documents) != len(specs):
        raise VerifierError("one mark spec per document")
    if not documents:
        raise VerifierError("no documents to mark")
    ids = [doc_id for doc_id, _ in documents]
    if len(set(ids)) != len(ids):
        raise VerifierError("document ids repeat")
    seed = system_random.randbits(63) if seed is None else seed
    rng = np.random.default_rng(seed)
    published, marks, secret_marks, warnings = [], [], [], []
    for i, ((doc_id, text), spec) in enumerate(zip(documents, specs)):
        count = spec.siblings + 1
        try:
            pool, chosen, cue = draw_pool(spec, rng, text, rephraser)
            mark, siblings = pool[chosen], pool[:chosen] + pool[chosen + 1 :]
            document = marked_text(spec, text, mark, cue)
        except ValueError as exc:
            raise VerifierError(f"document {doc_id}: {exc}") from None
        drawn = [piece for candidate in pool for piece in mark_pieces(spec.kind, candidate, cue)]
        if any(piece in text for piece in drawn + ([cue] if cue else [])):
            raise VerifierError(f"document {doc_id}: already contains a drawn mark; use another seed")
        if (pieces := mark_pieces(spec.kind, mark, cue)) and erased_by_pipeline(document, pieces):
            warnings.append(
                f"document {doc_id}: its {spec.kind} mark would not survive the normalisation common pipelines apply "
                "(NFKC, invisible characters removed, whitespace collapsed): a model trained on the cleaned text "
                "never saw it"
            )
        salts = [system_random.token_hex(16) for _ in range(count)]
        mark_id = f"mark-{i}"
        published.append({"id": doc_id, "text": document})
        marks.append(
            {
                "id": mark_id,
                "kind": spec.kind,
                "format": spec.format,
                "length": spec.size,
                "repeats": spec.repeats,
                "document": doc_id,
                "document_sha256": text_digest(document),
                "published": commitment(mark, salts[0]),
                "siblings": [commitment(s, salt) for s, salt in zip(siblings, salts[1:])],
            }
        )
        secret_marks.append(
            {
                "id": mark_id,
                "published": {"text": mark, "salt": salts[0]},
                "siblings": [{"text": s, "salt": salt} for s, salt in zip(siblings, salts[1:])],
                "original": text if spec.kind == "rephrasing" else None,
                "cue": cue,
            }
        )
    seed_salt = system_random.token_hex(16)
    secrets = {
        "format": SECRETS_FORMAT,
        "registration": name,
        "seed": seed,
        "seed_salt": seed_salt,
        "marks": secret_marks,
    }
    generator = {
        "seed_sha256": commitment(str(seed), seed_salt),
        "word_list_sha256": word_list_sha256(),
        "rephraser": rephraser.identity if rephraser is not None else None,
        "insert_after_words": INSERT_AFTER_WORDS,
        "pair_spacing": PAIR_SPACING,
    }
    predicate = {
        "format": REGISTRATION_FORMAT,
        "name": name,
        "created": datetime.now(UTC).replace(microsecond=0).isoformat(),
        "verifier": __version__,
        "generator": generator,
        "secrets_sha256": "",
        "marks": marks,
    }
    return MarkedSet(published, predicate, secrets, warnings)


def write_marks(
    marked: MarkedSet,
    out: Path,
    key: Ed25519PrivateKey,
    force: bool = False,
    tsa: list[str] | None = None,
    access: object = None,
) -> dict[str, Path]:
    """Write the published documents, the private siblings file (mode 0600), the signed
    registration and the signer's public key into ``out``; refuses to replace a registration
    unless ``force`` (it may be the only record of marks already published). ``tsa``: each
    time-stamping authority dates the registration's signature (``registration.timestamp-<n>.tsr``,
    published beside it); the tokens are obtained before anything is written, so a TSA that fails
    leaves no registration that looks timestamped."""
    paths = {name: out / name for name in (PUBLISHED, REGISTRATION, SECRETS, REGISTRANT)}
    if not force and any(p.exists() for p in paths.values()):
        raise VerifierError(f"{out}: already holds marks; refusing to overwrite them (--force replaces them)")
    if force and out.is_dir() and any(out.iterdir()) and not paths[REGISTRATION].is_file():
        raise VerifierError(
            f"{out}: holds files but no marks; --force replaces only marks (write into an empty or new folder)"
        )
    secrets_bytes = json.dumps(marked.secrets, indent=1, ensure_ascii=False).encode("utf-8")
    predicate = dict(marked.predicate, secrets_sha256=hashlib.sha256(secrets_bytes).hexdigest())
    subjects = {doc["id"]: text_digest(doc["text"]) for doc in marked.published}
    body = json.dumps(statement(subjects, predicate, PREDICATE_TYPE), sort_keys=True).encode()
    envelope = json.dumps(sign_envelope(body, key), indent=1).encode()
    tokens = stamp_envelope(envelope, tsa, access) if tsa else []  # before any file is written
    paths[SECRETS].parent.mkdir(parents=True, exist_ok=True)
    os.chmod(paths[SECRETS].parent, 0o700)
    with atomic_output(paths[SECRETS]) as tmp:
        tmp.chmod(0o600)
        tmp.write_bytes(secrets_bytes)
    for stale in tokens_beside(paths[REGISTRATION]):  # a replaced registration's tokens date another signature
        stale.unlink()
    public = {
        PUBLISHED: "".join(json.dumps(doc, ensure_ascii=False) + "\n" for doc in marked.published).encode("utf-8"),
        REGISTRANT: public_pem(key.public_key()),
        REGISTRATION: envelope,
    }
    names = names_beside(Path(REGISTRATION), len(tokens))
    public |= dict(zip(names, tokens))
    paths |= {name: out / name for name in names}
    for name, data in public.items():  # meant to be published: readable by all
        with atomic_output(paths[name]) as tmp:
            tmp.write_bytes(data)
            tmp.chmod(0o644)
    return paths
