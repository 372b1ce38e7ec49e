"""An EU training-content summary's corpus facts against the declared corpus (template sections
2.1, the large public datasets listed; 2.3, the most relevant domains; and 1.3, the size band,
the latest collection date and the languages).

Section 1.3's languages are identified per document by py3langid (langid.py's model of 97
languages, shipped in the package: offline), on each document's compared text (case and accents
folded, which costs some accuracy between close languages), over every document or, beyond
LANGUAGE_SAMPLE documents, a seeded uniform sample of them. A document counts for a language when
the identifier gives it probability LANGUAGE_CONFIDENCE or more; the others are unidentified. An
undeclared language holding at least LANGUAGE_SHARE of the identified text contradicts the list
(the lower end of its Wilson interval over the documents, when sampled); a declared language no
document is identified as contradicts it only when every document was read.

Section 2.1 is read by files: each listed dataset names the corpus files that hold it. A listed
dataset no file holds contradicts the list (the corpus is declared to be the training data); a
file no listed dataset claims that holds more text than the smallest listed dataset contradicts
it too (a large dataset is missing while a smaller one was judged large enough to list) unless
the summary declares that file under another section (crawled or private data); smaller
unlisted files are reported as not established (the template lists only large datasets, and its
threshold is not in the text this tool reads).

What the corpus establishes, what contradicts the declaration and what it cannot establish, as
plain data; the corpus route turns them into its outcome. Composition (``composition``) gives the
facts; this module compares them with what the summary declares.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from fnmatch import fnmatchcase
from functools import lru_cache
from typing import Any

import numpy as np
from scipy.stats import binomtest

from verifier.claims import DeclaredSummary
from verifier.corpus.composition import composition
from verifier.corpus.index import CorpusIndex


@dataclass
class SummaryCheck:
    """Rows (field, what the corpus shows), contradictions, what could not be established, and the numbers."""

    rows: list[list[Any]]
    problems: list[str]
    unchecked: list[str]
    metrics: dict[str, Any]


def check_summary(index: CorpusIndex, declared: DeclaredSummary, fields: set[str]) -> SummaryCheck:
    """Sections 2.3 and 1.3 of ``declared``, for those of ``fields`` it names, against the corpus of ``index``."""
    facts = composition(index)
    rows: list[list[Any]] = []
    problems: list[str] = []
    unchecked: list[str] = []
    metrics: dict[str, Any] = {
        "documents": facts.documents,
        "words": facts.words,
        "tokens_range": [facts.tokens_low, facts.tokens_high],
    }
    if "eu:2.3" in fields:
        if (
            declared.crawled_domains is None
            or not facts.domains
            or facts.urls_without_host
            or facts.unknown_could_change_the_cut(declared.sme)
        ):
            why = (
                "no domains declared"
                if declared.crawled_domains is None
                else "the corpus has no URLs"
                if not facts.domains
                else f"{facts.urls_without_host} documents have URLs without a host"
                if facts.urls_without_host
                else f"{facts.no_url_documents} documents with no URL in any field read hold {facts.no_url_bytes:,} "
                "bytes of text: "
                "crawled, they could change which domains are the largest"
            )
            unchecked.append(f"2.3 domains: {why}")
        else:
            certain, tied, slots = facts.required_domains(declared.sme)

            def covered(d: str) -> bool:
                return any(
                    d == x or d.endswith("." + x) for x in declared.crawled_domains
                )  # a domain covers its subdomains

            missing = [d for d in certain if not covered(d)]
            short = max(0, slots - sum(covered(d) for d in tied))
            quota = len(certain) + slots
            share = (quota - len(missing) - short) / quota
            metrics |= {
                "domains": len(facts.domains),
                "required_domains": certain,
                "tied_domains": tied,
                "tied_slots": slots,
                "missing_domains": missing,
                "domain_coverage": share,
                "url_fields": facts.fields.get("url", {}),
            }
            rows.append(
                [
                    "2.3 most relevant domains",
                    f"top {'5% (SME, at most 1,000)' if declared.sme else '10%'} of {len(facts.domains)} "
                    f"domains by text size: {quota} required ({len(tied)} tied for the last {slots}), {share:.0%} "
                    "declared"
                    + (f"; missing {', '.join(missing[:20])}" if missing else "")
                    + (f"; {short} more of the tied domains needed" if short else ""),
                ]
            )
            if missing or short:
                open_tied = [d for d in tied if not covered(d)]
                problems.append(
                    f"{len(missing) + short} of the {quota} largest domains are not declared"
                    + (f" ({', '.join(missing[:5])})" if missing else "")
                    + (
                        f" ({short} more of the {len(tied)} tied for the last places: {', '.join(open_tied[:5])})"
                        if short
                        else ""
                    )
                )
    if "eu:1.3" in fields:
        if declared.size_band is not None:
            bands = facts.bands()
            metrics["size_bands_possible"] = bands
            rows.append(
                [
                    "1.3 text size band",
                    f"{facts.tokens_low:,}-{facts.tokens_high:,} tokens (1 per 8 compared bytes to 2 per byte read): "
                    f"{' or '.join(bands)}; declared {declared.size_band}",
                ]
            )
            if declared.size_band not in bands:
                problems.append(
                    f"the corpus holds {facts.tokens_low:,}-{facts.tokens_high:,} tokens, outside the declared band "
                    f"{declared.size_band}"
                )
            elif len(bands) > 1:
                unchecked.append("1.3 size band: the token range spans two bands")
        if declared.latest_collection is not None:
            later = facts.after(declared.latest_collection)
            earliest, latest = facts.latest_collected
            metrics |= {
                "latest_collection_between": [earliest, latest],
                "collection_dated_documents": facts.dated_documents,
                "unreadable_collection_dates": facts.collected.unreadable,
                "date_fields": {k: facts.fields.get(k, {}) for k in ("collected", "published")},
            }
            fields_read = (
                "; ".join(
                    f"{kind} from {', '.join(f'{f} ({n})' for f, n in facts.fields[kind].items())}"
                    for kind in ("collected", "published")
                    if facts.fields.get(kind)
                )
                or "no date fields"
            )
            rows.append(
                [
                    "1.3 latest collection date",
                    f"latest collection dates mean {earliest or 'none'}"
                    + (f" to {latest}" if latest != earliest else "")
                    + f" ({facts.dated_documents} of {facts.documents} with a "
                    f"readable collection date, {facts.collected.unreadable} with a date field that is no calendar "
                    f"date; {fields_read}); "
                    f"declared {declared.latest_collection}. Publication dates can contradict a collection date, "
                    "never confirm it",
                ]
            )
            if later is not None:
                problems.append(
                    f"documents are dated {later}, after the declared latest collection {declared.latest_collection}"
                )
            elif facts.uncertain(declared.latest_collection):
                unchecked.append(
                    "1.3 latest date: documents without a readable collection date (a publication date does not say "
                    "when a page was collected; a timestamp is no calendar date), or dated so that a later month is "
                    "possible (a year alone, a crawl spanning two months), could have been collected later"
                )
    if "eu:1.3" in fields and declared.languages is not None:
        languages(index, declared.languages, rows, problems, unchecked, metrics)
    if "eu:2.1" in fields:
        if declared.public_datasets is None:
            unchecked.append("2.1 public datasets: none listed to compare")
        else:
            datasets(index, declared.public_datasets, declared.elsewhere, rows, problems, unchecked, metrics)
    metrics |= {"problems": problems, "unchecked": unchecked}
    return SummaryCheck(rows, problems, unchecked, metrics)


LANGUAGE_SAMPLE = 5000  # documents identified at most (a seeded uniform sample beyond)
LANGUAGE_CONFIDENCE = 0.9  # the identifier's probability a document needs to count for a language
LANGUAGE_SHARE = 0.01  # an undeclared language holding this share of the identified text contradicts the list


@lru_cache(maxsize=1)
def _identifier() -> Any:  # py3langid's LanguageIdentifier, loaded once (its model ships in the package)
    from py3langid.langid import MODEL_FILE, LanguageIdentifier

    return LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)


def languages(
    index: CorpusIndex,
    declared: list[str],
    rows: list[list[Any]],
    problems: list[str],
    unchecked: list[str],
    metrics: dict[str, Any],
) -> None:
    """Section 1.3's languages: the corpus's documents identified (see the module docstring)."""
    documents = [(shard, local) for shard in index.shards for local in range(len(shard.starts))]
    whole = len(documents) <= LANGUAGE_SAMPLE
    if not whole:
        rng = np.random.default_rng(0)
        documents = [documents[i] for i in sorted(rng.choice(len(documents), LANGUAGE_SAMPLE, replace=False))]
    text_bytes: Counter[str] = Counter()
    docs: Counter[str] = Counter()
    unidentified = unidentified_bytes = 0
    for shard, local in documents:
        words = shard.words_of(local)
        language, probability = _identifier().classify(words[:4000])
        if probability < LANGUAGE_CONFIDENCE or not words:
            unidentified += 1
            unidentified_bytes += len(words.encode())
            continue
        text_bytes[language] += len(words.encode())
        docs[language] += 1
    identified = sum(text_bytes.values()) or 1
    counted = sum(docs.values())
    shares = {lang: b / identified for lang, b in text_bytes.most_common()}
    undeclared = [
        lang
        for lang, share in shares.items()
        if lang not in declared
        and (share if whole else binomtest(docs[lang], counted).proportion_ci(method="wilson").low) >= LANGUAGE_SHARE
    ]
    absent = [lang for lang in declared if lang not in docs]
    metrics["languages"] = {
        "documents_read": len(documents),
        "sampled": not whole,
        "unidentified": unidentified,
        "unidentified_bytes": unidentified_bytes,
        "bytes": dict(text_bytes.most_common()),
        "documents": dict(docs.most_common()),
        "identifier": "py3langid",
    }
    rows.append(
        [
            "1.3 languages",
            f"{len(documents):,} documents {'read' if whole else 'sampled'} ({unidentified} unidentified): "
            + ", ".join(f"{lang} {share:.1%}" for lang, share in list(shares.items())[:10])
            + f" of the identified text; declared {', '.join(declared) or 'none'}",
        ]
    )
    if undeclared:
        problems.append(
            f"languages holding {LANGUAGE_SHARE:.0%} or more of the identified text are not declared: "
            + ", ".join(f"{lang} ({shares[lang]:.1%})" for lang in undeclared[:5])
        )
    if absent and whole:
        problems.append(f"declared languages no document of the corpus is in: {', '.join(absent[:5])}")
    elif absent:
        unchecked.append(f"1.3 languages: no sampled document is in {', '.join(absent[:5])} (it may be rare)")
    if unidentified_bytes >= LANGUAGE_SHARE * (identified + unidentified_bytes):
        unchecked.append(
            f"1.3 languages: {unidentified} documents ({unidentified_bytes:,} bytes, {LANGUAGE_SHARE:.0%} or more of "
            f"the text read) could not be identified with probability {LANGUAGE_CONFIDENCE} or more (short or mixed "
            "texts): an undeclared language could hide in them"
        )


def _matches(name: str, pattern: str) -> bool:
    """Whether the corpus file ``name`` ("<folder>/<path>") matches ``pattern``, given from the
    corpus folder or from inside it."""
    inside = name.split("/", 1)[-1]
    return fnmatchcase(name, pattern) or fnmatchcase(inside, pattern)


def datasets(
    index: CorpusIndex,
    listed: dict[str, list[str]],
    elsewhere: list[str],
    rows: list[list[Any]],
    problems: list[str],
    unchecked: list[str],
    metrics: dict[str, Any],
) -> None:
    """Section 2.1: the listed datasets against the corpus's files (see the module docstring). Every
    file must have one owner - one dataset, or another section - for sizes to be compared: a file two
    patterns claim leaves the list unconfirmed, never confirmed twice over."""
    sizes = {s.name: s.text_bytes for s in index.manifest.sources}
    owners = {f: [name for name, patterns in listed.items() if any(_matches(f, p) for p in patterns)] for f in sizes}
    other = {f for f in sizes if any(_matches(f, p) for p in elsewhere)}
    shared = sorted(f for f, names in owners.items() if len(names) + (f in other) > 1)
    absent = [name for name in listed if not any(name in names for names in owners.values())]
    held = {name: [f for f in sizes if owners[f] == [name] and f not in other] for name in listed}
    listed_bytes = {name: sum(sizes[f] for f in files) for name, files in held.items() if files}
    smallest = min(listed_bytes.values(), default=0)
    unlisted = sorted(
        ((f, b) for f, b in sizes.items() if not owners[f] and f not in other), key=lambda fb: (-fb[1], fb[0])
    )
    larger = [f for f, b in unlisted if listed_bytes and b > smallest]
    total = sum(sizes.values()) or 1
    metrics["public_datasets"] = {
        "listed_bytes": listed_bytes,
        "absent": absent,
        "claimed_twice": shared,
        "unlisted_files": dict(unlisted),
        "listed_share": round(sum(listed_bytes.values()) / total, 6),
    }
    rows.append(
        [
            "2.1 public datasets",
            f"{len(listed)} listed; {len(listed) - len(absent)} found in the corpus files "
            f"({sum(listed_bytes.values()) / total:.1%} of its text)"
            + (f"; not in the corpus: {', '.join(absent[:10])}" if absent else "")
            + (
                f"; files no listed dataset holds: {', '.join(f'{f} ({b:,} bytes)' for f, b in unlisted[:10])}"
                if unlisted
                else ""
            ),
        ]
    )
    if absent:
        problems.append(f"listed public datasets are not in the corpus: {', '.join(absent[:5])}")
    if shared:
        unchecked.append(
            f"2.1 public datasets: corpus files claimed by more than one dataset or section ({', '.join(shared[:5])}): "
            "each file needs one owner for the datasets' sizes to be compared"
        )
    if larger:
        problems.append(
            f"corpus files no listed dataset holds are larger than a listed dataset ({smallest:,} bytes): "
            + ", ".join(larger[:5])
        )
    elif unlisted:
        unchecked.append(
            f"2.1 public datasets: {len(unlisted)} corpus files no listed dataset holds, each smaller than every "
            "listed dataset (the template lists only the large ones)"
        )
