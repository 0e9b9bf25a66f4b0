"""The convolution primitives of a calibration: what is timed and how (pure planning; torch only inside the steps).

- ``conv`` / ``conv_backward``: 2-D convolutions of square images at each of the plan's sides, forward and
  both gradients, each ``(C_in, C_out, k)`` of the plan at each of its batches;
- ``conv_pointwise``: 1×1 convolutions (stride 1, one group), forward, on their own grid (see
  :data:`POINTWISE`);
- ``conv_dilated``: 1-D convolutions of one sequence at dilations 1 and :data:`DILATION` (CPU only; see
  :data:`DILATED`);
- ``conv1d``: 1-D convolutions over sequences, forward (``nn.Conv1d``'s shapes: a kernel of ``k`` steps,
  where a 2-D grid's cells at the same ``C_in·k·C_out`` have ``k²``-pixel kernels, so more work per
  output and another oneDNN kernel). On the 2-core VM at one thread a 1-D CNN's convolutions costed on
  the 2-D grid read 35% over at batch 1 and 29% under at batch 512 (``experiments/zoo/conv1d_sequence.py``,
  whose shapes these are not: ``(8, 32, 5)`` and ``(32, 64, 5)`` over 256 and 128 steps).

Each comes as PyTorch picks the kernel (oneDNN wherever its rule allows) and, on a CPU, with oneDNN
switched off (``*_native``: the im2col + GEMM path PyTorch takes for a single small image; see
:func:`crossover.opcost.op_costs.conv_backend`). A primitive's ``shape`` is ``(batch, C_in, C_out, k,
side)``, ``side`` the image's side (2-D) or the sequence's length (1-D); its ``m`` the output pixels or
steps of the batch, its ``x`` the FLOPs.
"""

from __future__ import annotations

import itertools
from typing import Callable

__all__ = ["CONV_BACKENDS", "CONV1D_BACKENDS", "CONV1D_CHANNELS", "CONV1D_LENGTH", "CONV1D_BATCHES", "conv_points",
           "conv_step", "conv_output_shape", "conv_input_shape", "STRIDED", "STRIDED_CHANNELS", "STRIDED_SIDE",
           "fit_strided_column_s", "TRANSPOSED", "TRANSPOSED_CHANNELS", "TRANSPOSED_SIDE", "TRANSPOSED_BATCHES",
           "TRANSPOSED_GRID", "is_transposed", "on_transposed_grid", "POINTWISE", "POINTWISE_CHANNELS",
           "POINTWISE_SIDES", "POINTWISE_BATCHES", "POINTWISE_GRIDS", "is_pointwise", "ONEDNN_CHANNEL_BLOCK", "BLOCKED_KN",
           "onednn_kn", "channel_block", "cell_kn", "DILATED", "DILATED_CHANNELS", "DILATED_LENGTH", "DILATION", "DILATED_COLUMN",
           "fit_dilated_column_s", "STRIDED_BACKWARD", "STRIDED_BACKWARD_SHAPES", "STRIDED_GRAD_INPUT",
           "STRIDED_FORWARD_INPUT", "STRIDED_FORWARD_NAMES", "fit_strided_grad_input_s", "STRIDED_NATIVE_BACKWARD", "NATIVE_STRIDE_BACKWARD",
           "fit_strided_backward_column_s", "native_terms", "NATIVE_UNFOLD", "UNFOLD_MACS_RANGE", "native_kn", "fit_native_unfold"]

#: The 2-D primitives' names: as PyTorch picks the kernel, and with oneDNN off.
CONV_BACKENDS = ("conv2d", "conv2d_native")
#: The 1-D primitives' names.
CONV1D_BACKENDS = ("conv1d", "conv1d_native")
#: ``(C_in, C_out, k)`` of the 1-D primitives (none of the zoo's shapes).
CONV1D_CHANNELS = ((4, 16, 7), (16, 48, 3), (48, 96, 5))
#: Their sequences' length (padded: the output as long), and the batches of each backend.
CONV1D_LENGTH = 200
CONV1D_BATCHES = ((1, 4, 16, 64, 256), (1, 2))


#: oneDNN's channel block on AVX-512 CPUs: a convolution's activations are reordered into blocks of this
#: many channels, except the input of a first-layer convolution of fewer channels (``is_1stconv``). An
#: AVX2 CPU's blocks hold 8 (``aBcd8b`` in ``ONEDNN_VERBOSE``): :func:`channel_block`.
ONEDNN_CHANNEL_BLOCK = 16
#: ``meta["conv_kn"]`` of a CPU profile whose oneDNN forward convolution grids are indexed by
#: :func:`onednn_kn` (a profile without it: by ``C_in·k·C_out`` as the FLOPs count it).
BLOCKED_KN = "onednn_blocked"


def channel_block(vector_floats=None) -> int:
    """oneDNN's channel block on a CPU whose vectors hold ``vector_floats`` floats (a profile's
    ``meta["vector_floats"]``, the calibration's own: :func:`crossover.opcost.short_rows.calibrated_lanes`):
    the vector's floats, 8 on AVX2 and 16 on AVX-512; :data:`ONEDNN_CHANNEL_BLOCK` when unknown (a profile
    from before the count, all of them calibrated on AVX-512 hosts but the AMD VM's). On the AMD VM (AVX2)
    a 1×1 convolution of 8 input channels into 32 was indexed as one of 16 (AVX-512's padding) and costed
    the zoo's depthwise CNN's 16 -> 32 at its own time: 0.65-0.75 times what it took beside it (1.06-1.18 with
    blocks of 8: ``experiments/bench_onednn_block.py``, its log). Known limit: the blocked copies a convolution
    allocates (:func:`crossover.opcost.op_costs.onednn_copies`, which decide the buffers glibc maps afresh) are
    still sized in blocks of 16."""
    lanes = int(vector_floats or 0)
    return lanes if lanes in (8, 16) else ONEDNN_CHANNEL_BLOCK


def onednn_kn(c_in: int, c_out: int, kernel_pixels: int, block: int = ONEDNN_CHANNEL_BLOCK) -> float:
    """``C_in·k·C_out`` as oneDNN's blocked kernels compute it: the output channels padded up to whole
    blocks of ``block`` channels (:func:`channel_block`), the input channels too unless fewer than one block
    in a kernel of several pixels (a first layer's plain input, which its own kernel reads as it is).

    On the 2-core VM (AVX-512, one thread): a ``Conv1d(C, C, 3)`` over 64 sequences of 512 steps took the
    same 1.89-2.08 ms at every ``C`` of 20, 24, 28 and 32, against 0.88 at 16 and 3.6-3.7 at 40 and 48;
    1×1 ones alike (``experiments/bench_conv_alone.py --channels``, its log). Into 32 channels over 64
    images of 32 × 32, a 3×3 or 5×5 convolution's time grew with each input channel from 1 to 16
    (1.2 → 4.5 ms, 1.5 → 12.1), then stayed from 24 to 32; a 1×1 one's stayed 1.5-1.7 ms from 1 input
    channel to 16; from 16 channels a 3×3 one took 2.6-2.9 ms into any of 1 to 16 (4.3 into 32)
    (``experiments/bench_onednn_channels.py``, its log)."""
    def padded(c):
        return -(-int(c) // block) * block

    plain = c_in < block and kernel_pixels > 1
    return float((c_in if plain else padded(c_in)) * kernel_pixels * padded(c_out))


#: ``overheads`` key of a CPU profile whose 2-D native convolution grid (``conv_native``) is indexed by
#: :func:`native_kn`: the matrix-product MACs one unfolded input element costs (:func:`fit_native_unfold`).
NATIVE_UNFOLD = "native_unfold_macs"
#: The fitted ratio is kept within this range (a degenerate fit: the bounds).
UNFOLD_MACS_RANGE = (0.0, 256.0)
#: The product term's least share of the slowest native cell for the fit to read a rate from it: below
#: it the cells show no product (NNLS on cells of equal seconds left a product term of 1e-16 of them on the
#: AMD EPYC VM, where the Intel Xeon VM's left exactly zero: a rounding residue, not a rate).
PRODUCT_SHARE_MIN = 1e-6


def native_kn(c_in: int, c_out: int, kernel_pixels: int, unfold_macs: float) -> float:
    """``K·N`` of a native (im2col + GEMM) convolution with its unfolding counted: ``K·(N + unfold_macs)``,
    ``K = C_in·k²`` the unfolded rows, ``N = C_out``.

    PyTorch's native path first copies every input element under each kernel tap into a ``K × pixels``
    matrix, then multiplies the ``N × K`` weight into it: the copy's work grows with ``K`` alone, the
    product's with ``K·N``. Indexed by ``K·N`` only, a convolution into few channels read as one with
    little to do: on the 2-core VM ``Conv2d(16, 1, 3)`` on one 32 × 32 image took 51-62 µs alone (one and
    two threads), where its ``K·N`` of 144 lies below every cell and the grid gave 16-23; ``Conv2d(64, 8,
    3)`` on 16 × 16 took 82-100 against 38-45 (``experiments/bench_native_unfold.py``, its logs)."""
    return float(c_in * kernel_pixels * (c_out + unfold_macs))


def fit_native_unfold(families) -> dict:
    """``{NATIVE_UNFOLD: u}``, ``u`` the MACs one unfolded element of a native 2-D convolution costs (pure):
    the ratio of the two per-element rates of a non-negative least-squares fit, relative to each cell, of
    the native ``conv`` cells' seconds to ``c + a·(batch·K·pixels) + b·(batch·K·N·pixels)``, within
    :data:`UNFOLD_MACS_RANGE`; ``{}`` without at least four cells or where ``b``'s term is at most
    :data:`PRODUCT_SHARE_MIN` of the slowest cell.

    Parameters
    ----------
    families : mapping of family to list of (seconds, spread, row)
        A calibration's rows by family (its ``conv`` rows named ``conv2d_native``, the shape
        ``batch x C_in x C_out x k x side``).
    """
    import math

    import numpy as np
    from scipy.optimize import nnls

    design, seconds = [], []
    for s, _, row in families.get("conv", []):
        shape = [int(v) for v in str(row.get("shape") or "").split("x") if v]
        if row["name"] != CONV_BACKENDS[1] or len(shape) != 5 or not math.isfinite(s) or s <= 0:
            continue
        batch, c_in, c_out, k, side = shape
        unfolded = batch * c_in * k * k * side * side
        design.append([1.0, unfolded, unfolded * c_out])
        seconds.append(s)
    if len(seconds) < 4:
        return {}
    weights = 1.0 / np.asarray(seconds)
    coef = nnls(np.asarray(design) * weights[:, None], np.asarray(seconds) * weights)[0]
    if coef[2] * max(row[2] for row in design) <= PRODUCT_SHARE_MIN * max(seconds):
        return {}  # no product to speak of (a rounding residue of NNLS is no rate: it differs by CPU)
    low, high = UNFOLD_MACS_RANGE
    return {NATIVE_UNFOLD: float(min(max(coef[1] / coef[2], low), high))}


def cell_kn(row, m: int, device: str, unfold_macs=None, block: int = ONEDNN_CHANNEL_BLOCK) -> float:
    """``K·N`` of a calibration row's cell on its grid: :func:`onednn_kn` (blocks of ``block`` channels) for a
    CPU's oneDNN forward convolution (``conv``, ``conv1d``, :data:`POINTWISE`; its ``shape`` ``batch x C_in x C_out x k x side``),
    :func:`native_kn` for a native 2-D ``conv`` one given ``unfold_macs``, the FLOPs over ``2·m`` for any
    other."""
    family, name = row["family"], str(row["name"])
    shape = str(row.get("shape") or "").split("x")
    if device != "cpu" or family not in ("conv", "conv1d", POINTWISE) or len(shape) != 5:
        return float(row["x"]) / (2 * m)
    _, c_in, c_out, k, _ = (int(v) for v in shape)
    if name.endswith("_native"):
        if family == "conv" and unfold_macs is not None:
            return native_kn(c_in, c_out, k * k, unfold_macs)
        return float(row["x"]) / (2 * m)
    return onednn_kn(c_in, c_out, k if family == "conv1d" else k * k, block)


#: The family of the strided native convolutions (CPU only): one image of ``STRIDED_SIDE`` at stride 2
#: for each ``(C_in, C_out, k)`` of ``STRIDED_CHANNELS``, whose output (16 × 16) is a side the native grid
#: has. PyTorch's native path unfolds a strided input element by element: on the 2-core VM at one thread
#: a stride-2 convolution took 1.4-1.8 times the stride-1 one of the same output, 0.68-0.70 ns more for
#: each element of its unfolded input (four shapes, 3 to 32 input channels: bench_costly_ops.py).
STRIDED = "conv_strided"
STRIDED_CHANNELS = ((3, 16, 3), (16, 32, 3), (32, 64, 3))
STRIDED_SIDE = 32
#: Its backward primitives (``conv2d_native_backward``): both gradients, paired with the native ``conv_backward``
#: grid's cells of the same output; each gradient took 0.5-1.3 ns more per unfolded element than at stride 1
#: on the VM at one thread (``bench_strided_backward.py --native``). Its rate: :data:`NATIVE_STRIDE_BACKWARD`.
STRIDED_NATIVE_BACKWARD = "conv2d_native_backward"
NATIVE_STRIDE_BACKWARD = "native_stride_backward_column_s"


#: The family of the strided convolutions' input gradients (CPU only): ``convolution_backward`` of a 3×3
#: convolution at stride 2 with only the input's gradient asked for, at each ``(batch, C_in, C_out, k,
#: side)`` of ``STRIDED_BACKWARD_SHAPES`` (none a reference or zoo model's). oneDNN runs it over the input's
#: pixels at a rate of its own: on the 2-core VM 1.7-10.4 times the stride-1 one of the same output at one
#: thread, 6-11.5 ns per input-gradient element whatever the channels and kernel (2.7-8.6 at two threads;
#: ``experiments/bench_strided_backward.py``, its logs in ``experiments/results/intel-xeon-2c/logs``).
#: It times each shape's forward pass at stride 2 (``forward``) and at stride 1 over half the side
#: (``forward_stride1``): 0.4-1.4 ns more per input element at one thread (the same log).
STRIDED_BACKWARD = "conv_backward_strided"
STRIDED_BACKWARD_SHAPES = ((8, 8, 8, 3, 32), (8, 32, 32, 3, 16))
#: ``overheads`` key: seconds per element of a strided convolution's input gradient (:func:`fit_strided_grad_input_s`).
STRIDED_GRAD_INPUT = "strided_grad_input_element_s"
#: ``overheads`` key: seconds per input element a strided forward convolution pays beyond the stride-1 one of
#: the same output (:func:`fit_strided_grad_input_s`).
STRIDED_FORWARD_INPUT = "strided_forward_input_element_s"
STRIDED_FORWARD_NAMES = ("forward", "forward_stride1")


def fit_strided_grad_input_s(families) -> dict:
    """``{STRIDED_GRAD_INPUT: s, STRIDED_FORWARD_INPUT: f}`` (pure): the medians of the input gradients'
    seconds per input element and of the stride-2 forward passes' beyond the stride-1 ones per input element
    (at least 0); each left out without its primitives (a calibration from before them, or a GPU's)."""
    import math

    import numpy as np

    per_element, forward = [], {}
    for seconds, _, row in families.get(STRIDED_BACKWARD, []):
        batch, c_in, _, _, side = (int(v) for v in str(row.get("shape")).split("x"))
        if not math.isfinite(seconds):
            continue
        if row.get("name") in STRIDED_FORWARD_NAMES:
            forward.setdefault(row.get("shape"), {})[row.get("name")] = (seconds, batch * c_in * side * side)
        else:
            per_element.append(seconds / (batch * c_in * side * side))
    extra = [(pair["forward"][0] - pair["forward_stride1"][0]) / pair["forward"][1]
             for pair in forward.values() if len(pair) == 2]
    out = {STRIDED_GRAD_INPUT: float(np.median(per_element))} if per_element else {}
    return dict(out, **{STRIDED_FORWARD_INPUT: max(float(np.median(extra)), 0.0)}) if extra else out


#: The family of the transposed convolutions (CPU only): ``ConvTranspose2d(C_in, C_out, k, stride=2,
#: padding=(k - 2) // 2)``, which doubles the side, over images of ``TRANSPOSED_SIDE`` at each batch of
#: ``TRANSPOSED_BATCHES``, for each ``(C_in, C_out, k)`` of ``TRANSPOSED_CHANNELS`` (a decoder's halving
#: of channels, a distinct ``C_in·C_out·k²`` each). Their grid is indexed by the input's pixels over the
#: batch and ``C_in·C_out·k²``. No rule from the ordinary convolutions holds for them: on the 2-core VM at
#: one thread one took 0.9 to 18.5 times the forward convolution of the same shapes, at 0.4 to 86 GFLOP/s
#: (``experiments/bench_costly_ops.py``, its log).
TRANSPOSED = "conv_transposed"
TRANSPOSED_CHANNELS = ((8, 4, 2), (16, 8, 2), (32, 16, 2), (24, 12, 4), (64, 32, 2))
TRANSPOSED_SIDE = 8
TRANSPOSED_BATCHES = (1, 8, 64, 512)
#: The profile's grid of them, as :mod:`crossover.opcost.calibrate` builds grids: (grid, family,
#: primitive, cold).
TRANSPOSED_GRID = (TRANSPOSED, TRANSPOSED, "conv_transpose2d", False)


#: The family of the pointwise convolutions (CPU only): ``Conv2d(C_in, C_out, 1)`` for each ``(C_in, C_out)``
#: of ``POINTWISE_CHANNELS`` (a distinct ``C_in·C_out`` each, 256 to 16384; none chosen from a zoo model),
#: as PyTorch picks the kernel over images of ``POINTWISE_SIDES[0]`` at each batch of
#: ``POINTWISE_BATCHES[0]``, and with oneDNN off (``*_native``) over images of ``POINTWISE_SIDES[1]`` at each
#: of ``POINTWISE_BATCHES[1]``. PyTorch runs a 1×1 convolution natively on one thread below a batch of 16
#: (8 images of 16 × 16, 16 → 32 channels: 15-17 µs alone there, 44-47 costed on oneDNN's cells: the logs of
#: ``bench_layer_costs`` and ``bench_conv_alone``, one thread); from a batch of 16
#: with oneDNN off it takes NNPACK instead, 2-8 times slower per pixel on the VM, a path PyTorch itself never picks
#: while oneDNN is on: the native cells stop at 8 images. Their grids are indexed, as the ``conv`` grids
#: are, by the output pixels of the batch and ``C_in·C_out`` (oneDNN's blocked, :func:`onednn_kn`). A 1×1
#: convolution does ``k²`` times less arithmetic per byte than the 3×3 and 5×5 cells of the ``conv`` grid at
#: the same ``C_in·k²·C_out``, and oneDNN reorders its activations all the same: on the 2-core VM at one
#: thread the pointwise convolutions of a depthwise-separable CNN, timed alone at batch 64, took 1.6-2.2
#: times what the ``conv`` grid costs them where its other convolutions took 1.1-1.2; those of gated 1-D
#: blocks 1.1-1.2 times against 0.7-0.8 for their 3-tap ones (``experiments/bench_conv_alone.py``,
#: ``experiments/bench_layer_costs.py``, their logs). A 1-D one
#: (``Conv1d(C_in, C_out, 1)``) is the 2-D one of height 1 ATen makes of it, on the same grids.
POINTWISE = "conv_pointwise"
POINTWISE_CHANNELS = ((8, 32), (32, 32), (64, 64), (128, 128))
POINTWISE_SIDES = (8, 16)
POINTWISE_BATCHES = ((1, 4, 16, 64, 256), (1, 2, 4, 8))
#: The profile's grids of them, as :mod:`crossover.opcost.calibrate` builds grids: (grid, family, primitive, cold).
POINTWISE_GRIDS = ((POINTWISE, POINTWISE, CONV_BACKENDS[0], False),
                   (f"{POINTWISE}_native", POINTWISE, CONV_BACKENDS[1], False))


def is_pointwise(row) -> bool:
    """Whether a traced convolution row is a forward 1×1 one of stride 1 and one group (1-D or 2-D, not
    transposed): the kind the :data:`POINTWISE` grid times."""
    from .trace import row_args

    shapes = [tuple(s) for s in row.get("input_shapes") or ()]
    if "backward" in str(row.get("op", "")) or len(shapes) < 2 or len(shapes[1]) not in (3, 4):
        return False
    args = row_args(row)
    x, w = shapes[0], shapes[1]
    return (all(k == 1 for k in w[2:]) and not args.get("transposed") and int(args.get("groups", 1)) == 1
            and all(int(s) == 1 for s in args.get("stride") or (1,)) and len(x) == len(w) and x[1] == w[1])


def is_transposed(row) -> bool:
    """Whether a traced convolution row is a transposed one (its ``args``, see :mod:`crossover.opcost.trace`)."""
    from .trace import row_args

    return bool(row_args(row).get("transposed"))


def on_transposed_grid(row) -> bool:
    """Whether a transposed convolution row is of the kind the :data:`TRANSPOSED` grid times: 2-D (a 4-D
    input), one group, forward. Others (1-D, 3-D, grouped, their gradients) stay uncalibrated."""
    from .trace import row_args

    shapes = row.get("input_shapes") or ()
    return (is_transposed(row) and "backward" not in str(row.get("op", "")) and len(shapes) > 0
            and len(tuple(shapes[0])) == 4 and int(row_args(row).get("groups", 1)) == 1)


def _channels_and_image(row):
    """``((C_in, C_out, k), (batch, side))`` of a primitive's shape ``"batch x C_in x C_out x k x side"``."""
    shape = tuple(int(v) for v in str(row.get("shape") or "").split("x") if v)
    return shape[1:4], (shape[0], shape[4]) if len(shape) == 5 else None


def fit_strided_column_s(families) -> float:
    """Seconds per unfolded input element a strided native convolution pays beyond the stride-1 one of the
    same output (pure): the median over ``(C_in, C_out, k)`` of ``(t_strided - t_native) / columns``, at
    least 0; 0 without pairs.

    Parameters
    ----------
    families : mapping of family to list of (seconds, spread, row)
        A calibration's rows by family: the ``STRIDED`` primitives (one image of ``STRIDED_SIDE``) and the
        stride-1 native ``conv`` ones of one image of half that side (the same output).
    """
    import math

    import numpy as np

    key = _channels_and_image
    strided = {key(r)[0]: s for s, _, r in families.get(STRIDED, []) if math.isfinite(s)
               and r["name"] == CONV_BACKENDS[1]}
    native = {key(r)[0]: s for s, _, r in families.get("conv", []) if math.isfinite(s)
              and r["name"] == CONV_BACKENDS[1] and key(r)[1] == (1, STRIDED_SIDE // 2)}
    side = STRIDED_SIDE // 2
    extra = [(strided[k] - native[k]) / (k[0] * k[2] ** 2 * side * side) for k in strided if k in native]
    return max(float(np.median(extra)), 0.0) if extra else 0.0


#: The family of the dilated native convolutions (CPU only): ``Conv1d(C, C, 3)`` over one sequence of
#: ``DILATED_LENGTH`` steps for each ``C`` of ``DILATED_CHANNELS``, at dilation 1 and at ``DILATION`` (the
#: names ``dilation1`` and ``dilation4``; padded to the same length). One small sequence runs on the native
#: path either way, and a dilated one through ``slow_conv_dilated2d``, which unfolds element by element:
#: on the 2-core VM at batch 1 the WaveNet blocks' and the TCN's dilated convolutions took 1.32-1.68 times
#: their cost with the strided rate, their undilated ones 0.71-1.10 (``bench_conv_alone_*_b1_*``).
DILATED = "conv_dilated"
DILATED_CHANNELS = (16, 48)
DILATED_LENGTH = 256
DILATION = 4
#: ``overheads`` key: seconds per unfolded element a dilated native convolution pays beyond the undilated one.
DILATED_COLUMN = "native_dilated_column_s"


def fit_dilated_column_s(families) -> dict:
    """``{DILATED_COLUMN: s}`` (pure): the median over ``DILATED_CHANNELS`` of ``(t_dilated - t_undilated) /
    (C·3·DILATED_LENGTH)``, at least 0; ``{}`` without a pair (a calibration from before the family)."""
    import math

    import numpy as np

    times = {(str(r["name"]), str(r.get("shape"))): s for s, _, r in families.get(DILATED, []) if math.isfinite(s)}
    extra = []
    for (name, shape), seconds in times.items():
        undilated = times.get(("dilation1", shape))
        if name != f"dilation{DILATION}" or undilated is None:
            continue
        _, c_in, _, k, length = (int(v) for v in shape.split("x"))
        extra.append((seconds - undilated) / (c_in * k * length))
    return {DILATED_COLUMN: max(float(np.median(extra)), 0.0)} if extra else {}


def fit_strided_backward_column_s(families) -> dict:
    """``{NATIVE_STRIDE_BACKWARD: s}`` (pure): as :func:`fit_strided_column_s`, of the backward primitives
    against the native ``conv_backward`` grid, per unfolded element and gradient (two); ``{}`` without pairs."""
    import numpy as np

    key, side = _channels_and_image, STRIDED_SIDE // 2
    strided = {key(r)[0]: s for s, _, r in families.get(STRIDED, []) if np.isfinite(s) and r["name"] == STRIDED_NATIVE_BACKWARD}
    stride_1 = {key(r)[0]: s for s, _, r in families.get("conv_backward", []) if np.isfinite(s)
                and r["name"] == CONV_BACKENDS[1] and key(r)[1] == (1, side)}
    extra = [(strided[k] - stride_1[k]) / (2 * k[0] * k[2] ** 2 * side * side) for k in strided if k in stride_1]
    return {NATIVE_STRIDE_BACKWARD: max(float(np.median(extra)), 0.0)} if extra else {}


def native_terms(families) -> dict:
    """The native path's terms of a CPU calibration (pure): ``native_stride_column_s``
    (:func:`fit_strided_column_s`), the unfolding (:func:`fit_native_unfold`) and the dilated rate
    (:func:`fit_dilated_column_s`), its strided gradients' rate (:func:`fit_strided_backward_column_s`), and
    oneDNN's rates for a strided convolution's input gradient and forward pass (:func:`fit_strided_grad_input_s`)."""
    return dict(native_stride_column_s=fit_strided_column_s(families), **fit_native_unfold(families),
                **fit_dilated_column_s(families), **fit_strided_grad_input_s(families),
                **fit_strided_backward_column_s(families))


def conv_points(plan, device: str = "cpu") -> list:
    """``(family, name, m, x, shape)`` of every convolution primitive of ``plan`` on ``device``."""
    out = []
    backends = CONV_BACKENDS if device == "cpu" else CONV_BACKENDS[:1]  # oneDNN or not: a CPU choice
    for name, batches in zip(backends, (plan.conv_batches, plan.native_batches)):
        for size, (c_in, c_out, kernel), batch in itertools.product(plan.conv_sizes, plan.conv_channels, batches):
            forward = 2.0 * batch * size * size * c_in * kernel * kernel * c_out
            for family, flops in (("conv", forward), ("conv_backward", 2 * forward)):  # input and weight gradients
                out.append((family, name, batch * size * size, flops, (batch, c_in, c_out, kernel, size)))
    if device == "cpu" and STRIDED_SIDE // 2 in plan.conv_sizes and 1 in plan.native_batches:  # paired with the grid
        side = STRIDED_SIDE // 2
        out += [(STRIDED, name, side * side, 2.0 * side * side * c_in * k * k * c_out, (1, c_in, c_out, k, STRIDED_SIDE))
                for c_in, c_out, k in STRIDED_CHANNELS for name in (CONV_BACKENDS[1], STRIDED_NATIVE_BACKWARD)]
    if device == "cpu" and plan.conv_transposed:  # the plans with the convolutions' other kinds
        out += [(STRIDED_BACKWARD, name, b * (side // 2) ** 2, 2.0 * b * (side // 2) ** 2 * c_in * k * k * c_out,
                 (b, c_in, c_out, k, side)) for b, c_in, c_out, k, side in STRIDED_BACKWARD_SHAPES
                for name in (CONV_BACKENDS[0], *STRIDED_FORWARD_NAMES)]
        pixels = TRANSPOSED_SIDE**2  # the grid's M: the input's pixels over the batch
        out += [(TRANSPOSED, TRANSPOSED_GRID[2], b * pixels, 2.0 * b * pixels * c_in * c_out * k * k,
                 (b, c_in, c_out, k, TRANSPOSED_SIDE))
                for (c_in, c_out, k), b in itertools.product(TRANSPOSED_CHANNELS, TRANSPOSED_BATCHES)]
    if device == "cpu" and plan.conv_pointwise:
        for name, side, batches in zip(CONV_BACKENDS, POINTWISE_SIDES, POINTWISE_BATCHES):
            out += [(POINTWISE, name, b * side**2, 2.0 * b * side**2 * c_in * c_out, (b, c_in, c_out, 1, side))
                    for (c_in, c_out), b in itertools.product(POINTWISE_CHANNELS, batches)]
    if not plan.conv1d:
        return out
    if device == "cpu":
        out += [(DILATED, f"dilation{d}", DILATED_LENGTH, 2.0 * DILATED_LENGTH * c * 3 * c, (1, c, c, 3, DILATED_LENGTH))
                for c in DILATED_CHANNELS for d in (1, DILATION)]
    for name, batches in zip(CONV1D_BACKENDS if device == "cpu" else CONV1D_BACKENDS[:1], CONV1D_BATCHES):
        for (c_in, c_out, kernel), batch in itertools.product(CONV1D_CHANNELS, batches):
            m = batch * CONV1D_LENGTH
            out.append(("conv1d", name, m, 2.0 * m * c_in * kernel * c_out, (batch, c_in, c_out, kernel, CONV1D_LENGTH)))
    return out


def conv_input_shape(family: str, shape) -> tuple:
    """The input tensor's shape of a convolution primitive of ``shape`` (see the module docstring)."""
    batch, c_in, _, _, side = shape
    return (batch, c_in, side) if family in ("conv1d", DILATED) else (batch, c_in, side, side)


def conv_output_shape(family: str, shape) -> tuple:
    """The output's shape (a backward primitive's: its input gradient's, as large as the input)."""
    batch, c_in, c_out, _, side = shape
    channels = c_in if family in ("conv_backward", STRIDED_BACKWARD) else c_out
    side = 2 * side if family == TRANSPOSED else side
    return (batch, channels, side) if family in ("conv1d", DILATED) else (batch, channels, side, side)


def conv_step(family: str, name: str, shape, device: str) -> Callable[[], object]:
    """The call timing one convolution primitive (inputs allocated now, reused every call)."""
    import torch

    batch, c_in, c_out, kernel, size = shape
    one_d = family in ("conv1d", DILATED)
    x = torch.randn(conv_input_shape(family, shape), device=device)
    w = torch.randn((c_out, c_in, kernel) if one_d else (c_out, c_in, kernel, kernel), device=device)
    bias = torch.randn(c_out, device=device)
    pad = kernel // 2
    if family == TRANSPOSED:  # the weight is C_in × C_out × k × k; stride 2 doubles the side
        w = torch.randn((c_in, c_out, kernel, kernel), device=device)

        def call():
            return torch.conv_transpose2d(x, w, bias, stride=2, padding=(kernel - 2) // 2)
    elif family == STRIDED_BACKWARD and name in STRIDED_FORWARD_NAMES:  # stride 2, or 1 over half the side
        half = torch.randn((batch, c_in, size // 2, size // 2), device=device)

        def call():
            return torch.conv2d(x, w, None, stride=2, padding=pad) if name == "forward" else \
                torch.conv2d(half, w, None, stride=1, padding=pad)
    elif family == STRIDED_BACKWARD or name == STRIDED_NATIVE_BACKWARD:  # stride 2: oneDNN's input gradient, or both
        grad = torch.conv2d(x, w, None, stride=2, padding=pad)
        backward, mask = torch.ops.aten.convolution_backward.default, [True, family == STRIDED, False]

        def call():
            return backward(grad, x, w, None, [2, 2], [pad, pad], [1, 1], False, [0, 0], 1, mask)
    elif family in ("conv", "conv1d", STRIDED, POINTWISE, DILATED):
        conv = torch.conv1d if one_d else torch.conv2d
        stride = 2 if family == STRIDED else 1
        dilation = int(name[len("dilation"):]) if family == DILATED else 1

        def call():
            return conv(x, w, bias, stride=stride, padding=pad * dilation, dilation=dilation)
    else:
        grad = torch.conv2d(x, w, bias, padding=pad)
        backward = torch.ops.aten.convolution_backward.default

        def call():
            return backward(grad, x, w, [c_out], [1, 1], [pad, pad], [1, 1], False, [0, 0], 1, [True, True, True])
    if "_native" not in name:
        return call
    set_mkldnn, enabled = torch._C._set_mkldnn_enabled, torch._C._get_mkldnn_enabled

    def native():  # oneDNN off for this call only (a C flag: well under a microsecond)
        before = enabled()
        set_mkldnn(False)
        try:
            return call()
        finally:
            set_mkldnn(before)

    return native
