import json

import numpy as np
import pandas as pd
import pytest

from crossover.results.store import (COLUMNS, KEY_COLUMNS, SCHEMA_VERSION, ResultsError, ResultsWriter,
                                     load_results)


def row(**overrides):
    base = {
        "run_id": "r1", "suite": "s", "sweep": "w", "machine": "m1", "device": "cpu", "device_name": "CPU",
        "d_model": 64, "n_layers": 2, "batch_size": 1, "workload": "forward", "mode": "eager",
        "dtype": "float32", "transfer": "device", "regime": "latency", "threads_requested": 0, "round": 0,
        "threads": 2, "params": 8192, "flops": 16384, "bytes": 40000, "status": "ok", "reason": "",
        "median_s": 1e-3, "iqr_s": 1e-4, "n_repeats": 3, "calls_per_repeat": 1,
        "raw_times_s": "0.001;0.0011;0.0009",
    }
    base.update(overrides)
    return base


def test_round_trip(tmp_path):
    writer = ResultsWriter(tmp_path, "r1", {"machine": "m1"})
    writer.append(row())
    writer.append(row(batch_size=4, median_s=2e-3))
    writer.append(row(batch_size=8, status="skipped", reason="too big", median_s=float("nan")))
    frame = load_results(tmp_path)
    required = ["machine", "device", "d_model", "n_layers", "batch_size", "median_s", "iqr_s", "flops", "params"]
    assert set(required) <= set(frame.columns)
    assert list(frame["batch_size"]) == [1, 4]
    assert frame["median_s"].dtype == float and frame["d_model"].dtype == "int64"
    assert pd.isna(frame["ops_per_step"]).all()
    with_skipped = load_results(tmp_path, include_skipped=True)
    assert list(with_skipped["reason"]) == ["", "", "too big"]
    raw = load_results(tmp_path, raw=True)
    assert raw["raw_times_s"][0] == (0.001, 0.0011, 0.0009)
    assert writer.existing_keys() and len(writer.existing_keys()) == 3


def test_merge_directories_keyed_by_machine(tmp_path):
    for machine in ("a", "b"):
        ResultsWriter(tmp_path / machine, "r", {"machine": machine}).append(row(machine=machine))
    frame = load_results(tmp_path)
    assert sorted(frame["machine"]) == ["a", "b"]
    assert len(load_results([tmp_path / "a", tmp_path / "b"])) == 2


def test_truncated_last_line_is_tolerated_and_reported(tmp_path):
    writer = ResultsWriter(tmp_path, "r1", {})
    writer.append(row())
    writer.append(row(batch_size=2))
    csv_path = tmp_path / "results.csv"
    data = csv_path.read_bytes()
    csv_path.write_bytes(data[:-25])  # a killed run left half a line
    with pytest.warns(UserWarning, match="truncated"):
        frame = load_results(tmp_path)
    assert list(frame["batch_size"]) == [1]
    # A new writer (resume) repairs the tail so its appends start on a fresh line.
    with pytest.warns(UserWarning, match="truncated"):
        writer = ResultsWriter(tmp_path, "r2", {})
    writer.append(row(batch_size=2))
    assert list(load_results(tmp_path)["batch_size"]) == [1, 2]


def test_other_schema_version_is_refused(tmp_path):
    (tmp_path / "metadata.json").write_text(json.dumps({"schema": "crossover-results", "schema_version": SCHEMA_VERSION + 1, "runs": {}}))
    with pytest.raises(ResultsError, match="schema version"):
        load_results(tmp_path)
    with pytest.raises(ResultsError, match="schema version"):
        ResultsWriter(tmp_path, "r", {})


def test_foreign_files_are_refused(tmp_path):
    (tmp_path / "metadata.json").write_text("{not json")
    with pytest.raises(ResultsError, match="not valid JSON"):
        load_results(tmp_path)
    other = tmp_path / "other"
    other.mkdir()
    (other / "metadata.json").write_text(json.dumps({"schema": "something-else"}))
    with pytest.raises(ResultsError, match="not a crossover results"):
        load_results(other)
    with pytest.raises(ResultsError, match="does not exist"):
        load_results(tmp_path / "nowhere")
    with pytest.raises(ResultsError, match="no crossover results"):
        (tmp_path / "empty").mkdir()
        load_results(tmp_path / "empty")


def test_csv_with_other_columns_or_bad_values_is_refused(tmp_path):
    writer = ResultsWriter(tmp_path, "r1", {})
    writer.append(row())
    csv_path = tmp_path / "results.csv"
    header, line = csv_path.read_text().splitlines()
    csv_path.write_text(header + "\n" + line.replace("float32", "float32", 1).replace(",64,", ",sixty-four,", 1) + "\n")
    with pytest.raises(ResultsError, match="d_model"):
        load_results(tmp_path)
    csv_path.write_text("a,b,c\n1,2,3\n")
    with pytest.raises(ResultsError, match="other columns"):
        load_results(tmp_path)


def test_unparseable_csv_is_a_results_error(tmp_path):
    writer = ResultsWriter(tmp_path, "r1", {})
    writer.append(row())
    with open(tmp_path / "results.csv", "a") as handle:
        handle.write('r1,"unterminated\n')
    with pytest.raises(ResultsError):
        load_results(tmp_path)


def test_resume_retries_points_skipped_for_a_passing_reason(tmp_path):
    writer = ResultsWriter(tmp_path, "r1", {})
    writer.append(row(batch_size=1, status="skipped", reason="over the suite's cpu cap max_params=5"))
    writer.append(row(batch_size=2, status="skipped", reason="failed: RuntimeError: out of memory"))
    writer.append(row(batch_size=3, status="skipped", reason="does not fit: needs about 9 GiB"))
    assert {key[KEY_COLUMNS.index("batch_size")] for key in writer.existing_keys()} == {"1"}


def test_unknown_column_in_a_row_is_refused(tmp_path):
    writer = ResultsWriter(tmp_path, "r1", {})
    with pytest.raises(ResultsError, match="unknown"):
        writer.append({**row(), "colour": "red"})
    assert len(COLUMNS) == len(set(COLUMNS))


def test_loaded_results_come_back_from_the_disk_cache_until_a_file_changes(tmp_path, monkeypatch):
    """A second load of the same files with the same options reads the cache (nothing parsed); a
    changed file, other options or CROSSOVER_NO_CACHE load afresh."""
    import os
    import shutil

    from conftest import ROOT
    from crossover.results import store

    results_dir = ROOT / "experiments" / "results" / "nvidia-h100-80gb-hbm3-16c" / "gpu-paired"
    monkeypatch.setenv("CROSSOVER_CACHE_DIR", str(tmp_path / "cache"))
    run = tmp_path / "run"
    shutil.copytree(results_dir, run)
    first = store.load_results(run, raw=True)
    calls = []
    real = store._load_results
    monkeypatch.setattr(store, "_load_results", lambda *a, **k: calls.append(1) or real(*a, **k))
    again = store.load_results(run, raw=True)
    assert not calls and again.equals(first)
    store.load_results(run)  # other options: loaded afresh
    assert len(calls) == 1
    csv = next(run.rglob("results.csv"))
    os.utime(csv, ns=(csv.stat().st_atime_ns, csv.stat().st_mtime_ns + 10**9))
    store.load_results(run, raw=True)
    assert len(calls) == 2
    monkeypatch.setenv("CROSSOVER_NO_CACHE", "1")
    store.load_results(run, raw=True)
    assert len(calls) == 3


def test_each_rounds_quantile_is_numpys_of_that_round():
    """The rounds' quantiles are computed one array per number of repeats, not once per round: the
    same values as ``np.quantile`` of each round, exactly (NaN and empty rounds included)."""
    from crossover.results.statistics import QUIET_QUANTILE, _round_quantiles

    rng = np.random.default_rng(3)
    raw = {g: [tuple(rng.lognormal(size=int(n))) for n in rng.integers(0, 12, size=6)] for g in range(40)}
    raw[40] = [(1.0, float("nan"), 2.0), (), (3.0,)]
    found = _round_quantiles(raw)
    for group, rounds in raw.items():
        expected = [np.quantile(np.asarray(times, dtype=float), QUIET_QUANTILE) for times in rounds if len(times)]
        np.testing.assert_array_equal(found[group], expected, strict=True)
