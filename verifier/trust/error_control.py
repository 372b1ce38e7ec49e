"""Error control across many claims tested at once (a batch audit), computed by the batch and
recomputed by ``verify`` from the bundles' findings.

``holm`` (Holm 1979) controls the family-wise error rate - the chance of any false verdict in
the batch - under any dependence between the claims' p-values (they share a model, and may share
a held-out set). ``bh`` (Benjamini-Hochberg) controls the expected share of false verdicts among
those granted; it assumes independent or positively dependent p-values, which claims scored by
one model are not guaranteed to be, so it is the policy's choice to make and the report names it.

Both are a few lines of numpy, here on the trust floor, so that verifying a batch imports no
scipy or scikit-learn; the tests check them against scipy's ``false_discovery_control`` and a
direct reading of Holm's procedure.
"""

from __future__ import annotations

from typing import Literal

import numpy as np

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
    n = len(p)
    order = np.argsort(p, kind="stable")
    ranked = p[order]
    if (
        method == "bh"
    ):  # step-up: p_(i) * (n / i), the smallest of those at or above rank i (scipy's arithmetic, to the bit)
        steps = np.minimum.accumulate((ranked * (n / np.arange(1, n + 1)))[::-1])[::-1]
    else:  # step-down: (n - i + 1) * p_(i), the largest of those at or below rank i
        steps = np.maximum.accumulate((n - np.arange(n)) * ranked)
    adjusted = np.empty_like(p)
    adjusted[order] = np.minimum(1.0, steps)
    return np.maximum(adjusted, p)
