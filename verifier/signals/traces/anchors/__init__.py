"""BlackSpectrum's two extreme sequence sets ("When Reasoning Leaks Membership", section 5.2).

- Verbatim recall set: 50 public-domain proverbs, poem lines and song lyrics cut before a word
  every model knows (``anchors/verbatim_recall.jsonl``, each with its source; provenance in
  ``anchors/PROVENANCE.md``).
- Low-information synthetic set: proverb-like sequences that constrain their next word as little
  as possible. Candidates come from a generator - offline by default, ``template_candidates``
  (seeded, generic words in proverb shapes; the paper asked GPT-3.5 instead) - and the ``gamma``
  whose next-token distribution has the highest Shannon entropy under a small selection LM (the paper's "validation LM")
  are
  kept. The shipped ``anchors/synthetic.jsonl`` holds 100 template candidates with their entropy
  under SmolLM2-135M-Instruct (``python -m verifier.signals.traces.anchors`` rebuilds it; a test
  recomputes a sample), so an audit needs no selection LM at run time; ``select`` takes the top
  ``gamma`` (or, for the ablation without selection, the first ``gamma`` in generation order).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from importlib import resources

import numpy as np

from verifier.errors import VerifierError

GENERATOR_SEED = 13
SUBJECTS = [
    "The one",
    "A man",
    "Every hand",
    "He",
    "She",
    "The wise",
    "A small thing",
    "Whoever",
    "The road",
    "A word",
    "The last",
    "Each day",
    "A door",
    "The other",
    "Nothing",
    "Some",
    "The first",
    "A friend",
    "What",
    "All",
]
LINKS = [
    "who waits for the",
    "that comes before the",
    "is never the",
    "will always find the",
    "that looks at a",
    "who keeps his",
    "is worth more than a",
    "that follows every",
    "who takes the",
    "is only as good as its",
    "has no",
    "must learn to",
    "can carry a",
    "that stays with",
    "goes where the",
]
FILLERS = ["other", "same", "next", "old", "new", "first", "last", "one", "own", "whole"]


def template_candidates(n: int = 100, seed: int = GENERATOR_SEED) -> list[str]:
    """``n`` distinct proverb-like sequences ending where any of many words could follow."""
    rng = np.random.default_rng(seed)
    out: list[str] = []
    while len(out) < n:
        words = [SUBJECTS[rng.integers(len(SUBJECTS))], LINKS[rng.integers(len(LINKS))]]
        if words[1].endswith(" the") and rng.random() < 0.5:  # "the next", "the same": grammatical only after "the"
            words.append(FILLERS[rng.integers(len(FILLERS))])
        text = " ".join(words)
        if text not in out:
            out.append(text)
    return out


def next_token_entropy(texts: list[str], model, tokenizer) -> np.ndarray:  # noqa: ANN001 - a transformers causal LM
    """Shannon entropy (nats) of the selection LM's next-token distribution after each text."""
    import torch

    out = []
    with torch.no_grad():
        for text in texts:
            ids = tokenizer(text, return_tensors="pt").input_ids
            logits = model(input_ids=ids).logits[0, -1].double()
            logp = torch.log_softmax(logits, dim=-1)
            out.append(float(-(logp.exp() * logp).sum()))
    return np.array(out)


@dataclass(frozen=True)
class AnchorSets:
    recall: list[str]
    synthetic: list[str]


@cache
def _read(name: str) -> tuple[dict, ...]:
    """A shipped anchor file, read once per process (every BlackSpectrum made or asked reads it)."""
    text = resources.files(__name__).joinpath(name).read_text()
    return tuple(json.loads(line) for line in text.splitlines() if line)


def recall_set() -> list[dict]:
    return list(_read("verbatim_recall.jsonl"))


def synthetic_candidates() -> list[dict]:
    return list(_read("synthetic.jsonl"))


RECALL_ANCHORS, SYNTHETIC_ANCHORS = 50, 100  # the shipped sets' sizes (select checks the files hold them)


def select(k: int, gamma: int, entropy_selection: bool = True) -> AnchorSets:
    """The first ``k`` recall sequences and ``gamma`` synthetic ones (highest entropy first, or in
    generation order without selection)."""
    recall, candidates = recall_set(), synthetic_candidates()
    if not 1 <= k <= len(recall) or not 1 <= gamma <= len(candidates):
        raise VerifierError(
            f"anchors: k must be in [1, {len(recall)}] and gamma in [1, {len(candidates)}], got {k} and {gamma}"
        )
    if entropy_selection:
        candidates = sorted(candidates, key=lambda row: -row["entropy"])
    return AnchorSets([r["text"] for r in recall[:k]], [c["text"] for c in candidates[:gamma]])


def main() -> None:
    """Rebuild ``anchors/synthetic.jsonl``: template candidates and their entropy under SmolLM2."""
    from pathlib import Path

    from verifier.targets.kinds.causal_lm import CausalLMTarget

    lm = CausalLMTarget("smollm2-135m")
    texts = template_candidates()
    entropy = next_token_entropy(texts, lm.model, lm.tokenizer)
    path = Path(__file__).parent / "synthetic.jsonl"
    path.write_text(
        "".join(
            json.dumps(
                {
                    "text": t,
                    "entropy": round(float(h), 4),
                    "validation_lm": "smollm2-135m",
                    "generator": f"template_candidates(seed={GENERATOR_SEED})",
                }
            )
            + "\n"
            for t, h in zip(texts, entropy)
        )
    )
    print(f"{path}: {len(texts)} candidates, entropy {entropy.min():.2f}-{entropy.max():.2f} nats")


if __name__ == "__main__":
    main()
