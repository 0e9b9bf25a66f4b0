"""A strided convolution on PyTorch's native CPU path (one small image) pays for unfolding its strided input:
the calibration times three and the cost adds per unfolded element to the stride-1 grid's."""

import dataclasses

import pytest
from torch import nn

from crossover.opcost.calibration_plan import PLANS, make_step, points
from crossover.opcost.conv_grids import strided_unfold_elements
from crossover.opcost.conv_primitives import STRIDED, STRIDED_CHANNELS, STRIDED_SIDE, fit_strided_column_s
from crossover.opcost.module_predict import trace_step
from crossover.opcost.op_costs import conv_backend, op_cost
from crossover.opcost.profiles import Grid, synthetic_profile

US = 1e-6


def _conv_row(c_in, c_out, stride, side, batch=1):
    table, _ = trace_step(nn.Conv2d(c_in, c_out, 3, stride=stride, padding=1), (c_in, side, side), batch, "forward")
    return next(r for r in table.to_dict("records") if "convolution" in r["op"])


def test_the_quick_plan_times_strided_native_convolutions_on_a_cpu_only():
    every = [p for p in points(PLANS["quick"]) if p.family == STRIDED]
    strided = [p for p in every if p.name == "conv2d_native"]
    assert [p.shape for p in every if p.name == "conv2d_native_backward"] == [p.shape for p in strided]
    assert [p.shape[1:4] for p in strided] == list(STRIDED_CHANNELS)
    assert all(p.shape[0] == 1 and p.shape[4] == STRIDED_SIDE and p.m == (STRIDED_SIDE // 2) ** 2 for p in strided)
    assert not [p for p in points(PLANS["quick"], "cuda") if p.family == STRIDED]
    out = make_step(strided[0], "cpu")()
    assert tuple(out.shape) == (1, strided[0].shape[2], STRIDED_SIDE // 2, STRIDED_SIDE // 2)


def _families(extra_s_per_element):
    """Stride-1 native convolutions of one 16 × 16 image and the stride-2 ones of a 32 × 32 image, slower by
    the given seconds per unfolded element."""
    rows = {"conv": [], STRIDED: []}
    for c_in, c_out, k in STRIDED_CHANNELS:
        base = 1e-6 * c_in * c_out
        rows["conv"].append((base, 0.0, dict(name="conv2d_native", shape=f"1x{c_in}x{c_out}x{k}x16")))
        rows["conv"].append((9.0, 0.0, dict(name="conv2d", shape=f"1x{c_in}x{c_out}x{k}x16")))  # oneDNN's: not paired
        rows[STRIDED].append((base + extra_s_per_element * c_in * k * k * 256, 0.0,
                              dict(name="conv2d_native", shape=f"1x{c_in}x{c_out}x{k}x32")))
    return rows


def test_the_cost_per_unfolded_element_is_recovered():
    assert fit_strided_column_s(_families(0.64e-9)) == pytest.approx(0.64e-9)
    assert fit_strided_column_s(_families(-1e-9)) == 0.0  # never negative
    assert fit_strided_column_s({"conv": []}) == 0.0  # a calibration from before the primitives


def test_a_strided_rows_unfolded_elements():
    assert strided_unfold_elements(_conv_row(16, 32, 2, 32)) == 16 * 9 * 16 * 16
    assert strided_unfold_elements(_conv_row(16, 32, 1, 32)) == 0.0
    assert strided_unfold_elements(_conv_row(16, 32, 2, 32, batch=4)) == 4 * 16 * 9 * 16 * 16


def test_only_a_strided_native_convolution_pays_the_unfolding():
    base = synthetic_profile(dispatch_s=1 * US, flop_rate=1e10)
    grid = Grid((16.0, 4096.0), (16.0, 1e5), ((1 * US, 10 * US), (20 * US, 200 * US)))
    plain = dataclasses.replace(base, grids={**base.grids, "conv@16": grid, "conv_native@16": grid})
    with_extra = dataclasses.replace(plain, overheads={**plain.overheads, "native_stride_column_s": 1e-9})
    strided, stride_1 = _conv_row(16, 32, 2, 32), _conv_row(16, 32, 1, 16)
    assert conv_backend(strided, 1) == "native"
    assert op_cost(with_extra, strided).host_s == pytest.approx(op_cost(plain, strided).host_s + 16 * 9 * 256 * 1e-9)
    assert op_cost(with_extra, stride_1).host_s == op_cost(plain, stride_1).host_s
    batch_8 = _conv_row(16, 32, 2, 32, batch=8)  # oneDNN's kernel: not the native unfolding
    assert conv_backend(batch_8, 1) == "mkldnn"
    assert op_cost(with_extra, batch_8).host_s == op_cost(plain, batch_8).host_s


def _backward_rows(stride, batch=8, first=False):
    """The convolution backward rows of a training step of conv(3→16, stride) · conv(16→32, stride) over
    32 × 32 images: the first layer's (its weight's gradient alone) and the second's, or the latter only."""
    model = nn.Sequential(nn.Conv2d(3, 16, 3, stride=stride, padding=1), nn.ReLU(),
                          nn.Conv2d(16, 32, 3, stride=stride, padding=1))
    table, _ = trace_step(model, (3, 32, 32), batch, "train")
    rows = [r for r in table.to_dict("records") if "convolution_backward" in r["op"]]
    return rows if first else [r for r in rows if tuple(r["input_shapes"][1])[1] == 16][0]


def test_the_quick_plan_times_strided_input_gradients_on_a_cpu_only_and_the_rate_is_recovered():
    from crossover.opcost.conv_primitives import STRIDED_BACKWARD, STRIDED_BACKWARD_SHAPES, fit_strided_grad_input_s

    pts = [p for p in points(PLANS["quick"]) if p.family == STRIDED_BACKWARD]
    assert sorted({p.shape for p in pts}) == sorted(STRIDED_BACKWARD_SHAPES)
    assert {p.name for p in pts} == {"conv2d", "forward", "forward_stride1"}
    assert not [p for p in points(PLANS["quick"], "cuda") if p.family == STRIDED_BACKWARD]
    assert not [p for p in points(PLANS["smoke"]) if p.family == STRIDED_BACKWARD]
    by_name = {p.name: p for p in pts if p.shape == STRIDED_BACKWARD_SHAPES[0]}
    batch, c_in, c_out, _, side = by_name["conv2d"].shape
    grad_input = make_step(by_name["conv2d"], "cpu")()[0]  # the input's gradient alone, as large as the input
    assert tuple(grad_input.shape) == (batch, c_in, side, side)
    for name in ("forward", "forward_stride1"):  # the same output
        assert tuple(make_step(by_name[name], "cpu")().shape) == (batch, c_out, side // 2, side // 2)

    def rows(forward_extra_s):
        out = []
        for b, c, o, k, s in STRIDED_BACKWARD_SHAPES:
            shape = "x".join(map(str, (b, c, o, k, s)))
            out += [(3e-9 * b * c * s * s, 0.0, dict(name="conv2d", shape=shape)),
                    (1e-4 + forward_extra_s * b * c * s * s, 0.0, dict(name="forward", shape=shape)),
                    (1e-4, 0.0, dict(name="forward_stride1", shape=shape))]
        return {STRIDED_BACKWARD: out}
    assert fit_strided_grad_input_s(rows(0.5e-9)) == {"strided_grad_input_element_s": pytest.approx(3e-9),
                                                      "strided_forward_input_element_s": pytest.approx(0.5e-9)}
    assert fit_strided_grad_input_s(rows(-1e-9))["strided_forward_input_element_s"] == 0.0  # never negative
    input_grads_only = {STRIDED_BACKWARD: [r for r in rows(0.0)[STRIDED_BACKWARD] if r[2]["name"] == "conv2d"]}
    assert fit_strided_grad_input_s(input_grads_only) == {"strided_grad_input_element_s": pytest.approx(3e-9)}
    assert fit_strided_grad_input_s({}) == {}  # a calibration from before the primitives


def test_a_strided_convolutions_input_gradient_is_costed_over_its_input_at_the_calibrated_rate():
    """On oneDNN the input gradient of a strided convolution costs the input's elements times the calibrated
    rate, where that is more than half the stride-1 grid's cost of both gradients; the weight's half stays.
    A stride-1 convolution, the first layer's weight gradient and a profile without the rate: as before."""
    base = synthetic_profile(dispatch_s=1 * US, flop_rate=1e10)
    grid = Grid((16.0, 1e5), (16.0, 1e5), ((1 * US, 10 * US), (100 * US, 1000 * US)))
    plain = dataclasses.replace(base, grids={**base.grids, "conv_backward@16": grid})
    rate = 10e-9
    calibrated = dataclasses.replace(plain, overheads={**plain.overheads, "strided_grad_input_element_s": rate})
    strided = _backward_rows(2)
    before = op_cost(plain, strided).host_s
    assert tuple(strided["input_shapes"][1]) == (8, 16, 16, 16)
    assert op_cost(calibrated, strided).host_s == pytest.approx(before / 2 + max(before / 2, 8 * 16 * 16 * 16 * rate))
    assert op_cost(calibrated, strided).host_s > before
    stride_1 = _backward_rows(1)
    assert op_cost(calibrated, stride_1).host_s == op_cost(plain, stride_1).host_s
    first = _backward_rows(2, first=True)[-1]  # autograd runs the last layer's first; the first layer's last
    assert tuple(first["input_shapes"][1])[1] == 3
    assert op_cost(calibrated, first).host_s == op_cost(plain, first).host_s


def test_a_strided_forward_convolution_on_onednn_pays_per_input_element():
    """A strided forward convolution on oneDNN adds the calibrated seconds per input element to the grid's
    cost of its output; a stride-1 one, a grouped one and one on the native path do not."""
    base = synthetic_profile(dispatch_s=1 * US, flop_rate=1e10)
    grid = Grid((16.0, 1e5), (16.0, 1e5), ((1 * US, 10 * US), (100 * US, 1000 * US)))
    plain = dataclasses.replace(base, grids={**base.grids, "conv@16": grid, "conv_native@16": grid})
    rate = 1e-9
    calibrated = dataclasses.replace(plain, overheads={**plain.overheads, "strided_forward_input_element_s": rate})
    strided = _conv_row(16, 32, 2, 32, batch=8)
    assert conv_backend(strided, 1) == "mkldnn"
    assert op_cost(calibrated, strided).host_s == pytest.approx(op_cost(plain, strided).host_s + 8 * 16 * 32 * 32 * rate)
    for row in (_conv_row(16, 32, 1, 32, batch=8), _conv_row(16, 32, 2, 32)):  # stride 1; one image: native
        assert op_cost(calibrated, row).host_s == op_cost(plain, row).host_s
    grouped, _ = trace_step(nn.Conv2d(16, 16, 3, stride=2, padding=1, groups=16), (16, 32, 32), 8, "forward")
    row = next(r for r in grouped.to_dict("records") if "convolution" in r["op"])
    assert op_cost(calibrated, row).host_s == op_cost(plain, row).host_s


def test_a_strided_native_convolutions_gradients_pay_per_unfolded_element():
    """The backward primitives' time beyond the native ``conv_backward`` grid's stride-1 cell of the same
    output is recovered per unfolded element and gradient (and never negative); a native strided backward
    row pays it for each gradient it computes (one for a first layer's), a stride-1 or oneDNN one nothing."""
    from crossover.opcost.conv_primitives import (NATIVE_STRIDE_BACKWARD, STRIDED_NATIVE_BACKWARD,
                                                  fit_strided_backward_column_s)

    def families(extra):
        rows = {"conv_backward": [], STRIDED: []}
        for c_in, c_out, k in STRIDED_CHANNELS:
            base = 2e-6 * c_in * c_out
            rows["conv_backward"].append((base, 0.0, dict(name="conv2d_native", shape=f"1x{c_in}x{c_out}x{k}x16")))
            rows[STRIDED].append((base + 2 * extra * c_in * k * k * 256, 0.0,
                                  dict(name=STRIDED_NATIVE_BACKWARD, shape=f"1x{c_in}x{c_out}x{k}x32")))
            rows[STRIDED].append((1.0, 0.0, dict(name="conv2d_native", shape=f"1x{c_in}x{c_out}x{k}x32")))
        return rows
    assert fit_strided_backward_column_s(families(0.8e-9)) == {NATIVE_STRIDE_BACKWARD: pytest.approx(0.8e-9)}
    assert fit_strided_backward_column_s(families(-1e-9)) == {NATIVE_STRIDE_BACKWARD: 0.0}
    assert fit_strided_backward_column_s({}) == {}
    out = make_step(next(p for p in points(PLANS["quick"]) if p.name == STRIDED_NATIVE_BACKWARD), "cpu")()
    assert out[0] is not None and out[1] is not None  # both gradients

    base = synthetic_profile(dispatch_s=1 * US, flop_rate=1e10)
    grid = Grid((16.0, 1e5), (16.0, 1e5), ((1 * US, 10 * US), (100 * US, 1000 * US)))
    plain = dataclasses.replace(base, grids={**base.grids, "conv_backward@16": grid, "conv_backward_native@16": grid})
    rate = 1e-9
    calibrated = dataclasses.replace(plain, overheads={**plain.overheads, NATIVE_STRIDE_BACKWARD: rate})
    first, second = _backward_rows(2, batch=1, first=True)[::-1]  # autograd runs the last layer's first
    assert conv_backend(second, 2) == "native"
    columns = 1 * 16 * 9 * 8 * 8  # C_in · k² · the output's 8 × 8 pixels
    assert op_cost(calibrated, second).host_s == pytest.approx(op_cost(plain, second).host_s + 2 * columns * rate)
    assert op_cost(calibrated, first).host_s == pytest.approx(op_cost(plain, first).host_s + 3 * 9 * 16 * 16 * rate)
    for row in (_backward_rows(1, batch=1), _backward_rows(2, batch=8)):  # stride 1; oneDNN
        assert op_cost(calibrated, row).host_s == op_cost(plain, row).host_s
