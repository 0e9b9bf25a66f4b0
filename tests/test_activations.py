"""Activation functions costed by their own CPU primitives, not as a ReLU of the same bytes."""

import dataclasses

import pytest
import torch
from torch import nn

from calibration_rows import overhead_rows, row
from crossover.opcost.activations import (ACTIVATION_ELEMENTS, ACTIVATION_FAMILY, ACTIVATION_OPS, activation_bytes,
                                          curve_name)
from crossover.opcost.calibrate import build_profile
from crossover.opcost.calibration_plan import PLANS, Point, make_step, points
from crossover.opcost.module_predict import predict_module
from crossover.opcost.op_costs import op_cost
from crossover.opcost.profiles import Curve, synthetic_profile

US = 1e-6


def test_the_quick_plan_times_each_activation_on_a_cpu_only():
    timed = [p for p in points(PLANS["quick"]) if p.family == ACTIVATION_FAMILY]
    assert {p.name for p in timed} == set(ACTIVATION_OPS)
    assert len(timed) == len(ACTIVATION_OPS) * len(ACTIVATION_ELEMENTS)
    assert all(p.x == activation_bytes(p.name, p.n) for p in timed)
    assert activation_bytes("gelu", 10) == 80 and activation_bytes("gelu_backward", 10) == 120
    assert not [p for p in points(PLANS["quick"], "cuda") if p.family == ACTIVATION_FAMILY]
    assert not [p for p in points(PLANS["smoke"]) if p.family == ACTIVATION_FAMILY]


@pytest.mark.parametrize("op", ACTIVATION_OPS)
def test_each_primitive_runs_its_op(op):
    out = make_step(Point(ACTIVATION_FAMILY, op, n=64, x=activation_bytes(op, 64), shape=(64,)), "cpu")()
    assert out.shape == (64,) and torch.isfinite(out).all()


def test_the_calibration_fits_a_curve_per_activation():
    rows = overhead_rows()
    rows += [row("relu", 1 * US + n * 0.1e-9, family="elementwise", n=n, x=8.0 * n) for n in (2**10, 2**20)]
    rows += [row("tanh", 1 * US + n * 2e-9, family=ACTIVATION_FAMILY, n=n, x=8.0 * n) for n in (2**10, 2**20)]
    profile = build_profile(rows, device="cpu", machine="m")
    assert profile.curves[curve_name("tanh")](8.0 * 2**20) == pytest.approx(1 * US + 2**20 * 2e-9)
    assert ACTIVATION_FAMILY not in profile.curves  # one curve an op, none for the family


def _profile():
    """1 µs + 0.1 ns a byte for a ReLU; tanh 1 µs + 1 ns a byte."""
    base = synthetic_profile(dispatch_s=1 * US, bandwidth=1e10)
    x = (8.0 * 2**10, 8.0 * 2**20)
    relu = Curve(x, tuple(1 * US + b * 0.1e-9 for b in x))
    tanh = Curve(x, tuple(1 * US + b * 1e-9 for b in x))
    return dataclasses.replace(base, curves={**base.curves, "elementwise": relu, curve_name("tanh"): tanh})


def _elementwise(op, n):
    return dict(op=op, kind="elementwise", input_shapes=[(n,)], output_shapes=[(n,)], bytes_read=4 * n,
                bytes_written=4 * n, launches=1)


def test_an_activation_row_takes_its_own_curve_and_others_the_elementwise_one():
    profile = _profile()
    n = 2**20  # a size the curves were given at
    assert op_cost(profile, _elementwise("aten.tanh.default", n)).host_s == pytest.approx(1 * US + 8 * n * 1e-9)
    assert op_cost(profile, _elementwise("aten.tanh_.default", n)).host_s == pytest.approx(1 * US + 8 * n * 1e-9)
    assert op_cost(profile, _elementwise("aten.relu.default", n)).host_s == pytest.approx(1 * US + 8 * n * 0.1e-9)
    # an activation the calibration did not time (or a profile from before the primitives): a ReLU's bytes
    assert op_cost(profile, _elementwise("aten.gelu.default", n)).host_s == pytest.approx(1 * US + 8 * n * 0.1e-9)


def test_a_models_tanh_costs_its_curve():
    shape, batch = (2**16,), 16  # 2^20 elements, a size the curves were given at
    plain = synthetic_profile(dispatch_s=1 * US, bandwidth=1e10)
    plain = dataclasses.replace(plain, curves={**plain.curves, "elementwise": _profile().curves["elementwise"]})
    with pytest.warns(UserWarning, match="tanh.default is costed as a ReLU"):  # no curve of its own there
        before = predict_module(nn.Tanh(), sample_shape=shape, batch_sizes=(batch,), profiles=[plain])["latency_s"].iloc[0]
    after = predict_module(nn.Tanh(), sample_shape=shape, batch_sizes=(batch,), profiles=[_profile()])["latency_s"].iloc[0]
    assert after - before == pytest.approx(8 * 2**20 * 0.9e-9, rel=1e-6)


def test_an_uncovered_costly_elementwise_op_is_named_in_a_warning():
    profile = _profile()  # times tanh, not erf or GELU
    n = 2**10
    assert op_cost(profile, _elementwise("aten.erf.default", n)).warning.startswith("aten.erf.default is costed as a ReLU")
    assert "before the activation primitives" not in op_cost(profile, _elementwise("aten.erf.default", n)).warning
    assert op_cost(profile, _elementwise("aten.tanh.default", n)).warning == ""  # its own curve
    assert op_cost(profile, _elementwise("aten.mul.Tensor", n)).warning == ""  # cheap: the curve's own kind
    old = synthetic_profile(dispatch_s=1 * US, bandwidth=1e10)  # no activation primitives at all
    assert "before the activation primitives" in op_cost(old, _elementwise("aten.tanh.default", n)).warning
    gpu = dataclasses.replace(old, device="cuda")
    assert op_cost(gpu, _elementwise("aten.tanh.default", n)).warning == ""  # a GPU's kernels: bandwidth-bound
    loss = dict(_elementwise("aten.nll_loss_backward.default", n), kind="other")
    assert op_cost(old, loss).warning == ""


def test_pointwise_kernels_aten_leaves_untagged_take_the_elementwise_curve():
    """Hardswish, PReLU, ELU and LeakyReLU's kernels are traced as kind ``other`` (ATen tags them not
    ``pointwise``): they are costed on the elementwise curve, not the generic peak-bandwidth model, and
    only those that compute more than a ReLU per element (ELU's backward) keep a warning."""
    from crossover.opcost.trace import op_name, trace_module

    model = nn.Sequential(nn.Linear(64, 64), nn.Hardswish(), nn.PReLU(), nn.LeakyReLU(), nn.ELU())
    rows = trace_module(model, torch.randn(256, 64), workload="train")
    profile = _profile()
    seen = {}
    for _, traced in rows.iterrows():
        name = op_name(traced["op"])
        if name in ("hardswish", "hardswish_backward", "_prelu_kernel", "leaky_relu_backward", "elu_backward"):
            assert traced["kind"] == "other"  # untagged: the trace alone would cost them generically
            seen[name] = op_cost(profile, dict(traced))
    assert set(seen) == {"hardswish", "hardswish_backward", "_prelu_kernel", "leaky_relu_backward", "elu_backward"}
    assert {cost.family for cost in seen.values()} == {"elementwise"}
    assert [name for name, cost in seen.items() if cost.warning] == ["elu_backward"]
    assert seen["elu_backward"].warning.startswith("aten.elu_backward.default is costed as a ReLU")
    moved = 4 * 256 * 64 * 3  # the gradient, the input and the output
    backward = next(dict(r) for _, r in rows.iterrows() if op_name(r["op"]) == "leaky_relu_backward")
    assert backward["bytes_read"] + backward["bytes_written"] == moved
    assert seen["leaky_relu_backward"].host_s == pytest.approx(profile.curves["elementwise"](moved))
    assert seen["leaky_relu_backward"].host_s > max(1 * US, moved / 1e10)  # the generic model: peak bandwidth
