"""L2-regularised logistic regression fitted for many problems at once, optionally with w >= 0.

Dataset inference learns a weighting of the signals on one half of the data, and the power
simulation and the permutation test do that for tens of thousands of problems. Fitting them one
by one with scikit-learn costs milliseconds each; here all problems share one batched Newton
iteration. The objective is scikit-learn's ``LogisticRegression(C=C)`` (L2 on the weights, not on
the intercept), and a test holds the two to the same solution.

``nonnegative=True`` constrains the weights (not the intercept) to be >= 0. Every signal is
oriented "higher = member", so a negative weight would let a set that is *less* member-like on a
signal count as evidence of training; the constraint makes the test one-sided in fact, not only
in name. It is solved by projected Newton (Bertsekas 1982): weights at (or within ``EPSILON`` of)
the bound whose gradient pushes outward are held at zero, the Newton step runs over the free
ones, the result is projected back onto w >= 0, and the step is halved per problem until the
objective decreases (Armijo backtracking along the projection arc), which keeps small, highly
correlated problems (20 rows of loss, Min-K% and Min-K%++) from oscillating. Tests hold it to
scipy's L-BFGS-B on the same bounded objective.
"""

from __future__ import annotations

import numpy as np

EPSILON = 1e-8  # weights this close to zero count as at the bound
HALVINGS = 20


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
    slack = 1e-12 if x.dtype == np.float64 else 1e-6  # relative rounding noise of the objective

    def objective(candidate: np.ndarray) -> np.ndarray:
        z = (design @ candidate.astype(x.dtype)[..., None])[..., 0]
        return c * (np.logaddexp(0, z) - y * z).sum(axis=1, dtype=np.float64) + 0.5 * (candidate[:, :-1] ** 2).sum(
            axis=1
        )

    current = objective(theta)
    for _ in range(iterations):
        p = 1.0 / (1.0 + np.exp(-(design @ theta.astype(x.dtype)[..., None])[..., 0]))
        # Row sums run in the data's precision (batched BLAS); the small systems are solved in float64.
        gradient = c * (design_t @ (p - y)[..., None])[..., 0].astype(np.float64) + theta @ penalty
        hessian = c * (design_t @ (design * (p * (1 - p))[..., None])).astype(np.float64) + penalty
        if nonnegative:
            # Weights held at the bound: at (or next to) zero with a gradient that pushes them negative.
            held = np.zeros((problems, features + 1), dtype=bool)
            held[:, :-1] = (theta[:, :-1] <= EPSILON) & (gradient[:, :-1] > 0.0)
            gradient = np.where(held, 0.0, gradient)
            coupled = held[:, :, None] | held[:, None, :]
            hessian = np.where(coupled, 0.0, hessian) + held[:, :, None] * np.eye(features + 1)
        step = np.linalg.solve(hessian + 1e-10 * np.eye(features + 1), gradient[..., None])[..., 0]
        moving = np.abs(step).max(axis=1) >= tolerance
        if not moving.any():
            break
        previous, scale = theta, np.ones(problems)
        for _ in range(HALVINGS):
            theta = previous - scale[:, None] * step
            if nonnegative:
                theta[:, :-1] = np.maximum(theta[:, :-1], 0.0)
            value = objective(theta)
            # A step that raises the objective beyond rounding noise is halved; converged problems are left alone.
            worse = moving & (value > current + slack * (1.0 + np.abs(current)))
            if not worse.any():
                break
            scale = np.where(worse, scale / 2, scale)
        theta = np.where(worse[:, None], previous, theta)  # still no decrease: at its optimum to working precision
        current = np.where(worse, current, value)
        if np.abs(theta - previous).max() < tolerance:
            break
    return theta[:, :-1], theta[:, -1]
