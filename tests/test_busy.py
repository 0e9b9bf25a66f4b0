"""Tests for crossover.measurement.machine_load: the rules on synthetic samples, the /proc and cgroup parsing, a real hog."""

import math
import subprocess
import sys
import time

import pytest

from crossover.measurement import machine_load as busy
from crossover.measurement.machine_load import LoadMonitor, LoadReport, check_machine, judge_load
from crossover.measurement.procfs import (CpuSample, cgroup_cpu_quota_cores, cpu_sample, parse_cgroup_quota,
                                          parse_proc_stat)

#: These tests time things or watch the CPU: they run alone, never beside other tests (make test runs them after the rest).
pytestmark = pytest.mark.serial


def samples(window_s=1.0, busy_s=0.0, own_s=0.0, steal_s=0.0, cpus=2, available=True):
    """Two samples ``window_s`` apart whose counters grew by the given amounts."""
    before = CpuSample(wall_s=100.0, busy_s=5000.0, steal_s=10.0, own_cpu_s=3.0, available=available, cpus=cpus)
    after = CpuSample(
        wall_s=100.0 + window_s,
        busy_s=5000.0 + busy_s,
        steal_s=10.0 + steal_s,
        own_cpu_s=3.0 + own_s,
        available=available,
        cpus=cpus,
    )
    return before, after


def judge(threads=2, usable_cores=2, **kwargs):
    judge_kwargs = {k: kwargs.pop(k) for k in ("quota_cores", "load_avg_1min", "check_utilisation") if k in kwargs}
    return judge_load(*samples(**kwargs), threads=threads, usable_cores=usable_cores, **judge_kwargs)


# --------------------------------------------------------------------------------------------------
# The rules, on synthetic samples
# --------------------------------------------------------------------------------------------------


def test_idle_machine_is_not_busy():
    # Our 2 threads ran all second, the rest of the machine used 0.05 core.
    report = judge(busy_s=2.05, own_s=2.0)
    assert not report.busy, report.warnings
    assert report.other_cores == pytest.approx(0.05)
    assert report.own_utilisation == pytest.approx(1.0)
    assert report.steal_fraction == 0.0


def test_competing_load_is_flagged_with_what_to_do():
    # Other processes used 1.9 cores: our 2 threads got what was left.
    report = judge(busy_s=2.9, own_s=1.0)
    assert report.busy
    assert report.other_cores == pytest.approx(1.9)
    [warning] = report.warnings
    assert "other processes used 1.9 of this machine's 2 usable cores while measuring with 2 threads" in warning
    assert "stop them" in warning and "--threads 1" in warning


def test_background_noise_is_not_flagged():
    assert not judge(busy_s=2.1, own_s=2.0).busy  # 0.1 core of daemons
    # 0.6 core of other load, but one thread on two cores leaves it a free core.
    assert not judge(threads=1, busy_s=1.6, own_s=1.0).busy


def test_other_cores_is_clipped_at_zero():
    # /proc/stat counts in ticks while own CPU time is exact: the difference can dip below zero.
    assert judge(busy_s=1.98, own_s=2.0).other_cores == 0.0


def test_more_threads_than_cores_is_oversubscription():
    report = judge(threads=4, usable_cores=2, busy_s=2.0, own_s=2.0)
    assert report.busy
    assert any("4 threads" in w and "only 2 cores" in w and "--threads 2" in w for w in report.warnings)
    # Two threads on two cores is fine.
    assert not judge(threads=2, usable_cores=2, busy_s=2.0, own_s=2.0).busy


def test_threads_above_the_cgroup_quota_is_oversubscription():
    report = judge(threads=2, usable_cores=2, quota_cores=1.0, busy_s=1.0, own_s=1.0)
    assert report.busy
    [warning] = report.warnings
    assert "quota" in warning and "2 threads" in warning and "only 1 core:" in warning and "--threads 1" in warning
    assert report.quota_cores == 1.0
    assert not judge(threads=1, quota_cores=1.5, busy_s=1.0, own_s=1.0).busy


def test_starved_threads_are_flagged():
    # One thread ran only 45% of the window with nothing else visible on the machine.
    report = judge(threads=1, busy_s=0.45, own_s=0.45)
    assert report.busy
    [warning] = report.warnings
    assert "got only 45% of the CPU time its 1 thread could use" in warning
    # Two threads that together got half a core are starved too.
    assert judge(threads=2, busy_s=0.5, own_s=0.5).busy


def test_serial_step_with_two_threads_is_not_starved():
    # Ops below the parallel grain size keep only the main thread busy: 50% of 2 threads, one full core.
    report = judge(threads=2, busy_s=1.0, own_s=1.0)
    assert report.own_utilisation == pytest.approx(0.5)
    assert not report.busy, report.warnings


def test_utilisation_is_not_judged_when_told_or_over_a_short_window():
    report = judge(threads=1, busy_s=0.0, own_s=0.0, check_utilisation=False)
    assert not report.busy
    assert math.isnan(report.own_utilisation)
    assert not judge(threads=1, window_s=0.01, busy_s=0.0, own_s=0.0).busy


def test_steal_is_flagged():
    # The hypervisor took 0.3 s of 2 CPU-seconds: 15%.
    report = judge(busy_s=2.0, own_s=1.7, steal_s=0.3)
    assert report.steal_fraction == pytest.approx(0.15)
    assert any("hypervisor took 15%" in w for w in report.warnings)
    assert not judge(busy_s=2.0, own_s=1.9, steal_s=0.1).busy  # 5%


def test_unavailable_counters_judge_nothing():
    report = judge(threads=4, available=False, busy_s=2.9, own_s=0.1, steal_s=1.0)
    assert not report.busy
    assert math.isnan(report.other_cores) and math.isnan(report.own_utilisation)
    assert math.isnan(report.steal_fraction)


def test_messages_are_one_line_without_semicolons():
    report = judge(threads=4, usable_cores=2, quota_cores=1.0, busy_s=3.0, own_s=0.2, steal_s=0.5)
    assert len(report.warnings) >= 3
    for warning in report.warnings:
        assert "\n" not in warning and "; " not in warning


def test_as_row():
    row = judge(busy_s=2.9, own_s=1.0, load_avg_1min=1.5).as_row()
    assert set(row) == {"other_cpu_cores", "cpu_utilisation", "steal_fraction", "busy"}
    assert row["busy"] is True and row["other_cpu_cores"] == pytest.approx(1.9)


# --------------------------------------------------------------------------------------------------
# Reading /proc/stat and the cgroup quota
# --------------------------------------------------------------------------------------------------

PROC_STAT = """\
cpu  300 10 60 3000 20 6 4 8 100 0
cpu0 100 5 20 1000 7 3 2 4 50 0
cpu1 200 5 40 2000 13 3 2 4 50 0
intr 1 2 3
ctxt 12345
"""


def test_parse_proc_stat_sums_busy_fields_without_guest_or_idle():
    # cpu0: user 100 + nice 5 + system 20 + irq 3 + softirq 2 + steal 4 (guest 50 is inside user).
    assert parse_proc_stat(PROC_STAT, {0}) == (134, 4, 1)
    assert parse_proc_stat(PROC_STAT) == (134 + 254, 8, 2)
    assert parse_proc_stat(PROC_STAT, {0, 7}) == (134, 4, 1)  # CPUs not listed are skipped


def test_cpu_sample_without_proc_stat_is_unavailable(tmp_path):
    sample = cpu_sample(tmp_path / "missing")
    assert not sample.available


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/stat")
def test_cpu_sample_reads_this_machine():
    first = cpu_sample()
    sum(i * i for i in range(200_000))
    second = cpu_sample()
    assert first.available and second.available
    assert second.wall_s > first.wall_s and second.own_cpu_s > first.own_cpu_s
    assert second.busy_s >= first.busy_s and second.cpus >= 1


def test_parse_cgroup_quota():
    assert parse_cgroup_quota("150000 100000\n") == 1.5
    assert parse_cgroup_quota("max 100000\n") == math.inf
    assert parse_cgroup_quota("garbage") == math.inf
    assert parse_cgroup_quota("200000\n", "100000\n") == 2.0  # cgroup v1
    assert parse_cgroup_quota("-1\n", "100000\n") == math.inf


def test_cgroup_quota_v2_from_files(tmp_path):
    proc = tmp_path / "proc_cgroup"
    proc.write_text("0::/\n")
    assert cgroup_cpu_quota_cores(tmp_path, proc) == math.inf  # nothing there
    (tmp_path / "cpu.max").write_text("max 100000\n")
    assert cgroup_cpu_quota_cores(tmp_path, proc) == math.inf
    (tmp_path / "cpu.max").write_text("150000 100000\n")
    assert cgroup_cpu_quota_cores(tmp_path, proc) == 1.5


def test_cgroup_quota_v2_takes_the_tightest_ancestor(tmp_path):
    proc = tmp_path / "proc_cgroup"
    proc.write_text("0::/outer/inner\n")
    inner = tmp_path / "outer" / "inner"
    inner.mkdir(parents=True)
    (inner / "cpu.max").write_text("max 100000\n")
    (tmp_path / "outer" / "cpu.max").write_text("50000 100000\n")
    assert cgroup_cpu_quota_cores(tmp_path, proc) == 0.5


def test_cgroup_quota_v1_from_files(tmp_path):
    proc = tmp_path / "proc_cgroup"
    proc.write_text("2:cpuacct:/\n1:cpu:/\n0::/\n")
    cpu = tmp_path / "cpu"
    cpu.mkdir()
    (cpu / "cpu.cfs_quota_us").write_text("-1\n")
    (cpu / "cpu.cfs_period_us").write_text("100000\n")
    assert cgroup_cpu_quota_cores(tmp_path, proc) == math.inf
    (cpu / "cpu.cfs_quota_us").write_text("250000\n")
    assert cgroup_cpu_quota_cores(tmp_path, proc) == 2.5


def test_cgroup_quota_of_this_machine_is_a_positive_number():
    assert cgroup_cpu_quota_cores() > 0


# --------------------------------------------------------------------------------------------------
# A real hog
# --------------------------------------------------------------------------------------------------


def _matmul_loop(duration_s):
    import torch

    a, b = torch.randn(256, 256), torch.randn(256, 256)
    start = time.monotonic()
    while time.monotonic() - start < duration_s:
        a @ b


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/stat")
def test_a_real_hog_is_detected_and_its_absence_too(cpu_hog):
    hog = cpu_hog
    import torch

    previous_threads = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        _matmul_loop(0.05)  # start the OpenMP pool before anything is watched
        time.sleep(0.3)  # let the hogs get going

        before = check_machine(threads=2)
        assert before.busy, before
        assert before.other_cores >= 1.0, before

        with LoadMonitor(threads=2) as monitor:
            _matmul_loop(0.3)
        during = monitor.report
        assert isinstance(during, LoadReport)
        assert during.busy, during
        assert during.other_cores >= 0.5, during
        print(f"\nhog: before other_cores={before.other_cores:.2f}, during other_cores={during.other_cores:.2f} "
              f"utilisation={during.own_utilisation:.2f}")

        for process in hog:
            process.kill()
            process.wait(timeout=10)
        # The idle check retries: a shared machine may have a blip of someone else's work.
        for attempt in range(8):
            time.sleep(0.5)
            after = check_machine(threads=2)
            if not after.busy:
                break
        assert not after.busy, after
        print(f"idle: other_cores={after.other_cores:.2f} after {attempt + 1} attempt(s)")
    finally:
        torch.set_num_threads(previous_threads)


def test_module_exports():
    for name in busy.__all__:
        assert hasattr(busy, name)
