"""Batched products of many small matrices on a CPU: what each matrix costs beyond one product of the same
rows (pure planning and fitting; torch only inside the steps).

ATen's CPU ``bmm`` multiplies the matrices of a batch one at a time: beyond the FLOPs a single product
of all their rows would take, it pays a fixed cost per matrix. The matrix-product grid, indexed by the
output's rows with the batch folded in, cannot see it. On the 2-core VM at one thread an attention
block's two ``bmm`` over 2048 matrices of 16 × 16 took 676 µs under the profiler against 303 µs from the
grid (``experiments/zoo_unseen/attention_pool.py``, the first out-of-sample sittings). The calibration
times ``bmm`` over :data:`BATCHED_COUNTS` matrices of :data:`BATCHED_SIDE` beside the single product of
their rows, and fits ``bmm_matrix_s``, the median over the counts of the difference per matrix
(:func:`fit_bmm_matrix_s`); a traced ``bmm`` pays it per matrix of its batch (:func:`batched_matrices`).
"""

from __future__ import annotations

import math
from typing import Callable, Mapping

__all__ = ["BATCHED", "BATCHED_SIDE", "BATCHED_COUNTS", "BMM_MATRIX", "batched_points", "batched_step",
           "fit_bmm_matrix_s", "batched_matrices"]

#: The family of the paired primitives (CPU only), the matrices' side and their counts.
BATCHED = "matmul_batched"
BATCHED_SIDE = 16
BATCHED_COUNTS = (64, 512, 4096)
#: The overhead fitted on them: seconds per matrix of a ``bmm``'s batch.
BMM_MATRIX = "bmm_matrix_s"


def batched_points() -> list:
    """``(family, name, count, shape)`` of each primitive: ``bmm`` over ``count`` matrices of
    :data:`BATCHED_SIDE`, and ``mm``, the one product of all their rows by one such matrix."""
    side = BATCHED_SIDE
    return [(BATCHED, name, count, (count, side, side, side)) for count in BATCHED_COUNTS for name in ("bmm", "mm")]


def batched_step(name: str, shape: tuple, device: str = "cpu") -> Callable[[], object]:
    """One call of the primitive (inputs made now, reused every call)."""
    import torch

    count, m, k, n = shape
    a, b = torch.randn(count, m, k, device=device), torch.randn(count, k, n, device=device)
    if name == "bmm":
        return lambda: torch.bmm(a, b)
    if name == "mm":
        rows, right = a.reshape(count * m, k), b[0].contiguous()
        return lambda: torch.mm(rows, right)
    raise ValueError(f"unknown batched primitive {name!r}")


def fit_bmm_matrix_s(families) -> float:
    """Seconds per matrix a ``bmm`` pays beyond the one product of the same rows (pure): the median over
    :data:`BATCHED_COUNTS` of ``(t_bmm - t_mm) / count``, at least 0; 0 without pairs.

    Parameters
    ----------
    families : mapping of family to list of (seconds, spread, row)
        A calibration's rows by family; the :data:`BATCHED` ones have a ``shape`` written
        ``"count x M x K x N"``.
    """
    import numpy as np

    times = {}
    for seconds, _, row in families.get(BATCHED, []):
        shape = tuple(int(v) for v in str(row.get("shape") or "").split("x") if v)
        if shape and math.isfinite(seconds):
            times[row["name"], shape[0]] = seconds
    extra = [(times["bmm", c] - times["mm", c]) / c for c in BATCHED_COUNTS
             if ("bmm", c) in times and ("mm", c) in times]
    return max(float(np.median(extra)), 0.0) if extra else 0.0


def batched_matrices(row: Mapping) -> int:
    """The matrices of a traced ``bmm`` or ``baddbmm`` row's batch (its output's leading dimensions);
    0 for other rows."""
    from .trace import op_name

    outputs = row.get("output_shapes") or ()
    if op_name(row.get("op", "")) not in ("bmm", "baddbmm") or not outputs or len(tuple(outputs[0])) < 3:
        return 0
    return math.prod(tuple(outputs[0])[:-2])
