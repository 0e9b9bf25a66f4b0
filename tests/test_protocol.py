"""The measuring protocol: shuffled rounds, paired points, drift references, busy machines, mixing."""

import json
import tomllib

import numpy as np
import pandas as pd
import pytest

from crossover.measurement.machine_load import LoadReport
from crossover.errors import BusyMachineError
from crossover.measurement.toy_step import Config, Measurement, measure
from crossover.results.statistics import attach_references
from crossover.results.store import ResultsError, load_metadata, load_results
from crossover.measurement.suites import PlannedPoint, parse_suite
from crossover.measurement.sweep import plan_rounds, run_suite
from crossover.measurement.timer import Timing

from test_cli import assert_clean_error

SUITE = """
name = "paired"
devices = ["cpu"]
[defaults]
d_model = 16
n_layers = 2
[timing]
warmup_s = 0.0
min_warmup_calls = 1
min_repeats = 3
min_run_time_s = 0.005
max_run_time_s = 0.01
[options]
rounds = 4
pair_by = ["threads"]
[[sweep]]
name = "batch_size"
threads = [1, 2]
batch_size = [1, 2, 4, 8, 16, 32]
"""


def suite(text=SUITE):
    return parse_suite(tomllib.loads(text))


def points(n=20):
    return [PlannedPoint("s", Config(d_model=16, n_layers=2, batch_size=b)) for b in range(1, n + 1)]


def test_round_zero_is_shuffled_too_and_replayable_from_the_seed():
    plan = plan_rounds(points())
    order = [item.point.config.batch_size for item in plan]
    assert order != list(range(1, 21)) and sorted(order) == list(range(1, 21))
    assert [i.sequence for i in plan] == list(range(20))
    assert plan == plan_rounds(points())
    assert plan != plan_rounds(points(), seed=1)


def test_paired_points_are_measured_back_to_back_in_alternating_order():
    two_devices = [PlannedPoint("s", Config(batch_size=b, device=d), rounds=4) for d in ("cpu", "cuda") for b in (1, 2, 4)]
    plan = plan_rounds(two_devices, references=(Config(device="cpu"), Config(device="cuda")))
    for round_index in range(4):
        items = [i for i in plan if i.round == round_index]
        assert [i.point.sweep for i in items[:2]] == ["reference", "reference"]  # each round opens with them
        measured = [i.point.config for i in items[2:]]
        for first, second in zip(measured[::2], measured[1::2]):
            assert first.batch_size == second.batch_size and {first.device, second.device} == {"cpu", "cuda"}
        leading = {c.device for c in measured[::2]}
        assert leading == {"cpu" if round_index % 2 == 0 else "cuda"}  # A B, then B A, ...


def test_reference_every_n_points():
    plan = plan_rounds(points(10), references=(Config(),), reference_every=4)
    sweeps = [item.point.sweep for item in plan]
    assert sweeps == ["reference"] + ["s"] * 4 + ["reference"] + ["s"] * 4 + ["reference"] + ["s"] * 2


def test_a_sweep_pairs_two_thread_counts_and_records_the_order(tmp_path):
    calls = []

    def fake_measure(config, options, **kwargs):
        calls.append(config)
        return measure(config, options, **kwargs)

    run_suite(suite(), tmp_path, progress=False, measure_fn=fake_measure)
    measured = [c for c in calls if c.threads != 0]  # the references run at the default threads
    for first, second in zip(measured[::2], measured[1::2]):
        assert first.batch_size == second.batch_size and {first.threads, second.threads} == {1, 2}
    rounds = load_results(tmp_path, combine_rounds=False, include_reference=True)
    assert rounds["sequence"].is_monotonic_increasing and rounds["sequence"].iloc[0] == 0
    assert (rounds[rounds["sweep"] == "reference"]["round"].value_counts() == 1).all()
    plan = load_metadata(tmp_path)["runs"]
    assert [run["plan"] for run in plan.values()] == [{"seed": 0, "pair_by": ["threads"], "reference_every": 0}]
    # Every measured row carries the reading of the reference measured before it.
    rows = load_results(tmp_path, combine_rounds=False)
    assert len(rows) == 48 and rows["reference_s"].notna().all() and (rows["drift"] > 0).all()
    assert "busy" in rows and rows["busy"].notna().all()


def test_drift_references_flag_slow_rounds():
    rows = []
    for round_index, slow in enumerate([1.0, 1.02, 1.6, 0.99]):
        base = dict(results_dir="d", machine="m", device="cpu", run_id="r", status="ok",
                    timestamp_utc=f"2026-01-01T00:0{round_index}:00+00:00", round=round_index)
        rows.append({**base, "sweep": "reference", "sequence": 3 * round_index, "median_s": 1e-3 * slow})
        rows.append({**base, "sweep": "b", "sequence": 3 * round_index + 1, "median_s": 5e-3 * slow})
        rows.append({**base, "sweep": "b", "sequence": 3 * round_index + 2, "median_s": 7e-3 * slow})
    frame = attach_references(pd.DataFrame(rows))
    measured = frame[frame["sweep"] == "b"]
    assert list(measured["drifted"]) == [False, False, False, False, True, True, False, False]
    assert measured["reference_s"].iloc[4] == pytest.approx(1.6e-3)


class _Busy:
    busy = True
    warnings = ("other processes used 1.9 of this machine's 2 usable cores while measuring with 2 threads: stop them",)

    def as_row(self):
        return {"other_cpu_cores": 1.9, "cpu_utilisation": 0.4, "steal_fraction": 0.0, "busy": True}


def _quiet_check(threads):
    return LoadReport(other_cores=0.0, own_utilisation=float("nan"), steal_fraction=0.0, load_avg_1min=0.0,
                      usable_cores=2, quota_cores=float("inf"), threads=threads, window_s=0.25, warnings=())


def test_strict_stops_before_writing_a_busy_row_and_resume_measures_it(tmp_path):
    n = {"calls": 0}

    def busy_on_fifth(config, options, **kwargs):
        n["calls"] += 1
        m = measure(config, options, **kwargs)
        # Only the fifth is busy: the real load report of the others is dropped, so a blip of steal
        # time on a shared test machine cannot stop the sweep earlier.
        return Measurement(**{**m.__dict__, "load": _Busy() if n["calls"] == 5 else None})

    with pytest.raises(BusyMachineError, match="--resume"):
        run_suite(suite(), tmp_path, progress=False, measure_fn=busy_on_fifth, strict=True, check_load=_quiet_check)
    assert len(load_results(tmp_path, combine_rounds=False, include_reference=True)) == 4
    summary = run_suite(suite(), tmp_path, progress=False, resume=True, check_load=_quiet_check)
    assert summary.already_done == 4 and summary.measured == 52 - 4


def test_a_busy_row_is_flagged_without_strict(tmp_path):
    def always_busy(config, options, **kwargs):
        m = measure(config, options, **kwargs)
        return Measurement(**{**m.__dict__, "load": _Busy()})

    summary = run_suite(suite(), tmp_path, progress=False, measure_fn=always_busy, check_load=_quiet_check)
    assert summary.busy == summary.measured
    rows = load_results(tmp_path, combine_rounds=False)
    assert (rows["busy"] == 1).all() and rows["warnings"].str.contains("other processes used 1.9").all()
    assert (load_results(tmp_path)["busy"] == 1).all()


@pytest.mark.serial
def test_a_cpu_hog_makes_measure_warn_and_flag_the_row(cpu_hog, cli):
    import os

    threads = len(os.sched_getaffinity(0))
    m = measure(Config(d_model=64, n_layers=16, batch_size=4, threads=threads),
                _short())
    assert m.load.busy and m.summary()["busy"] is True, m.load
    assert any("other processes used" in w for w in m.summary()["warnings"])
    result = cli("measure", "--d-model", 64, "--n-layers", 16, "--batch-size", 4, "--max-run-time-s", 0.1, "--json")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["busy"] is True and any("other processes used" in w for w in data["warnings"]), data
    strict = cli("measure", "--d-model", 64, "--n-layers", 16, "--batch-size", 4, "--max-run-time-s", 0.1, "--strict")
    assert_clean_error(strict, "--strict", "other processes")


def _short():
    from crossover.measurement.timer import TimerOptions

    return TimerOptions(warmup_s=0.01, min_run_time_s=0.1, max_run_time_s=0.2)


def test_resume_under_a_different_environment_is_refused(tmp_path, monkeypatch):
    run_suite(suite(SUITE.replace("rounds = 4", "rounds = 1")), tmp_path, progress=False, check_load=_quiet_check)
    metadata_path = tmp_path / "metadata.json"
    metadata = json.loads(metadata_path.read_text())
    for run in metadata["runs"].values():
        run["torch"] = "1.13.0"
    metadata_path.write_text(json.dumps(metadata))
    with pytest.raises(ResultsError, match="torch='1.13.0'.*--allow-mixed"):
        run_suite(suite(), tmp_path, progress=False, resume=True, check_load=_quiet_check)
    summary = run_suite(suite(), tmp_path, progress=False, resume=True, allow_mixed=True, check_load=_quiet_check)
    assert summary.measured > 0


def test_resume_under_a_different_environment_from_the_cli(cli, tmp_path):
    suite_path = tmp_path / "s.toml"
    suite_path.write_text(SUITE.replace("rounds = 4", "rounds = 1"))
    assert cli("sweep", suite_path, "--out", tmp_path / "out", "--quiet", "--no-calibrate").returncode == 0
    metadata_path = tmp_path / "out" / "metadata.json"
    metadata = json.loads(metadata_path.read_text())
    for run in metadata["runs"].values():
        run["cpu_model"] = "Another CPU"
    metadata_path.write_text(json.dumps(metadata))
    assert_clean_error(cli("sweep", suite_path, "--out", tmp_path / "out", "--resume", "--quiet"),
                       "cpu_model='Another CPU'", "--allow-mixed")


def test_sweep_into_a_path_under_a_file_is_one_line(cli, tmp_path):
    (tmp_path / "a_file").write_text("x")
    suite_path = tmp_path / "s.toml"
    suite_path.write_text(SUITE)
    assert_clean_error(cli("sweep", suite_path, "--out", tmp_path / "a_file" / "sub", "--quiet"), "a_file")


def test_version_1_results_are_read_but_not_appended_to(tmp_path):
    from crossover.results.store import V1_COLUMNS

    import csv

    tmp_path.joinpath("metadata.json").write_text(json.dumps({"schema": "crossover-results", "schema_version": 1,
                                                              "runs": {}}))
    row = dict(run_id="r", suite="s", sweep="b", machine="m", device="cpu", device_name="x", d_model=16, n_layers=2,
               batch_size=1, workload="forward", mode="eager", dtype="float32", transfer="device", regime="latency",
               threads_requested=0, round=0, threads=2, params=512, flops=1024, bytes=4096, status="ok", reason="",
               median_s=1e-4, raw_times_s="0.0001", timestamp_utc="2026-01-01T00:00:00+00:00")
    with open(tmp_path / "results.csv", "w", newline="") as handle:
        writer = csv.DictWriter(handle, V1_COLUMNS)
        writer.writeheader()
        writer.writerow({c: row.get(c, "") for c in V1_COLUMNS})
    frame = load_results(tmp_path)
    assert len(frame) == 1 and pd.isna(frame["sequence"].iloc[0]) and np.isnan(frame["reference_s"].iloc[0])
    with pytest.raises(ResultsError, match="schema version 1"):
        run_suite(suite(), tmp_path, progress=False, resume=True, check_load=_quiet_check)


def test_fit_and_predict_quote_the_stored_noise_floor(cli, tmp_path):
    import shutil

    from conftest import ROOT
    from crossover.measurement.noise import SHORT_ROUNDS, write_noise

    shutil.copytree(ROOT / "experiments" / "results" / "amd-epyc-2c" / "quick", tmp_path / "quick")
    deviations = pd.DataFrame([dict(size=0, d_model=128, n_layers=128, batch_size=1, compute_bound=False,
                                    **{f"{s}_deviation": 0.12 for s in ("median", "p10", "min", "p10_quiet")}),
                               dict(size=1, d_model=128, n_layers=128, batch_size=64, compute_bound=True,
                                    **{f"{s}_deviation": 0.034 for s in ("median", "p10", "min", "p10_quiet")})])
    write_noise(tmp_path / "quick", deviations, protocol=SHORT_ROUNDS, windows=3, machine="vm")
    fit = cli("fit", "--results", tmp_path / "quick", "--n-boot", 0, "--quiet", "--models", "roofline")
    assert fit.returncode == 0, fit.stderr
    assert "noise floor of vm" in fit.stdout and "3.4% from another's on compute-bound sizes" in fit.stdout
    predict = cli("predict", "--results", tmp_path / "quick", "--n-boot", 0, "--quiet", "--models", "roofline",
                  "--d-model", 128, "--n-layers", 64, "--batch-size", 4, "--json")
    assert predict.returncode == 0, predict.stderr
    [floor] = json.loads(predict.stdout)["noise_floors"]
    assert floor["compute_bound_pct"] == pytest.approx(3.4) and floor["statistic"] == "p10"
