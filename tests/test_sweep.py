import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from crossover.measurement.toy_step import Config, ConfigError, measure
from crossover.results.store import ResultsError, load_results
from crossover.measurement.suites import parse_suite
from crossover.measurement.sweep import run_suite
from crossover.measurement.timer import TimerOptions

from conftest import ROOT

TINY_SUITE = """
name = "tiny"
devices = ["cpu"]
[defaults]
d_model = 32
n_layers = 2
[timing]
warmup_s = 0.0
min_warmup_calls = 1
min_repeats = 3
min_run_time_s = 0.01
max_run_time_s = 0.05
[limits]
max_params = { cpu = 5000 }
[[sweep]]
name = "batch_size"
batch_size = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20]
[[sweep]]
name = "d_model"
d_model = [16, 32, 64]
"""


def tiny_suite():
    import tomllib

    return parse_suite(tomllib.loads(TINY_SUITE))


def test_sweep_measures_every_point_and_records_skips(tmp_path, monkeypatch):
    from crossover.measurement import allocator

    settled = []
    monkeypatch.setattr(allocator, "settle_allocator", lambda: settled.append(True))
    summary = run_suite(tiny_suite(), tmp_path, progress=False)
    assert settled == [True]  # the allocator in its long-running state before any point is timed
    assert summary.planned == 23 and summary.measured == 22 and summary.skipped == 1  # 22 points + a reference
    frame = load_results(tmp_path, include_skipped=True)
    skipped = frame[frame["status"] == "skipped"]
    assert list(skipped["d_model"]) == [64] and "max_params" in skipped["reason"].iloc[0]
    measured = frame[frame["status"] == "ok"]
    assert (measured["median_s"] > 0).all() and (measured["threads"] >= 1).all()
    assert (measured["flops"] == 2 * measured["batch_size"] * measured["d_model"] ** 2 * measured["n_layers"]).all()


def test_a_second_run_needs_resume_and_then_measures_nothing_again(tmp_path):
    run_suite(tiny_suite(), tmp_path, progress=False)
    with pytest.raises(ResultsError, match="--resume"):
        run_suite(tiny_suite(), tmp_path, progress=False)
    summary = run_suite(tiny_suite(), tmp_path, resume=True, progress=False)
    assert summary.already_done == 23 and summary.measured == 0


def test_a_failing_point_is_recorded_and_the_sweep_goes_on(tmp_path):
    def flaky_measure(config, options, **kwargs):
        if config.batch_size == 3:
            raise RuntimeError("CUDA out of memory. Tried to allocate 9 GiB")
        if config.batch_size == 4:
            raise ConfigError("dtype float16 is not supported on cpu")
        return measure(config, options, **kwargs)

    summary = run_suite(tiny_suite(), tmp_path, progress=False, measure_fn=flaky_measure)
    assert summary.skipped == 3
    frame = load_results(tmp_path, include_skipped=True).set_index("batch_size")
    assert "out of memory" in frame.loc[3, "reason"] and "not supported" in frame.loc[4, "reason"]


def test_points_that_do_not_fit_are_skipped_before_allocating(tmp_path, monkeypatch):
    import crossover.measurement.toy_step as measure_module

    monkeypatch.setattr(measure_module, "available_memory_bytes", lambda device: 10 * 2**20)
    summary = run_suite(tiny_suite(), tmp_path, progress=False, measure_fn=lambda *a, **k: pytest.fail("measured"))
    assert summary.measured == 0
    reasons = load_results(tmp_path, include_skipped=True)["reason"]
    assert reasons.str.contains("does not fit").sum() == 21


def test_resume_after_sigkill_loses_nothing_and_duplicates_nothing(tmp_path):
    suite_path = tmp_path / "tiny.toml"
    suite_path.write_text(TINY_SUITE)
    out = tmp_path / "out"
    command = [sys.executable, "-m", "crossover", "sweep", str(suite_path), "--out", str(out), "--quiet", "--no-calibrate"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    process = subprocess.Popen(command, env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    csv_path = out / "results.csv"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if csv_path.exists() and csv_path.read_text().count("\n") >= 6:  # header + 5 points
            break
        time.sleep(0.01)
    process.send_signal(signal.SIGKILL)
    process.wait()
    assert process.returncode == -signal.SIGKILL
    before = load_results(out, include_skipped=True, combine_rounds=False, include_reference=True)
    assert 5 <= len(before) < 23, "the kill should land mid-sweep"

    resumed = subprocess.run(command + ["--resume"], env=env, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert resumed.returncode == 0, resumed.stderr
    assert "already done" in resumed.stderr
    after = load_results(out, include_skipped=True, combine_rounds=False, include_reference=True)
    keys = ["sweep", "d_model", "batch_size"]
    assert len(after) == 23  # 22 points and the drift reference
    assert not after.duplicated(keys).any()
    # Every point finished before the kill is kept, unchanged, and was not measured again.
    kept = after.iloc[: len(before)].reset_index(drop=True)
    assert kept[keys + ["median_s", "run_id"]].equals(before[keys + ["median_s", "run_id"]])
    assert after["run_id"].iloc[len(before):].nunique() == 1
    assert after["run_id"].iloc[len(before)] != before["run_id"].iloc[0]


def test_rounds_measure_every_point_again_in_a_shuffled_order(tmp_path):
    import tomllib

    suite = parse_suite(tomllib.loads(TINY_SUITE.replace('[[sweep]]', '[options]\nrounds = 3\n[[sweep]]', 1)))
    summary = run_suite(suite, tmp_path, progress=False)
    assert summary.planned == 69  # 22 points and a drift reference, in 3 rounds
    per_round = load_results(tmp_path, include_skipped=True, combine_rounds=False)
    assert sorted(per_round["round"].unique()) == [0, 1, 2]
    orders = [list(per_round[per_round["round"] == r]["batch_size"]) for r in range(3)]
    assert orders[0] != orders[1] and sorted(orders[0]) == sorted(orders[1])
    combined = load_results(tmp_path, raw=True)
    assert len(combined) == 21 and (combined["n_rounds"] == 3).all()
    one = per_round[(per_round["batch_size"] == 5) & (per_round["status"] == "ok")]
    row = combined[combined["batch_size"] == 5].iloc[0]
    assert row["median_s"] == pytest.approx(one["median_s"].median())
    assert len(row["raw_times_s"]) == one["n_repeats"].sum() == row["n_repeats"]
    assert row["round_spread"] == pytest.approx(one["median_s"].max() / one["median_s"].min() - 1)
    medians = one["median_s"].to_numpy()
    assert row["round_deviation"] == pytest.approx(np.mean(np.abs(medians / np.median(medians) - 1)))
