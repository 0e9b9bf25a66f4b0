"""What ``crossover calibrate`` measures: the plans (grids of primitives) and each primitive's step.

A primitive is one small piece of work timed on its own: a tiny op (the dispatch floor), a view, a
module call, autograd and optimizer chains (host overheads of a training step), a matrix product of
``M`` rows by a ``K×N`` weight (hot: the same weight every call; cold: cycling over weight copies that
together exceed the last-level cache), products with a short inner dimension (weight gradients), a
convolution forward and backward over batches × channel/kernel combinations at two image sizes, also
with oneDNN off (PyTorch's native path for a single small image), fills of a fresh and of a kept 40 MiB tensor
(page faults), a parallel op after serial gaps (thread wake-ups) and after a narrower team (thread starts),
elementwise ops, reductions and max-pooling from 1K to 16M elements, scaled-dot-product attention, recurrent layers
(on a CPU their training steps too), on a CPU the
fused attention and encoder layers of inference whole, on CUDA the synchronisation and host→device copies, and
the whole steps of five small reference models (:data:`REFERENCE_MODELS`), which calibrate what composing ops
costs beyond their sum. :func:`points` lists a plan's primitives as :class:`Point` records (counting, above one
thread, the OpenMP threads the thread-start pair starts); :func:`make_step` builds one's step on a device.
"""

from __future__ import annotations

import functools
import itertools
import math
from dataclasses import dataclass, field
from typing import Callable

from ..measurement.environment import private_cache_bytes
from ..measurement.module_rounds import ROUND_OPTIONS as _ROUND
from ..measurement.timer import TimerOptions
from .activations import ACTIVATION_ELEMENTS, ACTIVATION_FAMILY, ACTIVATION_OPS, activation_bytes, activation_step
from .attention_heads import BACKWARD as ATTENTION_BACKWARD, backward_points, backward_step
from .batched_products import BATCHED, batched_points, batched_step
from .short_rows import (LONG_ROW, SHORT_ROWS, SUBVECTOR_BACKWARD, SUBVECTOR_FORWARD, row_op_bytes, short_row_points,
                         short_row_step, subvector_points, subvector_step, vector_floats)
from .fused_layers import FUSED, fused_points, fused_step
from .conv_primitives import (CONV_BACKENDS, DILATED, POINTWISE, STRIDED, STRIDED_BACKWARD, TRANSPOSED, conv_input_shape,
                              conv_output_shape, conv_points, conv_step)
from .layer_primitives import BATCH_NORM, BATCH_NORM_SHORT, LAYER_FAMILIES, layer_step
from .streaming import CHAIN_FAMILY, CHAIN_MIN_BYTES, CHAIN_OPS
from .recurrent_layers import GRU_TRAIN, LSTM_TRAIN, RECURRENT_TRAIN, recurrent_step
from .reuse import REUSE, reuse_points, reuse_step
from .thread_starts import THREAD_START, thread_start_points, thread_start_step
from .thread_wake import WAKE, wake_points, wake_step
from .conv_neighbours import NEIGHBOURS, neighbour_points, neighbour_step
from .reference_models import REFERENCE_MODELS, reference_model

__all__ = ["Plan", "Point", "PLANS", "points", "make_step", "REFERENCE", "reference_point", "CHAIN_LENGTHS", "SGD_PARAMS",
           "CONV_BACKENDS", "FRESH_PROBE_BYTES", "output_bytes", "fresh_buffers", "REFERENCE_MODELS", "reference_model"]

#: Chain lengths of the autograd-overhead primitives, and parameter counts of the optimizer ones.
CHAIN_LENGTHS = (1, 17)
SGD_PARAMS = (1, 16)
#: Bytes of the page-fault primitives: filling a tensor this large on pages mapped afresh at every call
#: (:func:`crossover.measurement.allocator.fresh_pages_fill`) against filling one kept.
FRESH_PROBE_BYTES = 40 * 2**20
_ROW = LONG_ROW  # features of the rows of the reduction primitives (short_rows has their short kin)


@dataclass(frozen=True)
class Plan:
    """A calibration's grids, rounds and per-visit timing (see :data:`PLANS`)."""

    name: str
    rounds: int
    options: TimerOptions
    matmul_m: tuple
    matmul_kn: tuple  # K = N of the square weights
    cold_kn: tuple  # K = N measured cold too
    matmul_extra: tuple  # non-square (K, N), at every M of extra_m: a check of the grid
    extra_m: tuple
    sizes: tuple  # elements of the elementwise and reduction primitives
    elementwise_ops: tuple
    reduction_ops: tuple
    conv_channels: tuple  # (C_in, C_out, kernel): C_in·k²·C_out distinct (the grid's K·N)
    conv_batches: tuple  # on square images of each conv_sizes side (padded: the output has the same size)
    attention_shapes: tuple  # (batch, heads, sequence, head dim)
    h2d_sizes: tuple = (2**12, 2**16, 2**20, 2**24)  # bytes (CUDA only)
    #: cuDNN's fused GRU (CUDA only), (batch, time steps, hidden = input width): a curve over its FLOPs, affine
    #: between shapes; a wide batch at a narrow width too (``experiments/results/nvidia-h200-16c/README.md``).
    rnn_shapes: tuple = ((1, 16, 64), (8, 64, 64), (512, 64, 64), (64, 64, 256))
    #: PyTorch's CPU GRU (its C++ loop over time steps), (batch, time steps, hidden = input width): six
    #: shapes over :data:`crossover.opcost.gpu_ops.CPU_RNN_STEPS` steps and two over four times as many,
    #: which tell a call's fixed cost from a step's (:func:`crossover.opcost.gpu_ops.fit_cpu_recurrent`).
    cpu_rnn_shapes: tuple = ((1, 16, 32), (1, 16, 128), (8, 16, 64), (64, 16, 64), (64, 16, 256), (512, 16, 64),
                             (1, 64, 64), (8, 64, 64))
    #: PyTorch's CPU LSTM (oneDNN's RNN layer, ``mkldnn_rnn_layer``: not the GRU's C++ loop), the same form:
    #: its own terms (:data:`crossover.opcost.gpu_ops.CPU_LSTM_TERMS`); two lengths tell a call from a step.
    cpu_lstm_shapes: tuple = ((1, 16, 64), (8, 16, 32), (8, 16, 128), (64, 16, 64), (512, 16, 64), (1, 64, 64),
                              (64, 64, 64))
    #: Products with a short inner dimension (a weight gradient: ``grad.t() @ input``, ``K`` = the batch) over
    #: ``K`` × square outputs ``M = N``: the square grid under-predicts them 2-3× (writing the output dominates).
    outer_k: tuple = (1, 2, 4, 8, 16, 32, 64)
    outer_mn: tuple = (64, 128, 256, 512, 1024)
    #: Products with a narrow output, as a classifier's head (CPU only): ``M`` rows by ``K`` inputs to
    #: :data:`crossover.opcost.op_costs.NARROW_N` outputs, with bias (on the VM the square grid at the same
    #: ``K·N`` reads a 512-row head of 10 outputs at half its time: its rows stream the wide input)
    narrow_m: tuple = (1, 8, 64, 512)
    narrow_k: tuple = (16, 64, 256, 1024)
    #: Activation functions timed each on its own (CPU only; :mod:`crossover.opcost.activations`)
    activation_ops: tuple = ACTIVATION_OPS
    #: Rows of bias-free products ``x @ w.t()`` (CUDA only; ``host_mm_k``² weights): the host's time per
    #: call. cuBLAS's path changes with both (the H100 host, 128² weights: 10-11 µs at one row, 13-17 at 2
    #: to 512, 53 at 8; the toy's H200 series at 32 layers pays the 2-row path at 4 rows of 256² and 512²
    #: weights but not of 1024² or 2048²), so the rows between and the larger weights are timed too
    host_mm_m: tuple = (1, 2, 4, 8, 16, 32, 128, 512)
    #: The square weights' sides of those products
    host_mm_k: tuple = (64, 128, 256, 512)
    #: Image sides the convolutions are calibrated at (a grid each; predictions interpolate between).
    conv_sizes: tuple = (16, 32)
    #: Batches of the native (oneDNN off) convolutions: PyTorch takes that path for single images only.
    native_batches: tuple = (1, 2, 4, 8)
    #: Whether to time 1-D and transposed convolutions too (:mod:`crossover.opcost.conv_primitives`; a CPU's)
    conv1d: bool = True
    conv_transposed: bool = True
    #: Whether to time 1×1 convolutions on their own grid (:data:`crossover.opcost.conv_primitives.POINTWISE`; a CPU's)
    conv_pointwise: bool = True
    #: (reference model, batch size): whole steps, forward and training, that calibrate how ops compose
    reference_models: tuple = (("mlp", 1), ("mlp", 256), ("cnn", 1), ("cnn", 32), ("deep_mlp", 1), ("deep_mlp", 64),
                               ("norm_mlp", 1), ("norm_mlp", 64), ("bn_cnn", 1), ("bn_cnn", 16))
    #: Visits of each reference step per round, at two places of its shuffled order: on the 2-core VM a 2-thread
    #: visit runs in one of the host's modes for its whole length (the reference MLP's batch-1 training step:
    #: ~160 or ~265 µs), slow in 3, 5 and 8 of 8 rounds; one fast visit is what the 10th percentile needs.
    reference_visits: int = 2
    cold_pool_factor: float = 2.0  # the cold weights' pool spans this many last-level caches


_CONV = ((1, 8, 5), (3, 16, 3), (6, 16, 5), (16, 32, 3), (32, 64, 3), (64, 128, 3))
_ALL_ELEMENTWISE = ("add", "mul", "relu", "clone", "bernoulli")
_ALL_REDUCTION = ("sum", "softmax", "layer_norm", "max_pool2d", "max_pool2d_backward")
#: ``quick``: 90-165 s on the 2-core VMs. ``full``: denser grids, 30 rounds, about 10 minutes. ``smoke``: seconds,
#: for checking an installation (too coarse to predict with).
PLANS = {
    "full": Plan("full", 30, _ROUND, (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048),
                 (16, 32, 64, 128, 256, 512, 768, 1024, 2048), (64, 128, 256, 512, 1024, 2048),
                 ((784, 128), (128, 784), (256, 1024), (1024, 256), (128, 10), (400, 120)), (1, 8, 64, 512),
                 tuple(2**k for k in range(10, 25)), _ALL_ELEMENTWISE, _ALL_REDUCTION,
                 _CONV + ((8, 32, 5), (128, 128, 3)), (1, 2, 4, 8, 16, 32, 64),
                 tuple((b, 4, s, 64) for b in (1, 8, 64) for s in (16, 64, 256)) + ((8, 8, 128, 32), (1, 16, 512, 64),
                                                                                 (8, 4, 16, 16), (64, 4, 16, 16))),
    "quick": Plan("quick", 8, _ROUND, (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024), (16, 32, 64, 128, 192, 256, 384, 512, 768, 1024),
                  (64, 128, 256, 512, 1024), ((784, 128), (128, 784), (256, 1024), (1024, 256)), (1, 64),
                  tuple(2**k for k in range(10, 25, 2)), ("add", "relu", "clone", "bernoulli"), _ALL_REDUCTION, _CONV, (1, 4, 16, 64),
                  tuple((b, 4, s, 64) for b in (1, 8, 64) for s in (16, 64, 256)) + ((8, 4, 16, 16), (64, 4, 16, 16)),
                  outer_k=(1, 4, 16, 64), outer_mn=(64, 256, 1024)),
    "smoke": Plan("smoke", 2, TimerOptions(warmup_s=0.0, min_warmup_calls=1, min_repeats=2, min_run_time_s=0.001,
                                           max_run_time_s=0.001, target_rel_ci=0.0, min_block_s=0.0005),
                  (1, 16), (16, 64), (64,), ((64, 16),), (4,), (2**10, 2**14), ("add", "relu"),
                  ("sum", "max_pool2d", "max_pool2d_backward"),
                  ((1, 4, 3), (2, 4, 3)), (1, 2), ((1, 2, 16, 16),), h2d_sizes=(2**12, 2**16), conv_sizes=(8,),
                  native_batches=(1, 2), outer_k=(1, 8), outer_mn=(16, 64), conv1d=False, conv_transposed=False,
                  conv_pointwise=False, reference_visits=1, narrow_k=(), activation_ops=(), reference_models=(("mlp", 1),),
                  rnn_shapes=((1, 4, 16),), cpu_rnn_shapes=((1, 16, 16),), cpu_lstm_shapes=()),
}
REFERENCE = "reference"
#: The reference models' steps timed synchronised, one by one (on CUDA; the ``model`` family queues them).
SYNCED_MODEL = "model_sync"


@dataclass(frozen=True)
class Point:
    """One primitive: ``family`` (the profile entry it feeds), ``name`` and its sizes; ``x`` is what
    its curve is indexed by (bytes or FLOPs; for a matmul, ``m`` and ``kn``)."""

    family: str
    name: str
    m: int = 0
    k: int = 0
    n: int = 0
    x: float = 0.0
    cold: bool = False
    shape: tuple = field(default=())

    @property
    def key(self) -> str:
        dims = "x".join(map(str, self.shape)) if self.shape else f"{self.m}x{self.k}x{self.n}"
        return f"{self.family}/{self.name}/{dims}" + ("/cold" if self.cold else "")


def _reduction_shape(name: str, n: int) -> tuple:
    if name.startswith("max_pool2d"):  # 2×2 windows over 32×32 images
        return (1, max(n // 1024, 1), 32, 32)
    return (max(n // _ROW, 1), _ROW)


def _bytes(name: str, n: int) -> float:
    """Bytes the trace counts for the primitive on ``n`` float32 elements (inputs + outputs)."""
    return 4.0 * {"add": 3 * n, "mul": 3 * n, "relu": 2 * n, "clone": 2 * n, "bernoulli": 2 * n,
                  "sum": n + _ROW, "softmax": row_op_bytes("softmax", n, _ROW) / 4,
                  "layer_norm": row_op_bytes("layer_norm", n, _ROW) / 4,
                  "max_pool2d": n + n // 4 + 2 * (n // 4),  # values and int64 indices
                  "max_pool2d_backward": n // 4 + n + 2 * (n // 4) + n}[name]  # grad, input, indices -> grad


def output_bytes(family: str, name: str, n: int = 0, shape=()) -> float:
    """Bytes of the largest output one call of the primitive allocates (0 for in-place ones): the
    calibration takes the page faults of outputs of 32 MiB or more
    (:data:`crossover.opcost.op_costs.FRESH_MIN_BYTES`) back out of its times, since a prediction adds them
    for the model's own fresh outputs."""
    if family in ("elementwise", "copy", "reduction", "pool", "pool_backward", SHORT_ROWS, SUBVECTOR_FORWARD,
                  SUBVECTOR_BACKWARD):
        return 4.0 * {"sum": _ROW, "max_pool2d": 2 * (n // 4)}.get(name, n)  # max_pool2d: its int64 indices
    if family in ("pool1d", "conv_depthwise", BATCH_NORM, BATCH_NORM_SHORT):  # half the input, or as large
        return 4.0 * math.prod(shape) / (2 if family == "pool1d" else 1)
    if family in ("conv", "conv_backward", "conv1d", TRANSPOSED, POINTWISE, DILATED) and len(shape) == 5:
        return 4.0 * math.prod(conv_output_shape(family, shape))
    return 0.0


def fresh_buffers(family: str, name: str, n: int = 0, shape=()) -> list:
    """Bytes of each buffer one call of the primitive allocates on a CPU: its output (:func:`output_bytes`)
    and, for a oneDNN convolution, the blocked copies of its output and (unless a dense convolution of
    fewer than :data:`crossover.opcost.op_costs.ONEDNN_CHANNEL_BLOCK` input channels) its input, as
    :func:`crossover.opcost.op_costs.onednn_buffers` counts them for a model's rows."""
    from .op_costs import onednn_copies

    out = output_bytes(family, name, n, shape)
    buffers = [out] if out else []
    if family == CHAIN_FAMILY:  # one output a ReLU
        return [4.0 * n] * CHAIN_OPS
    if family == "conv_depthwise" and len(shape) == 4:  # (N, C, H, W), one channel per group, as large as its input
        copies = onednn_copies(tuple(shape), 1, tuple(shape))
    elif family in ("conv", "conv1d", POINTWISE) and name in ("conv2d", "conv1d") and len(shape) == 5:
        copies = onednn_copies(conv_input_shape(family, shape), shape[1], conv_output_shape(family, shape))
    else:
        copies = []
    return buffers + [4.0 * math.prod(c) for c in copies]


def points(plan: Plan, device: str = "cpu", threads: int = 0) -> list:
    """The primitives of ``plan`` on ``device`` at ``threads`` (0: several), in a fixed order (rounds shuffle it)."""
    from .gpu_ops import gru_flops
    from .layer_primitives import layer_points
    from .op_costs import NARROW_N, attention_flops

    out = [Point("overhead", "dispatch"), Point("overhead", "view"), Point("overhead", "module_call")]
    out += [Point("overhead", f"chain_{mode}", n=n) for mode in ("nograd", "grad", "train") for n in CHAIN_LENGTHS]
    out += [Point("overhead", "sgd", n=p) for p in SGD_PARAMS]
    if device == "cpu":  # page faults of fresh host memory (a GPU's caching allocator has none); thread wake-ups
        out += [Point("overhead", name, x=float(FRESH_PROBE_BYTES)) for name in ("fresh_fill", "reuse_fill")]
        out += [Point(family, name, m=round(gap * 1e9), n=n, x=gap)  # m: the gap in ns (a key apart for each)
                for family, name, gap, (n,) in wake_points() if threads != 1]  # one thread: no team to wake
        out += [Point(family, name, m=shape[0], n=shape[1], x=x) for family, name, x, shape in thread_start_points(threads)]
        out += [Point(family, name) for family, name in neighbour_points(threads)]  # a convolution among others
        out += [Point(family, name, m=round(x * 100), k=shape[1], n=shape[2], x=x)  # m: the span in hundredths
                for family, name, x, shape in reuse_points(private_cache_bytes() * threads if threads else None)]
    for m, kn in itertools.product(plan.matmul_m, plan.matmul_kn):
        out.append(Point("matmul", "addmm", m, kn, kn, x=2.0 * m * kn * kn))
        if kn in plan.cold_kn:
            out.append(Point("matmul", "addmm", m, kn, kn, x=2.0 * m * kn * kn, cold=True))
    out += [Point("matmul_check", "addmm", m, k, n, x=2.0 * m * k * n) for (k, n) in plan.matmul_extra
            for m in plan.extra_m]
    out += [Point("matmul_outer", "mm", mn, k, mn, x=2.0 * mn * k * mn)
            for k, mn in itertools.product(plan.outer_k, plan.outer_mn)]
    out += [Point("matmul_host", "mm", m, k, k, x=2.0 * m * k * k) for m in plan.host_mm_m for k in plan.host_mm_k
            if device == "cuda"]
    out += [Point("matmul_narrow", "addmm", m, k, NARROW_N, x=2.0 * m * k * NARROW_N)
            for m, k in itertools.product(plan.narrow_m, plan.narrow_k) if device == "cpu"]
    for name in plan.elementwise_ops:
        family = {"clone": "copy", "bernoulli": "rng"}.get(name, "elementwise")
        out += [Point(family, name, n=n, x=_bytes(name, n), shape=(n,)) for n in plan.sizes]
    out += [Point(ACTIVATION_FAMILY, op, n=n, x=activation_bytes(op, n), shape=(n,))
            for op in plan.activation_ops for n in ACTIVATION_ELEMENTS if device == "cpu"]
    if device == "cpu":  # ReLUs in a row, each on the one before's fresh output: a step's stream
        out += [Point(CHAIN_FAMILY, "relu_chain", n=n, x=_bytes("relu", n), shape=(n,)) for n in plan.sizes
                if _bytes("relu", n) >= CHAIN_MIN_BYTES]
    for name in plan.reduction_ops:
        family = {"max_pool2d": "pool", "max_pool2d_backward": "pool_backward"}.get(name, "reduction")
        out += [Point(family, name, n=n, x=_bytes(name, n), shape=_reduction_shape(name, n)) for n in plan.sizes]
    out += [Point(family, name, n=n, x=x, shape=shape) for family, name, n, x, shape in layer_points(plan.sizes)]
    if device == "cpu":  # bmm of many small matrices beside the one product of their rows; fused layers whole
        out += [Point(family, name, m=count, shape=shape) for family, name, count, shape in
                batched_points() + fused_points()]
    if device == "cpu" and "softmax" in plan.reduction_ops:  # softmax and layer norm over rows of 16 too
        out += [Point(family, name, n=n, x=x, shape=shape)
                for family, name, n, x, shape in short_row_points(plan.sizes)]
        lanes = vector_floats()  # and over rows shorter than a vector, the vector's floats in k
        out += [Point(family, name, k=lanes, n=n, x=x, shape=shape)
                for family, name, n, x, shape in subvector_points(plan.sizes, lanes)]
    out += [Point(family, name, m=m, x=x, shape=shape) for family, name, m, x, shape in conv_points(plan, device)]
    for b, h, s, d in plan.attention_shapes:
        q = (b, h, s, d)
        out.append(Point("attention", "sdpa", x=attention_flops("sdpa", (q, q, q)), shape=q))
    if device == "cpu":  # the same shapes forward and backward: the per-head backward curve
        out += [Point(family, name, x=x, shape=shape) for family, name, x, shape in backward_points(plan)]
    for (name, batch), workload in itertools.product(plan.reference_models, ("forward", "train")):
        out.append(Point("model", f"{name}/{workload}", m=batch, shape=(batch, *REFERENCE_MODELS[name])))
    if device == "cuda":
        out += [Point("overhead", "sync"), Point("overhead", "launch_sync")]
        # The regime a prediction is for: one request served, the step synchronised (what ``measure``
        # times). Queued calls overlap one step's sync and launch latency with the next step's work.
        out += [Point(SYNCED_MODEL, f"{name}/{workload}", m=batch, shape=(batch, *REFERENCE_MODELS[name]))
                for (name, batch), workload in itertools.product(plan.reference_models, ("forward", "train"))]
        out += [Point("h2d", "copy", x=float(size), shape=(size,)) for size in plan.h2d_sizes]
        out += [Point("rnn", "gru", x=gru_flops(b, t, h, h), shape=(b, t, h)) for b, t, h in plan.rnn_shapes]
    else:
        out += [Point(family, "gru", x=gru_flops(b, t, h, h), shape=(b, t, h)) for b, t, h in plan.cpu_rnn_shapes
                for family in ("rnn", GRU_TRAIN)]
        out += [Point(family, "lstm", x=gru_flops(b, t, h, h, 4), shape=(b, t, h)) for b, t, h in plan.cpu_lstm_shapes
                for family in ("rnn", LSTM_TRAIN)]  # forward alone, and a training step (.recurrent_layers)
    return out


#: The drift reference on a GPU: a product long enough (17 GFLOP, ~0.3 ms on an H100) that queued
#: calls time the device, not the host's launches (a 64 × 256 × 256 product there reads host jitter).
GPU_REFERENCE_MNK = (2048, 2048, 2048)


def reference_point(device: str = "cpu") -> Point:
    """The drift reference, timed at the start of every round: a 64 × 256 × 256 matrix product on a
    CPU, :data:`GPU_REFERENCE_MNK` on a GPU."""
    m, k, n = GPU_REFERENCE_MNK if device == "cuda" else (64, 256, 256)
    return Point(REFERENCE, "addmm", m, k, n)


# ------------------------------------------------------------------------------------------ steps
def _overhead_step(point: Point, device: str) -> Callable[[], object]:
    import torch

    a, b = torch.ones(1, device=device), torch.ones(1, device=device)
    if point.name == "dispatch":
        return lambda: torch.add(a, b)
    if point.name == "view":
        x = torch.ones(4, 4, device=device)
        return lambda: x.view(-1)
    if point.name == "module_call":
        module, x = torch.nn.Identity(), torch.ones(4, device=device)
        return lambda: module(x)
    if point.name == "sync":
        return torch.cuda.synchronize
    if point.name == "launch_sync":  # one tiny kernel, waited for: dispatch + launch latency + wake-up

        def launch_sync():
            torch.add(a, b)
            torch.cuda.synchronize()

        return launch_sync
    if point.name in ("fresh_fill", "reuse_fill"):
        n = int(point.x) // 4
        if point.name == "fresh_fill":
            from ..measurement.allocator import fresh_pages_fill

            return fresh_pages_fill(n)
        kept = torch.empty(n, device=device)
        return lambda: kept.fill_(1.0)
    if point.name == "sgd":
        params = [torch.zeros(4, device=device, requires_grad=True) for _ in range(point.n)]
        grads = [torch.zeros(4, device=device) for _ in range(point.n)]
        optimizer = torch.optim.SGD(params, lr=1e-4, foreach=False)

        def sgd():
            for p, g in zip(params, grads):
                p.grad = g
            optimizer.step()
            optimizer.zero_grad()

        return sgd
    mode, length = point.name.split("_", 1)[1], point.n
    x = torch.ones(4, device=device, requires_grad=mode != "nograd")
    c = torch.full((4,), 1.0001, device=device)

    def chain():
        y = x
        for _ in range(length):
            y = y * c
        return y

    if mode == "nograd":
        def nograd():
            with torch.no_grad():
                return chain()

        return nograd
    if mode == "grad":
        return chain

    def train():
        x.grad = None
        chain().sum().backward()

    return train


def _matmul_step(point: Point, device: str, llc: int, pool_factor: float, cache: dict) -> Callable[[], object]:
    import torch

    if point.family == "matmul_outer":  # as autograd computes a weight's gradient: grad.t() @ input
        grad, x = torch.randn(point.k, point.m, device=device), torch.randn(point.k, point.n, device=device)
        return lambda: torch.mm(grad.t(), x)
    if point.family == "matmul_host":  # a bias-free nn.Linear: x @ weight.t()
        return functools.partial(torch.mm, torch.randn(point.m, point.k, device=device),
                                 torch.randn(point.n, point.k, device=device).t())

    x = torch.randn(point.m, point.k, device=device)
    bias = torch.randn(point.n, device=device)
    if not point.cold:
        weight = torch.randn(point.n, point.k, device=device)
        weight_t = weight.t()  # as nn.Linear: addmm(bias, x, weight.t())
        return lambda: torch.addmm(bias, x, weight_t)
    copies = max(2, math.ceil(pool_factor * llc / (4 * point.k * point.n)))
    key = (point.n, point.k, copies, device)
    if key not in cache:  # a pool per shape for every batch; no two pages alike (no merging); randn took 14 s
        pool = torch.arange(copies * point.n * point.k, dtype=torch.float32, device=device).mul_(1e-9)
        cache[key] = [w.t() for w in pool.view(copies, point.n, point.k)]
    weights = itertools.cycle(cache[key])
    return lambda: torch.addmm(bias, x, next(weights))


def _memory_step(point: Point, device: str) -> Callable[[], object]:
    import torch

    shape = point.shape
    a = torch.randn(shape, device=device)
    if point.name in ("add", "mul"):
        b = torch.randn(shape, device=device)
        op = torch.add if point.name == "add" else torch.mul
        return lambda: op(a, b)
    if point.name == "relu":
        return lambda: torch.relu(a)
    if point.name == "relu_chain":  # each ReLU reads the fresh output of the one before

        def chain():
            y = a
            for _ in range(CHAIN_OPS):
                y = torch.relu(y)
            return y

        return chain
    if point.name == "clone":
        return lambda: a.clone()
    if point.name == "bernoulli":
        return lambda: a.bernoulli_(0.5)
    if point.name == "sum":
        return lambda: torch.sum(a, 0)
    if point.name == "softmax":
        return lambda: torch.softmax(a, -1)
    if point.name == "layer_norm":
        w, b = torch.ones(shape[-1], device=device), torch.zeros(shape[-1], device=device)
        return lambda: torch.layer_norm(a, shape[-1:], w, b)
    if point.name == "max_pool2d":
        return lambda: torch.nn.functional.max_pool2d(a, 2)
    if point.name == "max_pool2d_backward":
        out, indices = torch.ops.aten.max_pool2d_with_indices.default(a, [2, 2], [2, 2])
        grad, backward = torch.ones_like(out), torch.ops.aten.max_pool2d_with_indices_backward.default
        return lambda: backward(grad, a, [2, 2], [2, 2], [0, 0], [1, 1], False, indices)
    raise ValueError(f"unknown primitive {point.name!r}")


def make_step(point: Point, device: str = "cpu", *, llc: int = 32 * 2**20, pool_factor: float = 2.0,
              cache: dict = None) -> Callable[[], object]:
    """The step function timing ``point`` on ``device`` (inputs allocated now, reused every call;
    ``cache`` shares the cold weight pools between the steps built with it)."""
    import torch

    if point.family == "overhead":
        return _overhead_step(point, device)
    if point.family in ("matmul", "matmul_check", "matmul_outer", "matmul_host", "matmul_narrow", REFERENCE):
        return _matmul_step(point, device, llc, pool_factor, {} if cache is None else cache)
    if point.family in LAYER_FAMILIES:
        return layer_step(point.family, point.shape, device)
    if point.family == ATTENTION_BACKWARD:
        return backward_step(point.shape, device)
    if point.family == SHORT_ROWS:
        return short_row_step(point.name, point.shape, device)
    if point.family in (SUBVECTOR_FORWARD, SUBVECTOR_BACKWARD):
        return subvector_step(point.name, point.shape, device)
    if point.family in (BATCHED, FUSED):
        return (batched_step if point.family == BATCHED else fused_step)(point.name, point.shape, device)
    if point.family in (WAKE, THREAD_START, NEIGHBOURS):
        return wake_step(point.x, device) if point.family == WAKE else \
            (thread_start_step if point.family == THREAD_START else neighbour_step)(point.name, device)
    if point.family == REUSE:  # the span of weight copies in private caches: the core's times the threads
        return reuse_step(point.x, private_cache_bytes() * torch.get_num_threads(), device)
    if point.family in ("elementwise", "reduction", "pool", "pool_backward", "copy", "rng", CHAIN_FAMILY):
        return _memory_step(point, device)
    if point.family in ("conv", "conv_backward", "conv1d", STRIDED, STRIDED_BACKWARD, TRANSPOSED, POINTWISE, DILATED):
        return conv_step(point.family, point.name, point.shape, device)
    if point.family == ACTIVATION_FAMILY:
        return activation_step(point.name, point.n, device)
    if point.family == "attention":
        q, k, v = (torch.randn(point.shape, device=device) for _ in range(3))
        return lambda: torch.nn.functional.scaled_dot_product_attention(q, k, v)
    if point.family in ("model", SYNCED_MODEL):
        from ..measurement.module_rounds import example_input, make_module_step

        name, workload = point.name.split("/")
        model = reference_model(name).to(device)
        step = make_module_step(model, example_input(point.shape[1:], point.m, device=device), workload)
        if point.family == "model":
            return step

        def synced():
            step()
            torch.cuda.synchronize()

        return synced
    if point.family in ("rnn", *RECURRENT_TRAIN):  # a recurrent layer's forward call, or its training step
        return recurrent_step(point.family, point.name, point.shape, device)
    if point.family == "h2d":
        host = torch.empty(int(point.x) // 4, dtype=torch.float32)
        return lambda: host.to(device)
    raise ValueError(f"unknown primitive family {point.family!r}")
