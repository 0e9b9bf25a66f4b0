"""What one row of results is: its columns and their types, the columns that identify a point.

The table every other module reads rows by: :mod:`crossover.results.store` writes, reads and validates the
CSV with it, :mod:`crossover.results.statistics` combines a point's rounds into one row by it, and
:mod:`crossover.measurement.sweep` resumes a run by :func:`point_key`. It lives apart from the file I/O so that
combining rounds (pure computation) needs no file code, and the file code none of the statistics.
"""

from __future__ import annotations

__all__ = ["COLUMN_TYPES", "COLUMNS", "V1_COLUMNS", "KEY_COLUMNS", "STATUSES", "REFERENCE_SWEEP", "HELDOUT_SWEEP",
           "WARNING_SEPARATOR", "point_key"]

#: Joins a row's warnings in the CSV (each warning is a whole sentence and may contain ``;``).
WARNING_SEPARATOR = " | "
#: The sweep name of drift-reference rows (see :func:`crossover.measurement.sweep.plan_rounds`).
REFERENCE_SWEEP = "reference"
#: The sweep name of held-out sizes: measured with the rest, never fitted (see
#: :func:`crossover.fit.series_fit.fit_series`), so their error is the model's error on sizes it never saw.
HELDOUT_SWEEP = "heldout"

#: The toy model's sizes: the axes every latency model and crossover is along.
SIZE_COLUMNS = ("d_model", "n_layers", "batch_size")
#: How a step is run, besides its sizes and device.
SETTING_COLUMNS = ("workload", "mode", "dtype", "transfer", "regime")
#: Columns that identify a point; a sweep resumes by skipping keys already present.
KEY_COLUMNS = ("machine", "sweep", "device", *SIZE_COLUMNS, *SETTING_COLUMNS, "threads_requested", "round")
#: Columns that identify a point across runs (two runs' points are compared when these agree).
POINT_KEYS = ("device", *SIZE_COLUMNS, *SETTING_COLUMNS, "threads_requested")
#: Columns that identify a series: one machine's device in one setting, fitted as one curve over the sizes.
SERIES_KEYS = ("machine", "device", "workload", "mode", "dtype", "regime", "transfer", "threads")

#: Every column of results.csv, in order, with its type (int, "optional int", float or str).
COLUMN_TYPES = {
    "run_id": str,
    "suite": str,
    "sweep": str,
    "machine": str,
    "device": str,
    "device_name": str,
    "d_model": int,
    "n_layers": int,
    "batch_size": int,
    "workload": str,
    "mode": str,
    "dtype": str,
    "transfer": str,
    "regime": str,
    "threads_requested": int,
    "round": int,  # which pass over the suite (suites can measure every point in several rounds)
    "sequence": "optional int",  # position in the run's plan: the order points were measured in
    "threads": "optional int",  # threads used; for a skipped point, the threads requested
    "params": int,
    "flops": int,
    "bytes": int,
    "status": str,
    "reason": str,
    "median_s": float,
    "iqr_s": float,
    "q1_s": float,
    "q3_s": float,
    "mean_s": float,
    "min_s": float,
    "median_ci_low_s": float,
    "median_ci_high_s": float,
    "n_repeats": "optional int",
    "calls_per_repeat": "optional int",
    "stop_reason": str,
    "device_median_s": float,
    "compile_s": float,
    "setup_s": float,
    "ops_per_step": float,
    "kernels_per_step": float,
    "device_busy_s": float,
    "other_cpu_cores": float,  # cores' worth of CPU other processes used while this point was timed
    "cpu_utilisation": float,  # this process's CPU time / (wall time × threads): < 1 when starved
    "steal_fraction": float,  # share of the CPUs' time the hypervisor gave to other guests
    "busy": "optional int",  # 1 when other processes competed for the cores (see crossover.measurement.machine_load)
    "warnings": str,
    "timestamp_utc": str,
    "raw_times_s": str,
}
COLUMNS = tuple(COLUMN_TYPES)
#: The columns of schema version 1 (read, never appended to).
V1_COLUMNS = tuple(c for c in COLUMNS if c not in ("sequence", "other_cpu_cores", "cpu_utilisation",
                                                     "steal_fraction", "busy"))
STATUSES = ("ok", "skipped")


def point_key(row: dict) -> tuple:
    """The identity of a point (see :data:`KEY_COLUMNS`), normalised to strings."""
    return tuple(str(row[column]) for column in KEY_COLUMNS)
