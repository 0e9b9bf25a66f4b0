"""Series fitted in processes (crossover.fit.all_series): the same fits, in the same order, as one after another."""

import numpy as np
import pandas as pd
import pytest

from crossover.fit import all_series, series_fit
from crossover.fit.all_series import fit_results, fitting_pool


def rows(machine, scale, sizes):
    out = []
    for d in (64, 128, 256):
        for n in (4, 16, 64):
            for b in sizes:
                t = scale * (20e-6 + n * 5e-6 + 2 * b * d * d * n / 50e9)
                raw = tuple(t * np.array([1.0, 1.02, 0.99, 1.05, 1.01]))
                out.append(dict(machine=machine, device="cpu", workload="forward", mode="eager", dtype="float32",
                                regime="latency", transfer="device", threads=2, d_model=d, n_layers=n, batch_size=b,
                                median_s=float(np.median(raw)), p10_s=float(np.quantile(raw, 0.1)), raw_times_s=raw))
    return out


def frame():
    # three series of different lengths: the longest is started first, the fits come back in the frame's order
    return pd.DataFrame(rows("small", 1.0, (1, 8)) + rows("large", 1.3, (1, 2, 8, 64)) + rows("mid", 0.8, (1, 8, 64)))


def fit(jobs):
    return fit_results(frame(), ["affine", "roofline"], n_boot=6, jobs=jobs, bootstrap="repeats")


def assert_same_fits(a, b):
    assert list(a) == list(b)
    for label in a:
        assert a[label].model == b[label].model
        for name in ("params", "draws", "cv_log_errors"):
            assert getattr(a[label], name).tobytes() == getattr(b[label], name).tobytes(), (label, name)
        pd.testing.assert_frame_equal(a[label].cv, b[label].cv, check_exact=True)


@pytest.fixture(autouse=True)
def no_cache(monkeypatch):
    monkeypatch.setenv("CROSSOVER_NO_CACHE", "1")
    monkeypatch.setattr(series_fit, "_HELD_OUT", {})  # each run cross-validates afresh


def test_parallel_fits_are_the_serial_fits(monkeypatch):
    parallel = fit(jobs=2)  # first: the processes fork from a parent that has cross-validated nothing
    serial = fit(jobs=1)
    assert list(serial) == ["small/cpu", "large/cpu", "mid/cpu"]
    assert_same_fits(parallel, serial)


def test_fits_in_a_pool_block_use_its_pool(monkeypatch):
    started = []

    class Counted(all_series.ProcessPoolExecutor):
        def __init__(self, *args, **kwargs):
            started.append(self)
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(all_series, "ProcessPoolExecutor", Counted)
    with fitting_pool(2) as pool:
        with fitting_pool(2) as inner:
            assert inner is pool and all_series._POOL == [pool]
        fits = fit(jobs=2)
        fits_again = fit(jobs=2)
    assert started == [pool] and not all_series._POOL  # one pool for both calls, forgotten after the block
    assert_same_fits(fits, fits_again)
    with fitting_pool(1) as none:  # one process: no pool, the fits are made here
        assert none is None
