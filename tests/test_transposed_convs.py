"""Transposed convolutions (a decoder's upsampling): timed on their own in a CPU calibration and costed
on their grid, which no rule from the ordinary convolutions could replace."""

import dataclasses

import pytest
from torch import nn

from calibration_rows import overhead_rows, row
from crossover.opcost.calibrate import build_profile
from crossover.opcost.calibration_plan import PLANS, make_step, points
from crossover.opcost.conv_primitives import (TRANSPOSED, TRANSPOSED_BATCHES, TRANSPOSED_CHANNELS, TRANSPOSED_SIDE,
                                              is_transposed)
from crossover.opcost.module_predict import trace_step
from crossover.opcost.op_costs import op_cost
from crossover.opcost.profiles import Grid, synthetic_profile

US = 1e-6


def _row(c_in, c_out, k, side, batch=1, workload="forward"):
    layer = nn.ConvTranspose2d(c_in, c_out, k, stride=2, padding=(k - 2) // 2)
    table, _ = trace_step(layer, (c_in, side, side), batch, workload)
    return [r for r in table.to_dict("records") if "convolution" in r["op"]]


def test_the_quick_plan_times_transposed_convolutions_on_a_cpu_only():
    timed = [p for p in points(PLANS["quick"]) if p.family == TRANSPOSED]
    assert len(timed) == len(TRANSPOSED_CHANNELS) * len(TRANSPOSED_BATCHES)
    assert len({c_in * c_out * k * k for c_in, c_out, k in TRANSPOSED_CHANNELS}) == len(TRANSPOSED_CHANNELS)
    assert not [p for p in points(PLANS["quick"], "cuda") if p.family == TRANSPOSED]
    assert not [p for p in points(PLANS["smoke"]) if p.family == TRANSPOSED]
    point = timed[-1]
    batch, c_in, c_out, k, side = point.shape
    assert point.m == batch * side * side and point.x == 2.0 * point.m * c_in * c_out * k * k
    out = make_step(point, "cpu")()
    assert tuple(out.shape) == (batch, c_out, 2 * side, 2 * side)


def test_the_trace_counts_a_transposed_convolutions_flops_over_its_input():
    (forward,) = _row(16, 8, 2, 7, batch=4)
    assert is_transposed(forward) and forward["flops"] == 2 * 4 * 7 * 7 * 16 * 8 * 2 * 2


def test_a_calibration_builds_the_grid_and_a_transposed_row_is_costed_on_it():
    rows = overhead_rows()
    for (c_in, c_out, k), batch in [((8, 4, 2), 1), ((8, 4, 2), 64), ((64, 32, 2), 1), ((64, 32, 2), 64)]:
        m = batch * TRANSPOSED_SIDE**2
        seconds = 3 * US + 1e-11 * m * c_in * c_out * k * k
        rows.append(dict(row("conv_transpose2d", seconds, family=TRANSPOSED, m=m, x=2.0 * m * c_in * c_out * k * k),
                         shape=f"{batch}x{c_in}x{c_out}x{k}x{TRANSPOSED_SIDE}"))
    profile = build_profile(rows, device="cpu", machine="test")
    grid = profile.grids[f"{TRANSPOSED}@{TRANSPOSED_SIDE}"]
    assert grid.m == (64.0, 4096.0) and grid.kn == (128.0, 8192.0)
    (cell,) = _row(64, 32, 2, TRANSPOSED_SIDE, batch=64)
    assert op_cost(profile, cell).host_s == pytest.approx(3 * US + 1e-11 * 4096 * 8192, rel=1e-6)
    assert op_cost(profile, cell).family == TRANSPOSED and not op_cost(profile, cell).warning


def test_without_the_grid_a_transposed_row_is_costed_as_before_and_warns():
    base = synthetic_profile(dispatch_s=1 * US, flop_rate=1e10)
    grid = Grid((64.0, 4096.0), (128.0, 8192.0), ((5 * US, 50 * US), (500 * US, 5000 * US)))
    timed = dataclasses.replace(base, grids={**base.grids, f"{TRANSPOSED}@{TRANSPOSED_SIDE}": grid})
    (forward,) = _row(16, 8, 2, TRANSPOSED_SIDE, batch=8)
    assert op_cost(timed, forward).host_s == pytest.approx(grid(8 * 64, 16 * 8 * 4))
    untimed = op_cost(base, forward)
    assert untimed.family != TRANSPOSED and "transposed" in untimed.warning
    _, backward = _row(16, 8, 2, TRANSPOSED_SIDE, batch=8, workload="train")[:2]
    assert "transposed" in op_cost(timed, backward).warning  # its gradients: not timed


def test_a_transposed_convolution_to_one_channel_is_not_depthwise():
    """Its weight is C_in × C_out/groups × k × k: one output channel reads as one input channel per group."""
    from crossover.opcost.layer_primitives import layer_family

    (last,) = _row(8, 1, 2, 14)
    assert layer_family(last, "convolution", inference=True) is None
    base = synthetic_profile(dispatch_s=1 * US, flop_rate=1e10)
    grid = Grid((64.0, 4096.0), (16.0, 8192.0), ((5 * US, 50 * US), (500 * US, 5000 * US)))
    timed = dataclasses.replace(base, grids={**base.grids, f"{TRANSPOSED}@{TRANSPOSED_SIDE}": grid})
    assert op_cost(timed, last).family == TRANSPOSED
    assert "transposed" in op_cost(base, last).warning


def test_only_2d_transposed_convolutions_take_the_grid():
    from crossover.opcost.conv_primitives import on_transposed_grid

    table, _ = trace_step(nn.ConvTranspose1d(8, 4, 2, stride=2), (8, 32), 2, "forward")
    (one_d,) = [r for r in table.to_dict("records") if "convolution" in r["op"]]
    table, _ = trace_step(nn.ConvTranspose2d(8, 8, 2, stride=2, groups=2), (8, 8, 8), 2, "forward")
    (grouped,) = [r for r in table.to_dict("records") if "convolution" in r["op"]]
    (plain,) = _row(8, 4, 2, 8)
    assert on_transposed_grid(plain) and not on_transposed_grid(one_d) and not on_transposed_grid(grouped)
    base = synthetic_profile(dispatch_s=1 * US, flop_rate=1e10)
    grid = Grid((64.0, 4096.0), (16.0, 8192.0), ((5 * US, 50 * US), (500 * US, 5000 * US)))
    timed = dataclasses.replace(base, grids={**base.grids, f"{TRANSPOSED}@{TRANSPOSED_SIDE}": grid})
    assert op_cost(timed, one_d).family != TRANSPOSED and "transposed" in op_cost(timed, one_d).warning
