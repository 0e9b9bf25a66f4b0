"""Convolutions costed on a calibration's grids: one grid per image side (2-D) or sequence length (1-D),
as PyTorch picks the kernel or on its native path (:mod:`crossover.opcost.conv_primitives`). Pure.

A 1-D convolution row (a 3-D input) is costed on the ``conv1d`` grids where the profile has them, else,
as before them, on the 2-D grids at the side of a square of as many pixels as its output's steps.
"""

from __future__ import annotations

import math
from typing import Mapping, Optional

from .conv_primitives import (BLOCKED_KN, DILATED_COLUMN, NATIVE_STRIDE_BACKWARD, NATIVE_UNFOLD, STRIDED_FORWARD_INPUT,
                              STRIDED_GRAD_INPUT, channel_block, native_kn, onednn_kn)
from .profiles import Profile, log_between
from .trace import row_args

__all__ = ["sized_grids", "conv_side", "conv_grid_time", "below_fewest_pixels", "conv_grid_seconds", "uses_1d_grids",
           "conv_operands", "is_strided", "strided_unfold_elements", "uncalibrated_conv_warning", "blocked_dims",
           "unfolded_dims", "unfold_rate_s", "with_stride_s"]


def sized_grids(profile: Profile, base: str) -> dict:
    """``{image side: grid}`` of the profile's grids named ``base@side`` (an older profile's single
    ``base`` grid: side 0)."""
    out = {}
    for key, grid in profile.grids.items():
        stem, _, side = key.partition("@")
        if stem == base:
            out[int(side) if side else 0] = grid
    return {s: g for s, g in out.items() if s} or out


def conv_side(row: Mapping) -> float:
    """The side of the convolution's square-equivalent output image (the gradient's, for a backward op)."""
    backward = "backward" in str(row.get("op", ""))
    shapes = (row.get("input_shapes") or ()) if backward else (row.get("output_shapes") or ())
    out = tuple(shapes[0]) if shapes else ()
    return math.sqrt(math.prod(out[2:])) if len(out) > 2 else 0.0


def conv_grid_time(profile: Profile, base: str, dims: tuple, side: float):
    """Seconds from the ``base`` grids at ``dims``, interpolated in log time against log image side
    between the two calibrated sides around ``side`` (the nearest one outside them); None without any.
    A native grid (``*_native``) is continued below its fewest output pixels (:func:`below_fewest_pixels`)."""
    grids = sized_grids(profile, base)
    if not grids:
        return None
    at = below_fewest_pixels if base.endswith("_native") else (lambda grid, m, kn: grid(m, kn))
    sides = sorted(grids)
    if len(sides) == 1 or side <= 0:
        return at(grids[sides[0]], *dims)
    lo = max([s for s in sides if s <= side], default=sides[0])
    hi = min([s for s in sides if s >= side], default=sides[-1])
    if lo == hi:
        return at(grids[lo], *dims)
    return log_between(side, lo, hi, at(grids[lo], *dims), at(grids[hi], *dims))


def below_fewest_pixels(grid, m: float, kn: float) -> float:
    """A native (im2col + GEMM) convolution grid at ``m`` output pixels, continued below its smallest
    ``m`` by the power law of its first two rows (exponent held in [0, 1]), not clamped to it.

    The native path runs a single small image: its pixels are the GEMM's columns, and its time falls with
    them from the grid's first row down (the VM, 2 threads: a 1-D convolution of 32 → 64 channels over
    128 steps, ``m`` = 128, takes 20.5 µs, where the 16×16-image grid's first row, ``m`` = 256, reads 44
    µs). oneDNN's grids stay clamped: a small image's time there is the kernel's fixed cost (the 5×5
    convolutions of LeNet-5 at ``m`` = 100: 68 µs measured, 65.5 predicted from the first row)."""
    m0 = grid.m[0]
    if m >= m0 or len(grid.m) < 2:
        return grid(m, kn)
    t0, t1 = grid(m0, kn), grid(grid.m[1], kn)
    exponent = min(max(math.log(t1 / t0) / math.log(grid.m[1] / m0), 0.0), 1.0)
    return t0 * (m / m0) ** exponent


def uses_1d_grids(profile: Profile, row: Mapping) -> bool:
    """Whether a convolution row is costed on the profile's ``conv1d`` grids: a forward 1-D convolution
    (a 3-D input) where the profile has them. Such a row's family is ``conv1d``: the composition's
    ``conv_forward_extra``, fitted on the reference CNN's 2-D convolutions, is not applied to it."""
    shapes = row.get("input_shapes") or ()
    one_d = "backward" not in str(row.get("op", "")) and bool(shapes) and len(tuple(shapes[0])) == 3
    return one_d and bool(sized_grids(profile, "conv1d"))


def conv_grid_seconds(profile: Profile, family: str, row: Mapping, dims: tuple, native: bool) -> Optional[float]:
    """Seconds of a convolution row of ``dims`` (``(M, K·N)``) on the profile's grids of ``family``
    (``conv``, ``conv_backward``, ``conv1d``: a 1-D one at its output's length, or ``conv_pointwise``), on the native path's
    grids where ``native`` (and the profile has them)."""
    side = float(tuple((row.get("output_shapes") or [()])[0])[-1]) if family == "conv1d" else conv_side(row)
    seconds = conv_grid_time(profile, f"{family}_native", dims, side) if native else None
    return seconds if seconds is not None else conv_grid_time(profile, family, dims, side)


def conv_operands(row: Mapping):
    """``(x, w, out)`` shapes of a 1-D or 2-D convolution row as 2-D ones (a 1-D convolution as the 2-D one
    of height 1 ATen makes of it), or ``(None, None, None)``."""
    backward = "backward" in str(row.get("op", ""))
    shapes = [tuple(s) for s in row.get("input_shapes") or ()]
    x, w = (shapes[1:3] if backward else shapes[:2]) if len(shapes) >= 2 + backward else (None, None)
    out = shapes[0] if backward else tuple((row.get("output_shapes") or [()])[0])
    if x is not None and w is not None and len(x) == len(w) == len(out) == 3:  # conv1d: viewed as 2-D
        x, w, out = ((s[0], s[1], 1, s[2]) for s in (x, w, out))
    if x is None or w is None or len(x) != 4 or len(w) != 4 or len(out) != 4:
        return None, None, None
    return x, w, out


def blocked_dims(profile: Profile, row: Mapping, dims: tuple) -> tuple:
    """``dims`` (``(M, K·N)``) of a forward convolution row that runs on oneDNN, its ``K·N`` as oneDNN's
    blocked kernels compute it (:func:`crossover.opcost.conv_primitives.onednn_kn`, in the blocks of the
    profile's CPU: :func:`crossover.opcost.conv_primitives.channel_block`) where the profile's
    grids are indexed so (``meta["conv_kn"]``); ``dims`` unchanged for a grouped convolution or an older
    profile."""
    x, w, _ = conv_operands(row)
    if (profile.meta or {}).get("conv_kn") != BLOCKED_KN or x is None or x[1] != w[1]:
        return dims
    return dims[0], onednn_kn(w[1], w[0], math.prod(w[2:]), channel_block((profile.meta or {}).get("vector_floats")))


def unfolded_dims(profile: Profile, row: Mapping, dims: tuple) -> tuple:
    """``dims`` (``(M, K·N)``) of a forward 2-D convolution row that runs natively, its ``K·N`` with the
    unfolding counted (:func:`crossover.opcost.conv_primitives.native_kn`) where the profile's native grid
    is indexed so (its ``overheads`` hold :data:`NATIVE_UNFOLD <crossover.opcost.conv_primitives.NATIVE_UNFOLD>`;
    a 1-D convolution costed on it as the 2-D one of height 1 ATen makes of it); ``dims`` unchanged for a
    grouped convolution or an older profile."""
    x, w, _ = conv_operands(row)
    unfold = (profile.overheads or {}).get(NATIVE_UNFOLD)
    if unfold is None or x is None or x[1] != w[1]:
        return dims
    return dims[0], native_kn(w[1], w[0], math.prod(w[2:]), unfold)


def is_strided(x, w, out) -> bool:
    """Whether the convolution's stride is above 1: its output is narrower than stride 1 gives whatever
    the padding."""
    return out[-1] < x[-1] - w[-1] + 1


def strided_unfold_elements(row: Mapping) -> float:
    """Elements a strided or dilated forward convolution's native path unfolds (batch × input channels of
    a group × kernel pixels × output pixels); 0 for a stride and dilation of 1 or a row that is no forward
    convolution. Both unfold their input element by element (``slow_conv2d`` at a stride above 1,
    ``slow_conv_dilated2d``): on the 2-core VM at one thread a dilated native convolution of one image
    took 0.52-0.76 ns more per unfolded element than the undilated one (six shapes, 1-D and 2-D,
    dilations 2 and 4), a strided one 0.68-0.70 (``experiments/bench_costly_ops.py``, its log). oneDNN's
    kernel, at larger batches, is costed as the undilated one: the dilated 1-D CNN of ``experiments/zoo_unseen``
    read +1% to +8% at batches 8 and 64 that way (``bench_zoo_unseen_p1_t1``, ``p2_t1``). A profile with the
    dilated primitives charges a dilated one's elements at their own rate (:func:`unfold_rate_s`)."""
    if "backward" in str(row.get("op", "")):
        return 0.0
    x, w, out = conv_operands(row)
    dilated = any(d > 1 for d in row_args(row).get("dilation") or ())
    if x is None or not (dilated or is_strided(x, w, out)):
        return 0.0
    return float(x[0] * w[1] * w[2] * w[3] * out[2] * out[3])


def unfold_rate_s(profile: Profile, row: Mapping) -> float:
    """Seconds per element :func:`strided_unfold_elements` counts: a dilated convolution's rate
    (:data:`DILATED_COLUMN <crossover.opcost.conv_primitives.DILATED_COLUMN>`, its own primitives' on a
    profile that has them), else the strided one's (``native_stride_column_s``)."""
    dilated = any(d > 1 for d in row_args(row).get("dilation") or ())
    if dilated and DILATED_COLUMN in (profile.overheads or {}):
        return profile.overhead(DILATED_COLUMN)
    return profile.overhead("native_stride_column_s")


def uncalibrated_conv_warning(row: Mapping) -> str:
    """A warning for a convolution no calibration primitive times, or ``""``: a transposed one (an
    upsampling decoder's; the caller costs a 2-D forward one on a profile's transposed grid instead, where
    it has one) or a dilated one's gradients, costed on the grids of the ordinary convolution of the same
    shapes. On either device: a GPU calibration times neither. On the 2-core VM the first out-of-sample
    sitting of ``experiments/zoo_unseen`` put an autoencoder's transposed convolutions at a quarter of their
    measured time at batch 512 (``bench_zoo_unseen_p1_*``, ``bench_op_breakdown_unseen.log``)."""
    conv = row_args(row)
    if "transposed" not in conv:
        return ""
    backward = "backward" in str(row.get("op", ""))  # a dilated forward one: see strided_unfold_elements
    what = ("transposed" if conv.get("transposed")
            else "dilated" if backward and any(d > 1 for d in conv.get("dilation") or ()) else "")
    if not what:
        return ""
    return (f"a {what} convolution ({row.get('op', 'aten.convolution')}) is not calibrated: costed as the "
            f"ordinary convolution of the same shapes, which can be several times off")


def with_stride_s(profile: Profile, row: Mapping, family: str, seconds: float, native: bool, share: float) -> float:
    """``seconds`` of a 2-D ``conv`` or ``conv_backward`` row costed on the stride-1 grids, with what a stride
    above 1 adds where the profile has the rates (:mod:`crossover.opcost.conv_primitives`): on oneDNN a forward
    pass's input elements at ``strided_forward_input_element_s``, and an input gradient over the input's
    elements at ``strided_grad_input_element_s`` in place of the grid's half (at least that half); on the
    native path each gradient's unfolded elements at ``native_stride_backward_column_s`` (one for a first
    layer's, ``share`` below 1; a forward pass's unfolding is :func:`strided_unfold_elements`'). Unchanged for
    a stride of 1, a 1-D, grouped or transposed convolution, or a profile without the rates."""
    x, w, out = conv_operands(row)
    shapes = row.get("input_shapes") or ()
    backward = family == "conv_backward"
    args = row_args(row)
    if (x is None or x[1] != w[1] or args.get("transposed") or len(tuple(shapes[int(backward)])) != 4
            or not any(int(s) > 1 for s in args.get("stride") or ())):
        return seconds
    rates = profile.overheads or {}
    if not backward:
        return seconds + (0.0 if native else math.prod(x) * rates.get(STRIDED_FORWARD_INPUT, 0.0))
    if native:
        columns = x[0] * w[1] * w[2] * w[3] * out[2] * out[3]
        return seconds + (2 if share >= 1.0 else 1) * columns * rates.get(NATIVE_STRIDE_BACKWARD, 0.0)
    rate = rates.get(STRIDED_GRAD_INPUT)
    return seconds / 2 + max(seconds / 2, math.prod(x) * rate) if rate and share >= 1.0 else seconds
