"""Results in other tools' formats: pyperf JSON, long-form Parquet, torch.utils.benchmark Measurements.

``crossover export`` (parser in :mod:`crossover.cli.export`) hands the raw repeats of a results
directory to the tools people already use:

pyperf
    A ``pyperf.BenchmarkSuite`` JSON file: one benchmark per point, one pyperf run per round, the
    round's raw repeats (seconds per call) as the run's values and its calls per repeat as ``loops``;
    metadata ``name``, ``unit`` (``second``), the point's configuration and the run's environment
    (``hostname``, ``cpu_model_name``, ``torch_version``...). ``python -m pyperf stats|hist|compare_to``
    read it. A benchmark's name is its configuration (what :data:`crossover.results.compare.POINT_KEYS`
    matches on), so ``compare_to`` pairs the points of two exports; it is prefixed with the machine
    when the results hold several machines, and a configuration measured by several sweeps gets
    ``sweep=NAME`` appended.
parquet
    One row per raw repeat: the point's configuration, its round's details and its run's
    environment, ``round``, ``repeat`` (0-based, in measuring order) and ``time_s`` (seconds per
    call, the float stored in the CSV). For pandas, polars, DuckDB, Spark.
torch
    A list of ``torch.utils.benchmark.Measurement`` (one per point, its rounds' repeats pooled),
    written with :mod:`pickle`: ``Compare(pickle.load(f)).print()`` renders a table per
    configuration, rows by batch size (under the thread count), columns by device.

pyperf and pyarrow are optional (``pip install 'crossover[export]'``) and imported only by the
function that needs them; without them :class:`ExportUnavailable` says what to install. The
``to_*`` functions are pure (a frame in, objects out); :func:`load_for_export` and :func:`write_export`
do the file I/O.
"""

from __future__ import annotations

import math
import pickle
from pathlib import Path
from typing import Iterable, Union

import numpy as np
import pandas as pd

from .columns import KEY_COLUMNS
from .columns import POINT_KEYS  # noqa: F401  (the docstring's benchmark names)
from ..errors import CrossoverError, ResultsError

__all__ = ["FORMATS", "ENVIRONMENT_FIELDS", "ExportUnavailable", "load_for_export", "point_names",
           "to_pyperf_suite", "to_long_frame", "to_torch_measurements", "write_export"]

#: The formats :func:`write_export` writes.
FORMATS = ("pyperf", "parquet", "torch")
#: Environment fields (of ``metadata.json``, see :func:`crossover.measurement.environment.environment`) carried into an
#: export; the others (the plan, ``torch_parallel_info``...) stay in the results directory.
ENVIRONMENT_FIELDS = ("hostname", "cpu_model", "cpu_logical_cores", "cpu_usable_cores", "memory_total_bytes",
                      "platform", "python", "torch", "numpy", "torch_num_threads", "gpu_name", "gpu_driver",
                      "cuda_runtime", "git_commit")
#: Environment fields under pyperf's own metadata names (the others keep theirs).
PYPERF_NAMES = {"cpu_model": "cpu_model_name", "cpu_logical_cores": "cpu_count", "python": "python_version",
                "torch": "torch_version", "numpy": "numpy_version", "cuda_runtime": "cuda_version"}
#: A point: its key without the round.
POINT_COLUMNS = tuple(c for c in KEY_COLUMNS if c != "round")
#: Per-round columns kept beside the configuration (Parquet columns, pyperf run metadata).
ROUND_COLUMNS = ("round", "run_id", "suite", "device_name", "threads", "sequence", "calls_per_repeat", "params",
                 "flops", "bytes", "timestamp_utc", "busy", "other_cpu_cores", "cpu_utilisation", "steal_fraction")
INSTALL_HINT = "pip install 'crossover[export]'"


class ExportUnavailable(CrossoverError):
    """An optional package an export format needs is missing; the message says what to install."""


def _require(module: str, fmt: str):
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError:
        raise ExportUnavailable(f"--format {fmt} needs {module}: {INSTALL_HINT} (or pip install {module})") from None


# ------------------------------------------------------------------------------------- loading
def load_for_export(paths: Union[str, Path, Iterable[Union[str, Path]]]) -> pd.DataFrame:
    """Measured rows, one per point per round, with raw repeats and their run's environment.

    Parameters
    ----------
    paths : path or iterable of paths
        As :func:`crossover.results.store.load_results` takes them.

    Returns
    -------
    pandas.DataFrame
        ``load_results(paths, raw=True, combine_rounds=False)`` plus one column per
        :data:`ENVIRONMENT_FIELDS` entry (None where the run did not record it).

    Raises
    ------
    ResultsError
        As :func:`crossover.results.store.load_results`.
    """
    from .store import load_metadata, load_results

    frame = load_results(paths, raw=True, combine_rounds=False)
    runs = {directory: load_metadata(directory)["runs"] for directory in frame["results_dir"].unique()}
    for field in ENVIRONMENT_FIELDS:
        frame[field] = [runs[d].get(r, {}).get(field) for d, r in zip(frame["results_dir"], frame["run_id"])]
    return frame


# ------------------------------------------------------------------------------------- naming
def _missing(value) -> bool:
    if value is None or value is pd.NA:
        return True
    if isinstance(value, float) and math.isnan(value):
        return True
    return isinstance(value, str) and not value.strip()


def _plain(value):
    """A frame cell as int, float or str (numpy scalars unwrapped); None when missing."""
    if _missing(value):
        return None
    if isinstance(value, (bool, np.bool_)):
        return int(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return float(value)
    return str(value).strip()


def _configuration_name(point: dict) -> str:
    threads = point["threads_requested"]
    return (f"{point['device']} {point['workload']} {point['mode']} {point['dtype']} "
            f"d_model={point['d_model']} n_layers={point['n_layers']} batch_size={point['batch_size']} "
            f"transfer={point['transfer']} regime={point['regime']} threads={threads or 'default'}")


def _measured(frame: pd.DataFrame) -> pd.DataFrame:
    if "raw_times_s" not in frame:
        raise ResultsError("the results have no raw repeats: load them with raw=True (or load_for_export)")
    kept = frame[[len(times) > 0 for times in frame["raw_times_s"]]]
    if kept.empty:
        raise ResultsError("no measured point with raw repeat times to export")
    return kept


def _points(frame: pd.DataFrame):
    """(point dict, its rounds in round order) for every point, in a stable order."""
    kept = _measured(frame)
    for key, rounds in kept.groupby(list(POINT_COLUMNS), sort=True, dropna=False):
        yield dict(zip(POINT_COLUMNS, key)), rounds.sort_values(["round", "timestamp_utc"], kind="stable")


def point_names(frame: pd.DataFrame) -> dict:
    """Each point's benchmark name: its configuration, qualified only where needed to be unique.

    Parameters
    ----------
    frame : DataFrame
        Per-round rows (see :func:`load_for_export`).

    Returns
    -------
    dict
        Point key (the values of ``KEY_COLUMNS`` but ``round``, as a tuple) → name. The name is the
        configuration (device, workload, mode, dtype, sizes, transfer, regime, threads requested),
        prefixed with ``machine/`` when the frame holds several machines; a configuration measured
        by several sweeps of one machine gets `` sweep=NAME`` appended.
    """
    points = [point for point, _ in _points(frame)]
    several_machines = len({p["machine"] for p in points}) > 1
    base = {}
    for point in points:
        name = _configuration_name(point)
        base[tuple(point.values())] = f"{point['machine']}/{name}" if several_machines else name
    counts = pd.Series(list(base.values())).value_counts()
    return {key: f"{name} sweep={dict(zip(POINT_COLUMNS, key))['sweep']}" if counts[name] > 1 else name
            for key, name in base.items()}


# ------------------------------------------------------------------------------------- pyperf
def _pyperf_metadata(row: dict, name: str) -> dict:
    metadata = {"name": name, "unit": "second"}
    loops = _plain(row.get("calls_per_repeat"))
    if loops is not None:
        metadata["loops"] = int(loops)
    if not _missing(row.get("timestamp_utc")):
        metadata["date"] = str(row["timestamp_utc"])
    for column in POINT_COLUMNS + ROUND_COLUMNS:
        if column not in ("calls_per_repeat", "timestamp_utc"):
            metadata[column] = _plain(row.get(column))
    for field in ENVIRONMENT_FIELDS:
        metadata[PYPERF_NAMES.get(field, field)] = _plain(row.get(field))
    return {k: v for k, v in metadata.items() if v is not None and not (isinstance(v, str) and "\n" in v)}


def to_pyperf_suite(frame: pd.DataFrame):
    """A ``pyperf.BenchmarkSuite``: one benchmark per point, one run per round.

    Parameters
    ----------
    frame : DataFrame
        Per-round rows with raw repeats (see :func:`load_for_export`); rows without raw repeats are
        left out.

    Returns
    -------
    pyperf.BenchmarkSuite
        Each run's values are its round's raw repeats in seconds per call, its ``loops`` the calls
        per repeat (where recorded); names as :func:`point_names`.

    Raises
    ------
    ExportUnavailable
        pyperf is not installed.
    ResultsError
        Nothing to export, or rounds of one point that pyperf refuses to hold in one benchmark
        (measured on different hosts or CPUs).
    """
    pyperf = _require("pyperf", "pyperf")
    names = point_names(frame)
    benchmarks = []
    for point, rounds in _points(frame):
        name = names[tuple(point.values())]
        runs = [pyperf.Run(list(row["raw_times_s"]), metadata=_pyperf_metadata(row, name), collect_metadata=False)
                for row in rounds.to_dict("records")]
        try:
            benchmarks.append(pyperf.Benchmark(runs))
        except ValueError as exc:
            raise ResultsError(f"pyperf cannot hold the rounds of {name!r} in one benchmark: {exc}") from None
    return pyperf.BenchmarkSuite(benchmarks)


# ------------------------------------------------------------------------------------- Parquet
def to_long_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """One row per raw repeat (long form).

    Parameters
    ----------
    frame : DataFrame
        Per-round rows with raw repeats (see :func:`load_for_export`).

    Returns
    -------
    pandas.DataFrame
        Columns: the point's configuration (``KEY_COLUMNS``), the round's details (run, threads used,
        calls per repeat, FLOPs, timestamp, machine load...), the environment fields present in
        ``frame``, ``results_dir``, then ``repeat`` (0-based index within the round) and ``time_s``
        (seconds per call).
    """
    kept = _measured(frame).reset_index(drop=True)
    columns = [c for c in dict.fromkeys(KEY_COLUMNS + ROUND_COLUMNS + ENVIRONMENT_FIELDS + ("results_dir",))
               if c in kept]
    counts = np.array([len(times) for times in kept["raw_times_s"]])
    rows = np.repeat(np.arange(len(kept)), counts)
    long = kept[columns].iloc[rows].reset_index(drop=True)
    long["repeat"] = np.concatenate([np.arange(n) for n in counts]).astype("int64")
    long["time_s"] = np.concatenate([np.asarray(times, dtype="float64") for times in kept["raw_times_s"]])
    for field in ENVIRONMENT_FIELDS:  # mixed types (ints and None) → strings, which Parquet can store
        if field in long and long[field].map(type).nunique() > 1:
            long[field] = [None if _missing(v) else str(v) for v in long[field]]
    return long


# ------------------------------------------------------------------------------------- torch
def to_torch_measurements(frame: pd.DataFrame) -> list:
    """One ``torch.utils.benchmark.Measurement`` per point, its rounds' repeats pooled.

    Parameters
    ----------
    frame : DataFrame
        Per-round rows with raw repeats (see :func:`load_for_export`).

    Returns
    -------
    list of torch.utils.benchmark.Measurement
        ``number_per_run`` is the calls per repeat when all the point's rounds agree on it (else 1)
        and ``raw_times`` the seconds per repeat, so ``m.times`` are the seconds per call.
        ``task_spec``: ``label`` the configuration but batch size and device, ``sub_label``
        ``batch_size=B``, ``description`` the device, ``env`` the machine, ``num_threads`` the
        threads used, so ``Compare(measurements).print()`` shows a table per configuration, rows
        by batch size, columns by device. ``metadata`` holds the point, its sweeps, rounds and
        environment. Configurations measured by several sweeps share a task spec; Compare pools them.
    """
    from torch.utils.benchmark import Measurement
    from torch.utils.benchmark.utils.common import TaskSpec

    measurements = []
    for point, rounds in _points(frame):
        calls = {_plain(v) for v in rounds["calls_per_repeat"]} if "calls_per_repeat" in rounds else {None}
        number = int(calls.pop()) if len(calls) == 1 and None not in calls else 1
        per_call = [t for times in rounds["raw_times_s"] for t in times]
        used = {_plain(v) for v in rounds["threads"]} if "threads" in rounds else {None}
        threads = used.pop() if len(used) == 1 and None not in used else (point["threads_requested"] or 1)
        label = (f"{point['workload']} {point['mode']} {point['dtype']} d_model={point['d_model']} "
                 f"n_layers={point['n_layers']} transfer={point['transfer']} regime={point['regime']}")
        spec = TaskSpec(stmt=f"{point['workload']} step", setup="", label=label,
                        sub_label=f"batch_size={point['batch_size']}", description=str(point["device"]),
                        env=str(point["machine"]), num_threads=int(threads))
        first = rounds.iloc[0].to_dict()
        metadata = {**{k: _plain(v) for k, v in point.items()},
                    "rounds": [int(r) for r in rounds["round"]], "unit": "second",
                    **{f: _plain(first.get(f)) for f in ENVIRONMENT_FIELDS if f in rounds}}
        measurements.append(Measurement(number_per_run=number, raw_times=[t * number for t in per_call],
                                        task_spec=spec, metadata=metadata))
    return measurements


# ------------------------------------------------------------------------------------- writing
def write_export(frame: pd.DataFrame, fmt: str, path: Union[str, Path]) -> Path:
    """Write ``frame`` (see :func:`load_for_export`) to ``path`` in format ``fmt``, replacing it.

    Parameters
    ----------
    frame : DataFrame
        Per-round rows with raw repeats.
    fmt : {"pyperf", "parquet", "torch"}
        pyperf JSON (gzipped when ``path`` ends in ``.gz``), Parquet (long form), or a pickled list of
        torch Measurements (unpickle only files you trust: unpickling can run code).
    path : path
        The file written; its directory must exist.

    Returns
    -------
    Path
        ``path``.

    Raises
    ------
    ExportUnavailable
        The format's optional package is missing.
    ResultsError
        Unknown format, nothing to export, or the file cannot be written.
    """
    path = Path(path)
    if fmt not in FORMATS:
        raise ResultsError(f"unknown export format {fmt!r}; choose one of {', '.join(FORMATS)}")
    if not path.parent.is_dir():
        raise ResultsError(f"cannot write {path}: directory {path.parent} does not exist")
    if fmt == "pyperf":
        suite = to_pyperf_suite(frame)
        writer = lambda: suite.dump(str(path), replace=True)  # noqa: E731
    elif fmt == "parquet":
        _require("pyarrow", "parquet")
        long = to_long_frame(frame)
        writer = lambda: long.to_parquet(path, engine="pyarrow", index=False)  # noqa: E731
    else:
        measurements = to_torch_measurements(frame)

        def writer():
            with open(path, "wb") as handle:
                pickle.dump(measurements, handle, protocol=pickle.HIGHEST_PROTOCOL)
    try:
        writer()
    except OSError as exc:
        raise ResultsError(f"cannot write {path}: {exc.strerror or exc}") from None
    return path
