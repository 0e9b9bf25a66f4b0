"""Primitives for layer kinds the core families cost wrongly, and which trace rows they cost.

Measured where the zoo's new kinds missed (the 2-core VM and the H100 host at one thread, #27; the
pooling numbers below: ``experiments/bench_pool_kernels.py``, its log in
``experiments/results/amd-epyc-2c/logs/bench_pool_kernels.log``):

- ``pool1d``: ``nn.MaxPool1d`` in a forward pass without autograd runs the CPU's own 1-D kernel (no
  indices), while the trace, made on fake tensors, records the 2-D pooling with indices it falls back
  to elsewhere; on the VM at one thread the 1-D kernel pools 2 MiB in 136 µs, the 2-D one with indices
  in 2.1 ms;
- ``adaptive_pool``: adaptive max-pooling (``nn.AdaptiveMaxPool1d/2d``), a reduction with indices
  (446 µs for 2 MiB there at one thread, against 30 µs for ``amax`` and 2.1 ms for the 2×2 pooling),
  timed over planes of 256 and of 32 elements (``adaptive_pool_short``): the kernel pays per plane
  (one output and index each, its window's bounds) as well as per element, so a curve over bytes from
  one plane length misses another (the 1-D CNN's global pooling over planes of 128 at batch 512: 3.3 ms
  predicted from planes of 256, 4.4 ms under the profiler at one thread); a row is costed between the
  two curves by its plane length (:func:`over_plane_length`);
- ``conv_depthwise``: a convolution with one group per input channel reads and writes its activations
  once per few FLOPs (memory-bound; the dense convolution grid, indexed by ``C_in·k²·C_out``, has no cell
  that small);
- ``gather``: an embedding (bag) lookup moves the rows it gathers, not its whole table;
- ``batch_norm``: batch norm in eval mode (``_native_batch_norm_legit_no_training``) scales and shifts
  each (sample, channel) plane after computing every channel's factors, a reduction's curve costed it
  as a sum of its bytes: on the Intel VM at one thread ``nn.BatchNorm2d`` over 8 × 16 × 16 × 16 (128 KiB)
  took 11.2 µs alone against 7.2 µs from that curve and a module call, over 8 × 64 × 8 × 8 11.6 µs
  (``experiments/bench_layer_costs.py``; the depthwise CNN's six batch norms,
  ``experiments/results/intel-xeon-2c``). Timed over planes of 32 × 32 and of 8 × 8
  (``batch_norm_short``), a row costed between the two by its plane's length as adaptive pooling is;
- ``batch_norm_train`` and ``batch_norm_backward``: batch norm in a training step (``_native_batch_norm_legit``,
  which computes each channel's statistics, and ``native_batch_norm_backward``), over planes of 32 × 32.
  Costed as reductions over their bytes, the calibration's ``bn_cnn`` reference model's training steps read
  30-46% low on the Intel VM; under ``torch.profiler`` (one thread, batch 16) its two forward batch norms
  took 1.09 ms against 0.20 costed so, and their backward ops 0.47 against 0.28.

Each is a curve over bytes moved (:func:`moved_bytes`); a profile without the curve (a calibration from
before these primitives) costs the row as before, with the trace's bytes (a gather's whole table: on
the H100 host at one thread, the rows alone under-predict a 20-id bag by 55%, its fixed cost being the
kernel's own, which only the primitive measures). Pure: no torch import at module level.
"""

from __future__ import annotations

from typing import Mapping, Optional

__all__ = ["LAYER_OPS", "LAYER_FAMILIES", "layer_points", "layer_step", "layer_family", "moved_bytes",
           "over_plane_length", "beyond_the_op", "SHORT_PLANES", "SHORT_PLANE_FAMILY", "BATCH_NORM", "BATCH_NORM_SHORT",
           "BATCH_NORM_TRAIN", "BATCH_NORM_BACKWARD",
           "EMBEDDING_ROWS", "EMBEDDING_WIDTH", "BAG_SIZE"]

#: The primitive of each family (its op name in the plan).
LAYER_OPS = {"pool1d": "max_pool1d", "adaptive_pool": "adaptive_max_pool1d", "conv_depthwise": "conv_depthwise",
             "gather": "embedding_bag", "adaptive_pool_short": "adaptive_max_pool1d",
             "batch_norm": "batch_norm", "batch_norm_short": "batch_norm", "batch_norm_train": "batch_norm_train",
             "batch_norm_backward": "batch_norm_backward"}
LAYER_FAMILIES = tuple(LAYER_OPS)
#: The family timing adaptive max-pooling over short planes (:func:`over_plane_length`).
SHORT_PLANES = "adaptive_pool_short"
#: The families timing batch norm over long and short planes, and their planes' sides.
BATCH_NORM, BATCH_NORM_SHORT = "batch_norm", "batch_norm_short"
#: The families timing batch norm in a training step: its forward op (statistics and all) and its backward op.
BATCH_NORM_TRAIN, BATCH_NORM_BACKWARD = "batch_norm_train", "batch_norm_backward"
_NORM_TRAINING = (BATCH_NORM_TRAIN, BATCH_NORM_BACKWARD)
_NORM_CHANNELS, _NORM_SIDE, _NORM_SHORT_SIDE = 16, 32, 8
#: The family of short planes beside each family of long ones (:func:`over_plane_length`).
SHORT_PLANE_FAMILY = {"adaptive_pool": SHORT_PLANES, BATCH_NORM: BATCH_NORM_SHORT}
_CHANNELS, _LENGTH, _SIDE = 32, 256, 32  # pools: 32 channels of 256 steps; depthwise: 16 channels of 32 × 32
_SHORT_LENGTH = 32  # adaptive_pool_short: 32 channels of 32 steps
EMBEDDING_ROWS, EMBEDDING_WIDTH, BAG_SIZE = 5000, 64, 20


def _shape(family: str, n: int) -> tuple:
    if family in ("pool1d", "adaptive_pool"):
        return (max(n // (_CHANNELS * _LENGTH), 1), _CHANNELS, _LENGTH)
    if family == SHORT_PLANES:
        return (max(n // (_CHANNELS * _SHORT_LENGTH), 1), _CHANNELS, _SHORT_LENGTH)
    if family == "conv_depthwise":
        return (max(n // (16 * _SIDE * _SIDE), 1), 16, _SIDE, _SIDE)
    if family in (BATCH_NORM, BATCH_NORM_SHORT, *_NORM_TRAINING):
        side = _NORM_SHORT_SIDE if family == BATCH_NORM_SHORT else _NORM_SIDE
        return (max(n // (_NORM_CHANNELS * side * side), 1), _NORM_CHANNELS, side, side)
    return (max(n // (EMBEDDING_WIDTH * BAG_SIZE), 1), BAG_SIZE)  # gather: bags of BAG_SIZE ids


def _primitive_bytes(family: str, shape: tuple) -> float:
    """Bytes the trace rows of this kind count (:func:`moved_bytes`), for the primitive's shape."""
    if family == "pool1d":
        n = shape[0] * shape[1] * shape[2]
        return 4.0 * (n + n // 2)
    if family in ("adaptive_pool", SHORT_PLANES):
        n = shape[0] * shape[1] * shape[2]
        return 4.0 * n + 12.0 * shape[0] * shape[1]  # values and int64 indices of one output per channel
    if family in ("conv_depthwise", BATCH_NORM, BATCH_NORM_SHORT, BATCH_NORM_TRAIN):  # the input read, the output written
        return 4.0 * 2 * _count(shape)
    if family == BATCH_NORM_BACKWARD:  # the output's gradient and the input read, the input's gradient written
        return 4.0 * 3 * _count(shape)
    bags, size = shape
    return 4.0 * bags * size * EMBEDDING_WIDTH + 4.0 * bags * EMBEDDING_WIDTH + 8.0 * bags * size


def layer_points(sizes) -> list:
    """``(family, name, n, x, shape)`` of every primitive at each size (elements moved)."""
    return [(family, name, n, _primitive_bytes(family, _shape(family, n)), _shape(family, n))
            for family, name in LAYER_OPS.items() for n in sizes]


def layer_step(family: str, shape: tuple, device: str = "cpu"):
    """The step timing one primitive (inputs made now; a forward pass without autograd)."""
    import torch
    import torch.nn.functional as F

    if family in ("pool1d", "adaptive_pool", SHORT_PLANES):
        x = torch.randn(shape, device=device)
        op = (lambda: F.max_pool1d(x, 2)) if family == "pool1d" else (lambda: F.adaptive_max_pool1d(x, 1))
    elif family == "conv_depthwise":
        conv = torch.nn.Conv2d(shape[1], shape[1], 3, padding=1, groups=shape[1]).to(device)
        x = torch.randn(shape, device=device)
        op = lambda: conv(x)  # noqa: E731
    elif family in (BATCH_NORM, BATCH_NORM_SHORT):
        norm = torch.nn.BatchNorm2d(shape[1]).to(device).eval()
        x = torch.randn(shape, device=device)
        op = lambda: norm(x)  # noqa: E731
    elif family in _NORM_TRAINING:  # the ops a training step's trace records, called as they are
        channels = shape[1]
        x, grad = torch.randn(shape, device=device), torch.randn(shape, device=device)
        weight, bias = torch.ones(channels, device=device), torch.zeros(channels, device=device)
        mean, var = torch.zeros(channels, device=device), torch.ones(channels, device=device)
        _, saved_mean, saved_invstd = torch.ops.aten._native_batch_norm_legit(x, weight, bias, mean, var, True, 0.1, 1e-5)
        if family == BATCH_NORM_TRAIN:
            op = lambda: torch.ops.aten._native_batch_norm_legit(x, weight, bias, mean, var, True, 0.1, 1e-5)  # noqa: E731
        else:
            op = lambda: torch.ops.aten.native_batch_norm_backward(  # noqa: E731
                grad, x, weight, mean, var, saved_mean, saved_invstd, True, 1e-5, [True, True, True])
    elif family == "gather":
        bag = torch.nn.EmbeddingBag(EMBEDDING_ROWS, EMBEDDING_WIDTH, mode="mean").to(device)
        ids = torch.randint(0, EMBEDDING_ROWS, shape, device=device)
        op = lambda: bag(ids)  # noqa: E731
    else:
        raise ValueError(f"unknown layer primitive {family!r}")

    def step():
        with torch.no_grad():
            return op()

    return step


def _shapes(row: Mapping) -> list:
    return [tuple(s) for s in (row.get("input_shapes") or ())]


def layer_family(row: Mapping, name: str, *, inference: bool, device: str = "cpu") -> Optional[str]:
    """The layer family that costs ``row`` (op ``name`` without its ``aten.`` prefix), or None.

    ``inference``: the step runs without autograd (a forward pass), where 1-D max-pooling takes the
    CPU's own kernel.
    """
    shapes = _shapes(row)
    if name == "max_pool2d_with_indices" and inference and device == "cpu" and shapes and len(shapes[0]) == 4 \
            and shapes[0][2] == 1:
        return "pool1d"  # a MaxPool1d (the trace's fallback unsqueezes it to one row of pixels)
    if name in ("adaptive_max_pool2d", "adaptive_max_pool1d"):
        return "adaptive_pool"
    from .conv_primitives import is_transposed

    if name == "convolution" and not is_transposed(row) and len(shapes) >= 2 and len(shapes[0]) == len(shapes[1]) \
            and len(shapes[0]) in (3, 4):
        c_in, per_group = shapes[0][1], shapes[1][1]
        if per_group == 1 and c_in > 1:
            return "conv_depthwise"
    if name in ("_embedding_bag", "embedding_bag", "_embedding_bag_forward_only", "embedding"):
        return "gather"
    if name == "_native_batch_norm_legit_no_training" and inference and shapes and len(shapes[0]) in (3, 4, 5):
        return BATCH_NORM  # eval mode without autograd, over planes (a BatchNorm1d over (N, C) has none)
    if name in ("_native_batch_norm_legit", "native_batch_norm") and shapes and len(shapes[0]) in (3, 4, 5):
        return BATCH_NORM_TRAIN  # training mode: each channel's statistics computed
    if name == "native_batch_norm_backward" and len(shapes) > 1 and len(shapes[1]) in (3, 4, 5):
        return BATCH_NORM_BACKWARD
    return None


def moved_bytes(row: Mapping, family: str) -> Optional[float]:
    """Bytes a layer-family row moves, where the trace's count (every input and output whole) is not it:
    a gather's rows gathered and output (not its table), a 1-D pooling's input and values (no
    indices). None: the trace's count."""
    shapes = _shapes(row)
    outputs = [tuple(s) for s in (row.get("output_shapes") or ())]
    if family == "pool1d" and shapes and outputs:  # the 1-D kernel writes no indices
        return 4.0 * (_count(shapes[0]) + _count(outputs[0]))
    if family in (BATCH_NORM, BATCH_NORM_TRAIN) and shapes:  # the planes read and written (the per-channel factors are few)
        return 4.0 * 2 * _count(shapes[0])
    if family == BATCH_NORM_BACKWARD and shapes:
        return 4.0 * 3 * _count(shapes[0])
    if family != "gather":
        return None
    if len(shapes) < 2 or len(shapes[0]) != 2:
        return None
    lookups, width = _count(shapes[1]), shapes[0][1]
    return 4.0 * lookups * width + 4.0 * (_count(outputs[0]) if outputs else 0) + 8.0 * lookups


def over_plane_length(row: Mapping, long_s: float, short_s: float, family: str = "adaptive_pool") -> float:
    """A row's seconds between its cost on its family's curve of long planes (``long_s``) and on that of
    short ones (``short_s``), geometrically by where its planes' length lies between the two primitives'
    in log scale; held at the nearer curve outside. Adaptive max-pooling (planes of 256 and 32
    elements): a plane is what each output pools, its input's spatial size over its output's; batch
    norm (:data:`BATCH_NORM`, planes of 32 × 32 and 8 × 8): a plane is one sample's channel, its input's
    spatial size."""
    from .profiles import log_between

    shapes, outputs = _shapes(row), [tuple(s) for s in (row.get("output_shapes") or ())]
    if not shapes or len(shapes[0]) < 3 or long_s <= 0 or short_s <= 0:
        return long_s
    if family == BATCH_NORM:
        return log_between(_count(shapes[0][2:]), _NORM_SHORT_SIDE ** 2, _NORM_SIDE ** 2, short_s, long_s)
    if not outputs or len(shapes[0]) != len(outputs[0]):
        return long_s
    window = _count(shapes[0][2:]) / max(_count(outputs[0][2:]), 1)
    return log_between(window, _SHORT_LENGTH, _LENGTH, short_s, long_s)


def _count(shape) -> int:
    out = 1
    for d in shape:
        out *= int(d)
    return out


def beyond_the_op(family: str, overheads: Mapping) -> float:
    """Seconds a layer primitive's step pays that a model's trace costs apart: the module call of
    ``conv(x)`` and ``bag(ids)`` (:func:`layer_step`), and the bag's
    ``arange`` of a 2-D input's offsets (a trace row of its own). Counted twice, they made the embedding
    bag's batch-1 step on the VM 1.5 µs (7%) too slow. A CPU's only: a GPU's host work overlaps its kernels."""
    if family == "gather":
        return overheads.get("module_call_s", 0.0) + overheads.get("dispatch_s", 0.0)
    if family == "conv_depthwise":
        return overheads.get("module_call_s", 0.0)
    if family in (BATCH_NORM, BATCH_NORM_SHORT):  # and the ``empty`` row the trace records, costed as a view
        return overheads.get("module_call_s", 0.0) + overheads.get("view_s", 0.0)
    return 0.0
