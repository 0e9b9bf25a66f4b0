"""The fit cache: a repeated fit is read back, not recomputed; a change of data or option is not."""

import numpy as np
import pandas as pd
import pytest

from crossover.fit import cache as fit_cache, series_fit as fitting
from crossover import analysis as A


def rows(scale=1.0):
    out = []
    for d in (64, 128, 256):
        for n in (4, 16, 64):
            for b in (1, 8, 64):
                t = scale * (20e-6 + n * 5e-6 + 2 * b * d * d * n / 50e9)
                raw = tuple(t * np.array([1.0, 1.02, 0.99, 1.05]))
                out.append(dict(machine="m", device="cpu", workload="forward", mode="eager", dtype="float32",
                                regime="latency", transfer="device", threads=2, d_model=d, n_layers=n, batch_size=b,
                                median_s=float(np.median(raw)), p10_s=float(np.quantile(raw, 0.1)), raw_times_s=raw))
    return pd.DataFrame(out)


@pytest.fixture
def fresh_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("CROSSOVER_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("CROSSOVER_NO_CACHE", raising=False)
    return tmp_path


def test_a_repeated_fit_is_read_from_the_cache(fresh_cache, monkeypatch):
    first = A.fit_series(rows(), ["affine"], axes=(), n_boot=20)
    assert len(list(fresh_cache.glob("*.pkl"))) == 1

    def no_fitting(*args, **kwargs):
        raise AssertionError("recomputed a cached fit")

    monkeypatch.setattr(fitting, "_fit_series", no_fitting)
    again = A.fit_series(rows(), ["affine"], axes=(), n_boot=20)
    np.testing.assert_array_equal(again.params, first.params)
    np.testing.assert_array_equal(again.draws, first.draws)
    with pytest.raises(AssertionError, match="recomputed"):  # other data: a new fit
        A.fit_series(rows(scale=1.1), ["affine"], axes=(), n_boot=20)
    with pytest.raises(AssertionError, match="recomputed"):  # another option: a new fit
        A.fit_series(rows(), ["affine"], axes=(), n_boot=21)
    with pytest.raises(AssertionError, match="recomputed"):  # the cache switched off
        A.fit_series(rows(), ["affine"], axes=(), n_boot=20, cache=False)


def test_no_cache_and_an_unreadable_file_recompute(fresh_cache, monkeypatch):
    monkeypatch.setenv("CROSSOVER_NO_CACHE", "1")
    A.fit_series(rows(), ["affine"], axes=(), n_boot=0)
    assert not list(fresh_cache.glob("*.pkl"))
    monkeypatch.delenv("CROSSOVER_NO_CACHE")
    A.fit_series(rows(), ["affine"], axes=(), n_boot=0)
    [path] = fresh_cache.glob("*.pkl")
    path.write_bytes(b"not a pickle")
    fit = A.fit_series(rows(), ["affine"], axes=(), n_boot=0)
    assert fit.model == "affine" and fit_cache.clear() == 1
