"""A CPU's parallel regions after a serial stretch: the wake-up its sleeping OpenMP threads pay.

At N > 1 threads an op that runs in parallel opens an OpenMP region; between regions the worker threads
spin for a while, then sleep. An op repeated alone (every calibration primitive) reopens its region
within microseconds and finds them spinning; in a model's step the serial ops between two parallel ones
(a batch-1 ReLU, a small product, the module calls) can outlast the spin, and the next parallel op waits
for its threads to wake. How long they spin and what a wake costs is the machine's (the OpenMP runtime's
spin count, the kernel, a hypervisor's idle vCPUs), so the calibration measures both
(family :data:`WAKE`): a parallel ReLU of :data:`WAKE_ELEMENTS` elements right after a busy wait of each
of :data:`WAKE_GAPS_S` on the calling thread, beside the same ReLU back to back. :func:`fit_wake` reads
from them ``wake_s`` (what a region pays once its threads slept) and ``wake_after_s`` (the serial gap
past which they sleep); :func:`step_wake_s` walks a step's ops in order and charges ``wake_s`` to every
parallel op whose serial gap since the last parallel one reaches ``wake_after_s``.

Which ops open a region (:func:`opens_parallel_region`) was read off torch 2.13's CPU build (MKL 2024.2,
GNU OpenMP) on the 2-core VM at two threads, each op timed after a 30 µs gap with its threads spinning
and with them asleep, where a parallel op paid tens of microseconds more (``experiments/bench_parallel_regions.py``,
its log). With the runtime's default spin the AMD VM's threads
slept only after 1-3 ms of serial work (the wake primitive read nothing below 1 ms), so no zoo step
there pays. On the Intel VM an op pays 5-15 µs after 100-300 µs of other work at one thread as at two,
where nothing sleeps (``experiments/bench_wake_kinds.py``): there the primitive reads the calling
thread's own state, and this term charges it to parallel ops only; on the 16-core hosts of the GPU machines some batch-1 steps run 3-5 times slower at 16
threads than at one (LeNet-5, the MNIST MLP's training step), which this term is there to show or rule
out when their calibration measures it.
"""

from __future__ import annotations

import math
import re
from typing import Callable, Mapping, Sequence

from .op_costs import matmul_dims
from .trace import op_name
from ..units import format_seconds

__all__ = ["WAKE", "WAKE_GAPS_S", "WAKE_ELEMENTS", "GRAIN", "wake_points", "wake_step", "fit_wake",
           "opens_parallel_region", "step_wake_s", "wake_warning", "wake_summary"]

#: The family of the wake primitives (CPU only).
WAKE = "wake"
#: Busy waits before the parallel ReLU (0: back to back): from a step's shortest serial gap (a module
#: call) to a millisecond.
WAKE_GAPS_S = (0.0, 2e-6, 8e-6, 30e-6, 100e-6, 300e-6, 1e-3)
#: The parallel ReLU's elements: past :data:`GRAIN`, so it opens a region at any thread count above one.
WAKE_ELEMENTS = 2**16
#: ATen's ``at::internal::GRAIN_SIZE``: an elementwise op or reduction over more elements runs in parallel.
GRAIN = 32768
#: An extra under this, or under :data:`WAKE_MIN_SHARE` of the back-to-back ReLU, is noise, not a wake.
WAKE_MIN_S = 2e-6
WAKE_MIN_SHARE = 0.25
#: MKL's threading of a float product, as probed: one row (a matrix-vector product) from ``K·N`` of 2^14
#: (10080 ran serial, 16384 parallel), a rank-1 product (``K`` = 1, a batch-1 weight gradient) from
#: ``M·N`` of 2^14 alike (but 120 × 400 ran serial); more rows from ``M·K·N`` of 3·2^16 (180224 serial,
#: 196608 and 4096 × 8 × 8 parallel).
GEMV_PARALLEL_KN = 2**14
GEMM_PARALLEL_MKN = 3 * 2**16
#: Ops that split their rows over the threads from two rows on (softmax, layer norm: 64 × 10 ran parallel).
_ROW_SPLIT = {"_softmax", "_log_softmax", "native_layer_norm", "_softmax_backward_data",
              "_log_softmax_backward_data", "native_layer_norm_backward"}
#: Activations MKL's vector library computes, which it splits over the threads from far fewer elements:
#: the most elements each ran serial at (tanh and exp over 64 serial, 128 parallel; GELU over 64 parallel;
#: sigmoid and SiLU serial up to 2048, ATen's grain).
SMALL_GRAIN = {"tanh": 64, "exp": 64, "log": 64, "erf": 64, "gelu": 32}
_POOL = re.compile(r"_?(adaptive_)?(max|avg)_pool\d")
#: Ops that split their bags (an embedding bag: 8 bags of 20 ran parallel, one serial) from two on.
_BAGS = {"embedding_bag", "_embedding_bag", "_embedding_bag_forward_only"}


def wake_points() -> list:
    """``(family, name, x, shape)`` of each wake primitive: ``x`` is its gap in seconds (0: back to back)."""
    return [(WAKE, "relu_after_gap", gap, (WAKE_ELEMENTS,)) for gap in WAKE_GAPS_S]


def wake_step(gap_s: float, device: str = "cpu") -> Callable[[], object]:
    """A busy wait of ``gap_s`` on the calling thread, then a ReLU over :data:`WAKE_ELEMENTS` elements."""
    import time

    import torch

    x = torch.randn(WAKE_ELEMENTS, device=device)
    clock = time.perf_counter

    def step():
        until = clock() + gap_s
        while clock() < until:
            pass
        return torch.relu(x)

    return step


def fit_wake(families: Mapping, dispatch_s: float = 0.0) -> dict:
    """``wake_s`` and ``wake_after_s`` from the wake primitives (``(seconds, spread, row)`` per point
    under ``families[WAKE]``); both 0 where none paid a wake, or the calibration lacks them (pure).

    A gap's extra is its step's time less the gap and the back-to-back ReLU; an extra under the noise
    threshold (:data:`WAKE_MIN_S`, :data:`WAKE_MIN_SHARE`) is none. The threads sleep from the shortest
    gap from which every longer one's extra passes it, two gaps at least (a smoke calibration's 2 rounds
    read 3 µs at the longest gap alone): ``wake_s`` is the median of those extras,
    ``wake_after_s`` where the extras cross half of it (log-linear between that gap and the one before,
    or back to back), counted as a step counts its gaps, with the ReLU's own dispatch before its region.

    Parameters
    ----------
    families : mapping
        Family name -> ``(seconds, spread, row)`` of each primitive (``row["x"]``: the gap, seconds).
    dispatch_s : float
        The profile's dispatch floor.

    Returns
    -------
    dict
        ``wake_s`` and ``wake_after_s``, seconds.
    """
    by_gap = {}
    for seconds, _, row in families.get(WAKE, []):
        if math.isfinite(seconds):
            by_gap[float(row["x"])] = seconds
    if 0.0 not in by_gap or len(by_gap) < 2:
        return {"wake_s": 0.0, "wake_after_s": 0.0}
    alone = by_gap.pop(0.0)
    gaps = sorted(by_gap)
    floor = max(WAKE_MIN_S, WAKE_MIN_SHARE * alone)
    extras = [e if e > floor else 0.0 for e in (by_gap[g] - g - alone for g in gaps)]
    first = len(gaps)
    while first > 0 and extras[first - 1] > 0:
        first -= 1
    if len(gaps) - first < 2:  # none, or the longest gap alone: a timer interrupt reads like a wake
        return {"wake_s": 0.0, "wake_after_s": 0.0}
    paid = sorted(extras[first:])
    middle = len(paid) // 2
    wake = paid[middle] if len(paid) % 2 else 0.5 * (paid[middle - 1] + paid[middle])
    # the gap before paid nothing (back to back, 0, where the shortest gap already paid): half the wake is
    # reached that far, log-linearly, between its gap and the first that paid (each with the ReLU's dispatch)
    low = (gaps[first - 1] if first else 0.0) + dispatch_s
    high, above = gaps[first] + dispatch_s, extras[first]
    share = min(max(0.5 * wake / above, 0.0), 1.0)
    after = low * (high / low) ** share if low > 0 else share * high
    return {"wake_s": float(wake), "wake_after_s": float(after)}


def _largest(row: Mapping) -> int:
    shapes = list(row.get("input_shapes") or ()) + list(row.get("output_shapes") or ())
    return max((math.prod(map(int, s)) for s in shapes if s is not None), default=0)


def _product_parallel(row: Mapping) -> bool:
    """MKL's choice for a product row: by ``M``, ``K`` and ``N`` where its two matrices are plain
    (``mm``, ``addmm``), else by ``M`` and ``K·N`` (:func:`crossover.opcost.op_costs.matmul_dims`)."""
    shapes = [tuple(s) for s in (row.get("input_shapes") or ()) if s is not None]
    matrices = [s for s in shapes if len(s) == 2][-2:]
    if op_name(row.get("op", "")) in ("mm", "addmm") and len(matrices) == 2:
        (m, k), (_, n) = matrices
        if m <= 1 or k <= 1:
            return (n if m <= 1 else m) * (k if m <= 1 else n) >= GEMV_PARALLEL_KN
        return m * k * n >= GEMM_PARALLEL_MKN
    dims = matmul_dims(row)
    if dims is None:
        return False
    m, kn = dims
    if m <= 1:
        return kn >= GEMV_PARALLEL_KN
    return m * kn >= GEMM_PARALLEL_MKN


def opens_parallel_region(row: Mapping, threads: int) -> bool:
    """Whether the op of trace row ``row`` runs as an OpenMP parallel region at ``threads`` threads.

    One thread opens none; views and allocations none. Matrix products by MKL's thresholds (a batched
    product whenever it has two or more matrices); convolutions (oneDNN's and the native ones, down to a
    1-D convolution of one sequence of 50), their backward ops, pooling and fused attention always;
    softmax and layer norm from two rows, an embedding bag from two bags; the vector library's
    activations past :data:`SMALL_GRAIN`; any other op past :data:`GRAIN` elements in its largest tensor.
    """
    if threads is not None and 0 < threads <= 1:
        return False
    if row.get("kind") == "view" or not int(row.get("launches", 1) or 0):
        return False
    name = op_name(row.get("op", ""))
    shapes = [tuple(s) for s in (row.get("input_shapes") or ()) if s is not None]
    if name in ("bmm", "baddbmm") and shapes and len(shapes[0]) == 3:
        return shapes[0][0] >= 2
    if row.get("kind") == "matmul":
        return _product_parallel(row)
    if row.get("kind") in ("conv", "attention") or _POOL.match(name):
        return True
    if name in _BAGS:  # (weight, indices, offsets): a bag per offset
        return len(shapes) >= 3 and bool(shapes[2]) and shapes[2][0] >= 2
    if name in _ROW_SPLIT:
        return bool(shapes) and math.prod(shapes[0][:-1]) >= 2
    return _largest(row) > SMALL_GRAIN.get(name, GRAIN)


def step_wake_s(profile, timed_rows: Sequence[tuple], between_s: float = 0.0) -> tuple:
    """The wake-ups of a CPU step's parallel ops (pure).

    ``timed_rows``: ``(row, seconds, floor_s)`` in the order the step runs them (``floor_s``: the op's
    dispatch); ``between_s``: the host's work between two ops (module calls, autograd's bookkeeping).
    The serial gap before a parallel op is everything since the last parallel op ended, and its own
    dispatch; the first one's includes the step's serial tail, as steps run back to back. Nothing where
    the profile has no wake (``wake_s`` 0: its threads outlast every gap the calibration tried, or it
    predates the primitives), on one thread, or on a GPU.

    Returns
    -------
    tuple
        ``(seconds paid, parallel ops that pay, parallel ops)``.
    """
    wake, after = profile.overhead("wake_s"), profile.overhead("wake_after_s")
    threads = getattr(profile, "threads", 0)
    if profile.device != "cpu" or wake <= 0 or (threads and threads <= 1):
        return 0.0, 0, 0
    parallel = [opens_parallel_region(row, threads) for row, _, _ in timed_rows]
    if not any(parallel):
        return 0.0, 0, 0
    gaps, serial = [], 0.0
    for (row, seconds, floor_s), runs_parallel in zip(timed_rows, parallel):
        if runs_parallel:  # its own dispatch runs on the calling thread before its region opens
            gaps.append(serial + between_s + floor_s)
            serial = 0.0
        else:
            serial += seconds + between_s
    gaps[0] += serial  # the step's tail runs before its first parallel op of the next step
    paying = sum(1 for gap in gaps if gap >= after)
    return paying * wake, paying, len(gaps)


def wake_warning(profile, regions: int, paying: int, unsure_s: float) -> str:
    """The warning of a CPU step whose parallel ops may wait for sleeping threads beyond those counted."""
    o = profile.overhead
    return (f"this CPU's threads sleep after {format_seconds(o('wake_after_s'))} without work and a parallel op "
            f"then waits {format_seconds(o('wake_s'))} for them (calibration); {regions - paying} of this "
            f"step's {regions} parallel ops follow serial work the prediction puts under that, which may be "
            f"longer: up to {format_seconds(unsure_s)} more (the interval's high end includes it). Threads "
            "that keep spinning do not pay it: OMP_WAIT_POLICY=ACTIVE, or a larger GOMP_SPINCOUNT")


def wake_summary(profile):
    """One line on the profile's thread wake-ups (what ``crossover calibrate`` prints), or None where its
    threads outlasted every gap tried or it predates the primitives."""
    wake = profile.overhead("wake_s")
    if wake <= 0:
        return None
    return (f"threads: a parallel op after {format_seconds(profile.overhead('wake_after_s'))} of serial work "
            f"waits {format_seconds(wake)} for them to wake")
