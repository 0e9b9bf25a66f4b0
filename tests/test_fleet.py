"""crossover fleet: a suite split over nodes with submitit, its jobs listed and completed, its nodes
merged on the anchor they all measure, compared beyond their noise and priced.

Most tests run the fleet's jobs with submitit's debug executor (in this process) and a fake of each
step's command (:func:`crossover.measurement.fleet_job._run_step`), whose sweep is the real sweep with a
fake timer: what the fleet does with jobs, records, directories and rows is checked without timing
anything. One serial test runs a whole fleet for real (two shards, every step), as docs/fleet.md
shows with the local executor.
"""

import json
import math
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

submitit = pytest.importorskip("submitit")

from crossover.errors import AnalysisError, ConfigError
from crossover.measurement import fleet as fleet_module
from crossover.measurement import fleet_job
from crossover.measurement.fleet import (compare_fleet_nodes, fleet_prices, fleet_status, plan_fleet, read_fleet,
                                         resubmit, run_fleet)
from crossover.measurement.fleet_targets import (SUBMITIT_MISSING, check_parameters, executor_parameters,
                                                 import_submitit, load_targets, parse_targets)
from crossover.measurement.machine_load import LoadReport
from crossover.measurement.suites import load_suite, parse_suite
from crossover.measurement.sweep import pair_key, parse_shard, plan_rounds, run_suite, shard_points
from crossover.measurement.timer import Timing
from crossover.measurement.toy_step import Measurement
from crossover.results.anchors import JOB_FILE, anchor_factors, compare_nodes
from crossover.results.drift import mixed_speed_warnings
from crossover.results.store import load_results

from conftest import ROOT, validate_json

SUITE = """
name = "fleet-test"
devices = ["cpu"]
[defaults]
d_model = 64
n_layers = 8
batch_size = 1
[timing]
warmup_s = 0.002
min_run_time_s = 0.004
max_run_time_s = 0.008
target_rel_ci = 0.05
[options]
rounds = 3
reference_every = 6
[[sweep]]
name = "batch_size"
batch_size = [1, 2, 4, 8, 16, 32]
[[sweep]]
name = "d_model"
d_model = [32, 64, 96, 128]
[[sweep]]
name = "n_layers"
n_layers = [4, 8, 16]
"""
TARGETS = ROOT / "experiments" / "fleet" / "targets.toml"


@pytest.fixture
def suite_file(tmp_path):
    path = tmp_path / "fleet-test.toml"
    path.write_text(SUITE)
    return path


def step_time_s(config, speed: float = 1.0) -> float:
    """A synthetic step: a launch floor, a per-layer cost and the FLOPs at 5 GFLOP/s."""
    return speed * (20e-6 + 2e-6 * config.n_layers + config.flops / 5e9)


def fake_measure(speed: float, seed: int = 0):
    rng = np.random.default_rng(seed)

    def measure(config, options, **kwargs):
        raw = tuple(step_time_s(config, speed) * np.exp(0.01 * rng.standard_normal(15)))
        return Measurement(config, Timing(raw), threads_used=2, device_name="fake CPU")

    return measure


QUIET = LoadReport(other_cores=0.0, own_utilisation=float("nan"), steal_fraction=0.0, load_avg_1min=0.0,
                   usable_cores=2, quota_cores=math.inf, threads=2, window_s=0.25)


@pytest.fixture
def fake_steps(monkeypatch):
    """Each job's commands faked in this process; ``speeds[key]`` makes a job's node slower (default 1)."""
    speeds = {}

    def run_step(step, job_dir):
        if step.name.startswith("calibrate"):
            (job_dir / step.output).parent.mkdir(parents=True, exist_ok=True)
            (job_dir / step.output).write_text("{}")
        elif step.name == "noise":
            (job_dir / "noise.json").write_text(json.dumps(
                {"schema": "crossover-noise", "machine": "fake", "date_utc": "2026-01-01T00:00:00+00:00",
                 "summary": {"p10": {"all": 0.03, "compute_bound": 0.02, "memory_or_launch_bound": 0.04,
                                     "worst": 0.08}}}))
        elif step.name == "peaks":
            (job_dir / "peaks.json").write_text("{}")
        elif step.name == "sweep":
            argv = list(step.argv)
            shard = parse_shard(argv[argv.index("--shard") + 1]) if "--shard" in argv else None
            key = json.loads((job_dir / JOB_FILE).read_text())["key"]
            run_suite(load_suite(argv[1]), argv[argv.index("--out") + 1], resume=True, shard=shard, progress=False,
                      measure_fn=fake_measure(speeds.get(key, 1.0), seed=len(key)), check_load=lambda threads: QUIET)
        return 0

    monkeypatch.setattr(fleet_job, "_run_step", run_step)
    monkeypatch.setattr("crossover.measurement.machine_load.check_machine", lambda *a, **k: QUIET)
    return speeds


def job_dirs(fleet_dir):
    return sorted(p.parent for p in Path(fleet_dir).glob(f"*/*/{JOB_FILE}"))


# ------------------------------------------------------------------------------------------ shards
def test_shards_split_the_points_keep_pairs_together_and_all_measure_the_anchor():
    text = SUITE.replace('devices = ["cpu"]', 'devices = ["cpu", "cuda"]')
    suite = parse_suite(tomllib.loads(text))
    points = suite.points(("cpu", "cuda"))
    shards = [shard_points(points, suite, (i, 3)) for i in range(3)]
    assert sorted(len(s) for s in shards) and sum(len(s) for s in shards) == len(points)
    assert {p for s in shards for p in s} == set(points)  # each point in exactly one shard
    for shard in shards:  # a CPU point and its GPU twin stay on one node
        keys = {pair_key(p.config, suite.pair_by) for p in shard}
        assert all(pair_key(p.config, suite.pair_by) in keys for p in points if p in shard)
        assert all(sum(pair_key(q.config, ("device",)) == k for q in shard) == 2 for k in keys)
    for shard in shards:
        plan = plan_rounds(shard, seed=0, pair_by=suite.pair_by, references=tuple(suite.reference_configs()),
                           reference_every=suite.reference_every)
        references = [item for item in plan if item.is_reference]
        assert {item.round for item in references} == {0, 1, 2}  # the anchor opens every round of every shard
        assert {item.point.config.d_model for item in references} == {64}
    assert shard_points(points, suite, None) == points
    with pytest.raises(ConfigError):
        parse_shard("3/2")
    assert parse_shard("2/2") == (1, 2)


def test_sweep_dry_run_lists_only_the_shards_points(cli_in_process, suite_file):
    whole = cli_in_process("sweep", suite_file, "--out", "unused", "--dry-run", "--device", "cpu")
    one = cli_in_process("sweep", suite_file, "--out", "unused", "--dry-run", "--device", "cpu", "--shard", "1/2")
    two = cli_in_process("sweep", suite_file, "--out", "unused", "--dry-run", "--device", "cpu", "--shard", "2/2")
    count = lambda out: int(out.strip().splitlines()[-1].split()[0])  # "N points, ..."
    assert count(one.stdout) + count(two.stdout) == count(whole.stdout) == 11
    assert abs(count(one.stdout) - count(two.stdout)) <= 1


# ----------------------------------------------------------------------------------------- targets
def test_two_slurm_partitions_become_parameters_a_slurm_executor_accepts(tmp_path, monkeypatch):
    """Checked against submitit's own SlurmExecutor, constructed without a cluster: it only needs to
    find an ``srun`` on the PATH, and nothing is submitted (sbatch is never called)."""
    fake_bin = tmp_path / "bin"
    fake_bin.mkdir()
    (fake_bin / "srun").write_text("#!/bin/sh\nexit 1\n")
    (fake_bin / "srun").chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake_bin}{os.pathsep}{os.environ['PATH']}")
    h100, cpu = load_targets(TARGETS)
    for target, partition in ((h100, "gpu-h100"), (cpu, "cpu")):
        executor = submitit.AutoExecutor(folder=str(tmp_path / "submitit" / "%j"), cluster="slurm")
        executor.update_parameters(**executor_parameters(target))
        slurm = executor._executor.parameters  # what SlurmExecutor turned them into
        assert slurm["partition"] == partition and slurm["exclusive"] is True and slurm["nodes"] == 1
        assert slurm["time"] == target.time_limit_min and slurm["account"] == "my-project"
        sbatch = executor._executor._make_submission_file_text("python -m crossover", "uid")
        assert f"#SBATCH --partition={partition}" in sbatch and "#SBATCH --exclusive" in sbatch
        assert f"#SBATCH --time={target.time_limit_min}" in sbatch
    assert slurm.get("gpus_per_node") is None and h100.gpus == 1
    sbatch_h100 = submitit.AutoExecutor(folder=str(tmp_path / "s2"), cluster="slurm")
    sbatch_h100.update_parameters(**executor_parameters(h100))
    text = sbatch_h100._executor._make_submission_file_text("x", "uid")
    assert "#SBATCH --gpus-per-node=1" in text and "#SBATCH --constraint=h100" in text
    assert "#SBATCH --mem=64GB" in text and "#SBATCH --cpus-per-task=16" in text
    # a key SLURM does not know is refused by submitit, here and without a cluster
    bad = parse_targets({"target": [{"name": "x", "slurm_partishun": "gpu"}]})[0]
    with pytest.raises(ConfigError, match="partishun"):
        check_parameters(executor_parameters(bad), tmp_path / "check")


@pytest.mark.parametrize("table, message", [
    ({"name": "a", "usd_per_hour": 2.0}, "needs its source"),
    ({"name": "a", "gpus": -1}, "gpus must be a positive integer"),
    ({"name": "a", "colour": "red"}, "unknown key"),
    ({"name": "a b"}, "needs a 'name'"),
])
def test_a_bad_target_is_refused_with_one_line(table, message):
    with pytest.raises(ConfigError, match=message):
        parse_targets({"target": [table]}, "t.toml")
    with pytest.raises(ConfigError, match="given twice"):
        parse_targets({"target": [{"name": "a"}, {"name": "a"}]})


def test_without_submitit_the_fleet_says_so_in_one_line(monkeypatch, cli_in_process, suite_file, tmp_path):
    monkeypatch.setitem(sys.modules, "submitit", None)  # as if not installed
    with pytest.raises(ConfigError, match="pip install 'crossover\\[cluster\\]'"):
        import_submitit()
    result = cli_in_process("fleet", "run", suite_file, "--out", tmp_path / "f", "--executor", "local")
    assert result.returncode == 2 and result.stderr.strip() == f"crossover: error: {SUBMITIT_MISSING}"
    assert not (tmp_path / "f").exists()


def test_submitit_is_imported_only_by_the_fleet():
    importers = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "crossover").rglob("*.py")
                       if "import submitit" in p.read_text())
    assert importers == ["crossover/measurement/fleet_targets.py"]


def test_slurm_without_sbatch_and_too_many_shards_are_refused_before_anything_is_written(suite_file, tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # no sbatch here
    with pytest.raises(ConfigError, match="sbatch"):
        plan_fleet(suite_file, tmp_path / "f", executor="slurm")
    dry = plan_fleet(suite_file, tmp_path / "f", executor="slurm", targets_path=TARGETS, shards=2, dry_run=True)
    assert [job["key"] for job in dry["jobs"]] == ["h100-shard1of2", "h100-shard2of2", "cpu-shard1of2", "cpu-shard2of2"]
    with pytest.raises(ConfigError, match="more than the 11 groups"):
        plan_fleet(suite_file, tmp_path / "f", executor="local", shards=12)
    assert not (tmp_path / "f").exists()


# ------------------------------------------------------------------- jobs, status and resubmission
def test_debug_fleet_of_two_shards_writes_one_part_per_job_and_pools_into_one_series(fake_steps, suite_file, tmp_path):
    out = tmp_path / "fleet"
    results = run_fleet(suite_file, out, executor="debug", shards=2, plan="smoke")
    assert [r["state"] for r in results] == ["done", "done"]
    dirs = job_dirs(out)
    assert len(dirs) == 2 and len({d.name for d in dirs}) == 2  # DIR/<machine>/<job id>/, one per job
    for directory, result in zip(sorted(dirs, key=lambda d: json.loads((d / JOB_FILE).read_text())["key"]), results):
        record = json.loads((directory / JOB_FILE).read_text())
        env = json.loads((directory / "environment.json").read_text())
        assert record["state"] == "done" and directory.name == result["job_id"] == record["attempts"][0]["job_id"]
        assert record["attempts"][0]["host"] == env["hostname"] and env["hardware"]["kind_digest"]
        assert env["scheduler_job"] == {"scheduler": "submitit-debug", "job_id": result["job_id"]}
        assert (directory / "results.csv").exists() and record["planned_measurements"] > 0
        assert set(record["steps"]) == {"calibrate-cpu", "noise", "peaks", "sweep"}
    frame = load_results(out)
    assert frame.groupby("results_dir")["d_model"].size().to_dict().__len__() == 2  # rows know their node
    assert len(frame) == 11 and frame[["machine", "device"]].drop_duplicates().shape[0] == 1  # one series
    rounds = load_results(out, combine_rounds=False, include_reference=True)
    anchors = rounds[rounds["sweep"] == "reference"].groupby("results_dir").size()
    assert len(anchors) == 2 and (anchors >= 3).all()  # both nodes measured the anchor every round
    status = fleet_status(out)
    assert [(s["state"], s["rows"]) for s in status] == [("done", s["planned"]) for s in status]


def test_a_killed_job_is_listed_failed_and_resubmit_completes_it(fake_steps, suite_file, tmp_path):
    out = tmp_path / "fleet"
    run_fleet(suite_file, out, executor="debug", shards=2, plan="smoke")
    victim = job_dirs(out)[0]
    record = json.loads((victim / JOB_FILE).read_text())
    planned = record["planned_measurements"]
    # what a SIGKILL leaves: the record says running, its process is gone, the sweep stopped halfway
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    record.update(state="running", step="sweep")
    record["attempts"][-1].update(pid=dead.pid, pid_start=None, ended_utc=None)
    (victim / JOB_FILE).write_text(json.dumps(record))
    lines = (victim / "results.csv").read_text().splitlines(keepends=True)
    (victim / "results.csv").write_text("".join(lines[:6]))
    status = {s["key"]: s for s in fleet_status(out)}
    killed = status[record["key"]]
    assert killed["state"] == "failed" and "gone" in killed["detail"] and killed["rows"] == 5
    assert killed["step"] == "sweep" and killed["planned"] == planned
    assert [s["state"] for s in status.values()].count("done") == 1
    again = resubmit(out)
    assert [(r["key"], r["state"]) for r in again] == [(record["key"], "done")]
    after = {s["key"]: s for s in fleet_status(out)}
    assert after[record["key"]]["state"] == "done" and after[record["key"]]["rows"] == planned
    assert after[record["key"]]["attempts"] == 2 and job_dirs(out)[0] == victim  # resumed in its directory
    assert len(json.loads((victim / JOB_FILE).read_text())["attempts"]) == 2
    frame = load_results(victim, combine_rounds=False, include_reference=True)
    assert not frame.duplicated(["sweep", "d_model", "n_layers", "batch_size", "round"]).any()
    assert resubmit(out) == []  # nothing left to do


def test_status_names_missing_and_running_jobs_and_a_failed_step_is_recorded(fake_steps, suite_file, tmp_path,
                                                                            monkeypatch):
    out = tmp_path / "fleet"
    plan_fleet(suite_file, out, executor="debug", shards=2, plan="smoke")
    assert [s["state"] for s in fleet_status(out)] == ["missing", "missing"]
    monkeypatch.setattr(fleet_job, "_run_step", lambda step, job_dir: 3 if step.name == "noise" else 0)
    fleet_module.submit(out, ["node-shard1of2"])
    first, second = fleet_status(out)
    assert first["state"] == "failed" and first["step"] == "noise" and "noise exited with status 3" in first["detail"]
    assert second["state"] == "missing"
    record = json.loads((Path(first["job_dir"]) / JOB_FILE).read_text())
    record.update(state="running")
    record["attempts"][-1].update(pid=os.getpid(), pid_start=fleet_job.process_start(os.getpid()))
    (Path(first["job_dir"]) / JOB_FILE).write_text(json.dumps(record))
    assert fleet_status(out)[0]["state"] == "running"  # its process is alive
    with pytest.raises(ConfigError, match="already holds a fleet"):
        plan_fleet(suite_file, out, executor="debug")


def test_status_and_resubmit_from_the_command_line(fake_steps, suite_file, tmp_path, cli_in_process):
    out = tmp_path / "fleet"
    plan_fleet(suite_file, out, executor="debug", shards=2, plan="smoke")
    listed = cli_in_process("fleet", "status", out)
    assert listed.returncode == 0 and listed.stdout.strip().endswith("2 missing")
    again = cli_in_process("fleet", "resubmit", out)
    assert again.returncode == 0 and "2 of 2 jobs done" in again.stdout
    data = json.loads(cli_in_process("fleet", "status", out, "--json").stdout)
    assert [job["state"] for job in data["jobs"]] == ["done", "done"]
    assert cli_in_process("fleet", "status", tmp_path / "nothing").returncode == 2


# --------------------------------------------------------------------------------- one scale, noise
def test_a_slower_node_is_put_on_the_kinds_scale_by_the_anchor(fake_steps, suite_file, tmp_path):
    out = tmp_path / "fleet"
    fake_steps["node-shard2of2"] = 1.4  # that node measures everything, its anchor included, 1.4x slower
    run_fleet(suite_file, out, executor="debug", shards=2, plan="smoke")
    unscaled = load_results(out, anchor_scale=False)
    scaled = load_results(out)
    factors = anchor_factors(load_results(out, combine_rounds=False, include_reference=True, anchor_scale=False))
    kind = (1 + 1.4) / 2  # the median of two nodes' anchors, in units of the faster one's
    assert sorted(factors["factor"]) == pytest.approx([kind / 1.4, kind], rel=0.01)
    truth = np.array([step_time_s(c) for c in scaled.itertuples()]) * kind
    assert np.allclose(scaled["p10_s"], truth, rtol=0.03)  # both shards now on one curve
    ratio = unscaled["p10_s"].to_numpy() / np.array([step_time_s(c) for c in unscaled.itertuples()])
    assert ratio.max() / ratio.min() > 1.3  # ... which they were not before
    slow, fast = sorted(mixed_speed_warnings(scaled), key=lambda line: "0.83x" in line)
    assert "measured the anchor at 1.17x its kind's level" in slow and "at 0.83x" in fast
    table = compare_fleet_nodes(out)
    anchor = table[table["anchor"]]
    assert len(anchor) == 1
    slow_is_b = json.loads((Path(anchor["node_b"].iloc[0]) / JOB_FILE).read_text())["key"] == "node-shard2of2"
    assert anchor["verdict"].iloc[0] == ("slower" if slow_is_b else "faster")  # job ids order the nodes
    assert anchor["ratio"].iloc[0] == pytest.approx(1.4 if slow_is_b else 1 / 1.4, rel=0.03)
    assert anchor["threshold"].iloc[0] == 0.03  # the nodes' noise floor (noise.json)


def test_nodes_within_their_noise_are_the_same_and_results_outside_a_fleet_are_never_scaled(tmp_path):
    from crossover.results.store import ResultsWriter, raw_times_to_text

    rng = np.random.default_rng(0)

    def node(name, speed, fleet=True):
        directory = tmp_path / name
        writer = ResultsWriter(directory, "r", {"machine": "m"})
        for round_index in range(3):
            for sweep, b in (("reference", 1), ("batch_size", 4), ("batch_size", 16)):
                raw = 1e-4 * b * speed * np.exp(0.02 * rng.standard_normal(40))
                writer.append(dict(run_id="r", suite="s", sweep=sweep, machine="m", device="cpu", device_name="x",
                                   d_model=64, n_layers=8, batch_size=b, workload="forward", mode="eager",
                                   dtype="float32", transfer="device", regime="latency", threads_requested=0,
                                   round=round_index, sequence=round_index * 3, threads=2, params=1, flops=1, bytes=1,
                                   status="ok", reason="", median_s=float(np.median(raw)), min_s=float(raw.min()),
                                   n_repeats=40, raw_times_s=raw_times_to_text(raw),
                                   timestamp_utc=f"2026-01-01T00:00:0{round_index}+00:00"))
        if fleet:
            (directory / JOB_FILE).write_text(json.dumps({"schema": "crossover-fleet-job", "key": name}))
        return directory

    a, b = node("a", 1.0), node("b", 1.01)
    frame = load_results([a, b], raw=True, include_reference=True, anchor_scale=False)
    table = compare_nodes(frame, {str(a): 0.05, str(b): 0.05})
    assert len(table) == 3 and (table["verdict"] == "same").all() and table["anchor"].sum() == 1
    plain = node("plain", 2.0, fleet=False)
    loaded = load_results([a, plain])
    assert loaded.loc[loaded["results_dir"] == str(plain), "anchor_scale"].isna().all()
    assert loaded.loc[loaded["results_dir"] == str(a), "anchor_scale"].eq(1.0).all()  # a kind of one node


# ------------------------------------------------------------------------------------------- costs
class StubFit:
    def __init__(self, machine, device, per_sample_s, floor_s):
        self.key = {"machine": machine, "device": device}
        self.per_sample_s, self.floor_s = per_sample_s, floor_s

    def latency_s(self, d_model, n_layers, batch_size):
        return self.floor_s + self.per_sample_s * batch_size

    def latency_interval_s(self, **size):
        value = self.latency_s(**size)
        return 0.9 * value, 1.1 * value

    def in_range(self, **size):
        return size["batch_size"] <= 64


def test_the_cheapest_device_per_batch_size_at_the_targets_prices():
    from crossover.analysis.fleet_cost import cost_table, usd_per_million

    fits = {"cpu-node/cpu": StubFit("cpu-node", "cpu", 1e-4, 1e-4), "gpu-node/cuda": StubFit("gpu-node", "cuda", 1e-6, 2e-3)}
    prices = {"cpu-node": {"usd_per_hour": 1.0, "source": "s"}, "gpu-node": {"usd_per_hour": 3.0, "source": "s"}}
    table = cost_table(fits, prices, d_model=64, n_layers=8, batch_sizes=[1, 512])
    cheapest = table[table["cheapest"]].set_index("batch_size")["series"].to_dict()
    assert cheapest == {1: "cpu-node/cpu", 512: "gpu-node/cuda"}
    row = table[(table["batch_size"] == 512) & (table["series"] == "gpu-node/cuda")].iloc[0]
    assert row["usd_per_million"] == pytest.approx(3.0 / 3600 * (2e-3 + 512e-6) / 512 * 1e6)
    assert row["usd_per_million"] == pytest.approx(usd_per_million(3.0, 2e-3 + 512e-6, 512)) and row["extrapolated"]
    with pytest.raises(AnalysisError, match="no price for machine gpu-node"):
        cost_table(fits, {"cpu-node": prices["cpu-node"]}, d_model=64, n_layers=8, batch_sizes=[1])


def test_a_targets_price_prices_the_machine_its_jobs_ran_on(fake_steps, suite_file, tmp_path):
    targets = tmp_path / "targets.toml"
    targets.write_text('[[target]]\nname = "vm"\nusd_per_hour = 0.07\nsource = "assumed"\n')
    out = tmp_path / "fleet"
    run_fleet(suite_file, out, executor="debug", targets_path=targets, shards=2, plan="smoke")
    machine = fleet_status(out)[0]["machine"]
    assert fleet_prices(out) == {machine: {"usd_per_hour": 0.07, "source": "assumed", "target": "vm"}}
    assert (out / "targets.toml").read_text() == targets.read_text() and read_fleet(out)["targets"][0]["name"] == "vm"


def test_fleet_json_outputs_follow_their_schemas(fake_steps, suite_file, tmp_path, cli_in_process):
    targets = tmp_path / "targets.toml"
    targets.write_text('[[target]]\nname = "vm"\nusd_per_hour = 0.07\nsource = "assumed"\n')
    out = tmp_path / "fleet"
    run_fleet(suite_file, out, executor="debug", targets_path=targets, shards=2, plan="smoke")
    data = {}
    for layout, args in (("fleet_status", ["status", out]), ("fleet_compare", ["compare", out, "--n-boot", 50]),
                         ("fleet_cost", ["cost", out, "--d-model", 64, "--n-layers", 8, "--batch-size", "1,4",
                                         "--n-boot", 5])):
        result = cli_in_process("fleet", *args, "--json")
        assert result.returncode == 0, result.stderr
        data[layout] = validate_json(json.loads(result.stdout))
        assert data[layout]["schema"] == {"name": f"crossover.{layout}", "version": 1}
        assert "schema_version" not in data[layout]
    assert [job["state"] for job in data["fleet_status"]["jobs"]] == ["done", "done"]
    assert data["fleet_compare"]["dirs"] == [str(out)] and data["fleet_compare"]["points"]
    assert data["fleet_cost"]["fleet"] == str(out) and {r["batch_size"] for r in data["fleet_cost"]["rows"]} == {1, 4}


# ----------------------------------------------------------------------------- the real thing, once
@pytest.mark.serial
@pytest.mark.slow
def test_a_real_two_shard_fleet_in_process_fits_one_series_and_predicts_per_machine_kind(suite_file, tmp_path):
    """Every step for real (calibration, noise floor, peaks, the suite's shards; about a minute on
    2 cores): the debug executor runs the jobs in this process, their steps in processes of their own."""
    import crossover

    out = tmp_path / "fleet"
    results = run_fleet(suite_file, out, executor="debug", shards=2, plan="smoke", devices=("cpu",))
    assert [r["state"] for r in results] == ["done", "done"], results
    for directory in job_dirs(out):
        for name in ("environment.json", "noise.json", "peaks.json", "calibration/cpu/profile.json", "results.csv",
                     "logs/sweep.log"):
            assert (directory / name).exists(), name
    frame = crossover.load_results(out, raw=True)
    assert len(frame) == 11 and frame["results_dir"].nunique() == 2
    from crossover.fit.all_series import fit_results

    fits = fit_results(frame, n_boot=10, jobs=1)
    assert len(fits) == 1  # the two shards pool into one series
    answer = crossover.decide([out], d_model=64, n_layers=8, batch_size=4, n_boot=10)
    machines = {d["machine"] for d in answer.devices}
    assert machines == set(frame["machine"]) and answer.devices[0]["latency_s"] > 0


def test_the_local_executor_runs_a_job_in_a_process_of_its_own_and_records_its_failure(suite_file, tmp_path):
    """A job whose suite is gone fails at once (nothing is timed): the local executor ran it in another
    process (its own pid, the scheduler's job id), and its record says why."""
    out = tmp_path / "fleet"
    plan_fleet(suite_file, out, executor="local", plan="smoke")
    (out / "suite.toml").unlink()
    (result,) = fleet_module.submit(out)
    assert result["state"] == "failed" and "does not exist" in result["error"]
    (row,) = fleet_status(out)
    record = json.loads((Path(row["job_dir"]) / JOB_FILE).read_text())
    attempt = record["attempts"][0]
    assert attempt["scheduler"] == "submitit-local" and attempt["pid"] != os.getpid()
    assert attempt["job_id"] == result["job_id"] == Path(row["job_dir"]).name and row["state"] == "failed"
    assert "does not exist" in row["detail"] and row["step"] == "plan"


def test_compare_and_cost_from_the_command_line(fake_steps, suite_file, tmp_path, cli_in_process):
    out = tmp_path / "fleet"
    targets = tmp_path / "targets.toml"
    targets.write_text('[[target]]\nname = "vm"\nusd_per_hour = 0.07\nsource = "assumed"\n')
    run_fleet(suite_file, out, executor="debug", targets_path=targets, shards=2, plan="smoke")
    compared = cli_in_process("fleet", "compare", out, "--n-boot", 200)
    assert compared.returncode == 0 and "the nodes are the same within their noise on the point compared" in compared.stdout
    assert "anchor cpu d=64 L=8 B=1" in compared.stdout and "(p10; their noise floor 3.0%)" in compared.stdout
    cost = cli_in_process("fleet", "cost", out, "--d-model", 64, "--n-layers", 8, "--batch-size", "1,32",
                          "--n-boot", 10, "--json")
    assert cost.returncode == 0, cost.stderr
    rows = json.loads(cost.stdout)["rows"]
    assert [r["batch_size"] for r in rows] == [1, 32] and all(r["cheapest"] for r in rows)
    truth = 0.07 / 3600 * step_time_s(type("C", (), {"n_layers": 8, "flops": 2 * 32 * 64 * 64 * 8})()) / 32 * 1e6
    assert rows[1]["usd_per_million"] == pytest.approx(truth, rel=0.05)
    unpriced = cli_in_process("fleet", "cost", out, "--d-model", 64, "--n-layers", 8, "--batch-size", "1",
                              "--price", "amd=-1")
    assert unpriced.returncode == 2 and "--price takes MACHINE=USD_PER_HOUR" in unpriced.stderr
    predicted = cli_in_process("predict", "--results", out, "--d-model", 64, "--n-layers", 8, "--batch-size", 32,
                               "--n-boot", 10, "--quiet", "--json")  # predict prices a fleet at its targets' prices
    assert predicted.returncode == 0, predicted.stderr
    [priced] = json.loads(predicted.stdout)["fleet_costs"]
    assert priced["cheapest"] and priced["usd_per_million"] == pytest.approx(rows[1]["usd_per_million"], rel=1e-6)


def test_slurm_states_pending_preempted_timed_out_and_a_queued_resubmission(suite_file, tmp_path, monkeypatch):
    """What SLURM says (sacct, through submitit; faked here) decides a job the records cannot: one
    queued, one preempted, one past its time limit, and one resubmitted after a failure that waits in
    the queue, which is pending (not failed) and is not submitted a third time."""
    fake_bin = tmp_path / "bin"
    fake_bin.mkdir()
    (fake_bin / "sbatch").write_text("#!/bin/sh\nexit 1\n")
    (fake_bin / "sbatch").chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake_bin}{os.pathsep}{os.environ['PATH']}")
    out = tmp_path / "fleet"
    plan_fleet(suite_file, out, executor="slurm", shards=4, plan="smoke")
    fleet = read_fleet(out)
    submissions = {0: ["100"], 1: ["101"], 2: ["102", "103"], 3: ["104"]}
    for index, ids in submissions.items():
        fleet["jobs"][index]["attempts"] = [{"job_id": i, "executor": "slurm"} for i in ids]
    fleet_job.write_json(out / "fleet.json", fleet)
    for index, (job_id, state) in {1: ("101", "running"), 2: ("102", "failed"), 3: ("104", "running")}.items():
        fleet_job.write_json(out / "m" / job_id / JOB_FILE, {
            "schema": "crossover-fleet-job", "key": fleet["jobs"][index]["key"], "machine": "m", "state": state,
            "error": "sweep exited with status 1" if state == "failed" else None,
            "attempts": [{"job_id": job_id, "host": "node7", "pid": 1}]})
    sacct = {"100": "PENDING", "101": "PREEMPTED", "102": "FAILED", "103": "PENDING", "104": "TIMEOUT"}
    monkeypatch.setattr(fleet_module, "_slurm_state", lambda folder, job_id: sacct[job_id])
    states = [(s["key"], s["state"]) for s in fleet_status(out)]
    assert states == [("node-shard1of4", "pending"), ("node-shard2of4", "preempted"), ("node-shard3of4", "pending"),
                      ("node-shard4of4", "failed")]
    assert fleet_module.job_keys_to_resubmit(fleet_status(out)) == ["node-shard2of4", "node-shard4of4"]
    sacct["103"] = "FAILED"  # the resubmission failed before it wrote a record: the job failed
    assert fleet_status(out)[2]["state"] == "failed"
    monkeypatch.setattr(fleet_module, "_slurm_state", lambda folder, job_id: "UNKNOWN")  # no sacct here
    assert [s["state"] for s in fleet_status(out)] == ["pending", "running", "pending", "running"]


def test_the_hardware_fingerprint_reads_the_caches_and_the_scheduler_job_is_named(tmp_path):
    from crossover.measurement.environment import cpu_caches, hardware_fingerprint, scheduler_job

    for index, (level, kind, size) in enumerate([(1, "Data", "48K"), (1, "Instruction", "32K"), (2, "Unified", "1024K"),
                                                 (3, "Unified", "32768K")]):
        directory = tmp_path / "cpu0" / "cache" / f"index{index}"
        directory.mkdir(parents=True)
        for name, value in (("level", level), ("type", kind), ("size", size)):
            (directory / name).write_text(f"{value}\n")
    assert cpu_caches(tmp_path) == {"L1d": 48 * 2**10, "L1i": 32 * 2**10, "L2": 2**20, "L3": 32 * 2**20}
    assert cpu_caches(tmp_path / "nowhere") == {}
    assert scheduler_job({"SLURM_JOB_ID": "17", "SLURM_ARRAY_JOB_ID": "16", "SLURM_ARRAY_TASK_ID": "3"}) == \
        {"scheduler": "slurm", "job_id": "16_3"}  # an array task, named as submitit names it
    assert scheduler_job({"SLURM_JOB_ID": "17"}) == {"scheduler": "slurm", "job_id": "17"}
    assert scheduler_job({"SUBMITIT_LOCAL_JOB_ID": "4242"}) == {"scheduler": "submitit-local", "job_id": "4242"}
    assert scheduler_job({}) is None
    one, two = hardware_fingerprint(), hardware_fingerprint()
    assert one == two and len(one["kind_digest"]) == 12 and one["kind_digest"] != one["node_digest"]
