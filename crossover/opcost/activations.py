"""Activation functions costed by their own primitives, not as a ReLU of the same bytes (CPU).

A CPU calibration's elementwise curve is timed on ``add`` and ``relu``, which move bytes and compute next
to nothing. An activation that evaluates a transcendental function per element computes far more: on
the 2-core VM at one thread, per element over 2^20 elements, ReLU took 0.07 ns, sigmoid and SiLU 0.21,
the exact GELU 0.24, ELU 0.85, softplus 1.05, tanh 2.1 and mish 3.05 (over 2^12 elements GELU 1.6 and ReLU
0.4, a call's fixed cost spread); their backward kernels 0.11 (tanh, sigmoid) to 0.43 (GELU) and 3.4
(mish) (``experiments/bench_costly_ops.py``, its log in ``experiments/results/amd-epyc-2c/logs``). Costed
as a ReLU of their bytes, a model of three residual blocks with tanh read 31% under at batch 512
(its tanh 854 µs against 24 predicted), an MLP with GELU 29% under at batch 1.

The calibration times each op of :data:`ACTIVATION_OPS` at :data:`ACTIVATION_ELEMENTS` (a curve per op,
over the bytes it moves, as the elementwise curve), and :func:`activation_curve` gives a traced row the
curve of its op, or None (then the elementwise curve costs it, as before).
"""

from __future__ import annotations

from typing import Callable, Mapping, Optional

__all__ = ["ACTIVATION_OPS", "ACTIVATION_ELEMENTS", "ACTIVATION_FAMILY", "CHEAP_ELEMENTWISE", "UNTAGGED_POINTWISE", "curve_name",
           "activation_bytes", "activation_step", "activation_curve", "uncovered_warning"]

#: The calibration family of the activation primitives; each op's curve is ``activation:<op>``.
ACTIVATION_FAMILY = "activation"
#: The activations timed, forward ones and the backward kernels that cost more than a ReLU's: ATen op
#: names, as a trace records them (less ``aten.`` and the overload).
ACTIVATION_OPS = ("tanh", "sigmoid", "gelu", "silu", "elu", "softplus", "mish", "gelu_backward", "silu_backward",
                  "mish_backward")
#: Elements of each primitive: per element the cost is flat past a few thousand, and a larger op moves
#: its bytes at the stream's rate at least (:mod:`crossover.opcost.streaming`). Thirty primitives add
#: ~2.6 s to a quick calibration (a visit is ~11 ms whatever its size).
ACTIVATION_ELEMENTS = (2**8, 2**14, 2**20)


#: Elementwise ops that compute next to nothing per element (arithmetic, comparisons, clamps, fills and
#: the cheap backward kernels: tanh's and sigmoid's took 0.1 ns an element at one thread on the VM, a
#: ReLU 0.06), which the elementwise curve of ``add`` and ``relu`` costs as well as it costs those.
CHEAP_ELEMENTWISE = frozenset({
    "add", "sub", "mul", "div", "neg", "abs", "sign", "square", "reciprocal", "fill", "zero", "ones_like",
    "zeros_like", "zeros", "ones", "full", "full_like", "empty_like", "copy", "clone", "relu", "threshold",
    "threshold_backward", "clamp", "clamp_min", "clamp_max", "maximum", "minimum", "where", "masked_fill",
    "eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_not", "bitwise_and", "hardtanh",
    "hardtanh_backward", "leaky_relu", "leaky_relu_backward", "hardswish", "hardsigmoid", "tanh_backward",
    "sigmoid_backward", "lerp", "addcmul", "addcdiv", "floor", "ceil", "round", "trunc", "bernoulli", "rand_like",
    "randn_like", "native_dropout", "native_dropout_backward", "dropout", "hardswish_backward",
    "hardsigmoid_backward", "_prelu_kernel", "_prelu_kernel_backward", "softshrink_backward",
    "hardshrink_backward"})

#: Pointwise kernels that ATen does not tag ``pointwise`` (a trace gives them kind ``other``), which the
#: elementwise curve costs by their bytes as it costs the tagged ones; the generic model's peak
#: bandwidth under-costs them 2-3 times past the first cache (``experiments/bench_untagged_pointwise.py``).
#: Those not in :data:`CHEAP_ELEMENTWISE` (ELU's, softplus's and log-sigmoid's kernels, GLU) compute more
#: per element and keep :func:`uncovered_warning`.
UNTAGGED_POINTWISE = frozenset({
    "hardswish", "hardswish_backward", "hardsigmoid_backward", "leaky_relu_backward", "hardtanh_backward",
    "_prelu_kernel", "_prelu_kernel_backward", "softshrink_backward", "hardshrink_backward", "elu_backward",
    "softplus_backward", "log_sigmoid_forward", "log_sigmoid_backward", "glu", "glu_backward"})


def uncovered_warning(profile, row: Mapping) -> str:
    """A warning for an elementwise op a CPU profile costs as a ReLU of its bytes though it may compute far
    more per element (no curve of its own, not in :data:`CHEAP_ELEMENTWISE`), or ``""``."""
    name = _base_op(row)
    if (profile.device != "cpu" or (row.get("kind") != "elementwise" and name not in UNTAGGED_POINTWISE)
            or name in CHEAP_ELEMENTWISE or activation_curve(profile, row) is not None):
        return ""  # kind "other" costed on the curve (a loss's gradient) is cheap
    timed = "" if any(key.startswith(ACTIVATION_FAMILY + ":") for key in profile.curves) else \
        " (a calibration from before the activation primitives: calibrate again to time the common ones)"
    return (f"{row.get('op', name)} is costed as a ReLU moving its bytes{timed}; per element it may compute "
            f"far more (tanh takes over 20 times a ReLU's time at one thread), so the step may be under-predicted")


def curve_name(op: str) -> str:
    """The profile's curve for ``op`` (``gelu`` -> ``activation:gelu``)."""
    return f"{ACTIVATION_FAMILY}:{op}"


def activation_bytes(op: str, n: int) -> float:
    """Bytes one call moves over ``n`` float32 elements: the input and the output, and a backward
    kernel's gradient too."""
    return 4.0 * n * (3 if op.endswith("_backward") else 2)


def activation_step(op: str, n: int, device: str = "cpu") -> Callable[[], object]:
    """One call of ``op`` over ``n`` elements on ``device`` (inputs allocated now, reused every call)."""
    import torch

    x = torch.randn(n, device=device)
    grad = torch.randn(n, device=device)
    kernel = getattr(torch.ops.aten, op)
    return (lambda: kernel(grad, x)) if op.endswith("_backward") else (lambda: kernel(x))


def _base_op(row: Mapping) -> str:
    """A row's ATen op name without ``aten.``, the overload and an in-place ``_`` (``aten.silu_.default`` ->
    ``silu``)."""
    name = str(row.get("op", "")).split(".")
    name = name[1] if len(name) > 1 and name[0] == "aten" else name[0]
    return name[:-1] if name.endswith("_") and not name.endswith("__") else name


def activation_curve(profile, row: Mapping) -> Optional[object]:
    """The curve of the row's activation op on ``profile`` (a CPU's calibration from the primitives on),
    or None."""
    return profile.curves.get(curve_name(_base_op(row)))
