"""A row-wise op timed on its own curve, not on one curve shared by every reduction (pure).

The plan times three reduction primitives over the same element counts (``sum``, ``softmax`` and
``layer_norm`` over rows of :data:`LONG_ROW <crossover.opcost.short_rows.LONG_ROW>`; ``softmax`` and
``layer_norm`` over rows of :data:`SHORT_ROW <crossover.opcost.short_rows.SHORT_ROW>` too). Costed on one
curve of seconds against bytes through all of them, an op paid the other ops' rate at its bytes: a layer
norm does more per byte than a sum (two passes, a mean and an inverse deviation written per row) and
calls more code. On the Intel VM at one thread (sitting 1129a's calibration) over 4 rows of 256 a layer
norm took 3.74 µs, a softmax 2.02 and a sum 2.42; the shared curve costed the held-out reference
``norm_mlp``'s one-row layer norm at 2.21 µs, and its forward passes read 11-15% under their
measurement at both batch sizes and both thread counts over the VM's 39 quick calibrations of
1128t-1129a, the reference forward steps' most frequent miss.

Each timed primitive gets its own curve (``reduction:layer_norm``, ``reduction_short:softmax``, ...) beside
the family's shared one, and an op the plan timed is costed on its primitive's: ``sum`` and ``mean``
(whose division :func:`mean_division_s` adds) on the sum's, the softmaxes on the softmax's, a
forward layer norm on the layer norm's. Other reductions (``amax``, ``var``, a layer norm's backward, ...)
keep the shared curve; so does a profile from before the split.
"""

from __future__ import annotations

import math
from typing import Mapping, Optional

__all__ = ["OWN_CURVE_FAMILIES", "OWN_CURVE_PRIMITIVE", "own_curve_name", "own_curve", "mean_division_s"]

#: The families whose primitives each get a curve of their own.
OWN_CURVE_FAMILIES = ("reduction", "reduction_short")
#: A traced op's name (:func:`crossover.opcost.trace.op_name`) -> the primitive whose curve costs it.
OWN_CURVE_PRIMITIVE = {"sum": "sum", "mean": "sum", "_softmax": "softmax", "_log_softmax": "softmax",
                       "_safe_softmax": "softmax", "native_layer_norm": "layer_norm"}


def own_curve_name(family: str, primitive: str) -> str:
    """The profile's curve name of one primitive of ``family``: ``family:primitive``."""
    return f"{family}:{primitive}"


def own_curve(profile, family: str, row: Mapping) -> Optional[object]:
    """The curve of the primitive that costs ``row``'s op in ``family`` (None where the op has none, the
    family is not one of :data:`OWN_CURVE_FAMILIES`, or the profile predates the split)."""
    from .trace import op_name

    primitive = OWN_CURVE_PRIMITIVE.get(op_name(row.get("op", "")))
    if family not in OWN_CURVE_FAMILIES or primitive is None:
        return None
    return profile.curves.get(own_curve_name(family, primitive))


def mean_division_s(profile, row: Mapping) -> float:
    """What a CPU's ``mean`` pays beyond its sum (the sum's own curve): ATen's CPU kernel sums, then
    divides the result in place (``sum_out(...).div_(n)``, a kernel of its own); costed as an
    elementwise op over the output (read and written), at least a dispatch. On the Intel VM at one
    thread a mean over one image's 64 planes of 8 × 8 took 3.5 µs alone against 1.7 costed as its sum
    (``experiments/bench_layer_costs.py``, its log in ``experiments/results/intel-xeon-2c/logs``)."""
    from .trace import row_element_size

    out_bytes = 2.0 * row_element_size(row) * sum(math.prod(int(n) for n in s) for s in row.get("output_shapes") or ())
    curve = profile.curves.get("elementwise")
    return max(profile.overhead("dispatch_s"), curve(max(out_bytes, 1.0)) if curve is not None else 0.0)
