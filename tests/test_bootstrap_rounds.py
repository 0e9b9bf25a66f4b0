"""The rounds bootstrap's resampled latencies: computed for every resample at once, as numpy would one by one."""

import numpy as np
import pytest

from crossover.fit.bootstrap import weighted_quantile


@pytest.mark.parametrize("quantile", [0.0, 0.1, 0.5, 0.9, 1.0, 1 / 3])
def test_a_weighted_quantile_is_numpys_quantile_of_the_repeated_values_bit_for_bit(quantile):
    rng = np.random.default_rng(7)
    for m in (1, 2, 3, 7, 40):
        values = np.sort(rng.lognormal(size=m).round(rng.integers(1, 6)))  # rounded: ties too
        weights = rng.integers(0, 4, size=(50, m))
        got = weighted_quantile(values, weights, quantile)
        for row, value in zip(weights, got):
            repeated = np.repeat(values, row)
            if repeated.size:
                assert value == np.quantile(repeated, quantile)
            else:
                assert np.isnan(value)
