"""Row-wise normalisations over short rows: softmax and layer norm timed on rows of :data:`SHORT_ROW`
elements beside the plan's rows of 256 (pure planning and costing; torch only inside the steps).

A softmax or layer norm pays per row as well as per element: over rows of 16 (attention scores of 16
tokens) it costs several times what the curve of 256-element rows says for its bytes. On the 2-core VM
at one thread an attention block's softmax over 512 × 4 × 16 rows of 16 took 445 µs under the profiler
against 82 µs from that curve, its layer norm over 8192 rows of 64 270 µs against 84
(``experiments/zoo_unseen/attention_pool.py``, the first out-of-sample sittings, ``bench_zoo_unseen_p1_*``).
The calibration times both ops over rows of 16 (family :data:`SHORT_ROWS`, its own curve of seconds
against the bytes the trace counts); a row is costed between the two curves, geometrically by where its
row length lies between 16 and 256 in log scale (:func:`over_row_length`), held at the nearer outside.

Rows shorter than one vector register of floats are another regime. ATen's vectorised softmax kernels run
them element by element: on the Intel VM (AVX-512: 16 floats) at one thread a log-softmax over 1024 rows of
10, a classifier's ten classes, took 145 µs against 15 over rows of 16, 13.9-14.2 ns an element at every
length from 8 to 15, its backward 6.7-7.3 (``experiments/bench_row_length.py``, its logs in
``experiments/results/intel-xeon-2c/logs``). A training step's cross-entropy over ten classes pays both.
The calibration times softmax, log-softmax and the softmax's backward over rows of :func:`subvector_row`
(10 where a vector holds 16 floats), each a curve of seconds against the bytes the trace counts
(families :data:`SUBVECTOR_FORWARD`, :data:`SUBVECTOR_BACKWARD`; the vector's floats in each point's ``k``),
and a float32 softmax over a last dimension shorter than the vector is costed on them (:func:`subvector_family`;
the trace records a softmax's ``dim``).
"""

from __future__ import annotations

import math
from typing import Callable, Mapping

__all__ = ["SHORT_ROWS", "SHORT_ROW", "LONG_ROW", "ROW_OPS", "calibrated_lanes", "short_row_points", "short_row_step", "row_length",
           "over_row_length", "row_op_bytes", "SUBVECTOR_FORWARD", "SUBVECTOR_BACKWARD", "SUBVECTOR_OPS",
           "vector_floats", "subvector_row", "subvector_points", "subvector_step", "subvector_family",
           "SUBVECTOR_WARN_FLOATS", "subvector_warning"]

#: The family of the short-row primitives (CPU only), and its rows' length; the plan's other row-wise
#: primitives (``reduction``: sum, softmax, layer norm) have rows of :data:`LONG_ROW`, the one home of
#: that length (``crossover.opcost.calibration_plan`` reads it).
SHORT_ROWS = "reduction_short"
SHORT_ROW = 16
LONG_ROW = 256
#: The forward ops a row is costed between the two curves for (their trace names), and the primitives.
ROW_OPS = ("_softmax", "_log_softmax", "native_layer_norm")
_PRIMITIVES = ("softmax", "layer_norm")


def row_op_bytes(name: str, n: int, length: int) -> float:
    """Bytes the trace counts for a softmax or layer norm over ``n`` float32 elements in rows of
    ``length``: the input and output, a layer norm's weight and bias and its per-row mean and inverse
    deviation (the plan's row-wise primitives, short and long, are counted so)."""
    rows = max(n // length, 1)
    return 4.0 * (2 * n + (2 * length + 2 * rows if name == "layer_norm" else 0))


#: The most elements a short-row primitive is timed over: past it the curve runs on at its last rate (the
#: plan's 2^22 and 2^24 would add 2 s a calibration at one thread on the 2-core VM).
MAX_ELEMENTS = 2**20


def short_row_points(sizes) -> list:
    """``(family, name, n, x, shape)`` of each primitive at each element count of ``sizes`` up to
    :data:`MAX_ELEMENTS`."""
    return [(SHORT_ROWS, name, n, row_op_bytes(name, n, SHORT_ROW), (max(n // SHORT_ROW, 1), SHORT_ROW))
            for name in _PRIMITIVES for n in sizes if n <= MAX_ELEMENTS]


def short_row_step(name: str, shape: tuple, device: str = "cpu") -> Callable[[], object]:
    """One call of the primitive ``name`` over a ``shape`` tensor (inputs made now, reused every call)."""
    import torch

    a = torch.randn(shape, device=device)
    if name == "softmax":
        return lambda: torch.softmax(a, -1)
    if name == "layer_norm":
        w, b = torch.ones(shape[-1], device=device), torch.zeros(shape[-1], device=device)
        return lambda: torch.layer_norm(a, shape[-1:], w, b)
    raise ValueError(f"unknown short-row primitive {name!r}")


def row_length(row: Mapping) -> int:
    """The length of the rows a softmax or layer norm row normalises: its input's last dimension (a layer
    norm over several trailing dimensions normalises their product: its weight's elements); 0 when the
    row is none of :data:`ROW_OPS`."""
    from .trace import op_name

    name = op_name(row.get("op", ""))
    shapes = [tuple(s) for s in (row.get("input_shapes") or ())]
    if name not in ROW_OPS or not shapes or not shapes[0]:
        return 0
    if name == "native_layer_norm" and len(shapes) > 1 and shapes[1]:
        return math.prod(shapes[1])
    return int(shapes[0][-1])


def over_row_length(row: Mapping, long_s: float, short_s: float) -> float:
    """A softmax or layer norm row's seconds between its cost on the curve of rows of :data:`LONG_ROW`
    (``long_s``) and on that of rows of :data:`SHORT_ROW` (``short_s``), geometrically by where its row
    length lies between them in log scale; ``long_s`` for other rows."""
    from .profiles import log_between

    length = row_length(row)
    if length <= 0 or long_s <= 0 or short_s <= 0:
        return long_s
    return log_between(length, SHORT_ROW, LONG_ROW, short_s, long_s)


#: The families of the sub-vector row primitives (CPU only): softmax and log-softmax forward, and the
#: softmax's backward (the log-softmax's backward costs the same: ``bench_row_length.py``).
SUBVECTOR_FORWARD = "rows_subvector"
SUBVECTOR_BACKWARD = "rows_subvector_backward"
#: The trace's softmax ops -> the sub-vector family that costs their rows below the vector's floats.
SUBVECTOR_OPS = {"_softmax": SUBVECTOR_FORWARD, "_log_softmax": SUBVECTOR_FORWARD,
                 "_softmax_backward_data": SUBVECTOR_BACKWARD, "_log_softmax_backward_data": SUBVECTOR_BACKWARD}
#: The most elements a sub-vector primitive is timed over (about 1 ms at one thread on the VM); past it
#: the curve runs on at its last rate.
SUBVECTOR_MAX_ELEMENTS = 2**16


def vector_floats(capability: str = "") -> int:
    """Floats in one of ATen's CPU vectors for a ``torch.backends.cpu.get_cpu_capability()`` string (this
    machine's when empty): 16 for AVX-512, 8 otherwise (AVX2 and ATen's default 256-bit vector)."""
    if not capability:
        import torch

        capability = torch.backends.cpu.get_cpu_capability()
    return 16 if capability.upper().startswith("AVX512") else 8


def subvector_row(lanes: int) -> int:
    """The row length the sub-vector primitives are timed at: five eighths of the vector (10 of 16, 5 of
    8), inside the regime. Rows of other lengths below the vector are costed at its rate per byte: on the
    Intel VM a log-softmax's cost per element is flat from half the vector to one short of it (13.9-14.2
    ns), a softmax's drifts (17.1 to 15.6 ns), and rows of 2-4 elements differ more (23.9 and 11.3 ns at
    2); softmax and log-softmax share one curve though they differ by a fifth at 10."""
    return max(2, lanes * 5 // 8)


def subvector_points(sizes, lanes: int) -> list:
    """``(family, name, n, x, shape)`` of each sub-vector primitive over one row, 16 rows and each element
    count of ``sizes`` up to :data:`SUBVECTOR_MAX_ELEMENTS`: ``x`` the bytes the trace counts (input and
    output forward; the gradient, the output and the input's gradient backward), ``shape`` (rows,
    :func:`subvector_row`). The one-row point is the curve's floor: below its smallest point a curve holds
    that point's time, and a classifier's batch-1 row would otherwise be costed at a thousand elements'."""
    row = subvector_row(lanes)
    out = []
    for rows in sorted({1, 16} | {max(n // row, 1) for n in sizes if n <= SUBVECTOR_MAX_ELEMENTS}):
        shape = (rows, row)
        elements = shape[0] * row
        out += [(SUBVECTOR_FORWARD, name, elements, 8.0 * elements, shape) for name in ("softmax", "log_softmax")]
        out.append((SUBVECTOR_BACKWARD, "softmax_backward", elements, 12.0 * elements, shape))
    return out


def subvector_step(name: str, shape: tuple, device: str = "cpu") -> Callable[[], object]:
    """One call of the sub-vector primitive ``name`` over a ``shape`` tensor's last dimension."""
    import torch

    a = torch.randn(shape, device=device)
    if name == "softmax":
        return lambda: torch.softmax(a, -1)
    if name == "log_softmax":
        return lambda: torch.log_softmax(a, -1)
    if name == "softmax_backward":
        grad, out = torch.randn(shape, device=device), torch.softmax(a, -1)
        return lambda: torch.ops.aten._softmax_backward_data(grad, out, len(shape) - 1, a.dtype)
    raise ValueError(f"unknown sub-vector primitive {name!r}")


def subvector_family(row: Mapping, lanes: int) -> str:
    """The sub-vector family that costs a float32 softmax row (forward or backward) over its last
    dimension when that is shorter than ``lanes`` floats; "" for other rows (another dtype, a softmax over
    another dimension where the trace recorded it, longer rows) or ``lanes`` 0 (a profile without the
    primitives)."""
    from .trace import op_name, row_args, row_element_size

    family = SUBVECTOR_OPS.get(op_name(row.get("op", "")), "")
    shapes = [tuple(s) for s in (row.get("input_shapes") or ())]
    if not family or lanes <= 0 or not shapes or not shapes[0] or row_element_size(row) != 4:
        return ""
    dim = row_args(row).get("dim")
    if dim is not None and dim != len(shapes[0]) - 1:  # ATen's other kernel: rows across the tensor
        return ""
    return family if 0 < shapes[0][-1] < lanes else ""


def calibrated_lanes(families: Mapping) -> dict:
    """``{"vector_floats": n}`` from a calibration's sub-vector primitives (their points' ``k``), for a
    profile's ``meta``; empty when it has none (a calibration from before them, or a GPU's)."""
    lanes = {int(row["k"]) for family in (SUBVECTOR_FORWARD, SUBVECTOR_BACKWARD) for _, _, row in families.get(family, [])}
    return {"vector_floats": max(lanes)} if lanes else {}


#: A profile without the sub-vector primitives warns of softmax rows shorter than this many floats (an
#: AVX-512 vector's: on such a CPU those rows run element by element, about ten times their costed time).
SUBVECTOR_WARN_FLOATS = 16


def subvector_warning(row: Mapping) -> str:
    """The warning of a softmax row below a vector on a CPU profile calibrated before the sub-vector
    primitives (its cost is the rows of 16's: on the Intel VM a tenth of what such rows take); one text
    for the forward and backward rows of a length, so that a step says it once."""
    length = tuple((row.get("input_shapes") or [(0,)])[0])[-1]
    return (f"a softmax over rows of {length} floats (forward or backward): this profile predates the sub-vector softmax primitives and costs such rows as rows of 16, "
            f"though a CPU whose vectors hold more floats than a row runs them element by element (about ten times "
            f"as long on AVX-512); recalibrate ('crossover calibrate --device cpu --quick') to time them")
