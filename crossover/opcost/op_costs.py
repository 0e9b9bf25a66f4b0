"""The predicted cost of one traced op on one calibrated device (pure: no measuring, no I/O).

:func:`op_cost` takes a :class:`~crossover.opcost.profiles.Profile` and a row of :func:`~crossover.opcost.trace.trace_module`'s
table and returns an :class:`OpCost`: the op's host and device time, its floor (dispatch or launch), its family and
what bounds it. How each kind is costed:

- ``matmul``: the calibration grid of seconds over rows ``M`` (the output's rows, batch dimensions included) × weight
  elements ``K·N`` (from the op's FLOPs), interpolated in log-log space; the ``matmul_cold`` grid (weights cycled
  through DRAM) when the model's parameters exceed the warm caches
  (:attr:`crossover.opcost.profiles.Profile.warm_bytes`); past the grid the extra FLOPs run at the edge's rate. A
  backward ``mm`` with a short inner dimension (``K`` within the calibrated range and below ``M`` and ``N``: a weight
  gradient at a small batch) on the ``matmul_outer`` grid over ``K`` × ``M·N``.
- ``conv``: the same over the output pixels of the batch ``M`` × ``C_in·k²·C_out`` (from the FLOPs), forward and
  backward on their own grids, one per calibrated image side (interpolated in log time against log side), and on the
  native (oneDNN off) grids where PyTorch would not use oneDNN (:func:`conv_backend`; a profile without grids: seconds
  against FLOPs). A forward 1×1 convolution of stride 1 and one group (``conv_pointwise``, 1-D or 2-D) on its own
  grids of such convolutions (oneDNN's and the native path's) where the profile has them, without the composition's
  ``conv_forward_extra`` (as a 1-D one on its own grids). A strided convolution's input gradient on oneDNN: over the
  input's elements at the calibration's ``strided_grad_input_element_s``
  (:data:`~crossover.opcost.conv_primitives.STRIDED_BACKWARD`), at least the grid's stride-1 half; its forward pass
  pays ``strided_forward_input_element_s`` per input element beyond the grid's cost of its output; on the native path
  its gradients ``native_stride_backward_column_s`` each.
- ``attention``: seconds against the attention FLOPs computed from the query/key/value shapes (``2·B·H·L·S·(E + Ev)``;
  a backward op costs 2.5 forwards).
- ``elementwise``, ``reduction``, ``copy``, ``optimizer``, pooling (its own curves, forward and backward: CPU
  max-pooling runs far below the bandwidth) and known ops of kind ``other`` (random numbers, loss gradients, gathers):
  seconds against bytes moved, the bandwidth curve whose floor is the dispatch cost; a sum, mean, softmax or layer
  norm on its own primitive's curve (:mod:`.reduction_curves`).
- ``view`` and ops that launch nothing: the calibrated view cost on the host, nothing on the device.
- Fused ops that run several kernels inside (``_transformer_encoder_layer_fwd``, ``_native_multi_head_attention``, the
  ``nn.TransformerEncoderLayer``/``nn.MultiheadAttention`` fast path of inference): the sum of the kernels PyTorch's
  CPU implementation runs, derived from their shapes (13 for an encoder layer: projections, attention by ``bmm`` and
  softmax, adds, layer norms), its products as they are plus ``fixed + scale × the rest`` where the calibration timed
  the fused op whole (:mod:`.fused_layers`).
- A recurrent layer (kind ``rnn``: a forward pass's fused row) on the recurrent primitives' terms (:mod:`.gpu_ops`), and
  oneDNN's LSTM layer and a GRU's backward pass in a CPU training step on their own (:mod:`.recurrent_layers`).
- Anything else: ``max(dispatch, FLOPs / peak FLOP rate, bytes / peak bandwidth)`` with a warning naming the op.

On a CPU profile the op's time is all host time. On a CUDA profile the curves hold kernel times (CUDA events), the
host pays ``launch_s`` per launching op and :mod:`crossover.opcost.module_predict` composes ``max(host, device)`` a step.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping, Optional

from .activations import UNTAGGED_POINTWISE, activation_curve, uncovered_warning
from .fused_layers import FUSED_VIEWS, fused_rows, fused_terms
from .conv_grids import (blocked_dims, conv_grid_seconds, conv_grid_time, conv_operands, is_strided, sized_grids,
                         strided_unfold_elements, uncalibrated_conv_warning, unfold_rate_s, unfolded_dims, uses_1d_grids,
                         with_stride_s)
from .attention_heads import head_seconds
from .batched_products import BMM_MATRIX, batched_matrices
from .conv_primitives import ONEDNN_CHANNEL_BLOCK, POINTWISE, TRANSPOSED, is_pointwise, on_transposed_grid
from .gpu_ops import bias_free_queued_s, costs_recurrent_whole, host_floor_s, recurrent_cost
from .layer_primitives import LAYER_FAMILIES, SHORT_PLANE_FAMILY, layer_family, moved_bytes, over_plane_length
from .profiles import Profile
from .recurrent_layers import recurrent_train_cost
from .reduction_curves import mean_division_s, own_curve
from .short_rows import SHORT_ROWS, SUBVECTOR_WARN_FLOATS, over_row_length, subvector_family, subvector_warning
from .streaming import in_stream
from .trace import op_name, row_args, row_element_size

__all__ = ["OpCost", "op_cost", "conv_backend", "fresh_bytes", "onednn_buffers", "onednn_copies", "ONEDNN_CHANNEL_BLOCK", "FRESH_MIN_BYTES", "matmul_dims", "conv_dims",
           "attention_flops", "MEMORY_FAMILIES", "COMPUTE_FAMILIES"]

#: Families whose time beyond the floor is memory traffic, and compute.
MEMORY_FAMILIES = ("elementwise", "reduction", "pool", "pool_backward", "copy", "rng", "optimizer", "generic",
                   *LAYER_FAMILIES)
COMPUTE_FAMILIES = ("matmul", "conv", "conv_backward", "conv1d", "attention", TRANSPOSED, POINTWISE)

#: Ops of kind ``other`` (or with their own costing) that a bandwidth curve covers, by family.
_KNOWN_OTHER = {
    "rng": {"bernoulli", "bernoulli_", "native_dropout", "rand", "randn", "rand_like", "randn_like", "uniform_",
            "normal_", "randint", "randint_like", "exponential_", "random_", "randperm"},
    "elementwise": {"nll_loss_backward", "nll_loss2d_backward", "mse_loss_backward", "l1_loss_backward",
                    "smooth_l1_loss_backward", "binary_cross_entropy_backward", "native_dropout_backward",
                    "where", "masked_fill", "masked_fill_", "clamp", "clamp_", "lerp", "lerp_", "addcmul_",
                    "addcdiv_", "_masked_scale", "masked_scale", "embedding_dense_backward",  # and untagged ones
                    *UNTAGGED_POINTWISE, *(name + "_" for name in UNTAGGED_POINTWISE)},
    "copy": {"cat", "stack", "index_select", "gather", "embedding", "select_backward", "slice_backward",
             "constant_pad_nd", "repeat", "index", "index_put", "index_put_", "scatter", "scatter_",
             "scatter_add", "scatter_add_", "_index_put_impl_", "expand_copy", "permute_copy", "flip", "roll",
             "tril", "triu", "_unsafe_index", "pad", "reflection_pad2d", "replication_pad2d", "upsample_nearest2d",
             "_embedding_bag", "diag_embed", "narrow_copy", "split_with_sizes_copy", "unbind_copy"},
}
_FAMILY_OF = {name: family for family, names in _KNOWN_OTHER.items() for name in names}
#: Outputs from this size on are mapped afresh by glibc at every allocation and faulted in page by
#: page (its mmap threshold rises to the largest block freed, but never past
#: ``DEFAULT_MMAP_THRESHOLD_MAX``, 32 MiB on 64-bit Linux); smaller blocks are reused from its heap.
#: Measured on the 2-core VM: a 32 MiB ``empty().fill_()`` faults 8193 pages every call, 31.9 MiB none.
FRESH_MIN_BYTES = 32 * 2**20


@dataclass(frozen=True)
class OpCost:
    """What one op costs on one device.

    Attributes
    ----------
    host_s : float
        Seconds of the host thread (on a CPU profile: the op's whole time).
    device_s : float
        Kernel seconds on the device (0 on a CPU profile).
    floor_s : float
        The part that is dispatch or launch (of ``host_s`` on a CPU, of ``device_s`` on a GPU).
    family : str
        Which calibration costed it (``matmul``, ``elementwise``, ``view``, ``generic``, ...).
    launches : int
        Kernels it runs.
    warning : str
        Non-empty when no calibration covers the op (the generic model was used).
    compute_s : float
        Of the time beyond the floor, the part spent in matrix products, convolutions and attention
        (the rest is memory-bound); a fused op sums its kernels'.
    """

    host_s: float
    device_s: float
    floor_s: float
    family: str
    launches: int = 1
    warning: str = ""
    compute_s: float = 0.0  # of the time beyond the floor, the compute-bound part (the rest is memory)

    @property
    def bound(self) -> str:
        """``"launch"`` when the floor is most of it, else ``"memory"`` or ``"compute"`` by family."""
        total = max(self.host_s, self.device_s)
        if self.family == "view" or total <= 0 or self.floor_s >= 0.5 * total:
            return "launch"
        return "compute" if self.family in COMPUTE_FAMILIES else "memory"


def _prod(shape) -> int:
    out = 1
    for n in shape:
        out *= int(n)
    return out


def matmul_dims(row: Mapping) -> tuple:
    """``(M, K·N)`` of a matrix-product row: ``M`` the output's rows (batch dimensions folded in),
    ``K·N`` from the FLOPs (``2·M·K·N``). None when the row has no FLOPs."""
    outputs = row.get("output_shapes") or ()
    if not outputs:
        return None
    out = tuple(outputs[0])
    return _gemm_dims(max(_prod(out[:-1]), 1) if len(out) > 1 else 1, row)


def conv_dims(row: Mapping) -> tuple:
    """``(M, K·N)`` of a convolution row: ``M`` the output pixels of the batch (the gradient's, for a
    backward op), ``K·N`` = ``C_in·k²·C_out`` (times the gradients computed, for a backward op)."""
    backward = "backward" in str(row.get("op", ""))
    shapes = (row.get("input_shapes") or ()) if backward else (row.get("output_shapes") or ())
    if not shapes or len(shapes[0]) < 3:
        return None
    out = tuple(shapes[0])
    return _gemm_dims(out[0] * _prod(out[2:]), row)


def _gemm_dims(m: int, row: Mapping):
    flops = float(row.get("flops") or 0)
    if flops <= 0 or m <= 0:
        return None
    return float(m), max(flops / (2.0 * m), 1.0)


def fresh_bytes(row: Mapping, cpu_threads: Optional[int] = None) -> float:
    """Bytes of the op's outputs of at least :data:`FRESH_MIN_BYTES` that it allocates (0 for views and
    in-place ops): memory every step faults in afresh (see :mod:`crossover.opcost.module_predict`).

    With ``cpu_threads`` (the op runs on a CPU with that many threads; 0: several), a oneDNN convolution's
    own buffers of that size count too (:func:`onednn_buffers`)."""
    name = op_name(row.get("op", ""))
    if int(row.get("launches", 1) or 0) == 0 or name.endswith("_"):
        return 0.0
    fused = fused_rows(name, row)
    if fused is not None:  # the outputs of the kernels inside (an encoder layer's feed-forward hidden layer)
        return float(sum(fresh_bytes(sub, cpu_threads) for sub in fused))
    e = row_element_size(row)
    sizes = [e * _prod(s) for s in row.get("output_shapes") or ()]
    if cpu_threads is not None:
        sizes += onednn_buffers(row, cpu_threads)
    return float(sum(b for b in sizes if b >= FRESH_MIN_BYTES))


def onednn_buffers(row: Mapping, threads: int = 0) -> list:
    """Bytes of the buffers PyTorch's oneDNN convolution allocates beside its output on a CPU: the output
    in oneDNN's blocked layout (then reordered into the plain one), and the input's blocked copy unless
    the convolution takes a plain input (one group, fewer than :data:`ONEDNN_CHANNEL_BLOCK` channels).
    Read off ``ONEDNN_VERBOSE=1`` on the 2-core VM (AVX-512): a depthwise 3×3 convolution of 512 images of
    16 × 32 × 32 reorders its 32 MiB input (6.5 ms, faulted in afresh), runs (2.6 ms) and reorders its
    output (1.6 ms). Empty for other rows (a backward convolution, the native path)."""
    if op_name(row.get("op", "")) != "convolution" or conv_backend(row, threads) != "mkldnn":
        return []
    shapes = [tuple(s) for s in row.get("input_shapes") or ()]
    outputs = [tuple(s) for s in row.get("output_shapes") or ()]
    if len(shapes) < 2 or not outputs or len(shapes[0]) not in (3, 4):
        return []
    e = row_element_size(row)
    return [e * _prod(shape) for shape in onednn_copies(shapes[0], shapes[1][1], outputs[0])]


def onednn_copies(x: tuple, in_per_group: int, out: tuple) -> list:
    """The shapes oneDNN copies into its blocked layout for a convolution of input ``x`` (N, C, ...) with
    ``in_per_group`` input channels per group and output ``out``: the output always, the input unless
    it is a dense first layer of fewer than :data:`ONEDNN_CHANNEL_BLOCK` channels, each with its channels
    padded to whole blocks (``nChw16c``: a layer of 24 channels is copied as 32). The one rule for a
    model's rows (:func:`onednn_buffers`) and the calibration's primitives
    (:func:`crossover.opcost.calibration_plan.fresh_buffers`).

    The padding decides which copies glibc maps afresh: on the 2-core VM a WaveNet-style block of 24
    channels over 512 steps at batch 512 (24 MiB activations, none of 32 MiB) faulted 800 MiB a step in a
    process running only it, 32 or 64 MiB inside each of its convolutions while glibc's arena stayed put:
    the 32 MiB blocked copies, mapped and unmapped at every call (``experiments/bench_heap_ops.py``, its
    log ``bench_heap_ops_wavenet_b512_t1.log``)."""
    grouped = in_per_group != x[1]
    copies = [tuple(out)] + ([tuple(x)] if grouped or x[1] >= ONEDNN_CHANNEL_BLOCK else [])
    return [(s[0], -(-s[1] // ONEDNN_CHANNEL_BLOCK) * ONEDNN_CHANNEL_BLOCK, *s[2:]) for s in copies]


def conv_backend(row: Mapping, threads: int = 0) -> str:
    """Which CPU kernel PyTorch runs a float32 1-D or 2-D convolution row with: ``"mkldnn"`` (oneDNN) or
    ``"native"`` (im2col + GEMM), by the rule of ``ConvParams::use_mkldnn`` in ATen's
    ``Convolution.cpp``: oneDNN unless the kernel is 1×1 on one thread with a batch under 16 and
    stride and dilation 1, or unless the batch is a single image of at most 20480 elements with a
    kernel of at most 3 in some dimension and one group. ``threads`` 0 counts as several. Stride and
    groups are read off the shapes (a strided convolution's output is smaller than its padded input
    allows; groups = input channels / weight's input channels); a 1-D convolution is the 2-D one of
    height 1 ATen makes of it before choosing; other dtypes go to oneDNN."""
    x, w, out = conv_operands(row)
    if x is None or row_element_size(row) != 4:
        return "mkldnn"
    strided = is_strided(x, w, out)
    groups = x[1] // w[1] if w[1] else 1
    one_by_one_single = w[-1] == 1 and w[-2] == 1 and threads == 1 and x[0] < 16 and not strided
    small_single = groups == 1 and not (w[-1] > 3 and w[-2] > 3) and x[0] <= 1 and _prod(x) <= 20480
    return "native" if one_by_one_single or small_single else "mkldnn"


def attention_flops(op: str, input_shapes) -> float:
    """FLOPs of a fused attention op from its query, key and value shapes (``(B, H, L, E)``,
    ``(B, H, S, E)``, ``(B, H, S, Ev)``): ``2·B·H·L·S·(E + Ev)``, times 2.5 for a backward op (whose
    first argument is the output's gradient). 0 when the shapes are not those of attention."""
    shapes = [tuple(s) for s in input_shapes]
    backward = "backward" in str(op)
    q_k_v = shapes[1:4] if backward else shapes[:3]
    if len(q_k_v) < 3 or any(len(s) < 3 for s in q_k_v):
        return 0.0
    q, k, v = q_k_v
    batch_heads = _prod(q[:-2])
    flops = 2.0 * batch_heads * q[-2] * k[-2] * (q[-1] + v[-1])
    return 2.5 * flops if backward else flops


def fused_split(fused: list, parts: list, view_s: float = 0.0) -> tuple:
    """A fused op's kernels' host seconds as ``(linear, rest)``: its layers' products with bias (the
    projections and feed-forward layers, on the matrix grid as any ``Linear``) and the rest (``bmm``,
    softmax, the bias-and-rescale kernel, copies, adds, norms, activations, and ``view_s``)."""
    linear = sum(p.host_s for sub, p in zip(fused, parts) if op_name(sub.get("op", "")) == "addmm")
    return linear, sum(p.host_s for p in parts) - linear + view_s


def _fused_parts(profile: Profile, fused: list, **flags) -> tuple:
    """``(parts, linear, rest)``: each kernel of a fused op costed (``flags`` as :func:`op_cost`'s), and
    :func:`fused_split` of them with the op's views, before the profile's fused terms."""
    parts = [op_cost(profile, sub, **flags) for sub in fused]
    return (parts, *fused_split(fused, parts, profile.overhead("view_s") * FUSED_VIEWS))


def fused_kernels_s(profile: Profile, row: Mapping):
    """:func:`fused_split` of a traced fused op's row on ``profile`` (a forward pass; without the profile's
    fused terms); None for any other op."""
    fused = fused_rows(op_name(row.get("op", "")), row)
    return None if fused is None else _fused_parts(profile, fused, inference=True)[1:]


def _generic(profile: Profile, row: Mapping) -> float:
    return max(profile.overhead("dispatch_s"),
               float(row.get("flops") or 0) / profile.peak_flop_rate,
               (float(row.get("bytes_read") or 0) + float(row.get("bytes_written") or 0)) / profile.peak_bandwidth)


def _family(row: Mapping, name: str) -> str:
    kind = row.get("kind", "other")
    if kind == "reduction" and "pool" in name:
        return "pool_backward" if "backward" in name else "pool"
    if kind in ("matmul", "attention", "elementwise", "reduction", "copy", "optimizer"):
        return kind
    if kind == "conv":
        return "conv_backward" if "backward" in name else "conv"
    return _FAMILY_OF.get(name, "generic")


def _outer_k(row: Mapping, dims, outer) -> float:
    """The inner dimension ``K`` of a backward ``mm`` row when it is short (at most the ``outer`` grid's
    largest ``K``, and below both outer dimensions: a weight gradient ``grad.t() @ input`` at a small
    batch, or an input gradient through a layer of few outputs), else None. Forward products keep the
    square grid whatever their shape."""
    outputs = row.get("output_shapes") or ()
    if (dims is None or not outputs or len(tuple(outputs[0])) < 2 or row.get("phase") != "backward"
            or op_name(row.get("op", "")) != "mm"):
        return None
    m, kn = dims
    n = float(tuple(outputs[0])[-1])
    k = kn / n if n else 0.0
    return k if 0 < k <= outer.m[-1] and k < min(m, n) else None


#: The outputs of the calibration's narrow products (a CPU's ``matmul_narrow`` grid, indexed as the square
#: one by ``(M, K·N)``), and the most outputs a product is costed on that grid with.
NARROW_N = 8
NARROW_MAX_N = 16


def _narrow_grid(profile: Profile, row: Mapping, dims, name: str):
    """The CPU's narrow-product grid for a forward ``addmm``/``mm`` of at most :data:`NARROW_MAX_N` output
    columns and more inputs than outputs (a classifier's head), else None: MKL runs those at a fraction of
    the square grid's rate at the same ``K·N`` (on the VM at one thread a 512 × 128 → 10 head took 34 µs
    against 15 µs from the square grid), and the time follows the rows' wide input: the grid (measured at
    :data:`NARROW_N` outputs) is read at the row's ``K`` (its ``(M, K·NARROW_N)``), not at its own ``K·N``."""
    grid = profile.grids.get("matmul_narrow")
    outputs = row.get("output_shapes") or ()
    if (grid is None or profile.device != "cpu" or dims is None or name not in ("addmm", "mm")
            or row.get("phase") == "backward" or not outputs or len(tuple(outputs[0])) < 2):
        return None
    n = float(tuple(outputs[0])[-1])
    return grid if 0 < n <= NARROW_MAX_N and dims[1] / n > n else None


def _both_gradients(row: Mapping, dims: tuple) -> tuple:
    """``((M, K·N), share)`` of a convolution backward row on the calibration's terms: ``K·N`` of the
    input and weight gradients both (as calibrated: ``2·C_in·k²·C_out`` from the weight's shape), and the
    share of that work the row does (½ for the first layer's weight gradient alone)."""
    shapes = [tuple(s) for s in row.get("input_shapes") or ()]
    if len(shapes) < 3 or len(shapes[2]) != 4:
        return dims, 1.0
    both = 2.0 * _prod(shapes[2])
    return (dims[0], both), min(dims[1] / both, 1.0)


def _curve_time(profile: Profile, family: str, row: Mapping, name: str, cold: bool):
    """Seconds from the family's calibration, or None when the profile lacks it."""
    if family == "matmul":
        dims = matmul_dims(row)
        outer = profile.grids.get("matmul_outer")
        inner = _outer_k(row, dims, outer) if outer is not None else None
        if inner is not None:
            return outer(inner, dims[0] * dims[1] / inner)
        narrow = _narrow_grid(profile, row, dims, name)
        if narrow is not None:  # measured at NARROW_N outputs: read at the row's inputs K, as K·NARROW_N
            n = float(tuple(row["output_shapes"][0])[-1])
            return narrow(dims[0], dims[1] / n * NARROW_N)
        grid = profile.grids.get("matmul_cold") if cold and "bmm" not in name else None
        grid = grid or profile.grids.get("matmul")
        per_matrix = batched_matrices(row) * profile.overhead(BMM_MATRIX) if profile.device == "cpu" else 0.0
        return None if dims is None or grid is None else grid(*dims) + per_matrix
    if family in ("conv", "conv_backward", "conv1d", POINTWISE) and sized_grids(profile, family):
        dims = conv_dims(row)
        if dims is None:
            return None
        dims, share = _both_gradients(row, dims) if family == "conv_backward" else (dims, 1.0)
        native = profile.device == "cpu" and conv_backend(row, profile.threads) == "native"
        if family == "conv" and native:  # the native grid by its unfolding too (a profile with the fit)
            dims = unfolded_dims(profile, row, dims)
        elif family != "conv_backward" and not native:
            dims = blocked_dims(profile, row, dims)
        seconds = conv_grid_seconds(profile, family, row, dims, native) * share
        if family in ("conv", "conv_backward"):  # a stride above 1 on oneDNN, or a strided native backward
            seconds = with_stride_s(profile, row, family, seconds, native, share)
        if native and family in ("conv", "conv1d"):  # timed at stride 1: a strided or dilated input unfolds slower
            seconds += strided_unfold_elements(row) * unfold_rate_s(profile, row)
        return seconds
    if family == TRANSPOSED:  # its grid's M: the input's pixels over the batch
        x = tuple((row.get("input_shapes") or [()])[0])
        dims = _gemm_dims(x[0] * _prod(x[2:]), row) if len(x) > 2 else None
        return None if dims is None else conv_grid_time(profile, TRANSPOSED, dims, math.sqrt(_prod(x[2:])))
    if family in ("conv", "conv_backward", "attention"):
        x = (attention_flops(name, row.get("input_shapes") or ()) if family == "attention"
             else float(row.get("flops") or 0))
        per_head = head_seconds(profile, row, x) if family == "attention" else None  # a CPU's, per (batch, head)
        if per_head is not None:
            return per_head
        curve = profile.curves.get(family)
        if curve is None and family == "conv_backward" and "conv" in profile.curves:
            curve, x = profile.curves["conv"], 2 * x  # a backward pass ~ two forward convolutions
        return None if curve is None or x <= 0 else curve(x)
    curve_name = "elementwise" if family == "optimizer" else family
    fallback = {"rng": "elementwise", "pool": "reduction", "pool_backward": "elementwise"}.get(family)
    curve = (own_curve(profile, family, row)  # an op the plan timed on its own (.reduction_curves)
             or profile.curves.get(curve_name) or (profile.curves.get(fallback) if fallback else None))
    if family == "elementwise":  # an activation timed on its own (tanh, GELU, ...), not as a ReLU of its bytes
        curve = activation_curve(profile, row) or curve
    if curve is None:
        return None
    moved = float(row.get("bytes_read") or 0) + float(row.get("bytes_written") or 0)
    extra = 0.0
    if family == "optimizer":  # a _foreach_ op loops over its tensors (one pair per parameter)
        extra = max(0, len(row.get("input_shapes") or ()) // 2 - 1) * profile.overhead("dispatch_s")
    if family == "reduction" and name == "mean" and profile.device == "cpu":
        extra = mean_division_s(profile, row)
    return curve(max(moved, 1.0)) + extra


def op_cost(profile: Profile, row: Mapping, *, cold: bool = False, inference: bool = False) -> OpCost:
    """The predicted cost of one traced op on ``profile``'s device.

    Parameters
    ----------
    profile : Profile
        The device's calibration.
    row : mapping
        One row of :func:`crossover.opcost.trace.trace_module` (``op``, ``kind``, ``input_shapes``,
        ``output_shapes``, ``flops``, ``bytes_read``, ``bytes_written``, ``launches``).
    cold : bool
        The model's weights do not fit in the warm caches (``Profile.warm_bytes``): matrix products are
        costed with their weights cycled through DRAM.
    inference : bool
        The step runs without autograd (a forward pass): ops with an inference-only kernel are costed
        on it (:mod:`crossover.opcost.layer_primitives`).

    Returns
    -------
    OpCost
    """
    on_gpu = profile.device == "cuda"
    name = op_name(row.get("op", ""))
    launches = int(row.get("launches", 1) or 0)
    if row.get("kind") == "view" or launches == 0:
        return OpCost(profile.overhead("view_s"), 0.0, profile.overhead("view_s"), "view", launches=0)
    if row.get("kind") == "rnn" and costs_recurrent_whole(profile):
        return OpCost(family="rnn", **recurrent_cost(profile, row))
    trained = recurrent_train_cost(profile, row, name)  # a training step's LSTM layer or GRU backward pass
    if trained is not None:
        return OpCost(family="rnn", **trained)
    fused = fused_rows(name, row)
    if fused is not None:
        parts, linear, rest = _fused_parts(profile, fused, cold=cold, inference=inference)
        view = 0.0 if on_gpu else profile.overhead("view_s") * FUSED_VIEWS
        fixed, scale = fused_terms(profile, name)  # timed whole where the calibration did (.fused_layers)
        return OpCost(fixed + linear + scale * rest, sum(p.device_s for p in parts),
                      sum(p.floor_s for p in parts) + view + fixed, "fused",
                      launches=sum(p.launches for p in parts), compute_s=sum(p.compute_s for p in parts))
    family = _family(row, name)
    if family == "conv" and on_transposed_grid(row) and sized_grids(profile, TRANSPOSED):  # timed on their own
        family = TRANSPOSED
    elif family == "conv" and is_pointwise(row) and sized_grids(profile, POINTWISE):  # its own grid, as a 1-D one's
        family = POINTWISE
    elif family == "conv" and uses_1d_grids(profile, row):  # its own primitives: not the 2-D kind's composition
        family = "conv1d"
    layer = layer_family(row, name, inference=inference, device=profile.device)  # none for a transposed one
    if layer in profile.curves:  # calibrated (a profile from before these primitives: the family as before)
        family = layer
        moved = moved_bytes(row, layer)  # on the curve's own count of bytes
        if moved is not None:
            row = dict(row, bytes_read=moved, bytes_written=0)
    warning = ""
    seconds = None if family == "generic" else _curve_time(profile, family, row, name, cold)
    short = SHORT_PLANE_FAMILY.get(family)
    if short in profile.curves and seconds is not None:  # planes of other lengths than the primitive's
        seconds = over_plane_length(row, seconds, _curve_time(profile, short, row, name, cold), family)
    if family == "reduction" and seconds is not None and SHORT_ROWS in profile.curves:  # a softmax's short rows
        seconds = over_row_length(row, seconds, _curve_time(profile, SHORT_ROWS, row, name, cold))
    lanes = int(profile.meta.get("vector_floats") or 0)
    below_vector = subvector_family(row, lanes) if family == "reduction" else ""
    if below_vector in profile.curves:  # a softmax over rows shorter than a vector: element by element
        seconds = _curve_time(profile, below_vector, row, name, cold)
    if seconds is None:
        seconds = _generic(profile, row)
        warning = (f"no calibration covers {row.get('op', name)} (kind {row.get('kind', 'other')}): predicted from "
                   f"the generic model max(dispatch, FLOPs / peak rate, bytes / peak bandwidth)")
        family = "generic"
    elif family == "elementwise":
        warning = uncovered_warning(profile, row)  # costed as a ReLU of its bytes though it may compute more
    elif family in ("conv", "conv_backward", "conv1d"):
        warning = uncalibrated_conv_warning(row)
    elif not on_gpu and lanes == 0 and subvector_family(row, SUBVECTOR_WARN_FLOATS):
        warning = subvector_warning(row)  # a profile from before the sub-vector rows: its rows of 16's cost
    floor = min(seconds, profile.overhead("launch_s" if on_gpu else "dispatch_s"))
    if not on_gpu and family in MEMORY_FAMILIES:  # in a step's stream of fresh buffers (.streaming)
        seconds = in_stream(profile, seconds, float(row.get("bytes_read") or 0) + float(row.get("bytes_written") or 0))
    compute = seconds - floor if family in COMPUTE_FAMILIES else 0.0
    if on_gpu:
        dims = matmul_dims(row) if family == "matmul" else None
        host = max(profile.overhead("launch_s") * launches, host_floor_s(profile, family, dims, bias=name == "addmm"))
        # the bias-free grid times a forward Linear's x @ weight.t(), not a backward pass's other layouts
        forward_mm = dims is not None and name == "mm" and row.get("phase", "forward") == "forward"
        bias_free = profile.grids.get("matmul_host") if forward_mm else None
        queued = bias_free_queued_s(bias_free, *dims) if bias_free is not None else None
        if queued is not None and queued > seconds:  # a kernel cuBLAS picks for this bias-free shape alone
            compute, seconds = compute + queued - seconds, queued
        return OpCost(host, seconds, floor, family, launches, warning, compute)
    return OpCost(seconds, 0.0, floor, family, launches, warning, compute)
