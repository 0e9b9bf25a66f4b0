"""A CPU's pointwise (1 × 1) convolutions costed as the matrix products and copies they run. Pure.

The convolution grids (:mod:`crossover.opcost.conv_grids`) time 3 × 3 and 5 × 5 kernels, indexed by output
pixels and ``C_in·k²·C_out``. A 1 × 1 convolution of the same index does the arithmetic of a 3 × 3 one of
a ninth of the input channels but moves nine times its input, and oneDNN reorders that input into its
blocked layout where the grid's nearest cells (a first layer's 3 or 6 channels) read it plain. On the
Intel VM at one thread the depthwise-separable CNN's three pointwise convolutions at batch 64 ran
448, 269 and 406 µs in its step (forward hooks; 272 and 407 µs alone for the last two) against 221, 132
and 255 µs from the grids; at batch 8, on PyTorch's native path, 34, 24 and 35 µs (19.6 µs alone for the
first) against 44, 40 and 56 (``experiments/bench_op_breakdown.py depthwise_cnn``).

What each path runs, costed on primitives the calibration has anyway:

- oneDNN: one product of the batch's pixels by ``C_in`` by ``C_out`` (the matrix grid), and the reorders
  of its blocked copies (:func:`crossover.opcost.op_costs.onednn_copies`: the output's, and the
  input's from 16 channels), each a copy of its bytes read and written (the ``copy`` curve);
- native (a batch under 16 on one thread, ATen's ``use_mkldnn`` rule): one product per image of its
  pixels by ``C_in`` by ``C_out``, no unfolding (a 1 × 1 kernel at stride 1 reads its input in place);
  the grid's cells each pay a dispatch, which the images' products after the first do not.
"""

from __future__ import annotations

import math
from typing import Mapping, Optional

__all__ = ["is_pointwise", "pointwise_conv_s"]


def is_pointwise(row: Mapping) -> bool:
    """Whether ``row`` is a forward 2-D convolution with a 1 × 1 kernel, one group, stride 1 and no
    padding (its output has the input's pixels)."""
    from .conv_grids import conv_operands

    if "backward" in str(row.get("op", "")) or len(tuple((row.get("input_shapes") or [()])[0])) != 4:
        return False
    x, w, out = conv_operands(row)
    return (x is not None and tuple(w[2:]) == (1, 1) and w[1] == x[1] and tuple(out[2:]) == tuple(x[2:])
            and out[1] == w[0])


def pointwise_conv_s(profile, row: Mapping, backend: str) -> Optional[float]:
    """Seconds of a pointwise convolution row on a CPU ``profile`` by ``backend`` (``"mkldnn"`` or
    ``"native"``, :func:`crossover.opcost.op_costs.conv_backend`); None when the row is not pointwise or the
    profile lacks the matrix grid (or, for oneDNN, the copy curve)."""
    from .conv_grids import conv_operands
    from .op_costs import onednn_copies
    from .trace import row_element_size

    grid = profile.grids.get("matmul")
    if not is_pointwise(row) or grid is None:
        return None
    x, w, _ = conv_operands(row)
    pixels, weights = x[2] * x[3], float(x[1] * w[0])
    if backend == "native":
        dispatch = profile.overhead("dispatch_s")
        per_image = grid(pixels, weights)
        return per_image + (x[0] - 1) * max(per_image - dispatch, 0.5 * per_image)
    copy = profile.curves.get("copy")
    if copy is None:
        return None
    e = row_element_size(row)
    out = (x[0], w[0], x[2], x[3])
    reorders = sum(copy(2.0 * e * math.prod(shape)) for shape in onednn_copies(tuple(x), x[1], out))
    return grid(x[0] * pixels, weights) + reorders
