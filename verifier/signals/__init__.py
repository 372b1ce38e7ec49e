"""Membership signals, one module each, found through a decorator registry: gray-box ones reading
the target's token scores, and output-only attacks (``QuerySignal``, from ``decop`` down) reading
its answers to queries, run only when named.

Orientation: every score is "higher = more member-like". How that maps to the sign conventions
of the published implementations (mimir, the Min-K% and Min-K%++ repositories) and of the papers:

| name       | score here                                         | published convention                      |
|------------|----------------------------------------------------|-------------------------------------------|
| loss       | mean log p(token)                                  | mimir returns mean NLL (lower = member): negated |
| log_likelihood | sum of log p(token) (rank tests of marks only)  | -                                         |
| zlib       | mean log p / zlib bytes                            | Min-K% repo: same sign; mimir: NLL / zlib, negated |
| min_k      | mean of lowest 20% log p                           | Min-K%++ repo: same; mimir: negated mean  |
| min_k_pp   | mean of lowest 20% (log p - mu) / sigma            | Min-K%++ repo: same sign                  |
| gap_k      | mean of lowest 20% (log p - log p_top1)            | gaps are <= 0; closer to 0 = member       |
| lowercase  | NLL(lowercased) / NLL(original)                    | Carlini et al. ratio: same sign           |
| reference  | target - reference log p per character             | mimir: target loss - ref loss, negated    |
| decop      | share of readable answers choosing the verbatim passage (24 orders) | paper: accuracy, same sign (chance
0.25) |
| name_cloze | 1 if the masked name is given exactly, else 0      | paper: exact match = member, same sign    |
| prefix_lcs_word | LCS(continuation, true suffix) / length, words | paper: LCS tokens >= 20 = member, same sign |
| prefix_lcs_token | the same over words and punctuation marks     | as prefix_lcs_word                        |
| familiarity | rating(original) - mean rating(paraphrase, shuffled words) | paper: exact gold order = member; same sign
|
| samia      | mean ROUGE-1 F1 of sampled continuations vs the suffix | paper: same sign                       |
| cdd        | share of samples within alpha*l word edits of the greedy output | paper: peakedness, same sign    |
| blackspectrum | 1 - projection of the denoised trace embedding on the recall-inference axis / anchor distance | paper:
same sign |
| thinking_tokens | minus the count of thinking n-grams in the trace  | paper: count (higher = non-member), negated |
| trace_compression | mean log p of the trace under a scoring LM   | paper: NLL (higher = non-member), negated |
| trace_consistency_char | minus the mean pairwise normalised character edit distance of traces | paper: distance,
negated |
| trace_consistency_token | the same over words and punctuation marks  | paper: distance, negated                  |
| trace_judge | a judge model's 0-10 certainty rating of the trace        | paper: certainty, same sign               |
| recall     | LL(x after non-member prefix) / LL(x), mean log p         | ReCaLL code: same ratio, same sign        |
| con_recall | (LL(x after non-members) - gamma LL(x after members)) / LL(x) | published code (gamma 1): same sign    |
| dc_pdd     | mean over first occurrences of min(p log(1/f), a)         | paper: same sign; mimir: negated          |
| pac        | mean PD(word-swapped copies) - PD(x)                      | PAC code ranks by -PAC: negated           |

Trace attacks (``traces.TraceSignal``) run models of their own - an encoder, a scoring LM, a
judge - lent by the scoring step (``tools.SignalTools``) and score all documents together
(``Signal.evaluate``); every other signal scores one document at a time.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import fields
from typing import Annotated, Any

from pydantic import AfterValidator, Field

from verifier.errors import VerifierError
from verifier.signals.base import (
    LOWER,
    MEMBER_PREFIX,
    NONMEMBER_PREFIX,
    REFERENCE,
    REGISTRY,
    TOKEN_FREQUENCIES,
    Auxiliary,
    Evaluation,
    ScoredDocument,
    Signal,
    View,
    register,
)
from verifier.signals.tools import SignalTools
from verifier.targets.base import PROMPT_LOGPROBS

__all__ = [
    "LOWER",
    "MEMBER_PREFIX",
    "NONMEMBER_PREFIX",
    "REFERENCE",
    "REGISTRY",
    "TOKEN_FREQUENCIES",
    "Auxiliary",
    "View",
    "Evaluation",
    "ScoredDocument",
    "SignalNames",
    "SignalParams",
    "Signal",
    "SignalTools",
    "available_views",
    "check_params_used",
    "check_signal_names",
    "check_signal_params",
    "computable",
    "compute_signals",
    "make_signal",
    "make_signals",
    "register",
]


def check_signal_names(names: list[str]) -> list[str]:
    """A policy's signal list: registered names, each once (a repeated one would be a repeated column)."""
    if unknown := sorted(set(names) - set(REGISTRY)):
        raise ValueError(f"unknown signal(s) {unknown}; registered: {sorted(REGISTRY)}")
    if repeated := sorted({n for n in names if names.count(n) > 1}):
        raise ValueError(f"signal(s) {repeated} listed more than once")
    return names


# The type of a route parameter naming signals: validated when the policy is read.
SignalNames = Annotated[list[str], Field(min_length=1), AfterValidator(check_signal_names)]


def make_signal(name: str, params: Mapping[str, Any] | None = None) -> Signal:
    """The registered signal ``name`` with ``params`` (its parameters, checked by the signal's
    annotations as it is made); one line on a bad or unknown one."""
    cls = REGISTRY[name]
    known = [f.name for f in fields(cls)]
    if unknown := sorted(set(params or {}) - set(known)):
        raise VerifierError(
            f"signal {name}: unknown parameter(s) {', '.join(unknown)} (parameters: {', '.join(known) or 'none'})"
        )
    return cls(**(params or {}))


def check_signal_params(params: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """A policy's per-signal parameters: each names a registered signal and makes it (so a bad
    value fails when the policy is read)."""
    for name, values in params.items():
        if name not in REGISTRY:
            raise ValueError(f"unknown signal {name!r} in signal_params; registered: {sorted(REGISTRY)}")
        try:
            make_signal(name, values)
        except VerifierError as exc:
            raise ValueError(str(exc)) from None
    return params


def check_params_used(signals: Iterable[str], params: Mapping[str, object]) -> None:
    """Parameters for a signal that is not computed would be silently ignored: refuse them."""
    if unused := sorted(set(params) - set(signals)):
        raise ValueError(f"signal_params for {', '.join(unused)}, which the signals list does not name")


# The type of a route parameter giving signals their parameters, e.g. {blackspectrum: {k: 5}}.
SignalParams = Annotated[dict[str, dict[str, Any]], AfterValidator(check_signal_params)]


def available_views(offered: Iterable[str]) -> frozenset[str]:
    """Capabilities plus the views they imply: a target that scores prompts can score them lowercased."""
    offered = frozenset(offered)
    return offered | ({LOWER} if PROMPT_LOGPROBS in offered else frozenset())


def computable(names: Iterable[str], offered: Iterable[str]) -> tuple[list[str], dict[str, str]]:
    """Split ``names`` into the signals ``offered`` capabilities can compute and, for the others, why not."""
    have = available_views(offered)
    usable, not_computable = [], {}
    for name in names:
        missing = REGISTRY[name].needs - have
        if missing:
            not_computable[name] = (
                f"not computable: needs {', '.join(sorted(missing))}, which the target does not offer"
            )
        else:
            usable.append(name)
    return usable, not_computable


def make_signals(
    names: Iterable[str] | None = None,
    offered: Iterable[str] = (),
    params: Mapping[str, Mapping[str, Any]] | None = None,
) -> list[Signal]:
    """Instantiate signals by name (default: every registered signal the ``offered`` capabilities
    allow, except those needing an extra forward pass or meant for one use, which run only when asked for by name)."""
    have = available_views(offered)
    if names is None:
        return [cls() for cls in REGISTRY.values() if cls.needs <= have and LOWER not in cls.needs and cls.by_default]
    signals = []
    for name in names:
        if name not in REGISTRY:
            raise VerifierError(f"unknown signal {name!r}; known: {', '.join(sorted(REGISTRY))}")
        if missing := REGISTRY[name].needs - have:
            hint = (
                " (e.g. --reference)"
                if REFERENCE in missing
                else (
                    " (documents of known membership: labelled data, or a prefix set the claim names)"
                    if {NONMEMBER_PREFIX, MEMBER_PREFIX} & missing
                    else " (a token frequency table of the target's tokenizer)"
                    if TOKEN_FREQUENCIES in missing
                    else ""
                )
            )
            raise VerifierError(f"signal {name!r} needs {', '.join(sorted(missing))}, which is not available{hint}")
        signals.append(make_signal(name, (params or {}).get(name)))
    return signals


def compute_signals(
    docs: Sequence[ScoredDocument], signals: Sequence[Signal], tools: SignalTools | None = None
) -> dict[str, Evaluation]:
    """One float64 column per signal, in document order, with the reason of each NaN."""
    return {s.name: s.evaluate(docs, tools) for s in signals}
