"""Rephrasers: several rephrasings of a text, for STAMP-style marks (one published, the rest
private) and for DE-COP's paraphrase options (``signals/output_only/decop``).

Every rephrasing is an independent draw of the same randomised rephraser, so the one published
(chosen at random) is exchangeable with the private ones under H0. Two rephrasers:
- ``offline``: seeded synonym substitution from a small bundled table; deterministic, no model
  (tests, examples, and any user without a spare model);
- a causal LM given by a model spec (``model:SPEC``), sampled with a seed. The target must not
  be the rephraser: its own samples are likelier under it whether or not it was trained on the
  text, which costs power, so the route refuses a registration whose rephraser has the target's
  weights.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from verifier.errors import VerifierError
from verifier.targets import ScoringOptions, load_target

SYNONYMS: dict[str, tuple[str, ...]] = {
    "about": ("around", "roughly"),
    "achieve": ("attain", "reach"),
    "additional": ("further", "extra"),
    "also": ("additionally", "likewise"),
    "analysis": ("examination", "study"),
    "approach": ("method", "strategy"),
    "began": ("started", "commenced"),
    "big": ("large", "sizeable"),
    "building": ("structure", "edifice"),
    "called": ("named", "termed"),
    "city": ("town", "municipality"),
    "common": ("usual", "frequent"),
    "compared": ("contrasted", "set against"),
    "consider": ("examine", "study"),
    "country": ("nation", "state"),
    "demonstrate": ("show", "establish"),
    "describe": ("present", "outline"),
    "develop": ("build", "devise"),
    "different": ("distinct", "various"),
    "during": ("throughout", "in the course of"),
    "efficient": ("effective", "economical"),
    "end": ("close", "conclusion"),
    "established": ("founded", "set up"),
    "existing": ("current", "present"),
    "famous": ("renowned", "celebrated"),
    "first": ("initial", "earliest"),
    "further": ("additionally", "moreover"),
    "general": ("broad", "overall"),
    "given": ("provided", "supplied"),
    "government": ("administration", "authorities"),
    "great": ("major", "considerable"),
    "held": ("hosted", "organised"),
    "however": ("nevertheless", "yet"),
    "important": ("significant", "key"),
    "improve": ("enhance", "strengthen"),
    "improved": ("enhanced", "better"),
    "including": ("among them", "such as"),
    "increase": ("rise", "growth"),
    "introduce": ("present", "propose"),
    "investigate": ("examine", "explore"),
    "killed": ("slain", "left dead"),
    "large": ("big", "substantial"),
    "later": ("subsequently", "afterwards"),
    "main": ("principal", "chief"),
    "many": ("numerous", "several"),
    "method": ("technique", "procedure"),
    "methods": ("techniques", "procedures"),
    "model": ("framework", "formulation"),
    "new": ("novel", "fresh"),
    "novel": ("new", "original"),
    "obtain": ("derive", "get"),
    "often": ("frequently", "commonly"),
    "paper": ("article", "work"),
    "people": ("persons", "individuals"),
    "performance": ("behaviour", "effectiveness"),
    "present": ("introduce", "report"),
    "problem": ("question", "task"),
    "problems": ("questions", "tasks"),
    "propose": ("put forward", "suggest"),
    "proposed": ("suggested", "put forward"),
    "provide": ("give", "offer"),
    "quickly": ("rapidly", "swiftly"),
    "recent": ("latest", "new"),
    "result": ("outcome", "finding"),
    "results": ("outcomes", "findings"),
    "several": ("various", "a number of"),
    "show": ("demonstrate", "reveal"),
    "shows": ("demonstrates", "reveals"),
    "significant": ("notable", "substantial"),
    "similar": ("comparable", "alike"),
    "simple": ("plain", "straightforward"),
    "small": ("little", "modest"),
    "study": ("investigation", "research"),
    "such": ("these", "those"),
    "use": ("employ", "apply"),
    "used": ("employed", "applied"),
    "using": ("employing", "applying"),
    "various": ("diverse", "different"),
    "very": ("highly", "extremely"),
    "which": ("that", "which"),
    "while": ("whereas", "although"),
    "work": ("study", "research"),
    "won": ("gained", "secured"),
    "year": ("season", "twelvemonth"),
    "years": ("seasons", "twelvemonths"),
    "this": ("the present", "this"),
    "that": ("which", "that"),
    "with": ("using", "with"),
    "these": ("such", "the"),
    "prove": ("show", "establish"),
    "based": ("founded", "built"),
    "where": ("in which", "whereby"),
    "their": ("its", "the"),
    "when": ("whenever", "once"),
    "number": ("count", "quantity"),
    "system": ("setup", "scheme"),
    "systems": ("setups", "schemes"),
    "over": ("across", "above"),
    "applications": ("uses", "domains"),
    "high": ("elevated", "strong"),
    "some": ("certain", "several"),
    "more": ("further", "greater"),
    "real": ("actual", "genuine"),
    "each": ("every", "any"),
    "between": ("among", "across"),
    "process": ("procedure", "mechanism"),
    "complex": ("intricate", "involved"),
    "structure": ("organisation", "form"),
    "only": ("solely", "merely"),
    "most": ("the majority of", "nearly all"),
    "every": ("each", "any"),
    "known": ("familiar", "established"),
    "multiple": ("several", "many"),
    "into": ("in", "to"),
    "order": ("sequence", "arrangement"),
    "tasks": ("jobs", "problems"),
    "critical": ("crucial", "essential"),
    "both": ("the two", "each of"),
    "properties": ("features", "characteristics"),
    "size": ("scale", "magnitude"),
    "well": ("properly", "nicely"),
    "introduced": ("proposed", "presented"),
    "values": ("quantities", "numbers"),
    "three": ("3", "three"),
    "type": ("kind", "sort"),
    "other": ("further", "additional"),
    "same": ("identical", "very same"),
    "techniques": ("methods", "procedures"),
    "solving": ("resolving", "tackling"),
    "address": ("tackle", "handle"),
    "solution": ("answer", "resolution"),
    "solutions": ("answers", "resolutions"),
    "level": ("degree", "grade"),
    "case": ("instance", "situation"),
    "task": ("job", "assignment"),
    "natural": ("intrinsic", "inherent"),
    "associated": ("related", "linked"),
    "current": ("present", "existing"),
    "particular": ("specific", "certain"),
    "single": ("sole", "lone"),
    "limited": ("restricted", "bounded"),
    "under": ("beneath", "below"),
    "have": ("possess", "hold"),
    "from": ("out of", "coming from"),
    "data": ("information", "records"),
    "models": ("formulations", "frameworks"),
    "learning": ("training", "learning"),
    "time": ("duration", "period"),
    "announced": ("declared", "stated"),
    "attack": ("assault", "strike"),
    "election": ("vote", "poll"),
    "team": ("squad", "side"),
    "released": ("issued", "put out"),
    "president": ("head of state", "leader"),
}
WORD = re.compile(r"[A-Za-z]+")


class Rephraser(Protocol):
    identity: dict[str, object]

    def rephrase(self, text: str, count: int, seed: int) -> list[str]:
        """``count`` distinct rephrasings of ``text``, drawn independently."""


def _match_case(source: str, replacement: str) -> str:
    return replacement.capitalize() if source[:1].isupper() else replacement


@dataclass
class OfflineRephraser:
    """Seeded synonym substitution: each word with table entries is swapped for one of its
    alternatives (or kept), independently per rephrasing."""

    identity = {
        "rephraser": "offline-synonyms/1",
        "table_sha256": hashlib.sha256(json.dumps(SYNONYMS, sort_keys=True).encode()).hexdigest(),
    }

    def rephrase(self, text: str, count: int, seed: int) -> list[str]:
        rng = np.random.default_rng(seed)
        slots = [m for m in WORD.finditer(text) if m.group().lower() in SYNONYMS]
        if 3 ** len(slots) < 2 * count:
            raise ValueError(
                f"the offline rephraser can vary only {len(slots)} words of this text: too few for {count} "
                "distinct rephrasings (use longer texts, fewer siblings, or a model rephraser)"
            )
        found: list[str] = []
        for _ in range(count * 50):
            pieces, last = [], 0
            for m in slots:
                word = m.group()
                options = (word.lower(),) + SYNONYMS[word.lower()]
                pieces += [text[last : m.start()], _match_case(word, options[int(rng.integers(0, len(options)))])]
                last = m.end()
            candidate = "".join(pieces) + text[last:]
            if candidate not in found:
                found.append(candidate)
                if len(found) == count:
                    return found
        raise ValueError(
            f"the offline rephraser found only {len(found)} distinct rephrasings of a text; {count} were asked for"
        )


def green_list_bias(key: int, gamma: float, delta: float):  # noqa: ANN201 - a transformers LogitsProcessor
    """A KGW-style watermark (Kirchenbauer et al. 2023), as STAMP uses: at each step, a share ``gamma``
    of the vocabulary, drawn from ``key`` and the previous token, gets ``delta`` added to its logits.
    Each rephrasing has its own key, so the published one carries a bias of its own throughout,
    which a model trained on it learns; the private ones carry others."""
    import torch
    from transformers import LogitsProcessor

    class GreenListBias(LogitsProcessor):
        def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
            vocab = scores.shape[-1]
            for row, previous in enumerate(input_ids[:, -1].tolist()):
                generator = torch.Generator().manual_seed((key * 1_000_003 + previous) % 2**63)
                scores[row, torch.randperm(vocab, generator=generator)[: int(gamma * vocab)]] += delta
            return scores

    return GreenListBias()


class ModelRephraser:
    """Rephrasings sampled from a causal LM (an instruction-tuned one, e.g. ``smollm2-135m``), each
    watermarked with its own key (``delta`` 0 turns the watermark off)."""

    PROMPT = (
        "Rewrite the following text in different words. Keep its meaning and length. Reply with the rewritten "
        "text only.\n\n"
    )
    # Sampled, so that rephrasings are independent draws; at temperature 1 SmolLM2-135M often
    # wandered off the text, at 0.7 it mostly keeps to it.
    TEMPERATURE, TOP_P = 0.7, 0.95

    def __init__(self, spec: str, max_new_tokens: int = 256, gamma: float = 0.5, delta: float = 2.0) -> None:
        self.target = load_target(spec, ScoringOptions(max_tokens=1024))
        self.max_new_tokens, self.gamma, self.delta = max_new_tokens, gamma, delta
        self.identity = {
            "rephraser": "model",
            **self.target.identity.as_finding(),
            "max_new_tokens": max_new_tokens,
            "sampling": {"temperature": self.TEMPERATURE, "top_p": self.TOP_P},
            "watermark": {"gamma": gamma, "delta": delta},
            "prompt_sha256": hashlib.sha256(self.PROMPT.encode()).hexdigest(),
        }

    def rephrase(self, text: str, count: int, seed: int) -> list[str]:
        import torch

        tokenizer, model = self.target.tokenizer, self.target.model
        prompt = self.PROMPT + text
        if getattr(tokenizer, "chat_template", None):
            prompt = tokenizer.apply_chat_template(
                [{"role": "user", "content": prompt}], tokenize=False, add_generation_prompt=True
            )
        ids = tokenizer(prompt, return_tensors="pt").input_ids
        pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
        found: list[str] = []
        from transformers import LogitsProcessorList

        for attempt in range(count * 5):
            key = (seed + attempt * 1_000_003) % 2**63
            torch.manual_seed(key)
            watermark = LogitsProcessorList([green_list_bias(key, self.gamma, self.delta)] if self.delta else [])
            out = model.generate(
                ids,
                attention_mask=torch.ones_like(ids),
                do_sample=True,
                temperature=self.TEMPERATURE,
                top_p=self.TOP_P,
                max_new_tokens=self.max_new_tokens,
                pad_token_id=pad,
                logits_processor=watermark,
            )
            candidate = " ".join(tokenizer.decode(out[0, ids.shape[1] :], skip_special_tokens=True).split())
            if candidate and candidate != " ".join(text.split()) and candidate not in found:
                found.append(candidate)
                if len(found) == count:
                    return found
        raise ValueError(f"the model rephraser gave only {len(found)} distinct rephrasings; {count} were asked for")


def rephraser_from_identity(identity: dict[str, object] | None, model: str | None = None) -> Rephraser:
    """The rephraser a registration names, to regenerate its rephrasings (an error if it cannot be
    had here); ``model`` loads a rephrasing model from elsewhere than the registered name (its
    weights must still be the registered ones)."""
    if not isinstance(identity, dict):
        raise VerifierError("the registration names no rephraser, so its rephrasings cannot be regenerated")
    if identity == OfflineRephraser.identity:
        return OfflineRephraser()
    if identity.get("rephraser") == "model":
        try:
            marked = identity.get("watermark") if isinstance(identity.get("watermark"), dict) else {}
            settings = (
                int(identity.get("max_new_tokens", 256)),
                float(marked.get("gamma", 0.5)),
                float(marked.get("delta", 2.0)),
            )
            if not (1 <= settings[0] <= 4096 and 0 < settings[1] < 1 and 0 <= settings[2] <= 20):
                raise ValueError(f"rephraser settings out of range: {settings}")
            rephraser = ModelRephraser(model or str(identity.get("spec")), *settings)
        except (VerifierError, OSError, ValueError, TypeError) as exc:
            raise VerifierError(
                f"the rephrasing model {identity.get('spec')!r} is not available here to regenerate the rephrasings "
                f"(give it as evidence.marks.rephraser or --rephraser; {exc})"
            ) from None
        if {k: v for k, v in rephraser.identity.items() if k != "spec"} != {
            k: v for k, v in identity.items() if k != "spec"
        }:
            raise VerifierError(
                f"the rephrasing model {identity.get('spec')!r} here differs from the registered one (weights or "
                "prompt)"
            )
        return rephraser
    raise VerifierError(f"unknown rephraser {str(identity.get('rephraser'))[:60]!r} (another version's offline table?)")


def make_rephraser(spec: str) -> Rephraser:
    """``offline`` or ``model:SPEC``."""
    if spec == "offline":
        return OfflineRephraser()
    if spec.startswith("model:") and len(spec) > 6:
        return ModelRephraser(spec.removeprefix("model:"))
    raise ValueError(f"rephraser {spec!r}: use 'offline' or 'model:SPEC' (a model other than the one to be tested)")
