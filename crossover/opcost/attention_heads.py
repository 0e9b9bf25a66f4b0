"""Scaled-dot-product attention on a CPU costed per head: a curve of one (batch, head) pair's time against
its FLOPs, forward and backward (pure planning and fitting; torch only inside the steps).

PyTorch's CPU flash-attention kernel works through the batch's heads one block at a time, so a call
costs about its number of (batch, head) pairs times what one pair of its sequence lengths and head size
costs; a curve over the call's total FLOPs mixes a long-sequence call's efficient blocks with many short
ones. On the 2-core VM at two threads (``experiments/bench_attention_heads.py``, its log) the FLOP curve
read a forward pass of 512 × 4 heads of 16 tokens × 64 features at 0.24 of its time, and calls of heads
of 16 and 32 features at 0.22-0.49 of theirs, where over 256 pairs or more one pair's time (0.38-112 µs)
rose with its FLOPs. The backward pass took 1.7 to 4.1 times the forward, where the FLOP curve's rule
says 2.5.

The calibration's attention primitives (``plan.attention_shapes``, forward) give the forward curve; on a
CPU the same shapes are also timed forward and backward (family :data:`BACKWARD`), whose difference per
pair gives the backward curve (:func:`head_curves`). A profile without them keeps the FLOP curve.
"""

from __future__ import annotations

import math
from typing import Callable, Mapping, Optional

__all__ = ["BACKWARD", "HEAD_CURVE", "HEAD_BACKWARD_CURVE", "backward_points", "backward_step", "head_curves",
           "head_seconds"]

#: The family of the forward-and-backward primitives (CPU only), and the profile's curves.
BACKWARD = "attention_backward"
HEAD_CURVE = "attention_head"
HEAD_BACKWARD_CURVE = "attention_head_backward"
#: The FLOPs of a backward attention op against its forward's (:func:`crossover.opcost.op_costs.attention_flops`).
_BACKWARD_FLOPS = 2.5
#: The fewest (batch, head) pairs a primitive fits the per-pair curves with: a call of few pairs pays a
#: fixed cost the pairs do not share (the VM, two threads: 2.7 µs a pair over 4 pairs, 1.7 over 256).
MIN_PAIRS = 256


def _pair_flops(shape) -> float:
    """FLOPs of one (batch, head) pair of a self-attention of ``(batch, heads, length, head size)``."""
    length, size = shape[-2], shape[-1]
    return 2.0 * length * length * 2 * size


#: The most forward FLOPs a forward-and-backward primitive is timed at: the quick plan's 64 × 4 heads of
#: 256 × 64 (4.3 GFLOP) would add 2.4 s to a one-thread calibration on the 2-core VM; past the largest
#: timed, the backward curve runs on at its last rate.
MAX_BACKWARD_FLOPS = 2.0**30


def backward_points(plan) -> list:
    """``(family, name, x, shape)`` of the forward-and-backward primitives: the plan's attention shapes of
    at most :data:`MAX_BACKWARD_FLOPS` forward FLOPs."""
    shapes = [tuple(q) for q in plan.attention_shapes if _pair_flops(q) * q[0] * q[1] <= MAX_BACKWARD_FLOPS]
    return [(BACKWARD, "sdpa_train", _pair_flops(q) * q[0] * q[1], q) for q in shapes]


def backward_step(shape, device: str = "cpu") -> Callable[[], object]:
    """One forward and backward call over ``shape`` queries, keys and values (gradients returned, not
    accumulated)."""
    import torch

    q, k, v = (torch.randn(shape, device=device, requires_grad=True) for _ in range(3))
    grad = torch.randn(shape, device=device)

    def step():
        out = torch.nn.functional.scaled_dot_product_attention(q, k, v)
        return torch.autograd.grad(out, (q, k, v), grad)

    return step


def head_curves(families) -> dict:
    """The per-pair curves from a calibration's rows by family (pure): :data:`HEAD_CURVE` over the
    ``attention`` primitives of at least :data:`MIN_PAIRS` pairs (seconds and FLOPs per pair),
    :data:`HEAD_BACKWARD_CURVE` over the :data:`BACKWARD` ones less the forward of the same shape; each
    only with two sizes or more."""
    from .profiles import Curve

    def by_shape(rows):
        out = {}
        for seconds, _, row in rows:
            shape = tuple(int(v) for v in str(row.get("shape") or "").split("x") if v)
            if len(shape) == 4 and math.isfinite(seconds) and seconds > 0:
                out[shape] = seconds
        return out

    forward, both = by_shape(families.get("attention", [])), by_shape(families.get(BACKWARD, []))
    forward = {s: t for s, t in forward.items() if s[0] * s[1] >= MIN_PAIRS}
    curves = {}
    backward = {s: both[s] - forward[s] for s in both if s in forward and both[s] > forward[s]}
    for name, times in ((HEAD_CURVE, forward), (HEAD_BACKWARD_CURVE, backward)):
        points = [(_pair_flops(s), t / (s[0] * s[1])) for s, t in times.items()]
        if len({x for x, _ in points}) >= 2:
            curves[name] = Curve.fit([x for x, _ in points], [t for _, t in points])
    return curves


def head_seconds(profile, row: Mapping, flops: float) -> Optional[float]:
    """A CPU attention row's seconds: its (batch, head) pairs times the per-pair curve at its FLOPs per pair
    (``flops`` as :func:`crossover.opcost.op_costs.attention_flops` counts them), at least what the FLOP
    curve reads for the call (a call of few pairs: its fixed cost); None on a GPU, without the curves, or
    when the row's query is no ``(..., length, size)`` tensor."""
    shapes = [tuple(s) for s in (row.get("input_shapes") or ())]
    backward = "backward" in str(row.get("op", ""))
    query = shapes[1] if backward and len(shapes) > 1 else (shapes[0] if shapes else ())
    curve = profile.curves.get(HEAD_BACKWARD_CURVE if backward else HEAD_CURVE)
    if profile.device != "cpu" or curve is None or len(query) < 3 or flops <= 0:
        return None
    pairs = math.prod(query[:-2])
    per_pair = (flops / _BACKWARD_FLOPS if backward else flops) / pairs
    floor = profile.curves["attention"](flops) if "attention" in profile.curves else 0.0
    return max(pairs * curve(per_pair), floor)
