"""What every signal shares: the scored document it reads, the base classes, the registry.

A signal never runs a model. A gray-box signal reads the cached forward-pass arrays
(``TokenScores``); an output-only signal (``QuerySignal``) states the queries it needs and reads
the target's answers to them, asked beforehand in one batch through the response cache. Every
score is oriented "higher = more member-like", whatever the sign convention of the reference
implementation it follows (see the table in ``verifier.signals``).
"""

from __future__ import annotations

import hashlib
import warnings
from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields
from functools import cache
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, get_type_hints

import numpy as np
from pydantic import ConfigDict, Field, TypeAdapter, ValidationError

from verifier.errors import VerifierError
from verifier.plugins import Registry, part_modules, subpackages
from verifier.targets.base import ANSWERS, PROMPT_LOGPROBS
from verifier.targets.queries import Answer, Query
from verifier.targets.token_scores import TokenScores

if TYPE_CHECKING:
    from verifier.signals.tools import SignalTools

# What a signal may need beyond target capabilities (``targets.base``): extra views of a text, and
# what the run must supply (``Auxiliary``).
LOWER = "lower"  # the target's scores of the lowercased text (any target that scores prompts has it)
REFERENCE = "reference"  # a reference model's scores of the original text (the claim names one)
NONMEMBER_PREFIX = "nonmember_prefix"  # documents known not to be members, to put before a text (ReCaLL)
MEMBER_PREFIX = "member_prefix"  # documents known to be members (Con-ReCall): labelled data, marks, a testbed
TOKEN_FREQUENCIES = "token_frequencies"  # a reference corpus's token counts in the target's tokenizer (DC-PDD)


@dataclass(frozen=True)
class View:
    """An extra forward pass a signal reads: ``text`` scored after ``context`` (None: on its own).
    Only the text's own tokens are scored, at the positions its unconditioned scores have (every
    token after the first), so a conditioned and an unconditioned score compare like with like."""

    text: str
    context: str | None = None


@dataclass(frozen=True)
class Auxiliary:
    """What a run supplies to signals besides the model: documents of known membership to prefix
    texts with (drawn by the route or the evaluation, excluded from every test and never scored
    themselves), and a reference corpus's token frequencies. Recorded by digest in the findings."""

    nonmembers: tuple[str, ...] = ()
    members: tuple[str, ...] = ()
    frequencies: Any = None  # a ``signals.frequencies.FrequencyTable`` (Any: that module imports this one)

    @property
    def offers(self) -> frozenset[str]:
        """The needs this supplies (see the constants above)."""
        return (
            frozenset({NONMEMBER_PREFIX} if self.nonmembers else set())
            | ({MEMBER_PREFIX} if self.members else set())
            | ({TOKEN_FREQUENCIES} if self.frequencies is not None else set())
        )

    def as_finding(self) -> dict[str, object]:
        """Digests and counts, never texts: what the findings and the score table's metadata record."""

        def digest(texts: tuple[str, ...]) -> str:
            return hashlib.sha256(
                "".join(hashlib.sha256(t.encode()).hexdigest() + "\n" for t in texts).encode()
            ).hexdigest()

        out: dict[str, object] = {}
        for role, texts in (("nonmember_prefix", self.nonmembers), ("member_prefix", self.members)):
            if texts:
                out[role] = {"documents": len(texts), "sha256": digest(texts)}
        if self.frequencies is not None:
            out["token_frequencies"] = self.frequencies.as_finding()
        return out


@dataclass(frozen=True)
class ScoredDocument:
    """A text, the forward-pass arrays of each view that was computed for it, and the target's
    answers to the queries of the output-only signals (by ``Query.key``)."""

    text: str  # as given to the model: cut to the target's max_chars, before the token cut
    target: TokenScores | None = None  # None when no gray-box signal was asked for (or the target scores no prompts)
    lower: TokenScores | None = None
    reference: TokenScores | None = None
    answers: Mapping[str, Answer] = field(default_factory=dict)
    views: Mapping[View, TokenScores] = field(default_factory=dict)  # what the signals' ``views`` asked for
    aux: Auxiliary = field(default_factory=Auxiliary)

    @property
    def scores(self) -> TokenScores:
        """The target's token scores, which a gray-box signal reads: they are computed for every
        document of a table whose signals need prompt log-probs, so their absence is a bug."""
        if self.target is None:
            raise RuntimeError("a gray-box signal was computed without the target's token scores")
        return self.target


NO_TOKENS = "no scored token (too few tokens, or a server's response without usable log-probs)"


@dataclass(frozen=True)
class Signal(ABC):
    """A membership score of one document; parameters are dataclass fields, recorded with results."""

    name: ClassVar[str]
    needs: ClassVar[frozenset[str]] = frozenset({PROMPT_LOGPROBS})  # target capabilities and views
    by_default: ClassVar[bool] = True  # computed when no signals are named (a statistic for one use only is not)

    def score(self, doc: ScoredDocument) -> float:
        """Higher = more member-like (signals scoring one document at a time override this)."""
        raise NotImplementedError(f"signal {self.name} scores documents together: call evaluate")

    def evaluate(self, docs: Sequence[ScoredDocument], tools: SignalTools | None = None) -> Evaluation:
        """Every document's score and, for each NaN, why. Signals that run a model of their own
        (an encoder, a scoring LM, a judge) override this to batch it, through ``tools``."""
        with (
            np.errstate(all="ignore"),
            warnings.catch_warnings(),
        ):  # a document with nothing scored is a NaN, named below
            warnings.simplefilter("ignore", RuntimeWarning)
            values = np.fromiter((self.score(doc) for doc in docs), dtype=np.float64, count=len(docs))
        return Evaluation(values, [None if np.isfinite(v) else self.why_not(doc) for v, doc in zip(values, docs)])

    def why_not(self, doc: ScoredDocument) -> str:
        """Why ``doc`` has no score (a NaN from a gray-box signal: no scored token)."""
        return NO_TOKENS

    def views(self, text: str, aux: Auxiliary) -> list[View]:
        """The extra forward passes this signal reads for ``text`` (prefixed, perturbed copies);
        the scoring step runs them in batches through the cache and hands them over in
        ``ScoredDocument.views``. Deterministic: the same text and auxiliary give the same views."""
        return []

    def params(self) -> dict[str, object]:
        return asdict(self)

    def __post_init__(self) -> None:
        """Every parameter checked against its annotation - strict types and ``Field`` bounds, the
        constraint language of route parameters - so a bad value fails when the signal is made
        (from a policy, the CLI or code), not in the middle of scoring. Subclasses add only rules
        that tie two parameters together, after calling this."""
        for name, adapter in param_adapters(type(self)).items():
            value = getattr(self, name)
            try:
                adapter.validate_python(value)
            except ValidationError as exc:
                raise VerifierError(f"signal {self.name}: {name}: {exc.errors()[0]['msg']} (got {value!r})") from None

    @classmethod
    def params_schema(cls) -> dict[str, Any]:
        """The JSON schema of the parameters (the documentation's signal pages are generated from it)."""
        return TypeAdapter(cls).json_schema(mode="validation")


STRICT = ConfigDict(strict=True)  # 5.5 is not an int, "no" is not a bool, True is not an int


@cache
def param_adapters(cls: type[Signal]) -> dict[str, TypeAdapter]:
    """One validator per parameter of a signal class, from its annotations (bounds included)."""
    try:
        hints = get_type_hints(cls, include_extras=True)
        return {f.name: TypeAdapter(hints[f.name], config=STRICT) for f in fields(cls)}
    except Exception as exc:  # noqa: BLE001 - a plugin's annotation that does not resolve: its author's error, in one line
        raise VerifierError(f"signal {cls.name}: its parameters cannot be read ({type(exc).__name__}: {exc})") from None


@dataclass(frozen=True)
class Evaluation:
    """One signal's column: the scores, and per document the reason it has none (None = scored)."""

    values: np.ndarray
    reasons: list[str | None]
    counts: dict[str, object] = field(
        default_factory=dict
    )  # what the signal read: where its traces came from, its anchors' digest


@dataclass(frozen=True)
class LowestKSignal(Signal):
    """A signal over the lowest ``k`` fraction of per-token values (Min-K% and its kin).

    ``k`` is checked here, once for all of them, so a bad value fails when the signal is made,
    not in the middle of scoring.
    """

    k: Annotated[float, Field(gt=0, le=1)] = 0.2  # NaN fails both bounds


@dataclass(frozen=True)
class QueryingSignal(Signal):
    """An output-only attack: queries made from a document's passages.

    A document is cut into passages of ``passage_words`` words (the attacks' "sequences"); the
    first ``passages`` of them are queried (``passages=1`` is the sequence-level attack, more give
    a document-level score, the mean of its passages' scores). A passage whose answers failed
    (refusal, empty, server error) scores NaN and is left out of the mean; a document with no
    scored passage is NaN - a recorded failure, never a low score.
    """

    needs: ClassVar[frozenset[str]] = frozenset({ANSWERS})
    by_default: ClassVar[bool] = False  # queries cost money: run only when named
    passage_words: Annotated[int, Field(ge=8, le=100_000)] = 64
    passages: Annotated[int, Field(ge=1, le=100)] = 1

    def split(self, text: str) -> list[str]:
        """The passages queried: consecutive runs of ``passage_words`` words (a shorter last run
        only when it is the whole text)."""
        words = text.split()
        runs = [" ".join(words[i : i + self.passage_words]) for i in range(0, len(words), self.passage_words)]
        full = [r for r in runs if len(r.split()) == self.passage_words] or runs[:1]
        return full[: self.passages]

    def queries(self, text: str) -> list[Query]:
        """Every query this signal asks about a document."""
        return [q for passage in self.split(text) for q in self.passage_queries(passage)]

    def shared_queries(self) -> list[Query]:
        """Queries asked once per run whatever the documents (BlackSpectrum's anchor sequences)."""
        return []

    @abstractmethod
    def passage_queries(self, passage: str) -> list[Query]:
        """The queries about one passage (deterministic: the same passage gives the same queries)."""


@dataclass(frozen=True)
class QuerySignal(QueryingSignal):
    """An output-only attack scoring each passage from its answers alone."""

    def score(self, doc: ScoredDocument) -> float:
        scores = []
        for passage in self.split(doc.text):
            answers = [doc.answers[q.key] for q in self.passage_queries(passage)]
            scores.append(self.score_passage(passage, answers))
        finite = [s for s in scores if np.isfinite(s)]
        return float(np.mean(finite)) if finite else float("nan")

    @abstractmethod
    def score_passage(self, passage: str, answers: list[Answer]) -> float:
        """Higher = more member-like; NaN when the answers do not allow a score (failed items)."""

    def why_not(self, doc: ScoredDocument) -> str:
        """The commonest failure among the document's answers (server text left out)."""
        answers = [doc.answers[q.key] for q in self.queries(doc.text)]
        errors = Counter(a.public_error for a in answers if not a.ok)
        return errors.most_common(1)[0][0] if errors else ("nothing to ask" if not answers else "answers gave no score")


# Every module of the family folders (gray_box, output_only, traces), then plugins: discovered when first read.
REGISTRY: Registry[type[Signal]] = Registry(
    "signals", lambda: [m for family in subpackages("verifier.signals") for m in part_modules(family)]
)


def register(cls: type[Signal]) -> type[Signal]:
    """Class decorator: make a signal available by its ``name``."""
    REGISTRY.add(cls.name, cls)
    return cls


def lowest_k_mean(values: np.ndarray, k: float) -> float:
    """Mean of the lowest ``k`` fraction of ``values``, never fewer than one value."""
    count = max(1, int(len(values) * k))
    return float(np.mean(np.partition(values, count - 1)[:count]))
