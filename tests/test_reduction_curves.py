"""Row-wise primitives on curves of their own: a layer norm is costed at the layer norm's rate, not at
the rate of a curve shared with sums and softmaxes of the same bytes."""

import dataclasses

import pytest
import torch
from torch import nn

from crossover.opcost.calibrate import build_profile
from crossover.opcost.op_costs import op_cost
from crossover.opcost.profiles import Curve, synthetic_profile
from crossover.opcost.reduction_curves import own_curve_name
from crossover.opcost.trace import trace_module
from test_calibrate import _row

US = 1e-6


def _visits(reductions):
    rows = [_row(n, 1 * US, n=c) for n, c in (("dispatch", 0), ("view", 0), ("module_call", 0))]
    rows += [_row(f"chain_{m}", 1 * US * c, n=c) for m in ("nograd", "grad", "train") for c in (1, 17)]
    rows += [_row("sgd", 1 * US * c, n=c) for c in (1, 16)] + [_row("addmm", 1 * US, family="matmul", m=1, k=8, x=128.0)]
    rows += [_row(name, seconds, family="reduction", x=x) for name, x, seconds in reductions]
    return rows + [_row("reference", 1e-3, family="reference", reference=True)]


def test_each_row_wise_primitive_gets_a_curve_of_its_own_beside_the_shared_one():
    """The plan's sum, softmax and layer norm are timed over the same elements with different bytes: the
    shared curve runs through all of them, each primitive's own through its points alone."""
    points = [("sum", 1e4, 2 * US), ("sum", 1e5, 4 * US), ("layer_norm", 2e4, 6 * US), ("layer_norm", 2e5, 12 * US)]
    profile = build_profile(_visits(points), device="cpu", machine="m")
    norm, total = profile.curves[own_curve_name("reduction", "layer_norm")], profile.curves[own_curve_name("reduction", "sum")]
    assert norm(2e4) == pytest.approx(6 * US) and norm(2e5) == pytest.approx(12 * US)
    assert total(1e4) == pytest.approx(2 * US) and total(1e5) == pytest.approx(4 * US)
    shared = profile.curves["reduction"]
    assert shared(2e4) < 6 * US  # a layer norm on the shared curve: between the sum's and its own points
    assert own_curve_name("reduction", "softmax") not in profile.curves  # not timed: no curve


def _profile_with_reduction_curves():
    base = synthetic_profile(dispatch_s=1 * US)
    curves = dict(base.curves, reduction=Curve((1.0,), (1 * US,), rate=float("inf")))
    curves[own_curve_name("reduction", "layer_norm")] = Curve((1.0,), (5 * US,), rate=float("inf"))
    curves[own_curve_name("reduction", "sum")] = Curve((1.0,), (2 * US,), rate=float("inf"))
    return dataclasses.replace(base, curves=curves)


def _reduction_rows(module, shape):
    table = trace_module(module, torch.randn(shape))
    return [row for row in table.to_dict("records") if row["kind"] == "reduction"]


def test_a_layer_norm_a_sum_and_a_mean_are_costed_on_their_primitives_curves_others_on_the_shared_one():
    profile = _profile_with_reduction_curves()
    norm = _reduction_rows(nn.LayerNorm(256).eval(), (1, 256))
    assert [row["op"] for row in norm] == ["aten.native_layer_norm.default"]
    assert op_cost(profile, norm[0], inference=True).host_s == pytest.approx(5 * US)

    class Reductions(nn.Module):
        def forward(self, x):
            return x.sum(-1), x.amax(-1)

    total, peak = _reduction_rows(Reductions(), (4, 256))
    assert op_cost(profile, total).host_s == pytest.approx(2 * US)  # the sum's own curve
    assert op_cost(profile, peak).host_s == pytest.approx(1 * US)  # no primitive of its own: the shared curve
    older = dataclasses.replace(profile, curves={k: v for k, v in profile.curves.items() if ":" not in k})
    assert op_cost(older, norm[0], inference=True).host_s == pytest.approx(1 * US)  # a profile from before the split
