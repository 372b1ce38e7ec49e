"""The index API's wire protocol, typed once for both ends: what ``verifier corpus serve`` reads and
answers, and what ``RemoteBackend`` sends and accepts (the infini-gram JSON protocol's names).

A request is read strictly (a string is no count, ``true`` is no number); an answer is checked for
its shape *and* for saying nothing that contradicts itself (a span found 7 times in no document,
more documents than occurrences), since the remote route may verify on it. Unknown keys of an answer
are ignored (infini-gram servers send more: token ids, document lengths); of a request, too.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, NonNegativeInt, ValidationError, model_validator

from verifier.corpus.index import Hit
from verifier.errors import first_validation_error

MAX_QUERY = 20_000  # characters: a query costs a search per word (and an attribution one per character)
MAX_DOCS = 100
MAX_SNIPPET = 2000


class Wire(BaseModel):
    model_config = ConfigDict(strict=True, extra="ignore", frozen=True)


class Request(Wire):
    """``POST /``: one query on one index."""

    index: str
    query_type: Literal["count", "search_docs", "attribution"]
    query: Annotated[str, Field(min_length=1, max_length=MAX_QUERY, pattern=r"\S")]
    maxnum: Annotated[int, Field(ge=1, le=MAX_DOCS)] = 10  # search_docs: documents listed
    min_len: Annotated[int, Field(ge=1, le=1000)] = 8  # attribution: shortest span, in words
    max_cnt: Annotated[int, Field(ge=0, le=MAX_DOCS)] = 3  # attribution: documents listed per span


class Document(Wire):
    """A corpus document holding a match."""

    doc_ix: NonNegativeInt
    metadata: dict[str, Any] = Field(default_factory=dict)
    offset: NonNegativeInt = 0
    snippet: str = ""

    @classmethod
    def of(cls, hit: Hit) -> Document:
        return cls(doc_ix=hit.document, metadata=hit.meta, offset=hit.offset, snippet=hit.snippet)

    def hit(self) -> Hit:
        return Hit(self.doc_ix, self.metadata, self.offset, self.snippet[:MAX_SNIPPET])


class CountAnswer(Wire):
    count: NonNegativeInt
    approx: bool = False
    latency: float | None = None


class SearchAnswer(Wire):
    cnt: NonNegativeInt
    documents_total: NonNegativeInt | None = None  # absent: as many as listed
    documents: list[Document] = Field(default_factory=list, max_length=MAX_DOCS)
    approx: bool = False
    latency: float | None = None

    @model_validator(mode="after")
    def _consistent(self) -> SearchAnswer:
        total = len(self.documents) if self.documents_total is None else self.documents_total
        if total < len(self.documents) or self.cnt < total or (self.cnt and not self.documents):
            raise ValueError(f"{self.cnt} occurrence(s) in {total} document(s) with {len(self.documents)} listed")
        return self


class Span(Wire):
    """A maximal span of the compared text, as word offsets [l, r), with its corpus count."""

    l: NonNegativeInt  # noqa: E741 - the protocol's name
    r: NonNegativeInt
    length: NonNegativeInt | None = None
    count: NonNegativeInt
    docs: list[Document] = Field(default_factory=list, max_length=MAX_DOCS)

    @model_validator(mode="after")
    def _consistent(self) -> Span:
        if self.r <= self.l:
            raise ValueError(f"a span from word {self.l} to word {self.r}")
        if self.count < 1 or len(self.docs) > self.count:
            raise ValueError(f"a span found {self.count} time(s) with {len(self.docs)} document(s) named")
        return self


class AttributionAnswer(Wire):
    spans: list[Span]
    latency: float | None = None


def read(model: type[Wire], data: Any, what: str) -> Wire:
    """``data`` as ``model``; a ``ValueError`` naming the first problem (the caller says whose answer it was)."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise ValueError(f"{what}: {first_validation_error(exc)}") from None
