"""Pointwise (1×1) convolutions: timed on their own grid in a CPU calibration and costed on it, since a 1×1
kernel does far less arithmetic per byte than the 3×3 and 5×5 cells of the ``conv`` grid at the same
``C_in·k²·C_out``."""

import dataclasses

import pytest
from torch import nn

from calibration_rows import overhead_rows, row
from crossover.opcost.calibrate import build_profile
from crossover.opcost.calibration_plan import PLANS, make_step, points
from crossover.opcost.conv_primitives import (POINTWISE, POINTWISE_BATCHES, POINTWISE_CHANNELS, POINTWISE_SIDES,
                                              is_pointwise)
from crossover.opcost.module_predict import predict_module, trace_step
from crossover.opcost.op_costs import op_cost
from crossover.opcost.profiles import Grid, synthetic_profile

US = 1e-6
SIDE = POINTWISE_SIDES[0]


def _convs(layer, sample_shape, batch=1, workload="forward"):
    table, _ = trace_step(layer, sample_shape, batch, workload)
    return [r for r in table.to_dict("records") if "convolution" in r["op"]]


def _timed(base, native=None):
    grid = Grid((64.0, 16384.0), (256.0, 16384.0), ((5 * US, 50 * US), (400 * US, 9000 * US)))
    grids = {**base.grids, f"{POINTWISE}@{POINTWISE_SIDES[0]}": grid}
    if native is not None:
        grids[f"{POINTWISE}_native@{POINTWISE_SIDES[1]}"] = native
    return dataclasses.replace(base, grids=grids), grid


def test_the_quick_plan_times_pointwise_convolutions_on_a_cpu_only():
    timed = [p for p in points(PLANS["quick"]) if p.family == POINTWISE]
    assert len(timed) == len(POINTWISE_CHANNELS) * sum(map(len, POINTWISE_BATCHES))
    assert {p.name for p in timed} == {"conv2d", "conv2d_native"}
    assert len({c_in * c_out for c_in, c_out in POINTWISE_CHANNELS}) == len(POINTWISE_CHANNELS)  # distinct K·N
    assert not [p for p in points(PLANS["quick"], "cuda") if p.family == POINTWISE]
    assert not [p for p in points(PLANS["smoke"]) if p.family == POINTWISE]
    for point in (timed[0], timed[-1]):
        batch, c_in, c_out, k, side = point.shape
        assert k == 1 and point.m == batch * side * side and point.x == 2.0 * point.m * c_in * c_out
        out = make_step(point, "cpu")()
        assert tuple(out.shape) == (batch, c_out, side, side)


def test_which_convolutions_are_pointwise():
    (two_d,) = _convs(nn.Conv2d(16, 32, 1), (16, 8, 8))
    (one_d,) = _convs(nn.Conv1d(16, 32, 1), (16, 40))
    (three,) = _convs(nn.Conv2d(16, 32, 3, padding=1), (16, 8, 8))
    (strided,) = _convs(nn.Conv2d(16, 32, 1, stride=2), (16, 8, 8))
    (grouped,) = _convs(nn.Conv2d(16, 32, 1, groups=4), (16, 8, 8))
    (transposed,) = _convs(nn.ConvTranspose2d(16, 32, 1), (16, 8, 8))
    assert is_pointwise(two_d) and is_pointwise(one_d)
    assert not any(is_pointwise(r) for r in (three, strided, grouped, transposed))
    backward = [r for r in _convs(nn.Conv2d(16, 32, 1), (16, 8, 8), batch=2, workload="train") if "backward" in r["op"]]
    assert backward and not any(is_pointwise(r) for r in backward)  # their gradients stay on conv_backward


def test_a_calibration_builds_the_grid_and_a_pointwise_row_is_costed_on_it():
    rows = overhead_rows()
    for (c_in, c_out), batch in [((8, 32), 1), ((8, 32), 256), ((128, 128), 1), ((128, 128), 256)]:
        m = batch * SIDE**2
        seconds = 3 * US + 1e-11 * m * c_in * c_out
        rows.append(dict(row("conv2d", seconds, family=POINTWISE, m=m, x=2.0 * m * c_in * c_out),
                         shape=f"{batch}x{c_in}x{c_out}x1x{SIDE}"))
    profile = build_profile(rows, device="cpu", machine="test")
    grid = profile.grids[f"{POINTWISE}@{SIDE}"]
    assert grid.m == (64.0, 16384.0) and grid.kn == (16 * 32.0, 16384.0)  # oneDNN pads the 8 inputs to a block
    assert POINTWISE not in profile.curves
    (cell,) = _convs(nn.Conv2d(128, 128, 1), (128, 16, 16), batch=64)  # M = 64·256 = 16384
    cost = op_cost(profile, cell)
    assert cost.family == POINTWISE and not cost.warning
    assert cost.host_s == pytest.approx(3 * US + 1e-11 * 16384 * 16384, rel=1e-6)


def test_a_1d_pointwise_convolution_takes_the_grid_at_its_steps_over_the_batch():
    base = synthetic_profile(dispatch_s=1 * US, flop_rate=1e10)
    timed, grid = _timed(base)
    (one_d,) = _convs(nn.Conv1d(32, 32, 1), (32, 128), batch=8)
    assert op_cost(timed, one_d).family == POINTWISE
    assert op_cost(timed, one_d).host_s == pytest.approx(grid(8 * 128, 32 * 32))
    (kernel_3,) = _convs(nn.Conv1d(32, 32, 3, padding=1), (32, 128), batch=8)
    assert op_cost(timed, kernel_3).family != POINTWISE


def test_without_the_grid_a_pointwise_row_is_costed_as_before_and_the_composition_leaves_it_alone():
    base = dataclasses.replace(synthetic_profile(dispatch_s=1 * US, flop_rate=1e10), conv_forward_extra=0.5)
    timed, grid = _timed(base)
    (pointwise,) = _convs(nn.Conv2d(32, 64, 1), (32, 8, 8), batch=4)
    assert op_cost(base, pointwise).family == "conv"  # an older profile: as before
    model = nn.Sequential(nn.Conv2d(32, 64, 1))
    before = predict_module(model, sample_shape=(32, 8, 8), batch_sizes=[4], profiles=[base]).iloc[0]
    after = predict_module(model, sample_shape=(32, 8, 8), batch_sizes=[4], profiles=[timed]).iloc[0]
    # on its grid it is not scaled by the 2-D kind's conv_forward_extra (fitted on the reference CNN's 3×3 and 5×5)
    pointwise_s = op_cost(timed, pointwise).host_s
    assert pointwise_s == pytest.approx(grid(4 * 64, 32 * 64))
    conv = op_cost(base, pointwise)  # the composition scales its time beyond the floor
    scaled_s = conv.host_s + 0.5 * (conv.host_s - conv.floor_s)
    assert after.latency_s - before.latency_s == pytest.approx(pointwise_s - scaled_s, rel=1e-6)


def test_a_pointwise_row_pytorch_runs_natively_takes_the_native_grid():
    """One thread, a batch under 16: PyTorch's native path (``Convolution.cpp``), timed with oneDNN off."""
    native = Grid((64.0, 4096.0), (256.0, 16384.0), ((2 * US, 20 * US), (100 * US, 2000 * US)))
    one_thread = dataclasses.replace(synthetic_profile(dispatch_s=1 * US, flop_rate=1e10), threads=1)
    timed, grid = _timed(one_thread, native)
    (small,) = _convs(nn.Conv2d(16, 32, 1), (16, 16, 16), batch=8)
    (large,) = _convs(nn.Conv2d(16, 32, 1), (16, 16, 16), batch=64)
    assert op_cost(timed, small).host_s == pytest.approx(native(8 * 256, 16 * 32))
    assert op_cost(timed, large).host_s == pytest.approx(grid(64 * 256, 16 * 32))
    two_threads = dataclasses.replace(timed, threads=2)  # oneDNN's at batch 8 from two threads on
    assert op_cost(two_threads, small).host_s == pytest.approx(grid(8 * 256, 16 * 32))
    without_native, _ = _timed(one_thread)  # a profile without the native grid: the other one
    assert op_cost(without_native, small).host_s == pytest.approx(grid(8 * 256, 16 * 32))
