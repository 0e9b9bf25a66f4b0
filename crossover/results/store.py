"""Results on disk: a tidy CSV (one row per measured or skipped point) plus a JSON metadata sidecar.

A results directory holds::

    results.csv     one row per point, appended and flushed (fsync) as each point finishes
    metadata.json   {"schema": "crossover-results", "schema_version": 1, "runs": {run_id: environment}}

Rows keep the full configuration, the summary statistics and the raw per-repeat times
(``raw_times_s``: ``;``-separated seconds), so statistics can be recomputed and resampled later.
Loading never executes anything from the files (no pickle), validates the schema, tolerates a
truncated last line from a killed run (with a warning), and merges several directories (several
machines) into one DataFrame keyed by ``machine``.

This module is the file I/O (writing, reading, validating, merging, attaching drift references).
The columns of a row are :mod:`crossover.results.columns`; combining a point's rounds into one row is
:func:`crossover.results.statistics.combine_rounds_of` (what :func:`load_results` calls, re-exported here).

Schema versions
---------------
1
    First version.
2
    ``sequence`` (the row's position in its run's plan: the measuring order), the machine's load
    while the point was timed (``other_cpu_cores``, ``cpu_utilisation``, ``steal_fraction``, ``busy``),
    drift-reference rows (``sweep == "reference"``), ``sweep`` in the point key, warnings separated by
    ``" | "``. Version-1 files are read (the new columns empty); rows are appended only to files of
    this version.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import math
import os
import warnings
from pathlib import Path
from typing import Iterable, Optional, Union

import numpy as np
import pandas as pd

from .columns import (COLUMN_TYPES, COLUMNS, KEY_COLUMNS, REFERENCE_SWEEP, STATUSES, V1_COLUMNS,
                      WARNING_SEPARATOR, point_key)
from ..errors import ResultsError
from .statistics import attach_references, combine_rounds_of
from .anchors import anchor_factors, put_on_anchor_scale
from .disk_cache import cache_dir, enabled, read_pickle, source_digest, write_pickle

__all__ = [
    "SCHEMA",
    "SCHEMA_VERSION",
    "COLUMNS",
    "KEY_COLUMNS",
    "ResultsError",
    "ResultsWriter",
    "load_results",
    "load_metadata",
    "combine_rounds_of",
    "check_same_environment",
    "make_results_directory",
    "point_key",
    "REFERENCE_SWEEP",
    "WARNING_SEPARATOR",
]

SCHEMA = "crossover-results"
SCHEMA_VERSION = 2
#: Versions this crossover reads (it writes only :data:`SCHEMA_VERSION`).
READABLE_VERSIONS = (1, 2)
#: Environment fields that must agree for two runs to share a results directory (as pyperf refuses
#: to merge runs of different CPUs): a different torch, CPU, thread count, GPU or driver is a
#: different experiment.
ENVIRONMENT_MUST_MATCH = ("cpu_model", "cpu_usable_cores", "torch", "torch_num_threads", "gpu_name",
                          "gpu_driver", "cuda_runtime")
CSV_NAME = "results.csv"
METADATA_NAME = "metadata.json"

#: Skip reasons that may not hold next time; ``--resume`` retries such points.
TRANSIENT_SKIP_PREFIXES = ("failed:", "does not fit:")


def _format(value) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, float):
        return "" if math.isnan(value) else repr(value)
    return str(value)


def make_results_directory(directory: Union[str, Path]) -> Path:
    """Create a results directory (and its parents) if missing.

    Raises
    ------
    ResultsError
        The path exists and is not a directory, a part of it is a file, or it cannot be created.
    """
    directory = Path(directory)
    if directory.exists() and not directory.is_dir():
        raise ResultsError(f"{directory} exists and is not a directory")
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        raise ResultsError(f"cannot create results directory {directory}: a part of its path is a file") from None
    except OSError as exc:
        raise ResultsError(f"cannot create results directory {directory}: {exc.strerror}") from None
    return directory


class ResultsWriter:
    """Append rows to a results directory, one flushed and fsynced line per point.

    Parameters
    ----------
    directory : path
        Created if missing. If it already holds results they must be of this schema.
    run_id : str
        Identifies this run in ``metadata.json``.
    environment : dict
        The run's environment (see :func:`crossover.measurement.environment.environment`), stored under ``run_id``.
    """

    def __init__(self, directory: Union[str, Path], run_id: str, environment: dict):
        self.directory = Path(directory)
        self.csv_path = self.directory / CSV_NAME
        self.metadata_path = self.directory / METADATA_NAME
        self.run_id = run_id
        make_results_directory(self.directory)
        metadata = (
            load_metadata(self.directory)
            if self.metadata_path.exists()
            else {"schema": SCHEMA, "schema_version": SCHEMA_VERSION, "runs": {}}
        )
        if self.csv_path.exists():
            if _check_header(self.csv_path) != SCHEMA_VERSION:
                raise ResultsError(
                    f"{self.csv_path} was written by an older crossover (schema version 1); rows of "
                    f"version {SCHEMA_VERSION} are not appended to it: choose a new --out"
                )
            self._repair_truncated_tail()
        metadata["runs"][run_id] = environment
        _write_json_atomically(self.metadata_path, metadata)

    def _repair_truncated_tail(self) -> None:
        """Drop a last line that a killed run left without its newline, so appends start clean."""
        with open(self.csv_path, "rb+") as handle:
            data = handle.read()
            if data and not data.endswith(b"\n"):
                cut = data.rfind(b"\n") + 1
                warnings.warn(
                    f"{self.csv_path}: dropped a truncated last line left by an interrupted run",
                    stacklevel=3,
                )
                handle.truncate(cut)

    def existing_keys(self) -> set:
        """Keys of the points already done: measured, or skipped for a lasting reason.

        Points skipped for a passing reason (a failure, or not enough free memory at that moment)
        are not done: a resumed sweep tries them again.
        """
        if not self.csv_path.exists():
            return set()
        frame = _read_csv(self.csv_path, quiet=True)
        return {
            point_key(row) for row in frame.to_dict("records")
            if row["status"] == "ok" or not row["reason"].startswith(TRANSIENT_SKIP_PREFIXES)
        }

    def append(self, row: dict) -> None:
        """Write one row (missing columns are left empty) and make it durable."""
        unknown = set(row) - set(COLUMNS)
        if unknown:
            raise ResultsError(f"unknown result columns: {sorted(unknown)}")
        new_file = not self.csv_path.exists() or self.csv_path.stat().st_size == 0
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        if new_file:
            writer.writerow(COLUMNS)
        writer.writerow([_format(row.get(column)) for column in COLUMNS])
        with open(self.csv_path, "a", encoding="utf-8") as handle:
            handle.write(buffer.getvalue())
            handle.flush()
            os.fsync(handle.fileno())


def _write_json_atomically(path: Path, data: dict) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    with open(tmp, "w", encoding="utf-8") as handle:
        json.dump(data, handle, indent=2, sort_keys=True)
        handle.write("\n")
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)


def load_metadata(directory: Union[str, Path]) -> dict:
    """Read and validate ``metadata.json`` of one results directory."""
    path = Path(directory) / METADATA_NAME
    try:
        metadata = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ResultsError(f"{path} is missing: not a crossover results directory") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ResultsError(f"{path} is not valid JSON: {exc}") from None
    if not isinstance(metadata, dict) or metadata.get("schema") != SCHEMA:
        raise ResultsError(f"{path} is not a crossover results file (schema is not {SCHEMA!r})")
    version = metadata.get("schema_version")
    if version not in READABLE_VERSIONS:
        raise ResultsError(
            f"{path} has schema version {version!r}; this crossover reads versions "
            f"{', '.join(map(str, READABLE_VERSIONS))}"
        )
    if not isinstance(metadata.get("runs"), dict):
        raise ResultsError(f"{path} has no 'runs' mapping")
    return metadata


def _check_header(csv_path: Path) -> int:
    """The schema version of ``csv_path``'s header (the current one for an empty file)."""
    with open(csv_path, newline="", encoding="utf-8") as handle:
        header = next(csv.reader(handle), None)
    if header is None:
        return SCHEMA_VERSION
    if tuple(header) == V1_COLUMNS:
        return 1
    if tuple(header) != COLUMNS:
        missing = [c for c in COLUMNS if c not in header]
        extra = [c for c in header if c not in COLUMNS]
        raise ResultsError(
            f"{csv_path} has other columns than schema version {SCHEMA_VERSION} "
            f"(missing {missing[:5]}, unexpected {extra[:5]})"
        )
    return SCHEMA_VERSION


def _read_csv(csv_path: Path, quiet: bool = False) -> pd.DataFrame:
    _check_header(csv_path)
    text = csv_path.read_text(encoding="utf-8")
    if text and not text.endswith("\n"):
        text = text[: text.rfind("\n") + 1]
        if not quiet:
            warnings.warn(f"{csv_path}: ignored a truncated last line (an interrupted run?)", stacklevel=3)
    if not text.strip() or text.count("\n") < 2:
        return _empty_frame()
    try:
        frame = pd.read_csv(io.StringIO(text), dtype={c: "string" for c in COLUMNS}, keep_default_na=False)
    except (pd.errors.ParserError, ValueError) as exc:
        raise ResultsError(f"{csv_path} is not a well-formed results CSV: {str(exc).strip()}") from None
    for column in COLUMNS:  # version 1: the newer columns are empty
        if column not in frame:
            frame[column] = ""
    return _typed(frame[list(COLUMNS)], csv_path)


#: Parsed results files of this process, by (path, size, modification time): ``predict`` loads one
#: results tree twice (rounds combined, and each round for the paired crossovers).
_PARSED: dict = {}


def _read_csv_once(csv_path: Path) -> pd.DataFrame:
    """:func:`_read_csv`, parsed once per process while the file is unchanged (a copy each call)."""
    stat = csv_path.stat()
    key = (str(csv_path.resolve()), stat.st_size, stat.st_mtime_ns)
    if key not in _PARSED:
        _PARSED[key] = _read_csv(csv_path)
    return _PARSED[key].copy()


def _empty_frame() -> pd.DataFrame:
    dtypes = {int: "int64", "optional int": "Int64", float: "float64", str: "object"}
    return pd.DataFrame({c: pd.Series(dtype=dtypes[t]) for c, t in COLUMN_TYPES.items()})


def _typed(frame: pd.DataFrame, source: Path) -> pd.DataFrame:
    out = {}
    for column, kind in COLUMN_TYPES.items():
        values = frame[column].to_numpy(dtype=object)  # numpy's object arrays: a third of pandas' strings' time
        if kind is str:
            out[column] = pd.Series(values, dtype=object)
            continue
        numeric = pd.to_numeric(values, errors="coerce").astype("float64")  # "" and text: NaN
        missing = np.isnan(numeric)
        bad = missing & (values != "")
        if bad.any():
            line = int(np.flatnonzero(bad)[0]) + 2
            raise ResultsError(f"{source}:{line}: column {column} is not a number: {values[bad][0]!r}")
        if kind == "optional int":
            out[column] = pd.array(np.where(missing, 0, numeric).astype("int64"), dtype="Int64")
            out[column][missing] = pd.NA
        elif kind is int:
            if missing.any():
                line = int(np.flatnonzero(missing)[0]) + 2
                raise ResultsError(f"{source}:{line}: column {column} is empty")
            out[column] = numeric.astype("int64")
        else:
            out[column] = numeric
    typed = pd.DataFrame(out)
    bad_status = ~typed["status"].isin(STATUSES)
    if bad_status.any():
        line = int(np.flatnonzero(bad_status.to_numpy())[0]) + 2
        raise ResultsError(f"{source}:{line}: status must be one of {STATUSES}")
    ok = typed["status"] == "ok"
    bad_time = ok & ~(typed["median_s"] > 0)
    if bad_time.any():
        line = int(np.flatnonzero(bad_time.to_numpy())[0]) + 2
        raise ResultsError(f"{source}:{line}: a measured row needs a positive median_s")
    for column in ("d_model", "n_layers", "batch_size"):
        if (typed[column] <= 0).any():
            raise ResultsError(f"{source}: column {column} has a non-positive value")
    return typed


def _results_dirs(path: Path) -> list:
    if (path / METADATA_NAME).exists() or (path / CSV_NAME).exists():
        return [path]
    found = sorted({p.parent for p in path.rglob(METADATA_NAME)})
    if not found:
        raise ResultsError(f"no crossover results under {path} (no {METADATA_NAME} found)")
    return found


def check_same_environment(directory: Union[str, Path], environment: dict) -> None:
    """Refuse to add a run to ``directory`` when its environment differs from a run already there.

    Compares :data:`ENVIRONMENT_MUST_MATCH` (a field missing on either side is not compared).

    Raises
    ------
    ResultsError
        Naming the first field that differs, with both values.
    """
    directory = Path(directory)
    if not (directory / METADATA_NAME).exists():
        return
    for run_id, recorded in load_metadata(directory)["runs"].items():
        for name in ENVIRONMENT_MUST_MATCH:
            if name in recorded and name in environment and str(recorded[name]) != str(environment[name]):
                raise ResultsError(
                    f"{directory} holds run {run_id} measured with {name}={recorded[name]!r}, but this "
                    f"machine has {name}={environment[name]!r}: such runs do not mix; choose a new --out "
                    "(or pass --allow-mixed if you mean to)"
                )


def load_results(
    paths: Union[str, Path, Iterable[Union[str, Path]]],
    *,
    include_skipped: bool = False,
    raw: bool = False,
    combine_rounds: bool = True,
    include_reference: bool = False,
    drop_drifted: bool = False,
    anchor_scale: bool = True,
) -> pd.DataFrame:
    """Load results into one tidy DataFrame.

    Parameters
    ----------
    paths : path or iterable of paths
        A results directory, a directory holding several (e.g. ``experiments/results``, one
        sub-directory per machine), or several of these. All are merged.
    include_skipped : bool
        Keep rows of points that were skipped (with their ``reason``); by default only measured rows.
    raw : bool
        Keep ``raw_times_s`` as tuples of floats; by default the column is dropped.
    combine_rounds : bool
        One row per point: a point measured in several rounds gets the median of its rounds'
        statistics (see :func:`combine_rounds_of`). False keeps one row per round.
    include_reference : bool
        Keep the drift-reference rows (``sweep == "reference"``); by default they only lend each
        row its ``reference_s``, ``drift`` and ``drifted`` (see :func:`attach_references`).
    drop_drifted : bool
        Leave out the rounds measured while the drift reference sat more than :data:`DRIFT_LIMIT`
        above its quiet level, before rounds are combined.
    anchor_scale : bool
        Put the nodes of a fleet (results directories written by ``crossover fleet`` jobs) on one scale
        per machine kind by the anchor every node measures
        (:func:`crossover.results.anchors.put_on_anchor_scale`); other results are never scaled.
        Column ``anchor_scale`` holds the factor (NaN where none applies).

    Returns
    -------
    pandas.DataFrame
        One row per point, columns as in :data:`COLUMNS` (plus ``results_dir`` and ``anchor_scale``), typed, with at least
        ``machine, device, d_model, n_layers, batch_size, median_s, iqr_s, flops, params``.

    Raises
    ------
    ResultsError
        Missing directory, other schema or version, malformed rows.
    """
    if isinstance(paths, (str, Path)):
        paths = [paths]
    paths = [Path(p) for p in paths]
    options = dict(include_skipped=include_skipped, raw=raw, combine_rounds=combine_rounds,
                   include_reference=include_reference, drop_drifted=drop_drifted, anchor_scale=anchor_scale)
    key = _loaded_key(paths, options)
    if key is not None:
        cached = read_pickle(cache_dir() / "loaded" / f"{key}.pkl")
        if cached is not None:
            return cached
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        frame = _load_results(paths, **options)
    for warning in caught:  # said again to the caller; a load that warned is not kept
        warnings.warn_explicit(warning.message, warning.category, warning.filename, warning.lineno)
    if key is not None and not caught:
        write_pickle(cache_dir() / "loaded" / f"{key}.pkl", frame)
    return frame


def _loaded_key(paths: list, options: dict) -> Optional[str]:
    """The cache key of loading ``paths`` with ``options``: every file of every results directory
    found (name, size, modification time), the options and the results package's source; None when
    the cache is off or a path does not exist (the load then says so)."""
    if not enabled() or not all(path.exists() for path in paths):
        return None
    digest = hashlib.sha256(f"{source_digest('results')}:{sorted(options.items())}".encode())
    for path in paths:
        for directory in _results_dirs(path):
            digest.update(str(directory.resolve()).encode())
            for file in sorted(directory.iterdir()):
                if file.is_file():
                    stat = file.stat()
                    digest.update(f"{file.name}:{stat.st_size}:{stat.st_mtime_ns}".encode())
    return digest.hexdigest()


def _load_results(paths: list, *, include_skipped: bool, raw: bool, combine_rounds: bool, include_reference: bool,
                  drop_drifted: bool, anchor_scale: bool) -> pd.DataFrame:
    """:func:`load_results` itself (parsing, combining), without the cache."""
    frames = []
    for path in paths:
        if not path.exists():
            raise ResultsError(f"results path {path} does not exist")
        for directory in _results_dirs(path):
            load_metadata(directory)
            csv_path = directory / CSV_NAME
            if not csv_path.exists():
                continue
            frame = _read_csv_once(csv_path)
            frame["results_dir"] = str(directory)
            frames.append(frame)
    if not frames:
        frame = _empty_frame()
        frame["results_dir"] = pd.Series(dtype=object)
    else:
        frame = pd.concat(frames, ignore_index=True)
    frame = attach_references(frame)
    factors = anchor_factors(frame) if anchor_scale else None
    if not include_reference:
        frame = frame[frame["sweep"] != REFERENCE_SWEEP]
    if drop_drifted:
        frame = frame[~frame["drifted"]]
    if not include_skipped:
        frame = frame[frame["status"] == "ok"]
    frame = frame.reset_index(drop=True)
    frame["raw_times_s"] = [
        tuple(float(v) for v in text.split(";")) if isinstance(text, str) and text else ()
        for text in frame["raw_times_s"]
    ]
    frame = put_on_anchor_scale(frame, factors) if factors is not None else frame.assign(anchor_scale=np.nan)
    if combine_rounds:
        frame = combine_rounds_of(frame)
    if not raw:
        frame = frame.drop(columns=["raw_times_s", "round_raw_s"], errors="ignore")
    return frame


def raw_times_to_text(values: Iterable[float]) -> str:
    """Serialise raw times for the ``raw_times_s`` column (seconds, ``;``-separated)."""
    return ";".join(f"{v:.9g}" for v in values)
