"""How a local model is run: the options every caller (claims, the audit, the CLI, Ray) builds.

They live apart from the model code so that a claim can name them, and a cache key be computed
from them, without importing torch; only asking for a CUDA device looks at torch.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from verifier.errors import VerifierError

DTYPES = ("fp32", "bf16")
# Tokens per forward pass by device when not given: measured best on the 2-core CPU (see
# benchmarks/score_throughput.py) and on an H200-class GPU (128 rows of 256 tokens).
DEFAULT_BATCH_TOKENS = {"cpu": 1024, "cuda": 32768}


@dataclass(frozen=True)
class ScoringOptions:
    """How documents are cut and how the model runs. Everything here that changes the numbers
    (``dtype``, ``max_tokens``, ``max_chars``, ``stride``, the batch shape) is part of the cache key."""

    device: str = "auto"  # "auto" is resolved when the options are made: CUDA when present, else the CPU
    dtype: Literal["fp32", "bf16"] = "fp32"
    batch_tokens: int | None = None  # tokens per forward pass (rows x width); None: by device
    max_tokens: int = 256
    max_chars: int = 2500
    stride: int | None = None  # None: cut at max_tokens; else windows of max_tokens advancing by stride
    threads: int | None = None

    def __post_init__(self) -> None:
        if self.dtype not in DTYPES:
            raise VerifierError(f"dtype {self.dtype!r}: use one of {sorted(DTYPES)}")
        if self.max_tokens < 2 or self.max_chars < 1:
            raise VerifierError("max tokens must be >= 2 and max chars >= 1")
        if self.batch_tokens is not None and self.batch_tokens < 1:
            raise VerifierError(f"batch tokens {self.batch_tokens}: must be >= 1")
        if self.threads is not None and self.threads < 1:
            raise VerifierError(f"threads {self.threads}: must be >= 1 (leave it out for torch's default)")
        if self.stride is not None and not 1 <= self.stride < self.max_tokens:
            raise VerifierError(
                f"stride {self.stride}: must be between 1 and max tokens - 1 ({self.max_tokens - 1}), so every "
                "window after the first has context from the one before"
            )
        if self.device == "auto":
            object.__setattr__(self, "device", _auto_device())
        if not (self.device == "cpu" or self.device.startswith("cuda")):
            raise VerifierError(f"device {self.device!r}: use auto, cpu or cuda (cuda:N)")
        if self.device.startswith("cuda"):
            import torch  # only a CUDA device needs torch to be checked

            if not torch.cuda.is_available():
                raise VerifierError(f"device {self.device!r}: no CUDA device is available")

    @property
    def tokens_per_pass(self) -> int:
        return self.batch_tokens or DEFAULT_BATCH_TOKENS["cuda" if self.device.startswith("cuda") else "cpu"]


def _auto_device() -> str:
    """CUDA when torch sees a device, else the CPU (torch is imported only to ask)."""
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"
