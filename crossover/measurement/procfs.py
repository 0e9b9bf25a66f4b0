"""Reading the machine's CPU counters: ``/proc/stat``, the affinity mask, the load average, the
cgroup CPU quota and the CPU frequency and governor (Linux; elsewhere the samples say they are
unavailable).

Parsing is kept apart from reading (:func:`parse_proc_stat`, :func:`parse_cgroup_quota`,
:func:`parse_cpuinfo_mhz` take the files' text), so it is tested on synthetic text; the readers take
the files' locations as arguments, so they are tested on a fake tree. :mod:`crossover.measurement.machine_load` judges
what these return; :mod:`crossover.measurement.environment` records them with every result.
"""

from __future__ import annotations

import math
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Optional

__all__ = ["CpuSample", "cpu_sample", "parse_proc_stat", "parse_cgroup_quota", "cgroup_cpu_quota_cores",
           "usable_cores", "load_avg_1min", "clock_tick_s", "parse_cpuinfo_mhz", "cpu_frequency"]

#: Fields of a ``/proc/stat`` cpu line, in order (proc(5)); ``guest`` and ``guest_nice`` are already
#: counted inside ``user`` and ``nice``.
_STAT_FIELDS = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal", "guest", "guest_nice")
_BUSY_FIELDS = ("user", "nice", "system", "irq", "softirq", "steal")


@dataclass(frozen=True)
class CpuSample:
    """A snapshot of CPU counters.

    Attributes
    ----------
    wall_s : float
        ``time.monotonic()`` when the sample was taken.
    busy_s : float
        Non-idle CPU seconds summed over the CPUs this process may run on (``os.sched_getaffinity``),
        from the per-CPU lines of ``/proc/stat``: user + nice + system + irq + softirq + steal (idle
        and iowait excluded, guest already inside user).
    steal_s : float
        Steal seconds (CPU time the hypervisor gave to another VM) over the same CPUs.
    own_cpu_s : float
        This process's CPU time, all threads (``time.process_time()``).
    available : bool
        False where ``/proc/stat`` cannot be read (not Linux): then nothing is judged.
    cpus : int
        How many CPUs were summed into ``busy_s`` and ``steal_s`` (0: unknown, the usable cores are
        assumed).
    """

    wall_s: float
    busy_s: float
    steal_s: float
    own_cpu_s: float
    available: bool
    cpus: int = 0


def parse_proc_stat(text: str, cpus: Optional[Iterable[int]] = None) -> tuple[int, int, int]:
    """Sum busy and steal ticks over some CPUs' lines of a ``/proc/stat`` text.

    Parameters
    ----------
    text : str
        The contents of ``/proc/stat``.
    cpus : iterable of int, optional
        CPU numbers to sum over (``cpuN`` lines); all per-CPU lines when omitted.

    Returns
    -------
    busy_ticks, steal_ticks, cpus_found : tuple of int
        In clock ticks (``os.sysconf("SC_CLK_TCK")`` per second); ``cpus_found`` is how many lines
        were summed.
    """
    wanted = None if cpus is None else set(cpus)
    busy_ticks = steal_ticks = found = 0
    for line in text.splitlines():
        if not line.startswith("cpu") or line.startswith("cpu "):
            continue
        name, *numbers = line.split()
        try:
            cpu = int(name[3:])
        except ValueError:
            continue
        if wanted is not None and cpu not in wanted:
            continue
        values = dict(zip(_STAT_FIELDS, (int(n) for n in numbers)))
        busy_ticks += sum(values.get(field, 0) for field in _BUSY_FIELDS)
        steal_ticks += values.get("steal", 0)
        found += 1
    return busy_ticks, steal_ticks, found


def _affinity() -> Optional[set[int]]:
    try:
        return set(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return None


def usable_cores() -> int:
    """CPUs this process may run on (its affinity mask; all CPUs where there is none)."""
    affinity = _affinity()
    return len(affinity) if affinity else (os.cpu_count() or 1)


def load_avg_1min() -> float:
    """The 1-minute load average, ``nan`` where unknown."""
    try:
        return float(os.getloadavg()[0])
    except (AttributeError, OSError):
        return math.nan


def cpu_sample(stat_path: str | Path = "/proc/stat") -> CpuSample:
    """Read the CPU counters now.

    Parameters
    ----------
    stat_path : str or Path
        The kernel's CPU statistics (``/proc/stat``); an argument only so tests can point elsewhere.

    Returns
    -------
    CpuSample
        ``available=False`` (and zero counters) when the file cannot be read or holds no matching
        per-CPU line.
    """
    wall_s = time.monotonic()
    own_cpu_s = time.process_time()
    try:
        text = Path(stat_path).read_text()
        tick_hz = os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, AttributeError):
        return CpuSample(wall_s, 0.0, 0.0, own_cpu_s, available=False)
    busy_ticks, steal_ticks, found = parse_proc_stat(text, _affinity())
    if found == 0 or tick_hz <= 0:
        return CpuSample(wall_s, 0.0, 0.0, own_cpu_s, available=False)
    return CpuSample(wall_s, busy_ticks / tick_hz, steal_ticks / tick_hz, own_cpu_s, available=True, cpus=found)


def parse_cgroup_quota(text: str, period_text: Optional[str] = None) -> float:
    """Cores' worth of CPU a cgroup quota allows, from its files' contents.

    Parameters
    ----------
    text : str
        cgroup v2 ``cpu.max`` (``"QUOTA PERIOD"`` or ``"max PERIOD"``) when ``period_text`` is None,
        else cgroup v1 ``cpu.cfs_quota_us`` (``-1``: no quota).
    period_text : str, optional
        cgroup v1 ``cpu.cfs_period_us``.

    Returns
    -------
    float
        quota / period, ``math.inf`` when there is no quota or the text cannot be parsed.
    """
    try:
        if period_text is None:
            parts = text.split()
            quota, period = parts[0], (parts[1] if len(parts) > 1 else "100000")
            if quota == "max":
                return math.inf
            quota_us, period_us = float(quota), float(period)
        else:
            quota_us, period_us = float(text.strip()), float(period_text.strip())
    except (ValueError, IndexError):
        return math.inf
    if quota_us <= 0 or period_us <= 0:
        return math.inf
    return quota_us / period_us


def _own_cgroup_paths(proc_cgroup: Path) -> tuple[str, dict[str, str]]:
    """This process's cgroup v2 path and its v1 paths by controller, from ``/proc/self/cgroup``."""
    v2, v1 = "/", {}
    try:
        for line in proc_cgroup.read_text().splitlines():
            hierarchy, controllers, path = line.split(":", 2)
            if hierarchy == "0" and controllers == "":
                v2 = path or "/"
            for controller in controllers.split(","):
                v1[controller] = path or "/"
    except (OSError, ValueError):
        pass
    return v2, v1


def _ancestors(base: Path, relative: str) -> list[Path]:
    """``base/relative`` and each of its parents up to ``base``, innermost first."""
    parts = [p for p in relative.strip("/").split("/") if p and p != ".."]
    return [base.joinpath(*parts[:n]) for n in range(len(parts), -1, -1)]


def cgroup_cpu_quota_cores(
    root: str | Path = "/sys/fs/cgroup", proc_cgroup: str | Path = "/proc/self/cgroup"
) -> float:
    """The CPU quota of this process's cgroup, in cores (a container limited to 1.5 CPUs gives 1.5).

    Reads cgroup v2 ``cpu.max``, else cgroup v1 ``cpu.cfs_quota_us`` / ``cpu.cfs_period_us``, in this
    process's own cgroup (from ``/proc/self/cgroup``) and each of its ancestors, and returns the
    tightest quota found. Inside a container the own cgroup is usually the mount's root.

    Parameters
    ----------
    root : str or Path
        Where the cgroup file system is mounted.
    proc_cgroup : str or Path
        This process's cgroup membership file.

    Returns
    -------
    float
        quota / period, ``math.inf`` when no quota is set or nothing can be read.
    """
    root, proc_cgroup = Path(root), Path(proc_cgroup)
    v2_path, v1_paths = _own_cgroup_paths(proc_cgroup)
    quotas = [math.inf]
    for directory in _ancestors(root, v2_path):
        try:
            quotas.append(parse_cgroup_quota((directory / "cpu.max").read_text()))
        except OSError:
            pass
    for mount in ("cpu", "cpu,cpuacct", "cpuacct,cpu"):
        for directory in _ancestors(root / mount, v1_paths.get("cpu", "/")):
            try:
                quota = (directory / "cpu.cfs_quota_us").read_text()
                period = (directory / "cpu.cfs_period_us").read_text()
            except OSError:
                continue
            quotas.append(parse_cgroup_quota(quota, period))
    return min(quotas)


def clock_tick_s() -> float:
    """Seconds per ``/proc/stat`` clock tick (``1 / SC_CLK_TCK``)."""
    try:
        return 1.0 / os.sysconf("SC_CLK_TCK")
    except (AttributeError, ValueError, OSError):  # pragma: no cover - not POSIX
        return 0.01


def parse_cpuinfo_mhz(text: str) -> list[float]:
    """Every ``cpu MHz`` value of a ``/proc/cpuinfo`` text (one per logical CPU; x86 lists them)."""
    found = []
    for line in text.splitlines():
        name, _, value = line.partition(":")
        if name.strip() == "cpu MHz":
            try:
                found.append(float(value))
            except ValueError:
                continue
    return found


def _read_number(path: Path) -> Optional[float]:
    try:
        return float(path.read_text().strip())
    except (OSError, ValueError):
        return None


def cpu_frequency(sys_cpu: str | Path = "/sys/devices/system/cpu", cpuinfo: str | Path = "/proc/cpuinfo") -> dict:
    """The CPUs' clock and frequency governor, as far as the machine lets them be read.

    From cpufreq (``SYS_CPU/cpuN/cpufreq``: ``scaling_cur_freq``, ``cpuinfo_max_freq`` else
    ``scaling_max_freq``, ``scaling_governor``) where readable, else the current clock from
    ``/proc/cpuinfo``'s ``cpu MHz`` lines (no maximum nor governor there). Virtual machines often
    expose neither cpufreq nor a governor.

    Parameters
    ----------
    sys_cpu : str or Path
        The kernel's CPU directory; an argument so tests can point at a fake tree.
    cpuinfo : str or Path
        The kernel's CPU description.

    Returns
    -------
    dict
        ``cpu_freq_mhz`` (mean current clock over the CPUs that report one), ``cpu_freq_max_mhz``
        (the highest maximum), ``cpu_governor`` (the governor, or the distinct governors joined by
        ``","``) and ``cpu_freq_source`` (``"cpufreq"``, ``"cpuinfo"``, or ``"cpufreq+cpuinfo"``: the
        maximum from cpufreq, the current clock from cpuinfo); each None where unreadable.
    """
    current_khz, max_khz, governors = [], [], set()
    for cpu in sorted(Path(sys_cpu).glob("cpu[0-9]*")):
        if not cpu.name[3:].isdigit():
            continue
        freq = cpu / "cpufreq"
        value = _read_number(freq / "scaling_cur_freq")
        if value is not None:
            current_khz.append(value)
        value = _read_number(freq / "cpuinfo_max_freq")
        value = _read_number(freq / "scaling_max_freq") if value is None else value
        if value is not None:
            max_khz.append(value)
        try:
            governors.add((freq / "scaling_governor").read_text().strip())
        except OSError:
            pass
    governors.discard("")
    out = {
        "cpu_freq_mhz": round(sum(current_khz) / len(current_khz) / 1000, 1) if current_khz else None,
        "cpu_freq_max_mhz": round(max(max_khz) / 1000, 1) if max_khz else None,
        "cpu_governor": ",".join(sorted(governors)) or None,
        "cpu_freq_source": "cpufreq" if current_khz or max_khz else None,
    }
    if out["cpu_freq_mhz"] is None:
        try:
            mhz = parse_cpuinfo_mhz(Path(cpuinfo).read_text())
        except OSError:
            mhz = []
        if mhz:
            out["cpu_freq_mhz"] = round(sum(mhz) / len(mhz), 1)
            out["cpu_freq_source"] = "cpufreq+cpuinfo" if out["cpu_freq_source"] else "cpuinfo"
    return out
