"""A CPU step whose working set outgrows the private caches costs its matrix products on the spilled grid's
share: the calibration times the products over a pool past the private caches, and a step that spills
pays the ratio."""

import dataclasses

import pytest
import torch
from torch import nn

from crossover.opcost.calibration_plan import PLANS, make_step, points
from crossover.opcost.module_predict import step_prediction, trace_step
from crossover.opcost.op_costs import op_cost
from crossover.opcost.profiles import Grid, synthetic_profile
from crossover.opcost.spill import SPILL, SPILL_KN, SPILL_M, spill_ratio, step_spills
from crossover.opcost.trace import trace_module

MIB = 2**20


def _profile(ratio=2.0, cache_bytes=2 * MIB, llc_bytes=64 * MIB, device="cpu"):
    """A hot grid of 1 ns per FLOP-ish cell and a spilled one ``ratio`` times slower."""
    m, kn = (1.0, 512.0), (1024.0, float(2**20))
    hot = Grid(m, kn, tuple(tuple(1e-6 + 2 * a * b * 1e-11 for b in kn) for a in m))
    spilled = Grid(m, kn, tuple(tuple(t * ratio for t in row) for row in hot.time_s))
    base = synthetic_profile(device, dispatch_s=1e-6)
    return dataclasses.replace(base, grids={**base.grids, "matmul": hot, SPILL: spilled}, cache_bytes=cache_bytes,
                               llc_bytes=llc_bytes)


def test_the_plan_times_the_spilled_products_on_a_cpu_only_and_each_runs():
    spilled = [p for p in points(PLANS["quick"]) if p.family == SPILL]
    assert sorted((p.m, p.k) for p in spilled) == sorted((m, kn) for m in SPILL_M for kn in SPILL_KN)
    assert all(p.k == p.n and p.x == 2.0 * p.m * p.k * p.n for p in spilled)
    assert not [p for p in points(PLANS["quick"], "cuda") if p.family == SPILL]
    step = make_step(spilled[0], "cpu", llc=64 * MIB, private=MIB)
    assert tuple(step().shape) == (spilled[0].m, spilled[0].n) and tuple(step().shape) == (spilled[0].m, spilled[0].n)


def test_a_step_spills_when_its_working_set_outgrows_the_private_caches_and_fits_the_shared_one():
    profile = _profile()
    assert not step_spills(profile, 1.5 * MIB)  # a forward pass: its weights fit
    assert step_spills(profile, 1.5 * MIB, input_bytes=MIB)  # with its input they do not
    assert step_spills(profile, MIB, training=True)  # weights, gradients and fresh gradients: 3 MiB
    assert not step_spills(profile, 100 * MIB, training=True)  # past the shared cache: cold, not spilled
    assert not step_spills(dataclasses.replace(profile, grids={"matmul": profile.grids["matmul"]}), 10 * MIB)
    assert not step_spills(_profile(device="cuda"), 10 * MIB)


def test_a_spilled_step_pays_the_ratio_on_its_matrix_products_only():
    profile = _profile(ratio=2.0)
    table = trace_module(nn.Linear(256, 256), torch.empty((8, 256), device="meta"))
    row = next(r for r in table.to_dict("records") if r["kind"] == "matmul")
    assert spill_ratio(profile, (8, 65536)) == pytest.approx(2.0)
    assert op_cost(profile, row, spill=True).host_s == pytest.approx(2.0 * op_cost(profile, row).host_s)
    assert op_cost(profile, row, spill=True, cold=True).host_s == op_cost(profile, row, cold=True).host_s
    assert spill_ratio(_profile(ratio=0.5), (8, 65536)) == 1.0  # never quicker than hot

    model = nn.Sequential(nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))
    rows, calls = trace_step(model, (512,), 1, "train")
    records = rows.to_dict("records")
    params = list(model.parameters())
    sizes = dict(module_calls=calls, n_params=len(params), param_bytes=sum(p.numel() * 4 for p in params))
    spilled = step_prediction(profile, records, **sizes)  # 1 MiB of weights, 3 MiB in a training step
    kept = step_prediction(dataclasses.replace(profile, cache_bytes=8 * MIB), records, **sizes)
    matmuls = sum(op_cost(profile, r).host_s for r in records if op_cost(profile, r).family == "matmul")
    assert spilled["latency_s"] - kept["latency_s"] == pytest.approx(matmuls, rel=1e-6)
