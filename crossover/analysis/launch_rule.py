"""A rule of thumb a reader can apply to their own model: *the GPU wins iff the CPU's step takes more
than X per kernel the GPU would launch*. An eager GPU step at small sizes is bound by its launches (each
costs the host some microseconds whatever the kernel's size), so the CPU's time spread over those launches
says whether the CPU finishes before the GPU has issued its work. Unlike a time per layer it means the
same for models whose layers differ: the launch count comes from the model's trace
(:func:`crossover.opcost.trace.trace_module`, the ops that run a kernel), on the GPU's path
(:func:`crossover.opcost.recurrent_layers.gpu_records`: cuDNN's one recurrent call, not the CPU's per-step
ops).

Pure apart from the traces (:func:`toy_launches`, :func:`model_launches`), which touch no device.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
import pandas as pd

from .claims import ThresholdRule, fit_threshold_rule, score

__all__ = ["LAUNCH_COLUMN", "toy_launches", "model_launches", "with_launches", "zoo_points", "fit_launch_rule",
           "score_launch_rule"]

#: The column the rule thresholds: the CPU's measured step over the GPU step's kernel launches.
LAUNCH_COLUMN = "cpu_per_launch_s"


@lru_cache(maxsize=None)
def _toy_launch_terms(d_model: int) -> tuple:
    """(launches outside the layers, launches per layer) of the toy's forward pass at ``d_model``."""
    from ..measurement.toy_model import ResidualMLP
    from ..opcost.module_predict import trace_step

    counts = []
    for n_layers in (1, 2):
        table, _ = trace_step(ResidualMLP(d_model, n_layers, device="meta"), (d_model,), 1, "forward")
        counts.append(int(table["launches"].sum()))
    return counts[0] - (counts[1] - counts[0]), counts[1] - counts[0]


def toy_launches(d_model: int, n_layers: int) -> int:
    """Kernel launches of the toy model's eager forward pass (from its trace; batch does not change them)."""
    fixed, per_layer = _toy_launch_terms(int(d_model))
    return fixed + per_layer * int(n_layers)


def model_launches(model, sample_shape, batch_size: int, workload: str = "forward", dtype=None) -> int:
    """Kernel launches of ``model``'s step as a GPU runs it (its trace, with recurrent layers fused)."""
    from ..opcost.module_predict import trace_step
    from ..opcost.recurrent_layers import gpu_records

    table, _ = trace_step(model, tuple(sample_shape), batch_size, workload, dtype)
    records = table.to_dict("records")
    if workload == "forward":
        records = gpu_records(records, model, batch_size)
    return int(sum(int(r.get("launches") or 0) for r in records))


def with_launches(pairs: pd.DataFrame) -> pd.DataFrame:
    """Toy paired points (:func:`crossover.analysis.claims.paired_points`) with ``launches`` and
    :data:`LAUNCH_COLUMN`."""
    if pairs.empty:
        return pairs.assign(launches=pd.Series(dtype=float), **{LAUNCH_COLUMN: pd.Series(dtype=float)})
    launches = [toy_launches(d, n) for d, n in zip(pairs["d_model"], pairs["n_layers"])]
    return pairs.assign(launches=launches, **{LAUNCH_COLUMN: pairs["cpu_s"].to_numpy(float) / np.asarray(launches)})


def zoo_points(frame: pd.DataFrame) -> pd.DataFrame:
    """Per (model, workload, batch) of a zoo set measured on both devices: ``cpu_s``, ``gpu_s``,
    ``launches`` (the GPU step's, a ``launches`` column of the GPU rows), :data:`LAUNCH_COLUMN` and
    ``gpu_wins`` (the measured GPU step is shorter).

    Parameters
    ----------
    frame : DataFrame
        ``model``, ``workload``, ``device``, ``batch_size``, ``measured_s`` and, on the GPU rows,
        ``launches`` (:func:`crossover.analysis.zoo_runs.predict_measurements`).
    """
    keys = ["model", "workload", "batch_size"]
    cpu = frame[frame["device"] == "cpu"].set_index(keys)["measured_s"].rename("cpu_s")
    gpu_rows = frame[frame["device"] == "cuda"].set_index(keys)
    both = pd.concat([cpu, gpu_rows["measured_s"].rename("gpu_s"), gpu_rows["launches"]], axis=1, join="inner").dropna()
    both = both.reset_index()
    both[LAUNCH_COLUMN] = both["cpu_s"] / both["launches"]
    both["gpu_wins"] = both["gpu_s"] < both["cpu_s"]
    return both


def fit_launch_rule(pairs: pd.DataFrame) -> ThresholdRule:
    """"The GPU wins iff the CPU spends more than X per GPU launch", fitted to points with
    :data:`LAUNCH_COLUMN` and ``gpu_wins`` (:func:`crossover.analysis.claims.fit_threshold_rule`)."""
    return fit_threshold_rule(pairs, LAUNCH_COLUMN)


def score_launch_rule(rule: ThresholdRule, points: pd.DataFrame) -> dict:
    """``correct`` of ``n`` points the rule calls right, and the ``misclassified`` points."""
    if points.empty:
        return dict(correct=0, n=0, misclassified=points)
    return score(points, rule.predict(points))
