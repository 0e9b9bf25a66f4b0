"""PyTorch's native convolution (im2col + GEMM) unfolds its input before the product: a CPU profile fits what
an unfolded element costs in MACs from its native cells and indexes the native grid by ``K·(N + that)``."""

import dataclasses

import pytest
from torch import nn

from calibration_rows import overhead_rows, row
from crossover.opcost.calibrate import build_profile
from crossover.opcost.conv_primitives import NATIVE_UNFOLD, UNFOLD_MACS_RANGE, cell_kn, fit_native_unfold, native_kn
from crossover.opcost.module_predict import trace_step
from crossover.opcost.op_costs import conv_backend, op_cost

US = 1e-6
#: The cells' truth: a fixed cost, a rate per unfolded element and one per MAC (ratio 25).
FIXED_S, UNFOLD_S, MAC_S = 5 * US, 250e-12, 10e-12
CELLS = [(b, c_in, c_out, k, side) for b in (1, 2) for c_in, c_out, k in ((3, 16, 3), (16, 32, 3), (32, 64, 3))
         for side in (16,)]


def _seconds(batch, c_in, c_out, k, side):
    unfolded = batch * c_in * k * k * side * side
    return FIXED_S + UNFOLD_S * unfolded + MAC_S * unfolded * c_out


def _native_rows(name="conv2d_native"):
    rows = []
    for batch, c_in, c_out, k, side in CELLS:
        m = batch * side * side
        rows.append(dict(row(name, _seconds(batch, c_in, c_out, k, side), family="conv", m=m,
                             x=2.0 * m * c_in * k * k * c_out), shape=f"{batch}x{c_in}x{c_out}x{k}x{side}"))
    return rows


def _profile_rows():
    """A CPU calibration's least rows, its native cells, and oneDNN cells beside them (a profile costs a
    convolution on the grids of a family it has)."""
    return overhead_rows() + _native_rows() + _native_rows("conv2d")


def _families(rows):
    return {"conv": [(r["median_s"], 0.0, r) for r in rows]}


def test_the_fit_recovers_the_macs_an_unfolded_element_costs():
    assert fit_native_unfold(_families(_native_rows()))[NATIVE_UNFOLD] == pytest.approx(UNFOLD_S / MAC_S, rel=1e-6)


def test_the_fit_needs_four_native_cells_and_keeps_to_its_range():
    assert fit_native_unfold(_families(_native_rows()[:3])) == {}
    oned = _native_rows("conv2d")  # oneDNN's cells: not the native path's
    assert fit_native_unfold(_families(oned)) == {}
    flat = [dict(r, median_s=FIXED_S) for r in _native_rows()]  # no product to speak of: no ratio
    assert fit_native_unfold(_families(flat)) == {}
    def unfold_bound(r):
        b, c_in, c_out, k, side = (int(v) for v in r["shape"].split("x"))
        return FIXED_S + UNFOLD_S * b * c_in * k * k * side * side * (1 + c_out / 2500)
    bound = fit_native_unfold(_families([dict(r, median_s=unfold_bound(r)) for r in _native_rows()]))
    assert bound == {NATIVE_UNFOLD: UNFOLD_MACS_RANGE[1]}


def test_a_native_cells_kn_counts_the_unfolding_given_the_fit():
    cell = _native_rows()[0]
    assert cell_kn(cell, cell["m"], "cpu", 25.0) == native_kn(3, 16, 9, 25.0) == 3 * 9 * (16 + 25.0)
    assert cell_kn(cell, cell["m"], "cpu") == 3 * 9 * 16  # no fit: the FLOPs' K·N
    assert cell_kn(dict(cell, family="conv_pointwise"), cell["m"], "cpu", 25.0) == 3 * 9 * 16  # 1×1: no unfolding


def _conv(layer, sample_shape):
    table, _ = trace_step(layer, sample_shape, 1, "forward")
    (conv,) = [r for r in table.to_dict("records") if "convolution" in r["op"]]
    return conv


def test_a_native_convolution_into_few_channels_is_costed_by_its_unfolding():
    profile = build_profile(_profile_rows(), device="cpu", machine="test", threads=1)
    assert profile.overheads[NATIVE_UNFOLD] == pytest.approx(25.0, rel=1e-6)
    last = _conv(nn.Conv2d(32, 1, 3, padding=1), (32, 16, 16))  # a U-Net's last layer: K·N below every cell
    assert conv_backend(last, 1) == "native"
    truth = _seconds(1, 32, 1, 3, 16)
    assert op_cost(profile, last).host_s == pytest.approx(truth, rel=0.15)
    older = build_profile(_profile_rows(), device="cpu", machine="test", threads=1)
    older = dataclasses.replace(older, overheads={k: v for k, v in older.overheads.items() if k != NATIVE_UNFOLD})
    assert op_cost(older, last).host_s < 0.5 * truth  # indexed by K·N on a K·(N + 25) grid: far too cheap


def test_the_grid_tells_more_inputs_from_more_outputs_at_the_same_flops():
    profile = build_profile(_profile_rows(), device="cpu", machine="test", threads=1)
    wide_in = _conv(nn.Conv2d(32, 16, 3, padding=1), (32, 16, 16))
    wide_out = _conv(nn.Conv2d(16, 32, 3, padding=1), (16, 16, 16))
    assert op_cost(profile, wide_in).host_s == pytest.approx(_seconds(1, 32, 16, 3, 16), rel=0.15)
    assert op_cost(profile, wide_out).host_s == pytest.approx(_seconds(1, 16, 32, 3, 16), rel=1e-6)  # a cell
    assert op_cost(profile, wide_in).host_s > 1.3 * op_cost(profile, wide_out).host_s


# --- dilated native convolutions: their own rate per unfolded element

from crossover.opcost.calibration_plan import PLANS, make_step, points  # noqa: E402
from crossover.opcost.conv_primitives import (DILATED, DILATED_COLUMN, DILATED_LENGTH, DILATION,  # noqa: E402
                                              fit_dilated_column_s)
from crossover.opcost.conv_grids import unfold_rate_s  # noqa: E402


def _dilated_rows(rate_s):
    rows = []
    for c in (16, 48):
        base = 20 * US + 1e-10 * c * c * DILATED_LENGTH
        for d in (1, DILATION):
            seconds = base + (rate_s * c * 3 * DILATED_LENGTH if d > 1 else 0.0)
            rows.append(dict(row(f"dilation{d}", seconds, family=DILATED, m=DILATED_LENGTH,
                                 x=2.0 * DILATED_LENGTH * c * 3 * c), shape=f"1x{c}x{c}x3x{DILATED_LENGTH}"))
    return rows


def test_the_dilated_rate_is_the_dilated_calls_extra_per_unfolded_element():
    rows = _dilated_rows(2e-9)
    assert fit_dilated_column_s({DILATED: [(r["median_s"], 0.0, r) for r in rows]})[DILATED_COLUMN] == pytest.approx(2e-9)
    assert fit_dilated_column_s({DILATED: [(r["median_s"], 0.0, r) for r in rows if r["name"] == "dilation1"]}) == {}


def test_the_quick_plan_times_dilated_convolutions_at_their_dilation():
    import torch

    dilated = [p for p in points(PLANS["quick"], "cpu") if p.family == DILATED]
    assert sorted({p.name for p in dilated}) == ["dilation1", f"dilation{DILATION}"]
    assert not [p for p in points(PLANS["quick"], "cuda") if p.family == DILATED]
    point = next(p for p in dilated if p.name == f"dilation{DILATION}")
    out = make_step(point, "cpu")()
    assert tuple(out.shape) == (1, point.shape[2], DILATED_LENGTH)  # padded to the same length
    with torch.profiler.profile() as prof:
        make_step(point, "cpu")()
    assert any("dilated" in e.key for e in prof.key_averages())  # slow_conv_dilated2d: the native dilated path


def test_a_dilated_convolution_pays_the_dilated_rate_and_a_strided_one_the_strided():
    profile = build_profile(_profile_rows() + _dilated_rows(2e-9), device="cpu", machine="test", threads=1)
    assert profile.overheads[DILATED_COLUMN] == pytest.approx(2e-9)
    dilated = _conv(nn.Conv1d(16, 16, 3, padding=2, dilation=2), (16, 64))
    strided = _conv(nn.Conv2d(16, 16, 3, stride=2, padding=1), (16, 16, 16))
    assert unfold_rate_s(profile, dilated) == pytest.approx(2e-9)
    assert unfold_rate_s(profile, strided) == profile.overhead("native_stride_column_s")
    older = dataclasses.replace(profile, overheads={k: v for k, v in profile.overheads.items() if k != DILATED_COLUMN})
    assert unfold_rate_s(older, dilated) == older.overhead("native_stride_column_s")
    gap = op_cost(profile, dilated).host_s - op_cost(older, dilated).host_s
    assert gap == pytest.approx((2e-9 - older.overhead("native_stride_column_s")) * 16 * 3 * 64, rel=1e-6)
