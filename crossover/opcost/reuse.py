"""A CPU step's weights read back from the shared cache: what a step pays when its state outgrows the private ones.

A calibration primitive repeats one op on the same tensors, so its weights sit in the core's private
cache (L2) at every call. In a model's step each weight is touched once per step, and between two
touches the step reads and writes everything else it holds: its other weights, their gradients in a
training step, its activations. When that footprint outgrows the private caches, every weight comes
back from the shared level. On the 2-core VM at one thread (2 MiB of L2) a one-row product with a
256 KiB weight took 3.0 µs repeated alone and 10.0 µs cycling over weight copies spanning 4 MiB
(27 ps per weight byte), an SGD update 54 ps per parameter byte, a batch-1 weight gradient written
into a cycled buffer 20 ps per byte; the transition lay between 1 and 3 MiB of copies, and at two
threads (two L2s) between 2 and 8 MiB (``experiments/bench_reuse.py``, its logs in
``experiments/results/intel-xeon-2c/logs``: batch-1 MLP steps there take 6 to 103 µs beyond their
primitives forward and 53 to 213 µs training as their weights grow from 51 KiB to 3 MiB; this term
pays up to 36 and 121 µs of it).

The calibration measures it (family :data:`REUSE`): a one-row product over a :data:`PROBE_KN` ×
:data:`PROBE_KN` weight, cycling over copies that span each of :data:`REUSE_FACTORS` times the profile's
private cache bytes (its ``cache_bytes``: the private cache of a core times the threads), beside the same
product on one weight. The spans reach 64 private caches: on the AMD VM (512 KiB of L2 a core) the shared
level acts far smaller than the 32 MiB L3 it reports: a product cycling over weights that span 8 MiB or
more at one thread (16 at two; the rise between 2 and 8 MiB, 8 and 16) pays 90-160 ps a weight byte beyond
the same product on one weight, about alike for 1, 16 and 64 rows and for 256 KiB and 2 MiB weights
(``experiments/bench_reuse_products.py``, ``results/amd-epyc-2c/logs/reuse_products_1129.log``); spans up to
four caches (2 MiB there) saw none of it, and the zoo's encoder layer, 5.0 MiB of weights, read 23-33% low
at batch 1 in every sitting of 1129i-j. :func:`fit_reuse` turns them into a curve of the extra seconds per byte of state
against that multiple. A product of many rows touches its weight twice, as the BLAS packs it into a buffer of
its own (:data:`PACKED_MIN_ROWS`): at one thread on the AMD VM products of 32 and 64 rows paid the shared level's
price from half the span a one-row product did; the zoo's encoder layer at batch 1 (64 tokens) called again
and again cost within 6% of 2, 4 or 8 copies of it called in turn (``bench_reuse_packing.py --encoder``, same
log, three runs), though its weights and activations span 7 MiB, where the one-row probe read 7.5-29 ps a byte in
the sittings of 1129n-p. A step's
rows carry ``state_bytes`` (the bytes of their arguments that are the
model's parameters, buffers or gradients: :mod:`crossover.opcost.trace`); :func:`reuse_s` puts the step's
footprint on the curve and charges each row its state bytes at the rate there, less the rate its own state
already pays alone (a weight larger than the private caches is read from the shared level by its grid
primitive too).

Known limits (a review's, none met by the zoo): every touch of a weight is charged, so a weight read again
while still in the private cache (an unfused recurrent layer's time steps in a training step, a module
called twice) pays each time; the footprint counts touches, not distinct bytes (a training step's weights
three times); with the weights costed cold the whole step pays none, though only its plain products are
costed on the cold grid; an optimizer's own state (momentum, Adam's moments) is not traced as state; on a
private cache under 1 MiB the smallest spans round to one copy; a packed copy is charged at the one-row probe's
price, though products of 16-64 rows paid 155-235 ps a byte at the plateau where one row paid 133-141 (one
thread, ``reuse_packing_1129.log``), and at two threads their rise came at 0.5-1 times one row's span, not at half.
"""

from __future__ import annotations

import math
from typing import Callable, Mapping, Optional, Sequence

__all__ = ["REUSE", "REUSE_FACTORS", "MAX_SPAN_BYTES", "PROBE_KN", "PACKED_MIN_ROWS", "reuse_points", "reuse_step",
           "fit_reuse", "step_footprint_bytes", "fused_inner_written_bytes", "packed_copy_bytes", "reuse_s",
           "own_state_parts"]

#: The family of the reuse primitives (CPU only).
REUSE = "reuse"
#: The weight copies' span, in multiples of the profile's private cache bytes (0: one weight, repeated).
REUSE_FACTORS = (0.0, 0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0)
#: The widest span timed: a span past it (a 16-thread host's 32 MiB of private caches times 16) is left out of
#: the plan; beyond the last level every byte comes from memory and the curve is held at its last span.
MAX_SPAN_BYTES = 256 * 2**20
#: The probe's weight is PROBE_KN × PROBE_KN floats (256 KiB): a one-row product over it opens a parallel
#: region at any thread count (:data:`crossover.opcost.thread_wake.GEMV_PARALLEL_KN`).
PROBE_KN = 256
PROBE_BYTES = 4 * PROBE_KN * PROBE_KN


def reuse_points(cache_bytes: Optional[int] = None) -> list:
    """``(family, name, x, shape)`` of each reuse primitive: ``x`` is its span in private caches
    (``cache_bytes``: the private caches of the threads; the spans past :data:`MAX_SPAN_BYTES` left out)."""
    return [(REUSE, "gemv_pool", factor, (1, PROBE_KN, PROBE_KN)) for factor in REUSE_FACTORS
            if not cache_bytes or factor <= 4.0 or factor * cache_bytes <= MAX_SPAN_BYTES]


#: A matrix product of this many rows or more packs its right-hand operand (a layer's weight) into a buffer of
#: the BLAS's own as it runs, so it touches those bytes twice (read, and the packed copy written and read). On
#: the AMD VM at one thread (``experiments/bench_reuse_packing.py``, ``results/amd-epyc-2c/logs/reuse_packing_1129.log``)
#: products of 32 and 64 rows over 256 × 2048 weights paid the shared level's price from weight copies spanning
#: 3-4 MiB, one row from 6-8 MiB, 16 rows in between: at about half the span, as a footprint twice the weights.
PACKED_MIN_ROWS = 32


#: A call this long after the one before starts a visit: the probe first reads every copy once.
REWARM_AFTER_S = 1e-3


def reuse_step(factor: float, cache_bytes: int, device: str = "cpu") -> Callable[[], object]:
    """A one-row product, each call on the next of the weight copies that span ``factor × cache_bytes``
    (one copy at least).

    The first call of a visit (:data:`REWARM_AFTER_S` after the last) reads every copy first, as a model's
    step reads its weights at every step: on the 2-core VM copies left idle between the calibration's
    rounds cost 0.2-1.4 ms a call (a few hundred times their read) until each had been read once, and a
    visit of a few dozen calls over 48-64 copies read nothing else (the 1127u sittings)."""
    import itertools
    import time

    import torch

    copies = max(1, round(factor * cache_bytes / PROBE_BYTES))
    # distinct values in every copy: no two pages alike for the kernel to merge
    pool = torch.arange(copies * PROBE_KN * PROBE_KN, dtype=torch.float32, device=device).mul_(1e-9)
    every = [w.t() for w in pool.view(copies, PROBE_KN, PROBE_KN)]
    weights = itertools.cycle(every)
    x = torch.randn(1, PROBE_KN, device=device)
    last = [-math.inf]

    def step():
        if time.perf_counter() - last[0] > REWARM_AFTER_S:
            for weight in every:
                torch.mm(x, weight)
        out = torch.mm(x, next(weights))
        last[0] = time.perf_counter()
        return out

    return step


def fit_reuse(families: Mapping):
    """The extra seconds per byte of state against the span in private caches, from the reuse primitives
    (``(seconds, spread, row)`` per point under ``families[REUSE]``, ``row["x"]`` the span); None where the
    calibration lacks them (pure).

    Each span's extra is its product's time less the one weight's, over the probe's weight bytes, made
    non-decreasing in the span (pool adjacent violators); the curve is read linearly between spans.

    Returns
    -------
    crossover.opcost.profiles.Curve or None
        ``x``: the positive spans; ``time_s``: seconds per byte (at least a femtosecond: a curve's times
        are positive).
    """
    from .profiles import Curve, isotonic

    by_span = {float(row["x"]): seconds for seconds, _, row in families.get(REUSE, []) if math.isfinite(seconds)}
    if 0.0 not in by_span or len(by_span) < 3:
        return None
    alone = by_span.pop(0.0)
    spans = sorted(by_span)
    extra = isotonic([max(by_span[s] - alone, 0.0) / PROBE_BYTES for s in spans])
    return Curve(tuple(spans), tuple(max(float(e), 1e-15) for e in extra))


def _rate(curve, span: float) -> float:
    """Seconds per byte at ``span`` private caches: linear between the measured spans, 0 at no span,
    held at the last one past it."""
    if span <= 0:
        return 0.0
    if span <= curve.x[0]:
        return curve.time_s[0] * span / curve.x[0]
    return curve.affine(min(span, curve.x[-1]))


def _count(row: Mapping, key: str) -> float:
    """A row's count, 0 where it is missing or not a number (a table traced before the column)."""
    value = row.get(key)
    try:
        value = float(value or 0)
    except (TypeError, ValueError):
        return 0.0
    return value if math.isfinite(value) else 0.0


def step_footprint_bytes(rows: Sequence[Mapping]) -> float:
    """What a step touches between two visits of one weight: every row's state bytes, and the bytes each
    row without state writes (its activations; views and allocations move nothing); a fused layer's state
    and the activations its kernels write inside it (:func:`fused_inner_written_bytes`); the packed copies
    its products of many rows make (:func:`packed_copy_bytes`). Each touch counts, so a training step's
    weights count once read forward, once read backward and once updated."""
    return float(sum((_count(row, "state_bytes") + fused_inner_written_bytes(row) + packed_copy_bytes(row))
                     or _count(row, "bytes_written") for row in rows if int(row.get("launches", 1) or 0)))


def _packed_operand_bytes(row: Mapping) -> float:
    """The bytes of the right-hand operand (the weight, in a layer's forward product) a matrix-product row of
    :data:`PACKED_MIN_ROWS` output rows or more packs (its last 2-D argument); 0 for any other row (pure)."""
    from .trace import row_element_size

    if row.get("kind") != "matmul":
        return 0.0
    outputs = row.get("output_shapes") or ()
    out = tuple(outputs[0]) if outputs else ()
    if len(out) != 2 or out[0] < PACKED_MIN_ROWS:  # a batched (3-D) product multiplies no weight
        return 0.0
    matrices = [tuple(shape) for shape in (row.get("input_shapes") or ()) if len(shape) == 2]
    return float(row_element_size(row) * math.prod(matrices[-1])) if len(matrices) >= 2 else 0.0


def packed_copy_bytes(row: Mapping) -> float:
    """The bytes of the packed copy a step's row makes of an operand (pure): a product of
    :data:`PACKED_MIN_ROWS` rows or more that touches the model's state, its right-hand operand, at most its
    state bytes (a layer's weight forward and backward; the activations a weight's gradient is multiplied
    from); a fused layer's, its products' weights where they have that many rows
    (:func:`crossover.opcost.fused_layers.fused_rows`; the zoo's encoder layer at batch 1, 64 tokens: its
    5.0 MiB of weights); 0 for any other row."""
    from .fused_layers import FUSED_OPS, fused_rows
    from .trace_state import op_name

    name = op_name(row.get("op", ""))
    if name in FUSED_OPS.values():
        inner = fused_rows(name, row)
        return float(sum(_packed_operand_bytes(kernel) for kernel in inner)) if inner else 0.0
    return min(_packed_operand_bytes(row), _count(row, "state_bytes"))


def fused_inner_written_bytes(row: Mapping) -> float:
    """The bytes a fused layer's kernels write inside it (:func:`crossover.opcost.fused_layers.fused_rows`:
    the projections' outputs, the attention scores, the feed-forward's hidden activations), as the same
    layer run unfused writes them between its weights' reads; 0 for any other row (pure). The zoo's encoder
    layer at batch 1 writes 2.0 MiB so beside its 5.0 MiB of weights."""
    from .fused_layers import FUSED_OPS, fused_rows
    from .trace_state import op_name

    name = op_name(row.get("op", ""))
    if name not in FUSED_OPS.values():
        return 0.0
    inner = fused_rows(name, row)
    return float(sum(_count(kernel, "bytes_written") for kernel in inner)) if inner else 0.0


def reuse_s(profile, rows: Sequence[Mapping], cold: bool = False) -> tuple:
    """``(seconds, footprint bytes)``: what a CPU step's rows pay for their state read back from the shared
    cache (pure).

    Each row with state bytes pays them at the reuse curve's rate at the step's footprint, less its rate at
    the row's own state (what its primitive, repeated alone, already paid). Nothing on a GPU, on a profile
    without the curve, on rows traced before ``state_bytes``, or when the weights are costed ``cold``
    (their grid cycles them through memory already).
    """
    curve = profile.curves.get(REUSE)
    if profile.device != "cpu" or curve is None or cold or not profile.cache_bytes:
        return 0.0, 0.0
    footprint = step_footprint_bytes(rows)
    at_step = _rate(curve, footprint / profile.cache_bytes)
    seconds = 0.0
    for row in rows:
        state = _count(row, "state_bytes")
        if state and int(row.get("launches", 1) or 0):
            packs = 1.0 + min(packed_copy_bytes(row) / state, 1.0)  # repeated alone, a product spans its copy too
            seconds += sum(part * max(at_step - _rate(curve, packs * part / profile.cache_bytes), 0.0)
                           for part in own_state_parts(row, state))
    return seconds, footprint


def own_state_parts(row: Mapping, state: float) -> list:
    """The pieces of a row's ``state`` bytes its cost already reads at their own span (pure): a fused
    layer's weight matrices each (its products are costed on the matrix grid one by one, each weight
    repeated alone: :mod:`crossover.opcost.fused_layers`) and the rest of its state together; any other
    row's state whole. On the Intel VM the zoo's encoder layer (5 MiB of weights, none over 2 MiB, against
    2 and 4 MiB of private caches at one and two threads) read 13-22% low at batch 1 in every sitting of
    1128e-o without it (``experiments/results/intel-xeon-2c/README.md``)."""
    from .fused_layers import FUSED_OPS
    from .trace import row_element_size
    from .trace_state import op_name

    if op_name(row.get("op", "")) not in FUSED_OPS.values():
        return [state]
    size = row_element_size(row)
    weights = [size * math.prod(shape) for shape in (row.get("input_shapes") or ())[1:] if len(shape) == 2]
    weights = [w for w in weights if w]
    return weights + [max(state - sum(weights), 0.0)] if sum(weights) <= state else [state]
