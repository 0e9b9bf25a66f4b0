"""Series fitted in processes (crossover.fit.all_series): the same fits, in the same order, as one after another."""

import numpy as np
import pandas as pd
import pytest

from crossover.fit import all_series, validation
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
    monkeypatch.setattr(validation, "_HELD_OUT", {})  # each run cross-validates afresh


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


def rounds_frame():
    # six rounds of each point, a slow spell in round 3: the rounds bootstrap resamples whole rounds
    out = []
    for row in frame().to_dict("records"):
        raw = np.asarray(row["raw_times_s"])
        rounds = tuple((r, tuple(raw * (1.15 if r == 3 else 1.0 + 0.01 * r))) for r in range(6))
        out.append(dict(row, round_raw_s=rounds))
    return pd.DataFrame(out)


def test_rounds_refits_shared_out_give_the_serial_draws(monkeypatch):
    monkeypatch.setattr(all_series, "REFITS_PER_TASK", 4)  # 10 resamples: pieces of 4, 4 and 2
    options = dict(models=["affine", "roofline"], n_boot=10, bootstrap="rounds")
    parallel = fit_results(rounds_frame(), jobs=2, **options)
    serial = fit_results(rounds_frame(), jobs=1, **options)
    assert_same_fits(parallel, serial)
    for fit in parallel.values():
        assert fit.bootstrap == "rounds" and fit.draws.shape == (10, len(fit.params)) and fit.pending_refits is None
        assert np.ptp(fit.draws, axis=0).max() > 0  # resamples that differ: the pieces' order matters


def test_finished_refits_are_stored_in_the_cache(monkeypatch, tmp_path):
    monkeypatch.delenv("CROSSOVER_NO_CACHE")
    monkeypatch.setenv("CROSSOVER_CACHE_DIR", str(tmp_path))
    options = dict(models=["affine", "roofline"], n_boot=10, bootstrap="rounds")
    parallel = fit_results(rounds_frame(), jobs=2, **options)
    monkeypatch.setattr(all_series, "_fit_in_parallel", None)  # a second call must find every fit in the cache
    again = fit_results(rounds_frame(), jobs=2, **options)
    assert_same_fits(parallel, again)
