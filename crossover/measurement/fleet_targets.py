"""Where a fleet's jobs run: targets (a partition or a node kind each) read from a small TOML file, and
the submitit parameters each becomes.

A targets file::

    # one [[target]] per partition or node kind; every job runs alone on its node
    [[target]]
    name = "h100"                  # the job's name in the fleet (and its key in DIR/fleet.json)
    partition = "gpu-h100"         # SLURM partition (default: the cluster's)
    gpus = 1                       # GPUs per node (default 0)
    cpus = 16                      # CPUs of the job's one task (default: SLURM's)
    time_limit_min = 120           # the job's time limit in minutes (default 240)
    mem_gb = 64                    # memory per node (default: SLURM's)
    usd_per_hour = 3.00            # the node's price, all of it (its host CPU comes with the GPU)
    source = "list price of an H100 node at <provider>, 2026-11"   # where the price comes from
    slurm_constraint = "h100"      # any slurm_* key: passed to submitit's update_parameters as it is
    slurm_account = "my-project"

    [[target]]
    name = "cpu"
    partition = "cpu"
    cpus = 32
    usd_per_hour = 1.20
    source = "assumed: replace with your cluster's charge per node-hour"

``usd_per_hour`` and ``source`` are the price fields of ``crossover/prices.toml``: a target's price
prices its machine kind in ``crossover fleet cost``. A price without a source is refused.

:func:`executor_parameters` turns a target into the keyword arguments of
``submitit.AutoExecutor.update_parameters``: the generic ones (``timeout_min``, ``gpus_per_node``,
``cpus_per_task``, ``mem_gb``, one node, one task) and the SLURM-only ones prefixed ``slurm_``
(``slurm_partition``, ``slurm_exclusive=True`` unless the file says otherwise, and every ``slurm_*`` key
of the target), which submitit ignores on the local and debug executors. :func:`check_parameters`
has submitit validate them without a cluster.
"""

from __future__ import annotations

import math
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional, Union

from ..errors import ConfigError

__all__ = ["Target", "DEFAULT_TARGET", "DEFAULT_TIME_LIMIT_MIN", "load_targets", "parse_targets",
           "executor_parameters", "check_parameters", "import_submitit", "SUBMITIT_MISSING"]

#: A job's time limit when its target gives none (minutes).
DEFAULT_TIME_LIMIT_MIN = 240
_KEYS = {"name", "partition", "gpus", "cpus", "time_limit_min", "mem_gb", "usd_per_hour", "source", "url"}
#: What ``crossover fleet`` says when submitit is not installed.
SUBMITIT_MISSING = "crossover fleet needs submitit: pip install 'crossover[cluster]' (or pip install submitit)"


def import_submitit():
    """The ``submitit`` module, or :class:`ConfigError` (:data:`SUBMITIT_MISSING`) where it is not installed.
    The only place crossover imports it."""
    try:
        import submitit
    except ImportError:
        raise ConfigError(SUBMITIT_MISSING) from None
    return submitit


@dataclass(frozen=True)
class Target:
    """A partition or node kind the fleet's jobs run on (see the module docstring for each field)."""

    name: str
    partition: Optional[str] = None
    gpus: int = 0
    cpus: Optional[int] = None
    time_limit_min: int = DEFAULT_TIME_LIMIT_MIN
    mem_gb: Optional[float] = None
    usd_per_hour: Optional[float] = None
    source: Optional[str] = None
    url: Optional[str] = None
    slurm: dict = field(default_factory=dict)  # the slurm_* keys, prefix included

    def to_json(self) -> dict:
        return {k: v for k, v in self.__dict__.items()}


#: The one target of a fleet given no targets file: the scheduler's default node.
DEFAULT_TARGET = Target("node")


def _positive(value, integer: bool) -> bool:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    return (isinstance(value, int) if integer else math.isfinite(value)) and value > 0


def parse_targets(data: dict, source: str = "<targets>") -> tuple:
    """Validate a targets file given as a dict (parsed TOML).

    Raises
    ------
    ConfigError
        One line naming the file, the target and what is wrong.
    """
    def fail(message: str):
        raise ConfigError(f"{source}: {message}")

    if set(data) - {"target"}:
        fail(f"unknown key(s) {sorted(set(data) - {'target'})}; a targets file holds [[target]] tables")
    tables = data.get("target")
    if not isinstance(tables, list) or not tables:
        fail("needs at least one [[target]] table")
    targets, names = [], set()
    for number, table in enumerate(tables, 1):
        name = table.get("name") if isinstance(table, dict) else None
        if not isinstance(name, str) or not name or not name.replace("-", "").replace("_", "").isalnum():
            fail(f"target #{number} needs a 'name' of letters, digits, '-' or '_'")
        where = f"target {name!r}"
        if name in names:
            fail(f"{where} is given twice")
        names.add(name)
        unknown = sorted(k for k in table if k not in _KEYS and not k.startswith("slurm_"))
        if unknown:
            fail(f"{where}: unknown key(s) {unknown}; expected some of {sorted(_KEYS)} or slurm_* keys")
        for key, integer in (("gpus", True), ("cpus", True), ("time_limit_min", True), ("mem_gb", False),
                             ("usd_per_hour", False)):
            if key in table and not (key == "gpus" and table[key] == 0) and not _positive(table[key], integer):
                fail(f"{where}: {key} must be a positive {'integer' if integer else 'number'}, got {table[key]!r}")
        if "usd_per_hour" in table and not isinstance(table.get("source"), str):
            fail(f"{where}: a price (usd_per_hour) needs its source: say where it comes from, or that it is assumed")
        slurm = {k: v for k, v in table.items() if k.startswith("slurm_")}
        fields = {k: v for k, v in table.items() if k in _KEYS}
        targets.append(Target(**fields, slurm=slurm))
    return tuple(targets)


def load_targets(path: Union[str, Path]) -> tuple:
    """Read and validate a targets file (see the module docstring)."""
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"targets file {path} does not exist") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError, IsADirectoryError) as exc:
        raise ConfigError(f"{path} is not a valid TOML file: {exc}") from None
    return parse_targets(data, str(path))


def executor_parameters(target: Target, job_name: Optional[str] = None) -> dict:
    """The keyword arguments of ``submitit.AutoExecutor.update_parameters`` for ``target``'s jobs.

    One node and one task per job, the target's time limit, GPUs, CPUs and memory as submitit's
    generic parameters (which each executor translates: ``timeout_min`` becomes SLURM's ``time``,
    ``gpus_per_node`` its ``gpus_per_node``), and the SLURM-only ones prefixed ``slurm_``: the
    partition, ``slurm_exclusive=True`` (a timing never shares its node; a target may set it false)
    and the target's own ``slurm_*`` keys.
    """
    parameters = {"name": job_name or f"crossover-{target.name}", "timeout_min": int(target.time_limit_min),
                  "nodes": 1, "tasks_per_node": 1}
    if target.gpus:
        parameters["gpus_per_node"] = int(target.gpus)
    if target.cpus:
        parameters["cpus_per_task"] = int(target.cpus)
    if target.mem_gb:
        parameters["mem_gb"] = float(target.mem_gb)
    if target.partition:
        parameters["slurm_partition"] = target.partition
    parameters["slurm_exclusive"] = True
    parameters.update(target.slurm)
    return parameters


def check_parameters(parameters: dict, folder: Union[str, Path]) -> None:
    """Have submitit check ``parameters`` without a cluster: an ``AutoExecutor`` of the debug cluster
    accepts the generic ones by type and every ``slurm_*`` name only if ``SlurmExecutor`` knows it.

    Raises
    ------
    ConfigError
        submitit's complaint, on one line.
    """
    submitit = import_submitit()
    executor = submitit.AutoExecutor(folder=str(folder), cluster="debug")
    try:
        executor.update_parameters(**parameters)
    except (NameError, AssertionError, ValueError, TypeError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ConfigError(f"submitit refuses the parameters {parameters}: {first}") from None
