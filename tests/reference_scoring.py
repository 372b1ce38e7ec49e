"""An independent, deliberately plain float64 implementation of every signal, as published.

One text per forward pass, no padding, no cache, full-vocabulary arrays in float64, sorting
instead of partitioning, and the published definitions rather than the project's own code:
- loss, zlib, Min-K% and Min-K%++ as the Min-K%++ reference code computes them
  (``ll = -loss``; ``zlib = ll / len(zlib.compress(bytes(text, "utf-8")))`` over the whole text
  given to the model; ``k_length = int(len(token_log_probs) * ratio)``, mean of the ``k_length``
  lowest; Min-K%++ standardises each token log-prob by the mean ``mu`` and the square root of the
  variance ``sigma`` of the log-prob under the model's own next-token distribution);
- gap_k, lowercase and reference as the project documents them (no single published code).
The library's batched, cached fp32 path must agree with it to 1e-4. Where the published code is
undefined (fewer than 5 scored tokens: ``k_length`` 0, the mean of nothing), the project takes
the lowest token; ``published_defined`` says which texts that is.
"""

from __future__ import annotations

import copy
import zlib

import numpy as np
import torch

RATIO = 0.2


def float64_model(model: torch.nn.Module) -> torch.nn.Module:
    return copy.deepcopy(model).double().eval()


def plain_arrays(model, tokenizer, text: str, max_chars: int = 2500, max_tokens: int = 256) -> dict:
    given = text[:max_chars]
    enc = tokenizer(given, truncation=True, max_length=max_tokens, return_offsets_mapping=True)
    ids = enc["input_ids"]
    with torch.no_grad():
        logits = model(torch.tensor([ids])).logits[0].double()
    log_probs = torch.log_softmax(logits[:-1], dim=-1)
    probs = torch.softmax(logits[:-1], dim=-1)
    token_log_probs = log_probs.gather(dim=-1, index=torch.tensor(ids[1:])[:, None])[:, 0]
    mu = (probs * log_probs).sum(-1)
    sigma = (probs * torch.square(log_probs)).sum(-1) - torch.square(mu)
    return {
        "text": given,
        "token_log_probs": token_log_probs.numpy(),
        "mu": mu.numpy(),
        "sigma": sigma.numpy(),
        "top1": log_probs.max(-1).values.numpy(),
        "char_start": enc["offset_mapping"][1][0],
        "char_end": enc["offset_mapping"][-1][1],
    }


def published_defined(a: dict) -> bool:
    return int(len(a["token_log_probs"]) * RATIO) > 0


def lowest_mean(values: np.ndarray) -> float:
    k_length = int(len(values) * RATIO) or 1  # the project's convention where the published one is undefined
    return float(np.mean(np.sort(values)[:k_length]))


def plain_signals(a: dict, lower: dict | None = None, ref: dict | None = None) -> dict[str, float]:
    ll = float(a["token_log_probs"].mean())
    out = {
        "loss": ll,
        "zlib": ll / len(zlib.compress(bytes(a["text"], "utf-8"))),
        "min_k": lowest_mean(a["token_log_probs"]),
        "min_k_pp": lowest_mean((a["token_log_probs"] - a["mu"]) / np.sqrt(a["sigma"])),
        "gap_k": lowest_mean(a["token_log_probs"] - a["top1"]),
    }
    if lower is not None:
        out["lowercase"] = float(lower["token_log_probs"].mean()) / ll
    if ref is not None:

        def per_char(x):
            return x["token_log_probs"].sum() / (x["char_end"] - x["char_start"])

        out["reference"] = float(per_char(a) - per_char(ref))
    return out
