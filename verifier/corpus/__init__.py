"""Corpus indexes: the engine of the corpus route.

Storage and search (``build``, ``index``, ``search``) sit below a small query surface
(``queries``: count, find, longest spans, n-gram overlap, near-duplicates); the route and the
CLI call only the query surface (``attribution`` traces a model's outputs to documents through
it), and HTTP lives at the edge: ``server`` and the remote backend (``backends``) speak one typed
wire protocol (``wire``).
"""

from verifier.corpus.build import BuildReport, build_index, corpus_digest, digest_files
from verifier.corpus.index import CorpusIndex, Found, Hit
from verifier.corpus.normalise import normalise
from verifier.corpus.queries import Lookup, Span, count, find, lookup

__all__ = [
    "BuildReport",
    "CorpusIndex",
    "Found",
    "Hit",
    "Lookup",
    "Span",
    "build_index",
    "corpus_digest",
    "count",
    "digest_files",
    "find",
    "lookup",
    "normalise",
]
