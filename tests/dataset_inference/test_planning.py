"""Planning numbers enter signed findings: they must be finite and behave as power does."""

from __future__ import annotations

import numpy as np
import pytest

from verifier.dataset_inference.planning import SIZES, power_curve, set_test_power, size_needed
from verifier.trust.digests import canonical_json


@pytest.mark.parametrize("method", ["permutation", "split_median"])
def test_power_is_finite_and_grows_with_size_and_effect(method):
    # d = 1.833 at n = 853 is where scipy's noncentral t cdf returns NaN; a NaN in the findings made a
    # signed bundle that verify could not read.
    for effect in np.r_[np.linspace(0.01, 5, 400), 1.8329050987756053]:
        power = set_test_power(effect, SIZES, 0.05, method)
        assert np.isfinite(power).all() and (np.diff(power) >= -1e-9).all(), effect
    assert (set_test_power(0.5, SIZES, 0.05, method) <= set_test_power(0.8, SIZES, 0.05, method) + 1e-12).all()
    canonical_json(power_curve(1.8329050987756053, 0.05, method))  # refuses NaN


def test_size_needed_matches_the_curve():
    n = size_needed(0.3, 0.05, 0.8)
    assert n is not None and set_test_power(0.3, n, 0.05) >= 0.8 > set_test_power(0.3, SIZES[SIZES < n][-1], 0.05)
    assert size_needed(-0.1, 0.05, 0.8) is None
    with pytest.raises(ValueError):
        canonical_json({"power": float("nan")})
