"""Tests for the environment record: the CPU clock/governor readers on a fake sysfs/procfs tree, the
thread-pool variables, the cgroup quota and torch's build summary, what ``crossover env`` prints and
what a sweep stores in metadata.json (old metadata without the new fields still reads)."""

import collections
import json
import math
import threading
from pathlib import Path

import pytest

from crossover.measurement import environment as env_module
from crossover.measurement.machine_load import LoadReport
from crossover.cli.measure import _env_lines
from crossover.measurement.procfs import cpu_frequency, parse_cpuinfo_mhz
from crossover.results.store import ResultsWriter, check_same_environment, load_metadata

from conftest import ROOT

CPUINFO = """processor\t: 0
model name\t: AMD EPYC
cpu MHz\t\t: 2000.000
flags\t\t: fpu vme

processor\t: 1
model name\t: AMD EPYC
cpu MHz\t\t: 3000.500
"""


def _cpufreq(sys_cpu, cpu, **files):
    directory = sys_cpu / f"cpu{cpu}" / "cpufreq"
    directory.mkdir(parents=True)
    for name, text in files.items():
        (directory / name).write_text(text)


# ------------------------------------------------------------------ CPU frequency and governor
def test_cpufreq_gives_the_mean_clock_the_highest_maximum_and_the_governor(tmp_path):
    sys_cpu = tmp_path / "cpu"
    _cpufreq(sys_cpu, 0, scaling_cur_freq="2000000\n", cpuinfo_max_freq="3500000\n", scaling_governor="performance\n")
    _cpufreq(sys_cpu, 1, scaling_cur_freq="3000000\n", cpuinfo_max_freq="3700000\n", scaling_governor="performance\n")
    (sys_cpu / "cpufreq").mkdir()  # the policy directory beside cpuN is not a CPU
    (sys_cpu / "cpuidle").mkdir()
    found = cpu_frequency(sys_cpu, tmp_path / "no-cpuinfo")
    assert found == {"cpu_freq_mhz": 2500.0, "cpu_freq_max_mhz": 3700.0, "cpu_governor": "performance",
                     "cpu_freq_source": "cpufreq"}


def test_distinct_governors_are_all_named_and_scaling_max_is_the_fallback_maximum(tmp_path):
    sys_cpu = tmp_path / "cpu"
    _cpufreq(sys_cpu, 0, scaling_cur_freq="1000000", scaling_max_freq="2400000", scaling_governor="powersave")
    _cpufreq(sys_cpu, 1, scaling_cur_freq="1200000", scaling_max_freq="2400000", scaling_governor="performance")
    found = cpu_frequency(sys_cpu, tmp_path / "no-cpuinfo")
    assert found["cpu_governor"] == "performance,powersave"
    assert found["cpu_freq_max_mhz"] == 2400.0 and found["cpu_freq_mhz"] == 1100.0


def test_without_cpufreq_the_clock_comes_from_cpuinfo_and_the_rest_is_null(tmp_path):
    (tmp_path / "cpu" / "cpu0").mkdir(parents=True)  # a VM: CPUs but no cpufreq
    (tmp_path / "cpuinfo").write_text(CPUINFO)
    found = cpu_frequency(tmp_path / "cpu", tmp_path / "cpuinfo")
    assert found == {"cpu_freq_mhz": 2500.2, "cpu_freq_max_mhz": None, "cpu_governor": None,
                     "cpu_freq_source": "cpuinfo"}


def test_a_maximum_from_cpufreq_and_the_clock_from_cpuinfo_say_so(tmp_path):
    _cpufreq(tmp_path / "cpu", 0, cpuinfo_max_freq="3000000")
    (tmp_path / "cpuinfo").write_text(CPUINFO)
    found = cpu_frequency(tmp_path / "cpu", tmp_path / "cpuinfo")
    assert found["cpu_freq_mhz"] == 2500.2 and found["cpu_freq_max_mhz"] == 3000.0
    assert found["cpu_freq_source"] == "cpufreq+cpuinfo"


def test_unreadable_or_garbled_files_give_null(tmp_path):
    sys_cpu = tmp_path / "cpu"
    _cpufreq(sys_cpu, 0, cpuinfo_max_freq="garbage", scaling_governor="")
    (sys_cpu / "cpu0" / "cpufreq" / "scaling_cur_freq").mkdir()  # reading it fails (a directory)
    (tmp_path / "cpuinfo").mkdir()
    assert cpu_frequency(sys_cpu, tmp_path / "cpuinfo") == {
        "cpu_freq_mhz": None, "cpu_freq_max_mhz": None, "cpu_governor": None, "cpu_freq_source": None}
    assert cpu_frequency(tmp_path / "absent", tmp_path / "absent")["cpu_freq_mhz"] is None


def test_parse_cpuinfo_mhz():
    assert parse_cpuinfo_mhz(CPUINFO) == [2000.0, 3000.5]
    assert parse_cpuinfo_mhz("cpu MHz : fast\nBogoMIPS : 50.00\n") == []


# ------------------------------------------------------------------ thread variables, cgroup quota
def test_thread_environment_keeps_only_the_thread_pool_variables():
    environ = {"OMP_NUM_THREADS": "4", "KMP_AFFINITY": "compact", "GOMP_SPINCOUNT": "0", "MKL_DYNAMIC": "FALSE",
               "OPENBLAS_NUM_THREADS": "1", "ATEN_CPU_CAPABILITY": "avx2", "PATH": "/bin", "OMPX": "1",
               "MY_OMP_NUM_THREADS": "9"}
    assert env_module.thread_environment(environ) == {
        "ATEN_CPU_CAPABILITY": "avx2", "GOMP_SPINCOUNT": "0", "KMP_AFFINITY": "compact", "MKL_DYNAMIC": "FALSE",
        "OMP_NUM_THREADS": "4", "OPENBLAS_NUM_THREADS": "1"}
    assert env_module.thread_environment({"HOME": "/root"}) == {}


@pytest.fixture
def no_collect_env(monkeypatch):
    """environment(full=True) without shelling out: torch_build_info replaced by a stub."""
    monkeypatch.setattr(env_module, "torch_build_info", lambda: {"os": "stub", "collect_s": 0.0})


def test_environment_records_the_variables_quota_and_clock(monkeypatch, no_collect_env):
    for name in list(env_module.thread_environment()):
        monkeypatch.delenv(name)
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    monkeypatch.setenv("KMP_BLOCKTIME", "0")
    monkeypatch.setattr(env_module, "cgroup_cpu_quota_cores", lambda: 1.5)
    monkeypatch.setattr(env_module, "cpu_frequency", lambda: {"cpu_freq_mhz": 2100.0, "cpu_freq_max_mhz": None,
                                                              "cpu_governor": "schedutil", "cpu_freq_source": "cpufreq"})
    env = env_module.environment()
    assert env["thread_env"] == {"KMP_BLOCKTIME": "0", "OMP_NUM_THREADS": "3"}
    assert env["cgroup_cpu_quota_cores"] == 1.5
    assert env["cpu_freq_mhz"] == 2100.0 and env["cpu_governor"] == "schedutil" and env["cpu_freq_max_mhz"] is None
    assert "torch_build" not in env
    full = env_module.environment(full=True)
    assert full["torch_build"] == {"os": "stub", "collect_s": 0.0}
    json.dumps(full, allow_nan=False)  # strict JSON: no Infinity for "no quota"
    monkeypatch.setattr(env_module, "cgroup_cpu_quota_cores", lambda: math.inf)
    assert env_module.environment()["cgroup_cpu_quota_cores"] is None


# ------------------------------------------------------------------ torch.utils.collect_env summary
FakeInfo = collections.namedtuple("FakeInfo", ["torch_version", "os", "gcc_version", "is_debug_build",
                                               "cuda_runtime_version", "pip_packages", "cpu_info"])


def _fake_collect_env(monkeypatch, get_env_info):
    from torch.utils import collect_env

    monkeypatch.setattr(collect_env, "get_env_info", get_env_info)
    env_module.torch_build_info.cache_clear()  # each test clears it again after itself
    return env_module.torch_build_info


def test_torch_build_info_is_a_compact_summary(monkeypatch):
    info = FakeInfo("2.13.0", "Debian 12", "gcc 12", "False", "N/A", "numpy==2.4\ntorch==2.13.0", "lscpu: many lines")
    build = _fake_collect_env(monkeypatch, lambda: info)()
    assert build["os"] == "Debian 12" and build["gcc_version"] == "gcc 12"
    assert build["is_debug_build"] is False and build["cuda_runtime_version"] is None
    assert build["pip_packages"] == ["numpy==2.4", "torch==2.13.0"]
    assert "cpu_info" not in build and build["collect_s"] >= 0
    assert set(build) == set(env_module.COLLECT_ENV_FIELDS) | {"collect_s"}
    env_module.torch_build_info.cache_clear()


def test_torch_build_info_reports_a_failure_instead_of_raising(monkeypatch):
    def broken():
        raise RuntimeError("no pip here")

    build = _fake_collect_env(monkeypatch, broken)()
    assert "RuntimeError: no pip here" in build["error"]
    env_module.torch_build_info.cache_clear()


def test_torch_build_info_gives_up_on_a_slow_collect_env(monkeypatch):
    release = threading.Event()
    try:
        build = _fake_collect_env(monkeypatch, lambda: release.wait(10))(timeout_s=0.2)
        assert "more than 0.2 s" in build["error"] and build["collect_s"] < 5
    finally:
        release.set()
        env_module.torch_build_info.cache_clear()


# ------------------------------------------------------------------ crossover env, metadata.json
def test_env_lines_indent_nested_dicts_and_show_null_as_a_dash():
    lines = "\n".join(_env_lines({"cpu_governor": None, "thread_env": {"OMP_NUM_THREADS": "2"}, "empty": {},
                                  "torch_build": {"pip_packages": ["a==1", "b==2"]}})).splitlines()
    assert lines[0] == "cpu_governor  -"
    assert lines[1] == "thread_env" and lines[2] == "  OMP_NUM_THREADS  2"
    assert lines[3] == "empty         (none set)"
    assert lines[5] == "  pip_packages  a==1" and lines[6] == " " * 16 + "b==2"


def test_crossover_env_full_json_from_the_cli(cli):
    result = cli("env", "--json", "--full", env={"OMP_NUM_THREADS": "1", "KMP_BLOCKTIME": "1"})
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["thread_env"]["OMP_NUM_THREADS"] == "1" and data["thread_env"]["KMP_BLOCKTIME"] == "1"
    assert data["torch_num_threads"] == 1  # the variable took effect, and the record shows why
    for key in ("cpu_freq_mhz", "cpu_freq_max_mhz", "cpu_governor", "cgroup_cpu_quota_cores"):
        assert key in data
    assert "error" in data["torch_build"] or any(p.startswith("torch") for p in data["torch_build"]["pip_packages"])


SUITE = """
name = "one"
devices = ["cpu"]
[defaults]
d_model = 16
n_layers = 1
[timing]
warmup_s = 0.0
min_warmup_calls = 1
min_repeats = 3
min_run_time_s = 0.01
max_run_time_s = 0.02
[[sweep]]
name = "batch_size"
batch_size = [1]
"""


def _quiet_check(threads):
    return LoadReport(other_cores=0.0, own_utilisation=float("nan"), steal_fraction=0.0, load_avg_1min=0.0,
                      usable_cores=2, quota_cores=float("inf"), threads=threads, window_s=0.25, warnings=())


def test_a_sweep_records_the_new_fields_beside_old_runs(tmp_path, monkeypatch, no_collect_env):
    import tomllib

    from crossover.measurement.suites import parse_suite
    from crossover.measurement.sweep import run_suite

    old = ROOT / "experiments" / "results" / "amd-epyc-2c" / "quick" / "metadata.json"
    _write_without_new_fields(old, tmp_path / "metadata.json")  # as written before these fields existed
    old_runs = load_metadata(tmp_path)["runs"]
    assert all("thread_env" not in run for run in old_runs.values())
    monkeypatch.setenv("OMP_NUM_THREADS", "2")
    run_suite(parse_suite(tomllib.loads(SUITE)), tmp_path, progress=False, resume=True, allow_mixed=True,
              check_load=_quiet_check)
    runs = load_metadata(tmp_path)["runs"]
    new = [run for run_id, run in runs.items() if run_id not in old_runs]
    assert len(runs) == len(old_runs) + 1 and len(new) == 1
    assert new[0]["thread_env"]["OMP_NUM_THREADS"] == "2" and new[0]["torch_build"]["os"] == "stub"
    assert {"cpu_freq_mhz", "cpu_governor", "cgroup_cpu_quota_cores"} <= set(new[0])


#: The environment fields added to metadata.json after the first schema-2 runs.
NEW_FIELDS = ("thread_env", "torch_build", "cpu_freq_mhz", "cpu_freq_max_mhz", "cpu_freq_source", "cpu_governor",
              "cgroup_cpu_quota_cores")


def _write_without_new_fields(source, target):
    """``source`` metadata.json with :data:`NEW_FIELDS` taken out of every run, written to ``target``."""
    data = json.loads(Path(source).read_text())
    for run in data["runs"].values():
        for name in NEW_FIELDS:
            run.pop(name, None)
    Path(target).write_text(json.dumps(data))


def test_old_metadata_without_the_new_fields_is_still_compared_and_extended(tmp_path, no_collect_env):
    old = ROOT / "experiments" / "results" / "amd-epyc-2c" / "quick" / "metadata.json"
    _write_without_new_fields(old, tmp_path / "metadata.json")
    recorded = next(iter(load_metadata(tmp_path)["runs"].values()))
    now = {**recorded, "thread_env": {}, "cpu_governor": None, "torch_build": {"os": "stub"}}
    check_same_environment(tmp_path, now)  # the new fields are absent there: not compared, no error
    ResultsWriter(tmp_path, "new-run", now)
    assert load_metadata(tmp_path)["runs"]["new-run"]["torch_build"] == {"os": "stub"}


# ------------------------------------------------------------------ the shipped results in a wheel
def test_the_shipped_results_are_the_repository_copy_else_the_installed_one(tmp_path, monkeypatch):
    from crossover import shipped_data as shipped

    package = tmp_path / "site-packages" / "crossover"
    (package / "shipped_results" / "amd" / "quick").mkdir(parents=True)
    monkeypatch.setattr(shipped, "_PACKAGE", package)
    assert shipped.shipped_results_dir() == package / "shipped_results"  # a wheel install: no repository
    (tmp_path / "site-packages" / "experiments" / "results").mkdir(parents=True)
    assert shipped.shipped_results_dir() == tmp_path / "site-packages" / "experiments" / "results"
    from crossover.cli.args import DEFAULT_RESULTS

    assert DEFAULT_RESULTS == ROOT / "experiments" / "results"  # in this checkout


def _data_packages() -> dict:
    """setup.py's DATA_PACKAGES (package name → repository folder), read without running setup()."""
    import ast

    tree = ast.parse((ROOT / "setup.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and node.targets[0].id == "DATA_PACKAGES":
            return ast.literal_eval(node.value)
    raise AssertionError("setup.py names no DATA_PACKAGES")


@pytest.mark.parametrize("package", ["crossover.shipped_results", "crossover.shipped_profiles"])
def test_the_wheel_carries_every_shipped_data_file(package):
    import tomllib

    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    source = ROOT / _data_packages()[package]
    covered = {p for pattern in config["package-data"][package] for p in source.glob(pattern)}
    every = {p for p in source.rglob("*") if p.is_file() and ".ipynb_checkpoints" not in p.parts}
    assert every, f"{source} is empty"
    assert every - covered == set(), f"files of {source} a wheel would leave out: extend package-data"
    if package.endswith("results"):
        assert any(p.name == "results.csv" for p in covered) and any(p.name == "metadata.json" for p in covered)
    else:
        assert any(p.name == "calibration.csv.gz" for p in covered)
