"""crossover export: pyperf JSON, Parquet and torch Measurements carry the CSV's raw repeats exactly."""

import csv
import pickle
import re
import subprocess
import sys

import numpy as np
import pytest

from crossover.cli import main
from crossover.results.export import (load_for_export, point_names, to_long_frame, to_torch_measurements,
                                      write_export)
from crossover.results.store import ResultsWriter, raw_times_to_text

from conftest import ROOT

pyperf = pytest.importorskip("pyperf")
pytest.importorskip("pyarrow")

ENVIRONMENT = {"machine": "m", "hostname": "box", "cpu_model": "Test CPU", "cpu_logical_cores": 4,
               "python": "3.11.7", "torch": "2.13.0+cpu", "torch_parallel_info": "two\nlines"}
CALLS = {"cpu": 3, "cuda": 5}


def write_results(directory, slowdown=1.0, seed=0):
    """Three rounds of cpu and cuda at batch sizes 1, 4, 16 (sweep batch_size), the cpu b=4 point
    again in sweep grid, and a skipped point."""
    rng = np.random.default_rng(seed)
    writer = ResultsWriter(directory, "r1", ENVIRONMENT)
    base = dict(run_id="r1", suite="s", machine="m", d_model=64, n_layers=8, workload="forward", mode="eager",
                dtype="float32", transfer="device", regime="latency", threads_requested=0, threads=4, params=1,
                flops=1, bytes=1)
    points = [("batch_size", device, b) for device in ("cpu", "cuda") for b in (1, 4, 16)] + [("grid", "cpu", 4)]
    for round_ in range(3):
        for sweep, device, b in points:
            raw = 1e-4 * (1 + (0.05 if device == "cpu" else 0.002) * b) * slowdown * np.exp(
                0.02 * rng.standard_normal(6 + round_))
            writer.append(dict(base, sweep=sweep, device=device, device_name=device.upper(), batch_size=b,
                               round=round_, status="ok", reason="", median_s=float(np.median(raw)),
                               n_repeats=len(raw), calls_per_repeat=CALLS[device],
                               timestamp_utc=f"2026-11-23T10:0{round_}:00+00:00", raw_times_s=raw_times_to_text(raw)))
    writer.append(dict(base, sweep="batch_size", device="cuda", device_name="CUDA", batch_size=4096, round=0,
                       status="skipped", reason="does not fit: out of memory"))
    return directory


def source_times(directory):
    """(sweep, device, batch_size) → {round: raw times}, parsed from the CSV text on its own."""
    with open(directory / "results.csv", newline="", encoding="utf-8") as handle:
        rows = [r for r in csv.DictReader(handle) if r["status"] == "ok" and r["sweep"] != "reference"]
    times = {}
    for r in rows:
        times.setdefault((r["sweep"], r["device"], int(r["batch_size"])), {})[int(r["round"])] = [
            float(v) for v in r["raw_times_s"].split(";")]
    return times


@pytest.fixture
def results(tmp_path):
    return write_results(tmp_path / "a")


def test_pyperf_export_holds_the_raw_times_as_values_and_calls_as_loops(results, tmp_path):
    path = write_export(load_for_export(results), "pyperf", tmp_path / "a.json")
    suite = pyperf.BenchmarkSuite.load(str(path))
    source = source_times(results)
    assert len(suite.get_benchmarks()) == len(source) == 7
    names = suite.get_benchmark_names()
    assert len(set(names)) == 7
    # the configuration measured by two sweeps is told apart; the others are named by configuration only
    assert sum("sweep=" in name for name in names) == 2 and not any(n.startswith("m/") for n in names)
    for bench in suite.get_benchmarks():
        meta = bench.get_metadata()
        assert meta["unit"] == "second" and meta["hostname"] == "box" and meta["cpu_model_name"] == "Test CPU"
        assert meta["torch_version"] == "2.13.0+cpu" and meta["cpu_count"] == 4
        assert "torch_parallel_info" not in meta  # multi-line fields stay in metadata.json
        runs = bench.get_runs()
        assert [run.get_metadata()["round"] for run in runs] == [0, 1, 2]
        expected = source[(meta["sweep"], meta["device"], meta["batch_size"])]
        assert [list(run.values) for run in runs] == [expected[r] for r in range(3)]
        assert {run.get_loops() for run in runs} == {CALLS[meta["device"]]}
        assert f"batch_size={meta['batch_size']}" in bench.get_name()


def test_pyperf_compare_to_reads_two_exports(results, tmp_path):
    slow = write_results(tmp_path / "slow", slowdown=1.5, seed=1)
    a = write_export(load_for_export(results), "pyperf", tmp_path / "a.json")
    b = write_export(load_for_export(slow), "pyperf", tmp_path / "b.json")
    done = subprocess.run([sys.executable, "-m", "pyperf", "compare_to", str(a), str(b)], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    ratios = [float(r) for r in re.findall(r"Mean .*: ([0-9.]+)x slower", done.stdout)]
    assert len(ratios) == 7 and all(1.4 < r < 1.6 for r in ratios), done.stdout


def test_names_carry_the_machine_when_several_are_exported(results, tmp_path):
    other = tmp_path / "other"
    other.mkdir()
    env = dict(ENVIRONMENT, machine="m2", hostname="box2")
    writer = ResultsWriter(other / "m2", "r2", env)
    writer.append(dict(run_id="r2", suite="s", sweep="batch_size", machine="m2", device="cpu", device_name="CPU",
                       d_model=64, n_layers=8, batch_size=1, workload="forward", mode="eager", dtype="float32",
                       transfer="device", regime="latency", threads_requested=0, round=0, threads=4, params=1,
                       flops=1, bytes=1, status="ok", reason="", median_s=1e-4, raw_times_s="0.0001;0.00011"))
    names = point_names(load_for_export([results, other]))
    assert len(set(names.values())) == 8
    assert sum(name.startswith("m2/") for name in names.values()) == 1


def test_parquet_round_trips_the_raw_times_exactly(results, tmp_path):
    import pandas as pd

    path = write_export(load_for_export(results), "parquet", tmp_path / "a.parquet")
    long = pd.read_parquet(path)
    source = source_times(results)
    assert len(long) == sum(len(t) for rounds in source.values() for t in rounds.values())
    for (sweep, device, b, round_), group in long.groupby(["sweep", "device", "batch_size", "round"]):
        assert group["repeat"].tolist() == list(range(len(group)))
        assert group.sort_values("repeat")["time_s"].tolist() == source[(sweep, device, b)][round_]
    assert set(long["hostname"]) == {"box"} and set(long["calls_per_repeat"]) == {3, 5}
    assert {"d_model", "n_layers", "threads_requested", "run_id", "torch"} <= set(long.columns)


def test_parquet_of_the_shipped_quick_run_keeps_every_repeat():
    directory = ROOT / "experiments" / "results" / "amd-epyc-2c" / "quick"
    long = to_long_frame(load_for_export(directory))
    with open(directory / "results.csv", newline="", encoding="utf-8") as handle:
        flat = [float(v) for r in csv.DictReader(handle) if r["status"] == "ok" and r["sweep"] != "reference"
                for v in r["raw_times_s"].split(";")]
    assert len(long) == len(flat) and sorted(long["time_s"].tolist()) == sorted(flat)


def test_torch_measurements_give_the_median_and_compare_renders(results, tmp_path, capsys):
    from torch.utils.benchmark import Compare

    measurements = to_torch_measurements(load_for_export(results))
    source = source_times(results)
    assert len(measurements) == 7
    for m in measurements:
        pooled = [v for r in range(3) for v in source[(m.metadata["sweep"], m.description,
                                                        m.metadata["batch_size"])][r]]
        assert m.number_per_run == CALLS[m.description]
        assert m.median == pytest.approx(float(np.median(pooled)), rel=1e-12)
        assert m.times == pytest.approx(pooled, rel=1e-12)
    path = write_export(load_for_export(results), "torch", tmp_path / "a.pkl")
    with open(path, "rb") as handle:
        loaded = pickle.load(handle)
    assert [m.median for m in loaded] == [m.median for m in measurements]
    Compare(loaded).print()
    table = capsys.readouterr().out
    assert "cpu" in table and "cuda" in table
    assert all(f"batch_size={b} " in table for b in (1, 4, 16))
    assert "4 threads" in table


def test_cli_exports_into_a_directory_and_reports_errors_in_one_line(cli, results, tmp_path, capsys):
    assert main(["export", str(results), "--format", "pyperf", "--out", str(tmp_path / "exports")]) == 0
    assert "wrote" in capsys.readouterr().out
    assert len(pyperf.BenchmarkSuite.load(str(tmp_path / "exports" / "pyperf.json")).get_benchmarks()) == 7
    # the old spelling, --out FILE, still writes that file, and says what replaces it
    assert main(["export", str(results), "--format", "pyperf", "--out", str(tmp_path / "cli.json")]) == 0
    assert "--out FILE is deprecated" in capsys.readouterr().err
    assert len(pyperf.BenchmarkSuite.load(str(tmp_path / "cli.json")).get_benchmarks()) == 7

    def error_of(*argv):
        capsys.readouterr()
        assert main([str(a) for a in argv]) == 2
        err = capsys.readouterr().err
        assert len(err.strip().splitlines()) == 1, err
        return err

    assert "does not exist" in error_of("export", tmp_path / "missing", "--format", "pyperf", "--out", tmp_path / "x")
    assert "invalid choice" in error_of("export", results, "--format", "csv", "--out", tmp_path / "x")
    assert "directory" in error_of("export", results, "--format", "torch", "--out", tmp_path / "no" / "x.pkl", "-q")
    (tmp_path / "a-file").write_text("")
    assert "is a file, not a directory" in error_of("export", results, "--format", "torch", "--out", tmp_path / "a-file")
    shim = tmp_path / "shim"  # a pyarrow that fails to import, as where it is not installed
    shim.mkdir()
    (shim / "pyarrow.py").write_text("raise ImportError('no pyarrow here')\n")
    blocked = cli("export", results, "--format", "parquet", "--out", tmp_path / "x",
                  env={"PYTHONPATH": f"{shim}:{ROOT}"})
    assert blocked.returncode == 2 and len(blocked.stderr.strip().splitlines()) == 1, blocked.stderr
    assert "pip install 'crossover[export]'" in blocked.stderr and "pyarrow" in blocked.stderr
    assert not (tmp_path / "x" / "repeats.parquet").exists()
