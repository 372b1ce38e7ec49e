"""L2-regularised logistic regression fitted for many problems at once, optionally with w >= 0.

Dataset inference learns a weighting of the signals on one half of the data, and the power
simulation and the permutation test do that for tens of thousands of problems. Fitting them one
by one with scikit-learn costs milliseconds each; here all problems share one batched Newton
iteration. The objective is scikit-learn's ``LogisticRegression(C=C)`` (L2 on the weights, not on
the intercept), and a test holds the two to the same solution.

``nonnegative=True`` constrains the weights (not the intercept) to be >= 0. Every signal is
oriented "higher = member", so a negative weight would let a set that is *less* member-like on a
signal count as evidence of training; the constraint makes the test one-sided in fact, not only
in name. It is solved by projected Newton (Bertsekas 1982): weights at the bound whose gradient
pushes outward are held at zero, the Newton step runs over the free ones, and the result is
projected back onto w >= 0. A test holds it to scipy's L-BFGS-B on the same bounded objective.
"""

from __future__ import annotations

import numpy as np


def fit_logistic_batch(
    x: np.ndarray, y: np.ndarray, c: float = 1.0, iterations: int = 50, nonnegative: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """Fit ``x`` [problems, rows, features] to 0/1 ``y`` [problems, rows]; returns weights and intercepts.

    Minimises ``C * sum(log-loss) + |w|^2 / 2`` by Newton's method, which converges in a handful
    of steps on these small, well-conditioned problems (standardised features, an L2 penalty).
    """
    problems, rows, features = x.shape
    design = np.concatenate([x, np.ones((problems, rows, 1), dtype=x.dtype)], axis=2)  # last column: intercept
    design_t = design.transpose(0, 2, 1)
    y = y.astype(x.dtype, copy=False)
    theta = np.zeros((problems, features + 1))
    penalty = np.eye(features + 1)
    penalty[-1, -1] = 0.0
    tolerance = 1e-9 if x.dtype == np.float64 else 1e-5
    for _ in range(iterations):
        p = 1.0 / (1.0 + np.exp(-(design @ theta.astype(x.dtype)[..., None])[..., 0]))
        # Row sums run in the data's precision (batched BLAS); the small systems are solved in float64.
        gradient = c * (design_t @ (p - y)[..., None])[..., 0].astype(np.float64) + theta @ penalty
        hessian = c * (design_t @ (design * (p * (1 - p))[..., None])).astype(np.float64) + penalty
        if nonnegative:
            # Weights held at the bound: at zero with a gradient that would push them negative.
            held = np.zeros((problems, features + 1), dtype=bool)
            held[:, :-1] = (theta[:, :-1] <= 0.0) & (gradient[:, :-1] > 0.0)
            gradient = np.where(held, 0.0, gradient)
            coupled = held[:, :, None] | held[:, None, :]
            hessian = np.where(coupled, 0.0, hessian) + held[:, :, None] * np.eye(features + 1)
        step = np.linalg.solve(hessian + 1e-10 * np.eye(features + 1), gradient[..., None])[..., 0]
        previous = theta
        theta = theta - step
        if nonnegative:
            theta[:, :-1] = np.maximum(theta[:, :-1], 0.0)
        if np.abs(theta - previous).max() < tolerance:
            break
    return theta[:, :-1], theta[:, -1]
