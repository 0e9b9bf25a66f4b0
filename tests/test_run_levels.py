"""Runs of one series measured at different speeds: found on the sizes they share, and said."""

import numpy as np
import pandas as pd

from crossover.results.drift import MIXED_SPEED_PCT, mixed_speed_warnings, run_levels
from crossover.results.store import ResultsWriter, raw_times_to_text

SERIES = dict(machine="box", device="cpu", workload="forward", mode="eager", dtype="float32", regime="latency",
              transfer="device", threads=2, status="ok")


def _rows(results_dir, sizes, speed):
    return [dict(SERIES, results_dir=results_dir, d_model=d, n_layers=8, batch_size=b, median_s=speed * 1e-5 * d * b)
            for d, b in sizes]


def _frame(speed_b, shared=True):
    a = [(d, b) for d in (64, 128, 256) for b in (1, 4, 16)]
    b = a[:4] if shared else [(512, 1), (512, 4)]
    return pd.DataFrame(_rows("runs/a", a, 1.0) + _rows("runs/b", b, speed_b))


def test_a_run_twice_as_slow_on_the_sizes_it_shares_is_found_and_said():
    levels = run_levels(_frame(2.0)).set_index("results_dir")
    assert levels.loc["runs/a", "ratio"] == 1.0 and levels.loc["runs/a", "n_sizes"] == 9  # the largest run
    assert levels.loc["runs/b", "ratio"] == np.float64(2.0) and levels.loc["runs/b", "n_shared"] == 4
    assert (levels["reference"] == "runs/a").all()
    (line,) = mixed_speed_warnings(_frame(2.0))
    assert line.startswith("box/cpu pools runs measured at different speeds (runs/b at 2.00x the time of runs/a "
                           "on the 4 sizes both measured)")


def test_runs_within_the_tolerance_or_sharing_no_size_are_not_called_mixed():
    assert mixed_speed_warnings(_frame(1 + 0.9 * MIXED_SPEED_PCT / 100)) == []
    assert mixed_speed_warnings(_frame(1 + 1.1 * MIXED_SPEED_PCT / 100)) != []
    levels = run_levels(_frame(3.0, shared=False)).set_index("results_dir")
    assert np.isnan(levels.loc["runs/b", "ratio"]) and mixed_speed_warnings(_frame(3.0, shared=False)) == []
    one_run = _frame(2.0)
    assert run_levels(one_run[one_run["results_dir"] == "runs/a"]).empty


def _write_run(directory, speed):
    writer = ResultsWriter(directory, "r1", {"machine": "box", "hostname": "box", "cpu_model": "Test CPU"})
    base = dict(run_id="r1", suite="s", machine="box", device="cpu", device_name="CPU", workload="forward",
                mode="eager", dtype="float32", transfer="device", regime="latency", threads_requested=0, threads=2,
                params=1, flops=1, bytes=1, status="ok", reason="", n_repeats=3, calls_per_repeat=1,
                timestamp_utc="2026-11-25T10:00:00+00:00", round=0)
    for d in (64, 128, 256):
        for n in (4, 8, 16):
            for b in (1, 4, 16):
                raw = speed * 1e-6 * (5 + n * (1 + d * d * b / 4e3)) * np.array([1.0, 1.01, 0.99])
                writer.append(dict(base, sweep="grid", d_model=d, n_layers=n, batch_size=b,
                                   median_s=float(np.median(raw)), raw_times_s=raw_times_to_text(raw)))
    return directory


def test_fit_warns_when_it_pools_runs_measured_at_different_speeds(tmp_path, cli_in_process):
    fast, slow = _write_run(tmp_path / "fast", 1.0), _write_run(tmp_path / "slow", 2.0)
    result = cli_in_process("fit", "--results", fast, slow, "--n-boot", "0", "--models", "roofline")
    assert result.returncode == 0
    assert "crossover: warning: box/cpu pools runs measured at different speeds" in result.stderr
    quiet = cli_in_process("fit", "--results", fast, slow, "--n-boot", "0", "--models", "roofline", "--quiet")
    assert quiet.returncode == 0 and quiet.stderr == "" and quiet.stdout == result.stdout  # -q: the answer alone
    assert "fast at 0.50x the time of" in result.stderr  # against slow (as many sizes: the later name)
    alone = cli_in_process("fit", "--results", fast, "--n-boot", "0", "--models", "roofline", "--quiet")
    assert alone.returncode == 0 and "different speeds" not in alone.stderr
