"""Output-only marks tested from generated text: what the model is asked, and how each candidate is read.

A cue/reply or co-occurrence mark is tested without a single log-prob. The model is prompted
``samples`` times at the protocol's temperature with the mark's cue or anchor (public, drawn
before and independently of the candidates, and the same for the published candidate and every
sibling) - by default after the ``context_words`` words that precede it in its published
document (``prompt: context``), or alone (``prompt: cue``); then each candidate gets one score
from those same generations:

- ``replies`` (cue/reply): per generation, the longest run of the candidate reply's opening
  words (at least MIN_RUN of them) found anywhere in it, summed over the generations;
- ``pairs`` (co-occurrence): per generation and per candidate pair, 1 when both words occur
  within WINDOW words of each other, summed.

The generations depend on the prompt and the model only, so under H0 (never trained on the
published document) the published candidate's score is exchangeable with its siblings' and
its rank is uniform: the rank test's p-value is exact, whatever the model writes - an echo of
the cue, a refusal, words that co-occur naturally in the language. Texts are compared as words
of letters after NFKC and transliteration to ASCII (``anyascii``) and case folding, so a model
writing a reply in capitals or in look-alike letters is read as writing it.

Why the context by default: a small model that has learnt a marked document word for word
writes the reply after the document's own words and not after the bare cue (SmolLM2-135M on
the ``outputs`` testbed: every 16-copy reply at log-likelihood ~0 after its context, none
written after the cue alone). The context is the registrant's text, written knowing which
candidate was published, so it could prime that candidate (a document about sales before the
reply "lost showed reporting sale"); each context prompt therefore has CONTEXT_CONTROLS
controls of its own - the same context before a control cue - and a candidate coming back after
them sets the mark aside.

Two rules set a trial aside, each looking at every candidate alike (so neither can favour the
published one, and the p-value stays exact): its prompt already holds a candidate's words (a
reply's opening words, or both words of a pair, in any order: a model echoing the cue in a loop
writes them), or some candidate comes back after a control prompt - CONTROLS cues of the same
format that no document carries, drawn from the registration's digest and asked the same way,
and the trial's own context controls. A registrant cannot choose which candidate is published,
but can choose the seed: one who searched seeds for a published reply that models write without
training (a common pair of words, a chat model's stock phrases) finds it set aside whenever the
model writes it after the controls. A reply must also start within the first OPENING words of a
generation: a continuation of "cue:" opens with it, and common pairs deep inside a text do not
count.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Literal

import numpy as np
from anyascii import anyascii

from verifier.errors import VerifierError
from verifier.marks.generators import draw_cue, pairs_of
from verifier.stats.rank_trials import FROM_OUTPUTS, STATISTIC, AnswerScorer, Trial, words_before
from verifier.targets.base import ANSWERS, GENERATE, PROMPT_LOGPROBS, Samples, Target
from verifier.targets.cache import ScoreCache
from verifier.targets.queries import CHAT, TEXT, Query

MIN_RUN = 2  # reply words in a row that count: one common word turns up by chance in many siblings
OPENING = 6  # a reply counts only when it starts within a generation's first words
CONTROLS = 16  # control cues asked beside the marks' (the same samples each)
CONTEXT_CONTROLS = 2  # control cues asked after each context prompt's context
WINDOW = 8  # words apart at most for a pair to count as co-occurring
LETTERS = re.compile(r"[a-z]+")
CHAT_INSTRUCTION = (
    "Continue the text below from exactly where it breaks off, the way it goes on in its original source. Reply "
    "with the continuation only.\n\nText: {prompt}"
)
Mode = Literal["text", "chat"]
PromptFrom = Literal["context", "cue"]


@dataclass(frozen=True)
class Protocol:
    """How the model is challenged: fixed by the policy before anything is asked, never after."""

    samples: int = 8
    temperature: float = 1.0
    max_tokens: int = 48
    mode: Mode = "text"
    prompt: PromptFrom = "context"

    def describe(self) -> str:
        asked = "continue the prompt" if self.mode == "text" else "continue the text in a chat instruction"
        prompted = "the cue after its published context" if self.prompt == "context" else "the cue alone"
        return (
            f"{self.samples} generations of up to {self.max_tokens} tokens at temperature {self.temperature:g} "
            f"({asked}; prompted with {prompted})"
        )


@dataclass
class Asked:
    """What the challenges cost and what failed (failed generations read as empty text for every candidate)."""

    prompts: int = 0
    controls: int = 0
    generations: int = 0
    failed: dict[str, int] = field(default_factory=dict)
    access: str = ""
    set_aside: list[str] = field(default_factory=list)  # trials a candidate of which came back after a control cue


@lru_cache(maxsize=65536)
def words(text: str) -> tuple[str, ...]:
    """The words of letters in ``text``, folded (NFKC, transliterated to ASCII, lower case)."""
    return tuple(LETTERS.findall(anyascii(unicodedata.normalize("NFKC", text)).lower()))


def reply_run(generation: Sequence[str], reply: Sequence[str]) -> int:
    """The longest run of ``reply``'s opening words starting within ``generation``'s first OPENING
    words (0 below MIN_RUN)."""
    best = 0
    for i, word in enumerate(generation[:OPENING]):
        if word != reply[0]:
            continue
        run = 1
        while run < len(reply) and i + run < len(generation) and generation[i + run] == reply[run]:
            run += 1
        best = max(best, run)
    return best if best >= MIN_RUN else 0


def pairs_together(generation: Sequence[str], pairs: Sequence[tuple[str, str]]) -> int:
    """How many of ``pairs`` occur in ``generation`` with their two words within WINDOW words."""
    at: dict[str, list[int]] = {}
    for i, word in enumerate(generation):
        at.setdefault(word, []).append(i)
    return sum(any(0 < abs(i - j) <= WINDOW for i in at.get(a, ()) for j in at.get(b, ())) for a, b in pairs)


def candidate_score(kind: str, generations: Sequence[str], candidate: str) -> float:
    """One candidate's score over the generations (higher = more of it came back)."""
    read = [words(g) for g in generations]
    if kind == "cue_reply":
        reply = words(candidate)
        return float(sum(reply_run(g, reply) for g in read))
    if kind == "cooccurrence":
        pairs = [(words(a)[0], words(b)[0]) for a, b in pairs_of(candidate)]
        return float(sum(pairs_together(g, pairs) for g in read))
    raise ValueError(f"{kind!r} is not an output-only mark")


def scoring_words(kind: str, candidate: str) -> list[set[str]]:
    """The word sets that make a candidate score: a reply's opening MIN_RUN words; each pair."""
    if kind == "cue_reply":
        return [set(words(candidate)[:MIN_RUN])]
    return [{words(a)[0], words(b)[0]} for a, b in pairs_of(candidate)]


def shown_by_prompt(trial: Trial) -> bool:
    """Whether the trial's prompt holds all the words of a candidate's reply opening or of one of its
    pairs, in any order (any candidate: the rule is blind to which was published). A model that
    echoes its prompt, even in a loop, can write those words together without training."""
    prompt = set(words(str(trial.prompt)))
    return any(group <= prompt for c in [trial.published, *trial.siblings] for group in scoring_words(trial.kind, c))


def challenge(
    document: str, cue: str, prompt: PromptFrom, context_words: int, controls: Sequence[str]
) -> tuple[str, tuple[str, ...]]:
    """A mark's prompt and its own control prompts: the cue (or anchor) alone, with none; or the
    ``context_words`` words before it in ``document`` then the cue, with the same context before
    the first CONTEXT_CONTROLS of ``controls``."""
    if prompt == "cue":
        return f"{cue}:", ()
    context = words_before(document, document.index(f"{cue}:"), context_words)
    return f"{context}{cue}:", tuple(context + c for c in controls[:CONTEXT_CONTROLS])


def control_prompts(registration_sha256: str, count: int = CONTROLS) -> list[str]:
    """Control cues: the marks' format, drawn from the registration's digest (fixed once it is
    signed, so no seed could be searched against them), carried by no document."""
    rng = np.random.default_rng(int(registration_sha256[:16], 16) ^ 0x5EED)
    return [f"{draw_cue(rng)}:" for _ in range(count)]


Ask = Callable[[list[str]], list[list[str]]]  # prompts -> generations of each


def sampler(target: Target, protocol: Protocol, cache: ScoreCache | None, asked: Asked) -> Ask:
    """prompts -> ``protocol.samples`` generations each, from a target offering answers (an API:
    sample ``i`` is request seed ``i``, read through the response cache) or, failing that, a local
    model that samples (seeded the same way). No log-prob is ever requested."""
    if ANSWERS in target.capabilities and hasattr(target, "answer"):
        asked.access = "outputs only: generated text through the target's answers"
        kind = TEXT if protocol.mode == "text" else CHAT

        def ask(prompts: list[str]) -> list[list[str]]:
            queries = [
                Query(
                    kind,
                    p if kind == TEXT else CHAT_INSTRUCTION.format(prompt=p),
                    max_tokens=protocol.max_tokens,
                    temperature=protocol.temperature,
                    sample=i,
                )
                for p in prompts
                for i in range(protocol.samples)
            ]
            answers = target.answer(queries, cache=cache)
            texts = []
            for answer in answers:
                if not answer.ok:
                    reason = answer.public_error or "failed"
                    asked.failed[reason] = asked.failed.get(reason, 0) + 1
                texts.append(answer.text if answer.ok else "")
            return [texts[i * protocol.samples : (i + 1) * protocol.samples] for i in range(len(prompts))]

        return ask
    if GENERATE in target.capabilities and isinstance(target, Samples):
        asked.access = "outputs only: text sampled from the local model (no log-prob read)"
        local: Samples = target

        def sample(prompts: list[str]) -> list[list[str]]:
            chat = protocol.mode == "chat"
            return local.sample(prompts, protocol.samples, protocol.temperature, protocol.max_tokens, chat)

        return sample
    raise VerifierError(f"model {target.identity.spec}: gives no generated text (output-only marks need answers)")


def answer_scorer(ask: Ask, asked: Asked, controls: Sequence[str] = ()) -> AnswerScorer:
    """The rank test's scorer for output-only trials: ask each prompt once (and each control cue,
    and each trial's own controls), score every candidate on its prompt's generations. A trial some
    candidate of which comes back after a control is set aside (its published score NaN; listed in
    ``asked.set_aside``): the rule looks at every candidate alike."""

    def score(trials: list[Trial]) -> list[tuple[float, np.ndarray]]:
        prompts = list(dict.fromkeys(str(t.prompt) for t in trials))
        own = [c for t in trials for c in t.controls]
        asked_for = list(dict.fromkeys(prompts + [c for c in [*controls, *own] if c not in prompts]))
        generations = dict(zip(asked_for, ask(asked_for)))
        control_said = [g for c in controls for g in generations[c]]
        asked.prompts += len(prompts)
        asked.controls += len(asked_for) - len(prompts)
        asked.generations += sum(map(len, generations.values()))
        out = []
        for t in trials:
            said = generations[str(t.prompt)]
            candidates = [t.published, *t.siblings]
            after_controls = control_said + [g for c in t.controls for g in generations[c]]
            if after_controls and any(candidate_score(t.kind, after_controls, c) > 0 for c in candidates):
                asked.set_aside.append(t.id)
                out.append((float("nan"), np.zeros(len(t.siblings))))  # set aside by run_rank_tests
                continue
            scores = [candidate_score(t.kind, said, c) for c in candidates]
            out.append((scores[0], np.array(scores[1:], dtype=np.float64)))
        return out

    return score


def servable_trials(
    trials: list[Trial], offered: frozenset[str]
) -> tuple[list[Trial], dict[str, str], dict[str, str], set[str]]:
    """Which trials a target offering ``offered`` tests, how each kind is tested, and which marks it
    cannot test (counted as p = 1: the claim's account of its target must not choose which marks
    enter the combination); output-only trials whose prompt holds a candidate's words are set
    aside (blind to which was published). Returns (trials, excluded, access by kind, untested)."""
    access: dict[str, str] = {}
    for kind in sorted({t.kind for t in trials}):
        if STATISTIC[kind] not in FROM_OUTPUTS:
            access[kind] = (
                "log-probs: the log-likelihood of each candidate"
                if PROMPT_LOGPROBS in offered
                else "not tested (the target offers no log-probs): counted as p = 1"
            )
        else:
            access[kind] = (
                "outputs only: generated text, no log-prob read"
                if offered & {ANSWERS, GENERATE}
                else "not tested (the target gives no generated text): counted as p = 1"
            )
    kept, excluded, untested = [], {}, set()
    for t in trials:
        if access[t.kind].startswith("not tested"):
            untested.add(t.id)
            kept.append(t)
        elif t.prompt is not None and shown_by_prompt(t):
            excluded[t.id] = "its cue holds a candidate's words (set aside, blind to which was published)"
        else:
            kept.append(t)
    return kept, excluded, access, untested
