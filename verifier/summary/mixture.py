"""The language mixture of a byte-level BPE tokenizer's training data, from the order of its merges.

Hayase, Liu, Choi, Oh and Smith, "Data Mixture Inference: What do BPE Tokenizers Reveal about their
Training Data?" (2024): a BPE tokenizer's merge list is the record of which pair of tokens was the
most frequent in its training data at each step. Given, for each candidate language, how often each
pair occurs once the earlier merges are applied, the mixture weights must make every recorded merge
the most frequent pair of the mixture at its step: a linear program in the weights, with a slack per
step for what the candidates cannot explain (code, languages outside them, the tokenizer's own
pre-tokenisation), and a slack per rival pair for pairs the candidates' data over-count against the
tokenizer's, minimised.

Here a language's pair counts come from wordfreq's word lists (offline): its WORDS most frequent
words, each written as the byte-level pre-tokeniser writes a word in running text (a leading space,
bytes mapped to GPT-2's printable alphabet), weighted by frequency and normalised per byte of text,
so the weights are byte shares. Languages written without spaces between words (Chinese, Japanese)
are not candidates: a word list says nothing of their pre-tokenised units. For each of the first
MERGES merges, the constraints are against the TOP_PAIRS most frequent pairs of every candidate.

What it estimates is the mixture of the *tokenizer's* training data, which a developer may have
drawn differently from the model's; a finding says so, with the error measured on tokenizers
trained here on known mixtures (``benchmarks/tokenizer_mixture.py``).
"""

from __future__ import annotations

import heapq
import json
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import wordfreq
from scipy import sparse
from scipy.optimize import linprog

WORDS = 3000  # most frequent words of each language read
MERGES = 1000  # first merges of the tokenizer used
TOP_PAIRS = 5  # pairs per language and step a merge must beat
NO_SPACES = frozenset({"ja", "zh"})  # written without spaces between words
SCALE = 1e4  # pair counts per byte are small; scaled for the solver
RESIDUE = 1e-12  # a pair count this close to 0 after subtractions is 0
MIN_MERGES = 100  # merges some candidate writes, at least, for an estimate to be given
# wordfreq's codes that are not the ISO 639-1 code a summary would declare
ALIASES = {"nb": frozenset({"no", "nb"}), "sh": frozenset({"sr", "hr", "bs", "sh"}), "fil": frozenset({"tl", "fil"})}


@lru_cache(maxsize=1)
def byte_alphabet() -> dict[int, str]:
    """GPT-2's map from bytes to printable characters, as byte-level BPE tokenizers write merges."""
    from transformers.convert_slow_tokenizer import bytes_to_unicode

    return dict(bytes_to_unicode())


def candidates() -> list[str]:
    """The languages wordfreq lists that a word list can stand for (written with spaces)."""
    return sorted(set(wordfreq.available_languages(wordlist="small")) - NO_SPACES)


def word_symbols(word: str) -> tuple[str, ...]:
    """A word as a byte-level pre-tokeniser gives it to BPE in running text: " word", byte-mapped."""
    alphabet = byte_alphabet()
    return tuple(alphabet[b] for b in (" " + word).encode())


@dataclass
class Language:
    """One candidate's words (as symbol lists), their weights per byte, and its pair counts."""

    words: list[list[str]]
    weights: np.ndarray
    pairs: Counter[tuple[str, str]]
    where: defaultdict[tuple[str, str], set[int]]


def language(code: str, words: int = WORDS) -> Language:
    table = wordfreq.get_frequency_dict(code, wordlist="small")  # read as listed: no tokeniser needed
    listed = heapq.nlargest(words, table, key=table.__getitem__)
    frequency = np.array([table[w] for w in listed])
    symbols = [list(word_symbols(w)) for w in listed]
    share = frequency / frequency.sum()
    per_byte = share / float(share @ np.array([len(s) for s in symbols]))  # occurrences per byte of text
    pairs: Counter[tuple[str, str]] = Counter()
    where: defaultdict[tuple[str, str], set[int]] = defaultdict(set)
    for i, word in enumerate(symbols):
        for pair in zip(word, word[1:]):
            pairs[pair] += per_byte[i]
            where[pair].add(i)
    return Language(symbols, per_byte, pairs, where)


def apply_merge(lang: Language, merge: tuple[str, str]) -> None:
    """Merge ``merge`` in every word holding it, updating the pair counts (BPE's own step)."""
    a, b = merge
    touched: set[tuple[str, str]] = set()
    for i in list(lang.where.pop(merge, ())):
        word, weight = lang.words[i], lang.weights[i]
        for pair in zip(word, word[1:]):
            lang.pairs[pair] -= weight
            touched.add(pair)
        merged: list[str] = []
        j = 0
        while j < len(word):
            if j + 1 < len(word) and word[j] == a and word[j + 1] == b:
                merged.append(a + b)
                j += 2
            else:
                merged.append(word[j])
                j += 1
        lang.words[i] = merged
        for pair in zip(merged, merged[1:]):
            lang.pairs[pair] += weight
            lang.where[pair].add(i)
    lang.pairs.pop(merge, None)
    for pair in touched:  # a pair used up keeps a float residue, not a count
        if abs(lang.pairs.get(pair, 0.0)) < RESIDUE:
            lang.pairs.pop(pair, None)


@dataclass(frozen=True)
class Mixture:
    shares: dict[str, float]  # byte share of each candidate language, summing to 1
    merges_used: int  # merges some candidate writes (the others constrain nothing)
    slack: float  # the LP's total slack per merge: what the candidates could not explain
    languages: list[str]


def infer_mixture(
    merges: Sequence[tuple[str, str]], languages: Sequence[str] | None = None, limit: int = MERGES
) -> Mixture:
    """The byte shares of ``languages`` (default: every candidate) that best make each of the first
    ``limit`` ``merges`` the most frequent pair of the mixture at its step (see the module docstring)."""
    codes = list(languages or candidates())
    langs = [language(c) for c in codes]
    used = list(merges[:limit])
    blocks: list[np.ndarray] = []  # per step: the rival pairs' count differences, one row each
    rival_ids: list[int] = []  # each row's rival pair, numbered
    numbered: dict[tuple[str, str], int] = {}
    n = len(codes)
    explained = []
    for merge in used:
        chosen = np.array([lang.pairs.get(merge, 0.0) for lang in langs])
        if not chosen.any():  # no candidate writes this pair (whitespace runs, code, digits): it constrains no weight,
            for lang in langs:  # and as a constraint it would only penalise the languages whose top pairs are strong
                apply_merge(lang, merge)
            continue
        explained.append(merge)
        rivals = sorted({p for lang in langs for p, _ in lang.pairs.most_common(TOP_PAIRS)} - {merge})
        counts = np.array([[lang.pairs.get(p, 0.0) for lang in langs] for p in rivals]).reshape(-1, n)
        blocks.append(chosen[None, :] - counts)  # sum_i a_i (chosen_i - rival_i) + v_t + v_p >= 0
        rival_ids += [numbered.setdefault(p, len(numbered)) for p in rivals]
        for lang in langs:
            apply_merge(lang, merge)
    steps, pairs = len(explained), len(numbered)
    step = np.repeat(np.arange(steps), [len(b) for b in blocks])
    differences = np.concatenate(blocks) if blocks else np.zeros((0, n))
    constraint = len(differences)
    rows = np.arange(constraint)
    # written as -(...) - v_t - v_p <= 0: the weights' columns, then each step's slack, then each pair's (a pair
    # the word lists over-count against real text gets its own slack rather than moving the weights)
    a_ub = sparse.hstack(
        [
            sparse.csr_matrix(-differences * SCALE),
            sparse.csr_matrix((-np.ones(constraint), (rows, step)), shape=(constraint, steps)),
            sparse.csr_matrix((-np.ones(constraint), (rows, np.array(rival_ids))), shape=(constraint, pairs)),
        ]
    ).tocsr()
    cost = np.concatenate([np.zeros(n), np.ones(steps + pairs)])
    a_eq = np.concatenate([np.ones(n), np.zeros(steps + pairs)])[None, :]
    solved = linprog(
        cost, A_ub=a_ub, b_ub=np.zeros(constraint), A_eq=a_eq, b_eq=[1.0], bounds=(0, None), method="highs"
    )
    if not solved.success:
        raise RuntimeError(f"the mixture LP did not solve: {solved.message}")
    shares = np.clip(solved.x[:n], 0, None)
    shares = shares / shares.sum()
    return Mixture(
        {c: float(s) for c, s in sorted(zip(codes, shares), key=lambda cs: -cs[1])},
        len(explained),
        float(solved.fun) / max(1, len(explained)),
        codes,
    )


def byte_level_merges(tokenizer_json: str) -> list[tuple[str, str]]:
    """The ordered merges of a byte-level BPE tokenizer (tokenizers' JSON: "a b" strings or pairs)."""
    data = json.loads(tokenizer_json)
    model = data.get("model", {})
    if model.get("type") != "BPE":
        raise ValueError("not a BPE tokenizer")
    if "ByteLevel" not in json.dumps(data.get("pre_tokenizer")):
        raise ValueError("not a byte-level BPE (its pre-tokenizer is not ByteLevel)")
    merges = [m.split(" ") if isinstance(m, str) else list(m) for m in model.get("merges", [])]
    if any(len(m) != 2 for m in merges):
        raise ValueError("a merge that is not a pair of tokens")
    return [(a, b) for a, b in merges]


def declared_as(code: str, declared: Sequence[str]) -> bool:
    """Whether wordfreq's language ``code`` is among the ``declared`` ISO 639 codes (aliases read)."""
    return bool(ALIASES.get(code, frozenset({code})) & set(declared))
