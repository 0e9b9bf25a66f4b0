"""crossover compare: a known slowdown is found, a tiny one is not, and --fail-above fails."""

import json

import numpy as np
import pytest

from crossover.cli.compare import COMPARE_SCHEMA
from crossover.results.compare import compare_results, summarise
from crossover.results.store import ResultsWriter, load_results, raw_times_to_text


def write_run(directory, slowdown, seed):
    rng = np.random.default_rng(seed)
    writer = ResultsWriter(directory, "r", {"machine": "m"})
    for b in (1, 4, 16, 64):
        base = 1e-3 * (1 + 0.1 * b)
        raw = base * slowdown * np.exp(0.03 * rng.standard_normal(60))
        writer.append(dict(run_id="r", suite="s", sweep="batch_size", machine="m", device="cpu", device_name="x",
                           d_model=64, n_layers=8, batch_size=b, workload="forward", mode="eager", dtype="float32",
                           transfer="device", regime="latency", threads_requested=0, round=0, threads=2, params=1,
                           flops=1, bytes=1, status="ok", reason="", median_s=float(np.median(raw)),
                           min_s=float(raw.min()), n_repeats=len(raw), raw_times_s=raw_times_to_text(raw)))
    return directory


@pytest.fixture
def runs(tmp_path):
    return {name: write_run(tmp_path / name, slowdown, seed)
            for name, slowdown, seed in (("a", 1.0, 1), ("slow", 1.2, 2), ("same", 1.01, 3))}


def test_a_20_percent_slowdown_is_significant_and_1_percent_is_not(runs):
    a = load_results(runs["a"], raw=True)
    slow = compare_results(a, load_results(runs["slow"], raw=True))
    assert (slow["verdict"] == "slower").all() and slow["ratio"].to_numpy() == pytest.approx(1.2, rel=0.05)
    assert (slow["low"] > 1.1).all()
    summary = summarise(slow)
    assert summary.slower == 4 and summary.geometric_mean_ratio == pytest.approx(1.2, rel=0.03)
    same = compare_results(a, load_results(runs["same"], raw=True))
    assert (same["verdict"] == "same").all()
    assert summarise(same).worst_slowdown == 0


def test_cli_compare_json_and_fail_above(cli, runs):
    result = cli("compare", runs["a"], runs["slow"], "--json")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["schema"] == COMPARE_SCHEMA and data["summary"]["slower"] == 4 and not data["failed"]
    assert {p["verdict"] for p in data["points"]} == {"slower"}
    failed = cli("compare", runs["a"], runs["slow"], "--fail-above", 10)
    assert failed.returncode == 1 and "above --fail-above 10%" in failed.stderr
    both = cli("compare", runs["a"], runs["slow"], "--fail-above", 10, "--json")
    assert both.returncode == 1 and json.loads(both.stdout)["failed"] is True  # stdout is the JSON alone
    assert cli("compare", runs["a"], runs["slow"], "--fail-above", 30).returncode == 0
    text = cli("compare", runs["a"], runs["same"])
    assert text.returncode == 0 and "0 slower, 0 faster, 4 the same" in text.stdout


def test_no_common_point_is_one_line(cli, runs, tmp_path):
    other = tmp_path / "other"
    writer = ResultsWriter(other, "r", {"machine": "m"})
    writer.append(dict(run_id="r", suite="s", sweep="x", machine="m", device="cpu", device_name="x", d_model=32,
                       n_layers=2, batch_size=1, workload="forward", mode="eager", dtype="float32", transfer="device",
                       regime="latency", threads_requested=0, round=0, threads=2, params=1, flops=1, bytes=1,
                       status="ok", reason="", median_s=1e-3, raw_times_s="0.001"))
    result = cli("compare", runs["a"], other)
    assert result.returncode == 2 and "no point in common" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_the_median_is_the_median_of_the_rounds_medians_as_in_every_command(tmp_path):
    """One definition of --statistic: compare's median is the rounds' medians' median (the combined
    median_s), its interval resamples the rounds; p10 is the pooled repeats' 10th percentile."""
    def run(directory, level, seed):
        rng = np.random.default_rng(seed)
        writer = ResultsWriter(directory, "r", {"machine": "m"})
        for round_ in range(6):  # each round at its own level (drift between rounds)
            raw = level * (1 + 0.05 * rng.standard_normal()) * np.exp(0.02 * rng.standard_normal(40))
            writer.append(dict(run_id="r", suite="s", sweep="batch_size", machine="m", device="cpu", device_name="x",
                               d_model=64, n_layers=8, batch_size=1, workload="forward", mode="eager", dtype="float32",
                               transfer="device", regime="latency", threads_requested=0, round=round_, threads=2,
                               params=1, flops=1, bytes=1, status="ok", reason="", median_s=float(np.median(raw)),
                               min_s=float(raw.min()), n_repeats=len(raw), raw_times_s=raw_times_to_text(raw)))
        return load_results(directory, raw=True)

    a, b = run(tmp_path / "a", 1e-3, 1), run(tmp_path / "b", 1.3e-3, 2)
    median = compare_results(a, b, statistic="median").iloc[0]
    assert median["a_s"] == pytest.approx(float(a["median_s"].iloc[0])) and median["ratio"] == pytest.approx(1.3, rel=0.1)
    assert median["low"] < median["ratio"] < median["high"] and median["verdict"] == "slower"
    p10 = compare_results(a, b, statistic="p10").iloc[0]
    assert p10["a_s"] == pytest.approx(float(np.quantile(np.asarray(a["raw_times_s"].iloc[0], float), 0.1)))
