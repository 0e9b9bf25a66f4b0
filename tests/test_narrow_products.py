"""Products with a narrow output (a classifier's head) costed on a CPU calibration's narrow grid."""

import dataclasses

import pytest

from crossover.opcost.calibrate import build_profile
from crossover.opcost.calibration_plan import PLANS, make_step, points
from crossover.opcost.op_costs import NARROW_N, op_cost
from crossover.opcost.profiles import Grid, synthetic_profile

US = 1e-6


def _row(m, k, n, phase="forward", op="aten.addmm.default"):
    return dict(op=op, kind="matmul", phase=phase, input_shapes=[(n,), (m, k), (k, n)], output_shapes=[(m, n)],
                flops=2 * m * k * n, bytes_read=4 * (m * k + k * n), bytes_written=4 * m * n, launches=1)


def _profile(device="cpu"):
    """The square grid at 1 µs a cell, the narrow one at 10 µs."""
    base = synthetic_profile(device, dispatch_s=0.5 * US)
    square = Grid((1.0, 1024.0), (16.0, 2**20), ((1 * US,) * 2,) * 2)
    narrow = Grid((1.0, 512.0), (128.0, 8192.0), ((10 * US, 20 * US), (40 * US, 80 * US)))  # varies on both axes
    return dataclasses.replace(base, grids={"matmul": square, "matmul_cold": square, "matmul_narrow": narrow})


def test_a_head_of_few_outputs_is_costed_on_the_narrow_grid():
    profile = _profile()
    grid = profile.grids["matmul_narrow"]
    # read at the row's K as the grid measured it, at NARROW_N outputs: (M, K·NARROW_N), not the row's K·N
    assert op_cost(profile, _row(512, 128, 10)).host_s == pytest.approx(grid(512, 128 * NARROW_N))
    assert op_cost(profile, _row(8, 64, 4, op="aten.mm.default")).host_s == pytest.approx(grid(8, 64 * NARROW_N))
    assert grid(512, 1024) != grid(1024, 512) and grid(8, 512) != grid(8, 256)


def test_square_backward_and_gpu_products_keep_the_square_grid():
    profile = _profile()
    assert op_cost(profile, _row(512, 128, 128)).host_s == pytest.approx(1 * US)  # 128 outputs
    assert op_cost(profile, _row(512, 8, 10)).host_s == pytest.approx(1 * US)  # fewer inputs than outputs
    assert op_cost(profile, _row(512, 128, 10, phase="backward")).host_s == pytest.approx(1 * US)
    gpu = _profile("cuda")
    assert op_cost(gpu, _row(512, 128, 10)).device_s == pytest.approx(1 * US)
    without = dataclasses.replace(profile, grids={k: v for k, v in profile.grids.items() if k != "matmul_narrow"})
    assert op_cost(without, _row(512, 128, 10)).host_s == pytest.approx(1 * US)


def test_the_quick_plan_times_narrow_heads_on_a_cpu_only():
    narrow = [p for p in points(PLANS["quick"]) if p.family == "matmul_narrow"]
    assert len(narrow) == len(PLANS["quick"].narrow_m) * len(PLANS["quick"].narrow_k)
    assert all(p.n == NARROW_N and p.x == 2.0 * p.m * p.k * p.n for p in narrow)
    assert not [p for p in points(PLANS["quick"], "cuda") if p.family == "matmul_narrow"]
    out = make_step(dataclasses.replace(narrow[0], m=4, k=32), "cpu")()
    assert tuple(out.shape) == (4, NARROW_N)


def _cal_row(name, seconds, *, n=0, family="overhead", m=0, k=0, x=0.0):
    return dict(round=0, sequence=0, reference=False, key=f"{family}/{name}/{m}x{k}x{n}/False/{x}", family=family,
                name=name, m=m, k=k, n=n, x=x, cold=False, shape="", median_s=seconds, calls_per_repeat=1,
                raw_times_s=";".join([repr(seconds)] * 3))


def test_the_calibration_builds_the_narrow_grid_by_rows_and_k_times_n():
    rows = [_cal_row("dispatch", 1 * US), _cal_row("view", 0.5 * US), _cal_row("module_call", 0.8 * US)]
    rows += [_cal_row(f"chain_{m}", 1 * US * c, n=c) for m in ("nograd", "grad", "train") for c in (1, 17)]
    rows += [_cal_row("sgd", 1 * US * c, n=c) for c in (1, 16)]
    rows += [_cal_row("addmm", 1 * US, family="matmul", m=1, k=8, n=8, x=128.0)]
    rows += [_cal_row("addmm", (m * k) * 1e-9, family="matmul_narrow", m=m, k=k, n=NARROW_N, x=2.0 * m * k * NARROW_N)
             for m in (8, 512) for k in (16, 256)]
    profile = build_profile(rows, device="cpu", machine="m")
    grid = profile.grids["matmul_narrow"]
    assert grid.m == (8.0, 512.0) and grid.kn == (16.0 * NARROW_N, 256.0 * NARROW_N)
    assert grid(512, 256 * NARROW_N) == pytest.approx(512 * 256 * 1e-9)
