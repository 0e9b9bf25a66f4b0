"""The reference study's choices, in one place: which rows form the baseline, which machine is the
host, how the baseline series are fitted (statistic, bootstrap size, seeds).

The paper's numbers (:mod:`crossover.paper.numbers`) and its figures (:mod:`crossover.plots.figures`) read
the same results the same way through these functions, so the text and the figures quote the same
fits and intervals:

- :func:`main_runs`: per machine and device, the one results directory holding most of its points;
- :func:`baseline_rows`: the :data:`BASELINE` setting at each device's usual thread count;
- :func:`host_machine`: the machine whose CPU and GPU were both measured;
- :func:`assign_roles`: the series by role (``Vm``, ``Host``, ``Cuda``, ``VmB``, ...);
- :func:`fit_baseline`: each role's baseline series fitted with :data:`PAPER_STATISTIC` and
  :data:`N_BOOT` bootstrap resamples, seeded by the series' label
  (:func:`crossover.fit.series_fit.series_seed`, as every entry point seeds it);
- :func:`prefetching` and :func:`prefetch_baselines`: the fits a caller will ask :func:`fit_baseline`
  for, started at once in one pool of processes (the paper's numbers ask for some twenty series in
  six calls: fitted call by call, two processes idle while one fits a slow series).
"""

from __future__ import annotations

import contextlib
import hashlib
from typing import Optional, Sequence

import numpy as np
import pandas as pd

from ..fit.all_series import fitting_pool
from ..fit.series_fit import fit_series, series_seed
from ..fit.validation import candidate_models

__all__ = [
    "BASELINE", "ANCHOR", "N_BOOT", "PAPER_STATISTIC", "ROLES",
    "main_runs", "baseline_rows", "host_machine", "assign_roles", "fit_baseline", "prefetching",
    "prefetch_baselines",
]

#: The setting the paper's main fits and crossovers use (besides each device's usual thread count).
BASELINE = dict(workload="forward", mode="eager", dtype="float32", regime="latency", transfer="device")
#: The anchor configuration of every sweep (DESIGN: defaults when an axis is not swept).
ANCHOR = dict(d_model=128, n_layers=128, batch_size=1)
#: Bootstrap resamples per fit of the study (the paper's intervals and the figures' crossovers).
N_BOOT = 100
#: The statistic the paper's (and its figures') fits read: the median of rounds, as in the first
#: edition, whose text compares it with the 10th percentile (the tool's default) where that matters;
#: ``crossover predict --statistic median`` quotes the same fits.
PAPER_STATISTIC = "median"
#: Roles the paper's text refers to: ``Vm`` the CPU of a machine without a GPU, ``Host`` the CPU of
#: the host machine (:func:`host_machine`), ``Cuda`` its GPU.
ROLES = ("Vm", "Host", "Cuda")


def main_runs(frame: pd.DataFrame) -> pd.DataFrame:
    """Per (machine, device), the rows of the results directory holding most of its points (so a
    quick run beside a paper run of the same machine is not mixed in)."""
    if frame.empty or "results_dir" not in frame:
        return frame
    keep = []
    for _, rows in frame.groupby(["machine", "device"], sort=True):
        best = rows["results_dir"].value_counts().idxmax()
        keep.append(rows[rows["results_dir"] == best])
    return pd.concat(keep, ignore_index=True)


def usual_threads(frame: pd.DataFrame) -> dict:
    """(machine, device) -> its most frequent thread count (-1 for rows without one)."""
    out = {}
    for (machine, device), rows in frame.groupby(["machine", "device"]):
        threads = rows["threads"].astype("float").fillna(-1)
        out[(machine, device)] = threads.value_counts().idxmax()
    return out


def baseline_rows(frame: pd.DataFrame, *, free: Sequence[str] = (), **override) -> pd.DataFrame:
    """Rows at :data:`BASELINE` (with ``override``) at each device's usual thread count; the
    columns named in ``free`` may take any value (``free=("mode",)``: every execution mode).

    Idempotent: the baseline rows of baseline rows are the same rows.
    """
    if frame.empty:
        return frame
    wanted = {k: v for k, v in {**BASELINE, **override}.items() if k not in free}
    mask = np.ones(len(frame), bool)
    for column, value in wanted.items():
        mask &= (frame[column] == value).to_numpy()
    usual = usual_threads(frame)
    threads = frame["threads"].astype("float").fillna(-1).to_numpy()
    mask &= np.array([threads[i] == usual[(m, d)] for i, (m, d) in enumerate(zip(frame["machine"], frame["device"]))])
    return frame[mask]


def _is_gpu(devices: pd.Series) -> pd.Series:
    return devices.astype(str).str.startswith("cuda")


def host_machine(frame: pd.DataFrame) -> Optional[str]:
    """The host: the machine whose CPU and GPU were both measured in the baseline setting.

    With several such machines, the one with the most baseline rows (ties: the first by name); None
    when no machine has both. The rule reads :func:`baseline_rows` of ``frame``, so it gives the
    same answer for a results frame (after :func:`main_runs`) and for its baseline rows.
    """
    base = baseline_rows(frame)
    if base.empty:
        return None
    table = base.assign(gpu=_is_gpu(base["device"])).groupby("machine", sort=True)["gpu"].agg(["any", "all", "size"])
    both = table[table["any"] & ~table["all"]]
    return None if both.empty else str(both["size"].idxmax())


def assign_roles(frame: pd.DataFrame) -> dict:
    """Role tag (``Vm``, ``Host``, ``Cuda``, ``VmB``, ...) -> (machine, device) present in ``frame``.

    CPU-only machines are ``Vm``, ``VmB``, ... by name. Machines with a GPU are ``Cuda`` (and
    ``Host`` for their CPU, if measured), ``CudaB``/``HostB``, ...: the :func:`host_machine` first,
    then the others by name.
    """
    roles = {}
    machines = sorted(frame["machine"].unique())
    gpu = [m for m in machines if _is_gpu(frame.loc[frame["machine"] == m, "device"]).any()]
    host = host_machine(frame)
    if host in gpu:
        gpu = [host] + [m for m in gpu if m != host]
    cpu_only = [m for m in machines if m not in gpu]
    suffix = lambda i: "" if i == 0 else chr(ord("A") + i)  # noqa: E731 - "", B, C, ...
    for i, machine in enumerate(cpu_only):
        roles["Vm" + suffix(i)] = (machine, "cpu")
    for i, machine in enumerate(gpu):
        devices = sorted(frame.loc[frame["machine"] == machine, "device"].unique())
        if "cpu" in devices:
            roles["Host" + suffix(i)] = (machine, "cpu")
        roles["Cuda" + suffix(i)] = (machine, next(d for d in devices if str(d).startswith("cuda")))
    return roles


def _fit_one(args):
    rows, models, n_boot, seed, label, statistic = args
    return fit_series(rows, models, n_boot=n_boot, seed=seed, label=label, statistic=statistic)


#: Fits started ahead (:func:`prefetch_baselines`): task key -> (Future of a group's fits, index); the pool.
_PREFETCHED: dict = {}
_POOL: list = []


def _task_key(task, options: bool = True) -> str:
    """What a fit task computes: its rows (every value, as text) and its options (with ``options``
    False: its rows, label and statistic alone, which fits sharing their cross-validation share)."""
    rows, models, n_boot, seed, label, statistic = task
    digest = hashlib.sha256(repr((models, n_boot, seed) if options else ()).encode())
    digest.update(repr((label, statistic)).encode())
    digest.update(rows.to_csv().encode())
    return digest.hexdigest()


def _fit_group(tasks: list) -> list:
    """:func:`_fit_one` of each task, in one process: fits of the same rows reuse each other's
    cross-validation of the candidates they share (:func:`crossover.fit.series_fit.fit_series`)."""
    return [_fit_one(task) for task in tasks]


def _tasks(frame, roles, *, models, n_boot, seed, min_points, statistic, extra_models) -> tuple:
    """``(roles, tasks)`` of :func:`fit_baseline`: one :func:`_fit_one` task per role with enough points."""
    base = baseline_rows(frame)
    tasks, names = [], []
    for role, (machine, device) in sorted(roles.items()):
        rows = base[(base["machine"] == machine) & (base["device"] == device)]
        if len(rows) >= min_points:
            label = f"{machine}/{device}"  # seeded by its label, as every entry point seeds it: same draws
            candidates = tuple(models) if models else candidate_models(rows)
            tasks.append((rows.reset_index(drop=True), candidates + tuple(extra_models), n_boot,
                          series_seed(label, seed), label, statistic))
            names.append(role)
    return names, tasks


@contextlib.contextmanager
def prefetching(jobs: int):
    """A block in which :func:`prefetch_baselines` starts fits in ``jobs`` processes (none where
    ``jobs`` < 2: the fits are then made when asked for); forgotten at its end."""
    if jobs < 2:
        yield
        return
    with fitting_pool(jobs) as pool:  # the one pool of the fits (an enclosing block's, else its own)
        _POOL.append(pool)
        try:
            yield
        finally:
            _POOL.remove(pool)
            for future, _ in _PREFETCHED.values():
                future.cancel()
            _PREFETCHED.clear()


def prefetch_baselines(requests: Sequence) -> None:
    """Start the fits :func:`fit_baseline` will return for each request, in the pool of the enclosing
    :func:`prefetching` block (nothing outside one): the same fits, made sooner.

    Parameters
    ----------
    requests : sequence of (frame, roles, options)
        :func:`fit_baseline`'s arguments (``options`` a dict of its keywords), in the order to start
        them; the fits of the same rows and statistic (with another bootstrap size or more candidate
        models, say) go to one process, where they share their cross-validation.
    """
    if not _POOL:
        return
    groups: dict = {}
    for frame, roles, options in requests:
        options = {k: v for k, v in options.items() if k != "jobs"}
        for task in _tasks(frame, roles, **{**_FIT_DEFAULTS, **options})[1]:
            key = _task_key(task)
            if key not in _PREFETCHED and not any(key in group for group in groups.values()):
                groups.setdefault(_task_key(task, options=False), {})[key] = task
    for group in groups.values():
        future = _POOL[-1].submit(_fit_group, list(group.values()))
        for index, key in enumerate(group):
            _PREFETCHED[key] = (future, index)


#: :func:`fit_baseline`'s defaults, for :func:`prefetch_baselines`.
_FIT_DEFAULTS = dict(models=None, n_boot=N_BOOT, seed=0, min_points=8, statistic=PAPER_STATISTIC, extra_models=())


def fit_baseline(frame: pd.DataFrame, roles: dict, *, models: Optional[Sequence[str]] = None, n_boot: int = N_BOOT,
                 seed: int = 0, jobs: int = 1, min_points: int = 8, statistic: str = PAPER_STATISTIC,
                 extra_models: Sequence[str] = ()) -> dict:
    """Role -> :class:`crossover.fit.series_fit.SeriesFit` of its baseline series (None: too few points).

    Every role is fitted with the candidate ``models`` (default: its series',
    :func:`crossover.fit.validation.candidate_models`) and ``extra_models`` (grouped CV picks one), ``n_boot`` bootstrap
    resamples seeded by the series' label (``machine/device``) and each point's latency
    ``statistic``; ``jobs`` > 1 fits the series in parallel processes (same results). A fit started
    by :func:`prefetch_baselines` is taken from there.
    """
    names, tasks = _tasks(frame, roles, models=models, n_boot=n_boot, seed=seed, min_points=min_points,
                          statistic=statistic, extra_models=extra_models)
    started = {i: _PREFETCHED.get(_task_key(t)) for i, t in enumerate(tasks)} if _PREFETCHED else {}
    todo = [t for i, t in enumerate(tasks) if started.get(i) is None]
    if jobs > 1 and len(todo) > 1:
        with fitting_pool(min(jobs, len(todo))) as pool:  # the prefetching block's pool, else one for these
            done = iter(list(pool.map(_fit_one, todo)))
    else:
        done = iter([_fit_one(t) for t in todo])
    results = [started[i][0].result()[started[i][1]] if started.get(i) is not None else next(done)
               for i in range(len(tasks))]
    fits = dict.fromkeys(roles)
    fits.update(zip(names, results))
    return fits
