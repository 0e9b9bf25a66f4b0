"""The environment a measurement was taken in: machine, CPU (clock, governor, cgroup quota), GPU,
thread settings, library versions, torch's build (``torch.utils.collect_env``, on request), commit.

The CPU's readers live in :mod:`crossover.measurement.procfs`; this module gathers them into one dict,
:func:`environment`, which ``crossover env`` prints and every sweep stores in ``metadata.json``.
"""

from __future__ import annotations

import datetime as _dt
import functools
import math
import os
import platform
import re
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Mapping, Optional

from .procfs import cgroup_cpu_quota_cores, cpu_frequency
from .procfs import usable_cores

__all__ = ["environment", "cpu_model_name", "machine_label", "available_memory_bytes", "cuda_available",
           "require_device", "device_name", "NO_CUDA", "cpu_caches", "llc_bytes", "private_cache_bytes", "gpu_l2_bytes",
           "cpu_physical_cores", "hardware_fingerprint", "scheduler_job", "thread_environment", "torch_build_info",
           "THREAD_ENV_PREFIXES", "THREAD_ENV_NAMES"]

#: Environment variables that set or steer the CPU's thread pools (OpenMP, Intel's and GNU's OpenMP
#: runtimes, MKL, OpenBLAS), recorded by prefix ...
THREAD_ENV_PREFIXES = ("OMP_", "KMP_", "GOMP_", "MKL_", "OPENBLAS_")
#: ... and by name (other BLAS thread counts; ``ATEN_CPU_CAPABILITY`` caps torch's vector kernels).
THREAD_ENV_NAMES = ("VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS", "BLIS_NUM_THREADS", "ATEN_CPU_CAPABILITY")
#: ``torch.utils.collect_env`` fields kept in :func:`torch_build_info` (it shells out to compilers,
#: ``nvidia-smi`` and pip; ``cpu_info``, lscpu's whole output, is left out: ``cpu_model`` has it).
COLLECT_ENV_FIELDS = ("os", "libc_version", "gcc_version", "clang_version", "cmake_version", "is_debug_build",
                      "cuda_compiled_version", "cuda_runtime_version", "cudnn_version", "nvidia_driver_version",
                      "nvidia_gpu_models", "cuda_module_loading", "hip_compiled_version", "is_xnnpack_available",
                      "caching_allocator_config", "pip_packages", "conda_packages")
#: Longest wait for ``torch.utils.collect_env`` before it is left out of the record.
COLLECT_ENV_TIMEOUT_S = 30.0


def cuda_available() -> bool:
    """True when a CUDA device can be used by this torch build (a CPU-only build answers without
    importing torch: :func:`crossover.measurement.torch_install.cpu_only_torch`)."""
    from .torch_install import cpu_only_torch

    if "torch" not in sys.modules and cpu_only_torch():
        return False
    import torch

    return torch.cuda.is_available()


#: What asking for CUDA where there is none says (the one message, exit status 2 from the CLI).
NO_CUDA = "device 'cuda' requested but CUDA is not available on this machine"


def require_device(device: str) -> None:
    """Raise :class:`crossover.errors.ConfigError` (:data:`NO_CUDA`) when ``device`` is CUDA and none is here."""
    from ..errors import ConfigError

    if str(device).startswith("cuda") and not cuda_available():
        raise ConfigError(NO_CUDA)


def device_name(device: str) -> str:
    """The name of ``device`` on this machine: the CPU's model, or the GPU's name (``torch.cuda``)."""
    if str(device).startswith("cuda"):
        require_device(device)
        import torch

        return torch.cuda.get_device_name(0)
    return cpu_model_name()


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
        import torch

        return f"{_slug(torch.cuda.get_device_name(0))}-{usable_cores()}c"
    return f"{_slug(cpu_model_name())}-{usable_cores()}c"


def cpu_caches(sys_cpu: Path = Path("/sys/devices/system/cpu")) -> dict:
    """The CPU's caches as the kernel lists them for CPU 0: ``{"L1d": bytes, "L1i": ..., "L2": ..., "L3": ...}``
    (empty where sysfs does not say)."""
    caches = {}
    for index in sorted((sys_cpu / "cpu0" / "cache").glob("index*")):
        try:
            level = (index / "level").read_text().strip()
            kind = (index / "type").read_text().strip()
            size = (index / "size").read_text().strip()
        except OSError:
            continue
        units = {"K": 2**10, "M": 2**20, "G": 2**30}
        number, unit = (size[:-1], size[-1]) if size[-1:] in units else (size, "")
        if not number.isdigit():
            continue
        name = f"L{level}" + {"Data": "d", "Instruction": "i"}.get(kind, "")
        caches[name] = int(number) * units.get(unit, 1)
    return caches


def llc_bytes(default: int = 32 * 2**20) -> int:
    """The last-level cache's size (L3, else L2) as sysfs lists it for CPU 0, or ``default``."""
    caches = cpu_caches()
    return caches.get("L3") or caches.get("L2") or default


def private_cache_bytes(default: int = 2**19) -> int:
    """One core's private (L2) cache as sysfs lists it for CPU 0, or ``default``."""
    return cpu_caches().get("L2") or default


def gpu_l2_bytes(default: int = 50 * 2**20) -> int:
    """The first CUDA device's L2 cache (what "cold" weights must exceed on a GPU), or ``default``."""
    import torch

    return int(getattr(torch.cuda.get_device_properties(0), "L2_cache_size", 0) or default)


def cpu_physical_cores(sys_cpu: Path = Path("/sys/devices/system/cpu")) -> Optional[int]:
    """The physical cores the kernel lists (distinct package and core ids over its CPUs), or None where
    sysfs does not say. Fewer than the logical cores: two hardware threads share a core (its caches and
    execution units), so 16 threads on 8 cores are not 16 cores' worth, and a thread spinning on one
    slows its sibling."""
    cores = set()
    for cpu in sys_cpu.glob("cpu[0-9]*"):
        try:
            cores.add(((cpu / "topology" / "physical_package_id").read_text().strip(),
                       (cpu / "topology" / "core_id").read_text().strip()))
        except OSError:
            continue
    return len(cores) or None


def hardware_fingerprint() -> dict:
    """What makes this node's hardware what it is, and a digest of it.

    Returns
    -------
    dict
        ``cpu_model``, ``cpu_logical_cores``, ``caches`` (:func:`cpu_caches`), and on a CUDA machine
        ``gpu_name``, ``gpu_uuid`` (this very GPU) and ``gpu_driver``; ``kind_digest`` hashes the fields
        two nodes of one kind share (everything but the GPU's UUID), so nodes of one partition agree on
        it and a node of another hardware does not; ``node_digest`` adds the host name and GPU UUID.
    """
    import hashlib
    import json

    info = {"cpu_model": cpu_model_name(), "cpu_logical_cores": os.cpu_count(), "caches": cpu_caches()}
    if cuda_available():
        import torch

        props = torch.cuda.get_device_properties(0)
        uuid = getattr(props, "uuid", None)
        info.update(gpu_name=torch.cuda.get_device_name(0), gpu_uuid=None if uuid is None else str(uuid),
                    gpu_driver=_nvidia_driver_version())

    def digest(fields: dict) -> str:
        return hashlib.sha256(json.dumps(fields, sort_keys=True).encode()).hexdigest()[:12]

    kind = {k: v for k, v in info.items() if k != "gpu_uuid"}
    info["kind_digest"] = digest(kind)
    info["node_digest"] = digest({**info, "hostname": socket.gethostname()})
    return info


#: Environment variables naming the scheduler's job a process runs in, by scheduler (first found wins).
SCHEDULER_JOB_VARIABLES = (
    ("slurm", ("SLURM_ARRAY_JOB_ID", "SLURM_ARRAY_TASK_ID")),
    ("slurm", ("SLURM_JOB_ID",)),
    ("submitit-local", ("SUBMITIT_LOCAL_JOB_ID",)),
    ("submitit-debug", ("SUBMITIT_DEBUG_JOB_ID",)),
)


def scheduler_job(environ: Optional[Mapping[str, str]] = None) -> Optional[dict]:
    """The scheduler job this process runs in: ``{"scheduler": "slurm", "job_id": "1234_5"}`` (an array
    task as ``<array id>_<index>``, as submitit names it), or None outside one."""
    environ = os.environ if environ is None else environ
    for scheduler, names in SCHEDULER_JOB_VARIABLES:
        if all(environ.get(name) for name in names):
            return {"scheduler": scheduler, "job_id": "_".join(environ[name] for name in names)}
    return None


def available_memory_bytes(device: str) -> int:
    """Memory that can still be allocated on ``device`` (``"cpu"`` or ``"cuda"``), in bytes."""
    if device == "cuda":
        import torch

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


def thread_environment(environ: Optional[Mapping[str, str]] = None) -> dict:
    """The thread-pool environment variables that are set (:data:`THREAD_ENV_PREFIXES`, :data:`THREAD_ENV_NAMES`).

    Parameters
    ----------
    environ : mapping, optional
        The environment to read (``os.environ`` by default).

    Returns
    -------
    dict
        Name -> value, sorted by name; empty when none is set.
    """
    environ = os.environ if environ is None else environ
    return {name: environ[name] for name in sorted(environ)
            if name.startswith(THREAD_ENV_PREFIXES) or name in THREAD_ENV_NAMES}


def _collect_env_value(name: str, value):
    """One ``collect_env`` field made compact: "N/A"/empty -> None, "True"/"False" -> bool, lists split."""
    if isinstance(value, str):
        value = value.strip()
        if value in ("", "N/A", "None", "Could not collect"):
            return None
        if value in ("True", "False"):
            return value == "True"
        if name in ("pip_packages", "conda_packages"):
            return value.splitlines()
    return value if value is None or isinstance(value, (bool, int, float, str, list, dict)) else str(value)


def _summarise_collect_env(info) -> dict:
    fields = info._asdict() if hasattr(info, "_asdict") else dict(info)
    return {name: _collect_env_value(name, fields.get(name)) for name in COLLECT_ENV_FIELDS}


@functools.lru_cache(maxsize=1)
def torch_build_info(timeout_s: float = COLLECT_ENV_TIMEOUT_S) -> dict:
    """A compact summary of ``torch.utils.collect_env.get_env_info()`` (cached per process).

    ``collect_env`` runs compilers, ``nvidia-smi`` and pip in subprocesses (about 1 s on a 2-core
    VM), so :func:`environment` adds it only when asked (``full=True``: every sweep's metadata and
    ``crossover env --full``). It runs in a background thread: a failure or a wait past ``timeout_s``
    leaves an ``error`` instead of the fields, never an exception.

    Returns
    -------
    dict
        The :data:`COLLECT_ENV_FIELDS` (None where not applicable; ``pip_packages`` a list) and
        ``collect_s``, the seconds it took; or ``{"error": message, "collect_s": ...}``.
    """
    box = {}

    def collect():
        try:
            from torch.utils import collect_env

            box["info"] = _summarise_collect_env(collect_env.get_env_info())
        except Exception as error:  # noqa: BLE001 - a diagnostic must not break a sweep
            box["error"] = f"torch.utils.collect_env failed: {type(error).__name__}: {error}"

    start_s = time.perf_counter()
    worker = threading.Thread(target=collect, name="collect_env", daemon=True)
    worker.start()
    worker.join(timeout_s)
    collect_s = round(time.perf_counter() - start_s, 3)
    if worker.is_alive():
        return {"error": f"torch.utils.collect_env took more than {timeout_s:g} s; left out", "collect_s": collect_s}
    if "error" in box:
        return {"error": box["error"], "collect_s": collect_s}
    return {**box["info"], "collect_s": collect_s}


def environment(full: bool = False) -> dict:
    """Everything about this machine and software that a result needs to be interpreted.

    Parameters
    ----------
    full : bool
        Add ``torch_build``, the summary of ``torch.utils.collect_env`` (:func:`torch_build_info`,
        about a second: it shells out). Sweeps record it; ``crossover env`` shows it with ``--full``.

    Returns
    -------
    dict
        JSON-serialisable: machine label, host name, CPU model, logical and usable cores, the
        cgroup's CPU quota in cores (None: no quota), the CPU clock and maximum in MHz and the
        frequency governor (None where unreadable), torch's intra-op thread count, the thread-pool
        environment variables that are set (``thread_env``), memory, OS, Python, torch, numpy
        versions, CUDA/cuDNN versions and GPU name, capability and memory where CUDA is present,
        load average, date, git commit, the scheduler job it runs in (``scheduler_job``, None outside
        one: :func:`scheduler_job`) and the node's ``hardware`` (:func:`hardware_fingerprint`). Results written before a field existed simply lack it.
    """
    import numpy
    import torch

    quota_cores = cgroup_cpu_quota_cores()
    env = {
        "machine": machine_label(),
        "hostname": socket.gethostname(),
        "cpu_model": cpu_model_name(),
        "cpu_logical_cores": os.cpu_count(),
        "cpu_usable_cores": usable_cores(),
        "cpu_physical_cores": cpu_physical_cores(),
        "cgroup_cpu_quota_cores": None if math.isinf(quota_cores) else round(quota_cores, 3),
        **cpu_frequency(),
        "thread_env": thread_environment(),
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
        "scheduler_job": scheduler_job(),
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
    env["hardware"] = hardware_fingerprint()
    if full:
        env["torch_build"] = torch_build_info()
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
