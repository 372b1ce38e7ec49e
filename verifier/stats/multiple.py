"""Error control across many claims tested at once (a batch audit).

``holm`` (Holm 1979) controls the family-wise error rate - the chance of any false verdict in
the batch - under any dependence between the claims' p-values (they share a model, and may share
a held-out set). ``bh`` (Benjamini-Hochberg, scipy's ``false_discovery_control``) controls the
expected share of false verdicts among those granted; it assumes independent or positively
dependent p-values, which claims scored by one model are not guaranteed to be, so it is the
policy's choice to make and the report names it.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from scipy.stats import false_discovery_control

ErrorControl = Literal["holm", "bh"]
CONTROLS: dict[str, str] = {
    "holm": "Holm's step-down adjustment (family-wise error rate, any dependence)",
    "bh": "Benjamini-Hochberg adjustment (false discovery rate, independent or positively dependent p-values)",
}


def adjusted_p_values(p: np.ndarray, method: ErrorControl) -> np.ndarray:
    """Adjusted p-values, in the input's order: a claim keeps its verdict at level alpha iff its
    adjusted p-value is below alpha. An adjusted p-value is never below the raw one."""
    p = np.asarray(p, dtype=float)
    if p.size == 0:
        return p
    if method == "bh":
        return np.maximum(false_discovery_control(p, method="bh"), p)
    order = np.argsort(p, kind="stable")
    steps = np.maximum.accumulate(np.minimum(1.0, (len(p) - np.arange(len(p))) * p[order]))
    adjusted = np.empty_like(p)
    adjusted[order] = steps
    return adjusted
