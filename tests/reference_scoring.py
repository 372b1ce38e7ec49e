"""An independent, deliberately plain float64 implementation of every signal.

One text per forward pass, no padding, no cache, full-vocabulary arrays in float64, sorting
instead of partitioning: what the reference implementations do. The library's batched, cached
fp32 path must agree with it to 1e-4.
"""

from __future__ import annotations

import copy
import zlib

import numpy as np
import torch

K = 0.2


def float64_model(model: torch.nn.Module) -> torch.nn.Module:
    return copy.deepcopy(model).double().eval()


def plain_arrays(model, tokenizer, text: str, max_chars: int = 2500, max_tokens: int = 256) -> dict:
    enc = tokenizer(text[:max_chars], truncation=True, max_length=max_tokens, return_offsets_mapping=True)
    ids = enc["input_ids"]
    with torch.no_grad():
        logits = model(torch.tensor([ids])).logits[0].double()
    logp = torch.log_softmax(logits[:-1], dim=-1)
    p = torch.softmax(logits[:-1], dim=-1)
    positions = torch.arange(len(ids) - 1)
    mu = (p * logp).sum(-1)
    var = (p * logp**2).sum(-1) - mu**2
    return {
        "logprob": logp[positions, torch.tensor(ids[1:])].numpy(),
        "mu": mu.numpy(),
        "sigma": var.clamp_min(0).sqrt().numpy(),
        "top1": logp.max(-1).values.numpy(),
        "char_start": enc["offset_mapping"][1][0],
        "char_end": enc["offset_mapping"][-1][1],
    }


def lowest_mean(values: np.ndarray) -> float:
    return float(np.sort(values)[: max(1, int(len(values) * K))].mean())


def plain_signals(text: str, a: dict, lower: dict | None = None, ref: dict | None = None) -> dict[str, float]:
    loss = float(a["logprob"].mean())
    out = {
        "loss": loss,
        "zlib": loss / len(zlib.compress(text[: a["char_end"]].encode("utf-8"))),
        "min_k": lowest_mean(a["logprob"]),
        "min_k_pp": lowest_mean((a["logprob"] - a["mu"]) / a["sigma"]),
        "gap_k": lowest_mean(a["logprob"] - a["top1"]),
    }
    if lower is not None:
        out["lowercase"] = float(lower["logprob"].mean()) / loss
    if ref is not None:
        per_char = lambda x: x["logprob"].sum() / (x["char_end"] - x["char_start"])  # noqa: E731
        out["reference"] = float(per_char(a) - per_char(ref))
    return out
