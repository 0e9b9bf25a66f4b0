"""Is the machine busy? Competing CPU load and thread oversubscription, before and during a measurement.

A latency measured on a shared machine can be ruined without anything in the timing looking wrong.
OpenMP worker threads meet at a barrier after every parallel region, so one descheduled sibling makes
the others wait for a whole scheduler time slice: with another CPU-bound process running, a 0.45 ms
step measured with 2 OpenMP threads on 2 cores read 260 ms, with a tight IQR. Only the machine's state
shows it, so this module reads that state: the CPU time the machine spent outside this process
(``/proc/stat`` minus our own CPU time), the hypervisor's steal time, the cores this process may run
on (its affinity mask) and its cgroup CPU quota. pyperf records the load average and the CPU affinity
with every benchmark for the same reason; here they are also judged, and every warning says what to do.

Reading the counters (:func:`cpu_sample`, :func:`cgroup_cpu_quota_cores`, in
:mod:`crossover.measurement.procfs`) is kept apart from judging them (:func:`judge_load`, pure), so the rules are tested on synthetic samples. :func:`check_machine`
looks at the machine before measuring; :class:`LoadMonitor` watches the measurement itself::

    report = check_machine(threads=2)
    with LoadMonitor(threads=2) as monitor:
        ...  # time the step
    row.update(monitor.report.as_row())

Where ``/proc/stat`` cannot be read (not Linux) the samples are marked unavailable and nothing is
judged: no warnings, ``nan`` figures.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Optional

from .procfs import CpuSample, cgroup_cpu_quota_cores, clock_tick_s, cpu_sample
from .procfs import load_avg_1min as _load_avg_1min
from .procfs import usable_cores as _usable_cores

__all__ = [
    "LoadReport",
    "LoadMonitor",
    "judge_load",
    "check_machine",
    "COMPETING_MIN_OTHER_CORES",
    "COMPETING_SLACK_CORES",
    "STARVED_UTILISATION",
    "STARVED_MIN_WINDOW_S",
    "STEAL_MAX_FRACTION",
]

#: Other processes must use at least this many cores to count as competing load: background daemons
#: (shells, loggers, the kernel's own threads) use ~0.1 core and must not raise an alarm.
COMPETING_MIN_OTHER_CORES = 0.5

#: Our threads plus the others' cores may exceed the usable cores by this much before it is a conflict:
#: ``/proc/stat`` counts in 10 ms ticks, so a 0.25 s window on 2 cores is uncertain by up to ~0.16 core.
COMPETING_SLACK_CORES = 0.25

#: Starved: the process got less than this fraction of ONE core, i.e. own utilisation below
#: ``STARVED_UTILISATION / threads``. Not 0.6 per thread: measured here (2 cores, 2 threads, torch
#: 2.13), a matmul loop on an idle machine sits at 1.00 per thread from n=64 up (OpenMP workers spin
#: between regions), but at n=16 the ops fall below ATen's parallel grain size, the worker sleeps and
#: an unstarved step reads 0.50. The thread running the Python loop is always busy during a CPU step,
#: so less than 0.6 of a core is starvation whatever the op size. Two busy-loop hogs gave 0.50 per
#: thread at n>=64 (0.31 at n=16): those are caught by the competing-load rule, this one is the net
#: for contention ``/proc/stat`` does not show as other processes (throttling, a sibling VM).
STARVED_UTILISATION = 0.6

#: Utilisation is not judged over a shorter window: CPU time and wall time are then too coarse.
STARVED_MIN_WINDOW_S = 0.05

#: A VM whose hypervisor takes more than this share of its CPU time runs on an oversold host: timings
#: then depend on the neighbours, not on the code.
STEAL_MAX_FRACTION = 0.10

# --------------------------------------------------------------------------------------------------
# Judging
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LoadReport:
    """What the machine was doing over a window, and what to do about it.

    Attributes
    ----------
    other_cores : float
        Cores' worth of CPU used by other processes over the window: (busy delta - own delta) / wall
        delta, clipped at 0; ``nan`` when not judged.
    own_utilisation : float
        Own CPU delta / (wall delta * threads): near 1 when every thread ran all the time (as low as
        1 / threads, unstarved, when the step's ops are too small to run in parallel); ``nan`` when
        not judged (``check_utilisation=False``, or no counters).
    steal_fraction : float
        Steal delta / (wall delta * CPUs sampled): the share of this VM's CPU time the hypervisor
        gave to others; ``nan`` when not judged.
    load_avg_1min : float
        The 1-minute load average (recorded, not judged: it lags by a minute); ``nan`` if unknown.
    usable_cores : int
        CPUs this process may run on (its affinity mask).
    quota_cores : float
        The cgroup CPU quota in cores, ``math.inf`` when none.
    threads : int
        Threads the measurement used.
    window_s : float
        Length of the window, in seconds.
    warnings : tuple of str
        One complete sentence each, each saying what to do; no ``"; "`` inside.
    """

    other_cores: float
    own_utilisation: float
    steal_fraction: float
    load_avg_1min: float
    usable_cores: int
    quota_cores: float
    threads: int
    window_s: float
    warnings: tuple = ()

    @property
    def busy(self) -> bool:
        """True when there is any warning."""
        return bool(self.warnings)

    def as_row(self) -> dict:
        """The figures for a results CSV row."""
        return {
            "other_cpu_cores": self.other_cores,
            "cpu_utilisation": self.own_utilisation,
            "steal_fraction": self.steal_fraction,
            "busy": self.busy,
        }


def _count(number: float, noun: str) -> str:
    """``"1 core"``, ``"2 cores"``, ``"1.5 cores"``."""
    return f"{number:.3g} {noun}" + ("" if number == 1 else "s")


def _suggested_threads(usable_cores: int, quota_cores: float) -> int:
    return max(1, math.floor(min(usable_cores, quota_cores)))


_TICK_S = clock_tick_s()


def judge_load(
    before: CpuSample,
    after: CpuSample,
    *,
    threads: int,
    usable_cores: int,
    quota_cores: float = math.inf,
    load_avg_1min: float = math.nan,
    check_utilisation: bool = True,
) -> LoadReport:
    """Judge the window between two samples (pure: no I/O).

    Parameters
    ----------
    before, after : CpuSample
        Samples taken at the window's start and end.
    threads : int
        Threads the measurement uses (``torch.get_num_threads()`` for a CPU step).
    usable_cores : int
        CPUs this process may run on.
    quota_cores : float
        The cgroup CPU quota in cores, ``math.inf`` when none.
    load_avg_1min : float
        The 1-minute load average, recorded as is.
    check_utilisation : bool
        Judge whether our own threads got the CPU time they could use: True while a CPU step runs,
        False for an idle wait or a CUDA step (the host thread mostly waits).

    Returns
    -------
    LoadReport
        Warnings for competing load, oversubscription, starved threads and steal time.
    """
    window_s = after.wall_s - before.wall_s
    common = dict(
        load_avg_1min=load_avg_1min, usable_cores=usable_cores, quota_cores=quota_cores, threads=threads,
        window_s=window_s,
    )
    if not (before.available and after.available) or window_s <= 0:
        return LoadReport(math.nan, math.nan, math.nan, warnings=(), **common)

    own_s = max(0.0, after.own_cpu_s - before.own_cpu_s)
    other_cores = max(0.0, (after.busy_s - before.busy_s - own_s) / window_s)
    own_utilisation = own_s / (window_s * threads) if check_utilisation and threads >= 1 else math.nan
    cpus = after.cpus or usable_cores
    steal_fraction = max(0.0, after.steal_s - before.steal_s) / (window_s * cpus) if cpus > 0 else math.nan
    suggested = _suggested_threads(usable_cores, quota_cores)

    warnings = []
    oversubscribed = False
    if threads > usable_cores:
        oversubscribed = True
        warnings.append(
            f"measuring with {_count(threads, 'thread')} but this process may run on only "
            f"{_count(usable_cores, 'core')}: "
            f"the threads wait for one another and the timing is inflated - measure with --threads {suggested}"
        )
    elif threads > quota_cores:
        oversubscribed = True
        warnings.append(
            f"measuring with {_count(threads, 'thread')} but the cgroup CPU quota allows only "
            f"{_count(quota_cores, 'core')}: "
            f"the threads are throttled and the timing is inflated - measure with --threads {suggested}"
        )

    # /proc/stat counts whole clock ticks per CPU, so over a short window the other processes' share
    # is uncertain by up to two ticks per CPU: judge what is left after that (a 30 ms window on 2
    # CPUs is uncertain by 1.3 cores, a 0.25 s one by 0.16).
    tick_cores = 2 * cpus * _TICK_S / window_s
    surely_other = other_cores - tick_cores
    if surely_other >= COMPETING_MIN_OTHER_CORES and threads + surely_other > usable_cores + COMPETING_SLACK_CORES:
        # One thread never waits at a barrier for a descheduled sibling, so it is always worth trying.
        fewer = max(1, min(threads - 1, math.floor(usable_cores - other_cores + COMPETING_SLACK_CORES)))
        if threads > 1:
            advice = f"stop them, or measure with fewer --threads (--threads {fewer})"
        else:
            advice = "stop them and measure again"
        warnings.append(
            f"other processes used {other_cores:.1f} of this machine's {_count(usable_cores, 'usable core')} "
            f"while measuring with {_count(threads, 'thread')}: the timing is inflated - {advice}"
        )

    if (
        check_utilisation
        and not oversubscribed  # already explained: more threads than cores cannot all run
        and threads >= 1
        and window_s >= STARVED_MIN_WINDOW_S
        and own_utilisation < STARVED_UTILISATION / threads
    ):
        advice = "free the machine, or measure with fewer --threads" if threads > 1 else "free the machine"
        warnings.append(
            f"this process got only {own_utilisation:.0%} of the CPU time its {_count(threads, 'thread')} "
            f"could use ({own_s / window_s:.2f} of a core): it was descheduled (other load, a CPU quota or "
            f"steal) and the timing is inflated - {advice} and measure again"
        )

    if steal_fraction > STEAL_MAX_FRACTION:
        warnings.append(
            f"the hypervisor took {steal_fraction:.0%} of this VM's CPU time for other VMs: "
            f"the timing depends on the neighbours - measure on a dedicated host or at a quieter time"
        )

    return LoadReport(other_cores, own_utilisation, steal_fraction, warnings=tuple(warnings), **common)


# --------------------------------------------------------------------------------------------------
# Watching
# --------------------------------------------------------------------------------------------------


def check_machine(threads: int, *, interval_s: float = 0.25, check_utilisation: bool = False) -> LoadReport:
    """Look at the machine before measuring: sample, sleep ``interval_s``, sample, judge.

    Own utilisation is not judged by default (this process sleeps through the window).

    Parameters
    ----------
    threads : int
        Threads the coming measurement will use.
    interval_s : float
        How long to watch, in seconds.
    check_utilisation : bool
        Judge own utilisation too (only meaningful if the caller works during the window).

    Returns
    -------
    LoadReport
    """
    before = cpu_sample()
    time.sleep(interval_s)
    after = cpu_sample()
    return judge_load(
        before,
        after,
        threads=threads,
        usable_cores=_usable_cores(),
        quota_cores=cgroup_cpu_quota_cores(),
        load_avg_1min=_load_avg_1min(),
        check_utilisation=check_utilisation,
    )


class LoadMonitor:
    """Watch the machine during a measurement.

    ``with LoadMonitor(threads=t) as monitor: ...work...``, then ``monitor.report`` is the
    :class:`LoadReport` of the window.

    Parameters
    ----------
    threads : int
        Threads the measurement uses.
    check_utilisation : bool
        Judge whether our threads got their CPU time (default). Pass False for a CUDA step, where the
        host thread mostly waits.
    """

    def __init__(self, threads: int, *, check_utilisation: bool = True):
        self.threads = threads
        self.check_utilisation = check_utilisation
        self.report: Optional[LoadReport] = None
        self._usable_cores = _usable_cores()
        self._quota_cores = cgroup_cpu_quota_cores()
        self._before: Optional[CpuSample] = None

    def __enter__(self) -> "LoadMonitor":
        self.report = None
        self._before = cpu_sample()
        return self

    def __exit__(self, *exc_info) -> None:
        after = cpu_sample()
        self.report = judge_load(
            self._before,
            after,
            threads=self.threads,
            usable_cores=self._usable_cores,
            quota_cores=self._quota_cores,
            load_avg_1min=_load_avg_1min(),
            check_utilisation=self.check_utilisation,
        )
