"""The environment a measurement was taken in: machine, CPU, GPU, library versions, commit."""

from __future__ import annotations

import datetime as _dt
import os
import platform
import re
import socket
import subprocess
from pathlib import Path

import torch

from .procfs import usable_cores  # CPUs this process may run on (one home: procfs)

__all__ = ["environment", "cpu_model_name", "machine_label", "available_memory_bytes", "cuda_available", "usable_cores"]


def cuda_available() -> bool:
    """True when a CUDA device can be used by this torch build."""
    return torch.cuda.is_available()


def cpu_model_name() -> str:
    """The CPU's marketing name, e.g. ``"AMD EPYC 7R13"``."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown CPU"


def _slug(text: str) -> str:
    text = re.sub(r"\((r|tm)\)|cpu|processor|@.*$", "", text.lower())
    return re.sub(r"[^a-z0-9]+", "-", text).strip("-") or "unknown"


def machine_label() -> str:
    """A default label for this machine, used as its results directory name.

    ``$CROSSOVER_MACHINE`` when set; otherwise the GPU's name with the host's core count on a CUDA
    machine (``nvidia-h100-80gb-hbm3-16c``), or the CPU's name and core count (``amd-epyc-2c``).
    """
    label = os.environ.get("CROSSOVER_MACHINE")
    if label:
        return _slug(label)
    if cuda_available():
        return f"{_slug(torch.cuda.get_device_name(0))}-{usable_cores()}c"
    return f"{_slug(cpu_model_name())}-{usable_cores()}c"


def available_memory_bytes(device: str) -> int:
    """Memory that can still be allocated on ``device`` (``"cpu"`` or ``"cuda"``), in bytes."""
    if device == "cuda":
        free_bytes, _total = torch.cuda.mem_get_info()
        return int(free_bytes)
    available = None
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                available = int(line.split()[1]) * 1024
    except OSError:
        pass
    if available is None:
        available = int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_AVPHYS_PAGES"))
    try:  # a container's cgroup (v2) limit binds before the machine's memory does
        limit = Path("/sys/fs/cgroup/memory.max").read_text().strip()
        used = int(Path("/sys/fs/cgroup/memory.current").read_text().strip())
        if limit != "max":
            available = min(available, int(limit) - used)
    except (OSError, ValueError):
        pass
    return available


def _git(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=Path(__file__).resolve().parent, capture_output=True, text=True,
                          timeout=5)


def _git_commit() -> str:
    try:
        out = _git("rev-parse", "--short=12", "HEAD")
        commit = out.stdout.strip()
        if out.returncode != 0 or not commit:
            return "unknown"
        dirty = _git("status", "--porcelain", "--untracked-files=no").stdout.strip()
        return commit + ("-dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def environment() -> dict:
    """Everything about this machine and software that a result needs to be interpreted.

    Returns
    -------
    dict
        JSON-serialisable: machine label, host name, CPU model, logical and usable cores, torch's
        intra-op thread count, memory, OS, Python, torch, numpy versions, CUDA/cuDNN versions and
        GPU name, capability and memory where CUDA is present, load average, date, git commit.
    """
    import numpy

    env = {
        "machine": machine_label(),
        "hostname": socket.gethostname(),
        "cpu_model": cpu_model_name(),
        "cpu_logical_cores": os.cpu_count(),
        "cpu_usable_cores": usable_cores(),
        "torch_num_threads": torch.get_num_threads(),
        "torch_num_interop_threads": torch.get_num_interop_threads(),
        "memory_total_bytes": _memory_total_bytes(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "numpy": numpy.__version__,
        "torch_parallel_info": _first_lines(torch.__config__.parallel_info(), 6),
        "cuda_available": cuda_available(),
        "date_utc": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "git_commit": _git_commit(),
    }
    try:
        env["load_avg_1min"] = os.getloadavg()[0]
    except OSError:
        pass
    if cuda_available():
        props = torch.cuda.get_device_properties(0)
        env.update(
            {
                "gpu_name": torch.cuda.get_device_name(0),
                "gpu_count": torch.cuda.device_count(),
                "gpu_capability": ".".join(map(str, torch.cuda.get_device_capability(0))),
                "gpu_memory_bytes": int(props.total_memory),
                "gpu_multiprocessors": int(props.multi_processor_count),
                "cuda_runtime": torch.version.cuda,
                "cudnn": torch.backends.cudnn.version(),
                "gpu_driver": _nvidia_driver_version(),
            }
        )
    return env


def _first_lines(text: str, n: int) -> str:
    return "\n".join(text.strip().splitlines()[:n])


def _memory_total_bytes() -> int:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def _nvidia_driver_version() -> str:
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=10,
        )
        return out.stdout.strip().splitlines()[0] if out.returncode == 0 and out.stdout.strip() else "unknown"
    except (OSError, subprocess.SubprocessError, IndexError):
        return "unknown"
