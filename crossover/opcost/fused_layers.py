"""PyTorch's fused inference kernels on a CPU timed whole: what the fast path of ``nn.MultiheadAttention``
and ``nn.TransformerEncoderLayer`` costs beyond the kernels it is costed by (planning, fitting; torch
only inside the steps).

In ``eval()`` mode under ``no_grad`` those modules run one fused op, ``_native_multi_head_attention`` or
``_transformer_encoder_layer_fwd``, which a prediction costs as the kernels PyTorch's CPU implementation
runs inside (:mod:`crossover.opcost.op_costs`: the projections, ``bmm``, softmax, the copies),
each on its own primitive's curve. Those kernels do not run as their primitives do: the ``bmm`` reads
transposed views, the heads' copy is strided, the bias-and-rescale kernel is no ReLU, and the module's
Python checks and the op's own allocations and views add a fixed cost. On the 2-core Xeon VM at one
thread (the out-of-sample attention block of ``experiments/zoo_unseen``, batch 64, ``torch.profiler``)
the two ``bmm`` took 1.8 times their cost, the bias-and-rescale kernel 2.6, the copy 8; the op's own
work and its small ops ~100 µs the kernels do not count: the forward pass of every attention model
there was under-predicted by 40-55%, the encoder layer's at batch 1 by 22%.

The calibration times each fused op whole (family :data:`FUSED`), in its module's fast path, at two
shapes (:data:`FUSED_SHAPES`, none of a zoo model's) and four batches, and fits per op
``measured = fixed + linear + scale × rest`` (:func:`fit_fused`, relative least squares), where
``linear`` is the cost of the layer's products on the matrix grid (they ran at 1.0-1.3 times it: a
large layer is mostly them) and ``rest`` that of every other kernel; a prediction costs a fused op so
(:func:`fused_terms`). A profile without the primitives keeps ``fixed = 0``, ``scale = 1``.
"""

from __future__ import annotations

import functools
import math
from typing import Callable, Mapping

from .trace import op_name, row_args, row_element_size
from ..units import format_seconds

__all__ = ["FUSED", "FUSED_OPS", "FUSED_SHAPES", "FUSED_BATCHES", "fused_rows", "fused_points", "fused_step",
           "fit_fused", "fused_terms", "fused_summary"]

#: The family of the whole-op primitives (CPU only).
FUSED = "fused_layer"
#: The primitive's name -> the fused op its module's fast path runs.
FUSED_OPS = {"mha": "_native_multi_head_attention", "encoder": "_transformer_encoder_layer_fwd"}
#: (tokens, width, heads) of the primitives' inputs (the encoder's feed-forward twice the width): a few
#: wide tokens and many narrow ones, so the fit sees the projections' share and the attention core's.
FUSED_SHAPES = ((32, 128, 4), (128, 32, 2))
FUSED_BATCHES = (1, 4, 16, 64)
#: The scale's bounds: the kernels' cost may be off, not meaningless.
SCALE_BOUNDS = (0.5, 4.0)
#: Views a fused op makes inside (splitting heads, transposes); each costs a view on the host.
FUSED_VIEWS = 8


# ------------------------------------------------------------ the kernels a fused op runs
def _row(op, kind, inputs, outputs, element_size, flops=0.0) -> dict:
    return {"op": op, "kind": kind, "input_shapes": tuple(inputs), "output_shapes": tuple(outputs), "flops": flops,
            "bytes_read": element_size * sum(math.prod(s) for s in inputs),
            "bytes_written": element_size * sum(math.prod(s) for s in outputs), "launches": 1}


def _linear(m, k, n, e) -> dict:
    return _row("aten.addmm.default", "matmul", [(n,), (m, k), (k, n)], [(m, n)], e, flops=2.0 * m * k * n)


def _attention_core(b, length, source, d, e, heads=None) -> list:
    """The kernels of PyTorch's native multi-head attention on the CPU after the input projection:
    bias and scaling of q, k, v, ``bmm`` (scores), softmax, ``bmm`` (values), the heads made contiguous
    again. ``heads`` as the trace recorded it (its ``args``); else heads of 64 features are assumed."""
    heads = heads or (d // 64 if d % 64 == 0 else 1)
    hd, bh = d // heads, b * heads
    return [_row("aten._transform_bias_rescale_qkv.default", "elementwise", [(b, length, 3 * d), (3 * d,)],
                 [(b, heads, length, hd)] * 3, e),
            _row("aten.bmm.default", "matmul", [(bh, length, hd), (bh, hd, source)], [(bh, length, source)], e,
                 flops=2.0 * bh * length * source * hd),
            _row("aten._softmax.default", "reduction", [(b, heads, length, source)], [(b, heads, length, source)], e),
            _row("aten.bmm.default", "matmul", [(bh, length, source), (bh, source, hd)], [(bh, length, hd)], e,
                 flops=2.0 * bh * length * source * hd),
            _row("aten.clone.default", "copy", [(b, length, heads, hd)], [(b, length, heads, hd)], e)]


def fused_rows(name: str, row: Mapping):
    """The kernels a fused op runs (as PyTorch's CPU implementation does), as trace-like rows; None
    when its shapes are not understood."""
    shapes = [tuple(s) for s in row.get("input_shapes") or ()]
    e = row_element_size(row)
    heads = row_args(row).get("heads")
    if name == "_transformer_encoder_layer_fwd" and len(shapes) >= 13 and len(shapes[0]) == 3:
        b, s, d = shapes[0]
        f = shapes[9][0]
        m = b * s
        add = _row("aten.add_.Tensor", "elementwise", [(m, d), (m, d)], [(m, d)], e)
        activation = "aten.gelu_.default" if row_args(row).get("gelu") else "aten.relu_.default"  # its feed-forward's
        norm = _row("aten.native_layer_norm.default", "reduction", [(m, d), (d,), (d,)], [(m, d), (m, 1), (m, 1)], e)
        return [_linear(m, d, 3 * d, e), *_attention_core(b, s, s, d, e, heads), _linear(m, d, d, e), add, norm,
                _linear(m, d, f, e), _row(activation, "elementwise", [(m, f)], [(m, f)], e),
                _linear(m, f, d, e), add, norm]
    if name == "_native_multi_head_attention" and len(shapes) >= 7 and len(shapes[0]) == 3:
        b, length, d = shapes[0]
        source = shapes[1][1] if len(shapes[1]) == 3 else length
        projections = ([_linear(b * length, d, 3 * d, e)] if shapes[0] == shapes[1] == shapes[2] else
                       [_linear(b * length, d, d, e), _linear(b * source, d, d, e), _linear(b * source, d, d, e)])
        return projections + _attention_core(b, length, source, d, e, heads) + [_linear(b * length, d, d, e)]
    return None


# ------------------------------------------------------------ the primitives and their fit
def fused_points() -> list:
    """``(family, name, batch, shape)`` of each primitive; ``shape`` is ``(batch, tokens, width, heads)``."""
    return [(FUSED, name, batch, (batch, tokens, width, heads)) for name in FUSED_OPS
            for tokens, width, heads in FUSED_SHAPES for batch in FUSED_BATCHES]


def _module(name: str, width: int, heads: int):
    """The primitive's layer in ``eval()`` mode, wrapped so that calling it on ``x`` calls the layer as a
    model does (self-attention: ``x`` as query, key and value, no weights returned)."""
    import torch

    if name == "mha":
        layer = torch.nn.MultiheadAttention(width, heads, batch_first=True)
    elif name == "encoder":
        layer = torch.nn.TransformerEncoderLayer(width, heads, 2 * width, dropout=0.0, batch_first=True)
    else:
        raise ValueError(f"unknown fused primitive {name!r}; expected one of {', '.join(FUSED_OPS)}")

    class Call(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = layer

        def forward(self, x):
            return self.inner(x, x, x, need_weights=False)[0] if name == "mha" else self.inner(x)

    return Call().eval()


def fused_step(name: str, shape: tuple, device: str = "cpu") -> Callable[[], object]:
    """One call of the primitive: the module in ``eval()`` mode under ``no_grad`` (its fast path), as a
    forward pass of a model runs it (:func:`crossover.measurement.module_rounds.make_module_step`)."""
    import torch

    batch, tokens, width, heads = shape
    module = _module(name, width, heads).to(device)
    x = torch.randn(batch, tokens, width, device=device)

    def step():
        with torch.no_grad():
            return module.forward(x)  # the layer's own call only: one module call, as the fit counts

    return step


@functools.lru_cache(maxsize=None)
def _fused_row(name: str, shape: tuple):
    """The traced row of the primitive's fused op (on meta tensors: nothing runs; not to be modified)."""
    import torch

    from .trace import trace_module

    batch, tokens, width, heads = shape
    rows = trace_module(_module(name, width, heads), torch.empty(batch, tokens, width, device="meta"), "forward")
    fused = [r for r in rows.to_dict("records") if op_name(r["op"]) == FUSED_OPS[name]]
    return fused[0] if fused else None


def fit_fused(families: Mapping, kernels_s: Callable[[Mapping], tuple], module_call_s: float = 0.0) -> dict:
    """``fused_<name>_s`` (fixed seconds) and ``fused_<name>_scale`` for each fused op the calibration
    timed (pure but for tracing on meta tensors).

    A primitive's time less one module call is ``fixed + linear + scale × rest``, ``(linear, rest)`` its
    kernels' cost on the calibration's profile without these terms: the products of its layers, costed on
    the matrix grid as any ``Linear`` is, and everything else
    (:func:`crossover.opcost.op_costs.fused_split`). The fit minimises the residuals relative to the
    primitive's time, the scale within :data:`SCALE_BOUNDS` and the fixed cost at least 0. An op with
    fewer than three primitives is left out (its terms stay 0 and 1).

    Parameters
    ----------
    families : mapping
        Family name -> ``(seconds, spread, row)`` of each primitive (``row["shape"]`` written
        ``"batch x tokens x width x heads"``).
    kernels_s : callable
        A traced fused op's row -> ``(linear, rest)`` seconds on the profile
        (:func:`crossover.opcost.op_costs.fused_kernels_s`).
    module_call_s : float
        The profile's module call (the primitive calls its module once).

    Returns
    -------
    dict
        Overheads to add to the profile.
    """
    import numpy as np

    pairs = {}
    for seconds, _, row in families.get(FUSED, []):
        shape = tuple(int(v) for v in str(row.get("shape") or "").split("x") if v)
        if len(shape) != 4 or not math.isfinite(seconds) or row.get("name") not in FUSED_OPS:
            continue
        fused = _fused_row(row["name"], shape)
        if fused is None:  # this torch runs no fused op there: nothing to correct
            continue
        kernels = kernels_s(fused)
        if kernels is None:  # shapes the decomposition does not read: nothing to fit on
            continue
        linear, rest = kernels
        pairs.setdefault(row["name"], []).append((seconds, seconds - module_call_s - linear, rest))
    out = {}
    for name, items in pairs.items():
        if len(items) < 3:
            continue
        measured, target, rest = (np.array(v, dtype=float) for v in zip(*items))
        fixed, scale = _relative_fit(target, rest, 1.0 / measured)
        out[f"fused_{name}_s"], out[f"fused_{name}_scale"] = fixed, scale
    return out


def _relative_fit(target, rest, w) -> tuple:
    """(fixed, scale) minimising ``sum((w · (fixed + scale · rest - target))²)``, fixed ≥ 0, the scale
    clipped to :data:`SCALE_BOUNDS` (then the fixed cost refitted)."""
    import numpy as np

    fixed, scale = np.linalg.lstsq(np.column_stack([w, rest * w]), target * w, rcond=None)[0]
    low, high = SCALE_BOUNDS
    if fixed < 0:  # the scale alone
        fixed, scale = 0.0, float(np.sum(rest * target * w * w) / np.sum((rest * w) ** 2))
    if not low <= scale <= high:
        scale = min(max(scale, low), high)
        fixed = max(float(np.sum(w * w * (target - scale * rest)) / np.sum(w * w)), 0.0)
    return float(fixed), float(scale)


def fused_terms(profile, name: str) -> tuple:
    """``(fixed seconds, scale)`` a fused op ``name`` (an aten op name) is costed with on ``profile``:
    ``(0, 1)`` where its calibration did not time it."""
    key = next((key for key, op in FUSED_OPS.items() if op == name), None)
    if key is None:
        return 0.0, 1.0
    return float(profile.overhead(f"fused_{key}_s")), float(profile.overheads.get(f"fused_{key}_scale", 1.0))


def fused_summary(profile):
    """One line on the fused layers' terms (what ``crossover calibrate`` prints), or None where the
    calibration did not time them."""
    parts = []
    for key, label in (("mha", "attention"), ("encoder", "encoder layer")):
        if f"fused_{key}_scale" in profile.overheads:
            fixed, scale = fused_terms(profile, FUSED_OPS[key])
            parts.append(f"{label} {format_seconds(fixed)} + its products + {scale:.2f} x its other kernels")
    return "fused inference layers: " + "; ".join(parts) if parts else None
