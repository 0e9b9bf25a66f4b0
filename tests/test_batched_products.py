"""A CPU bmm pays per matrix of its batch beyond one product of the same rows: the calibration times the
pairs and fits the cost, and a traced bmm pays it."""

import dataclasses

import pytest
import torch

from crossover.opcost.batched_products import BATCHED, BATCHED_COUNTS, BMM_MATRIX, batched_matrices, fit_bmm_matrix_s
from crossover.opcost.calibration_plan import PLANS, make_step, points
from crossover.opcost.op_costs import op_cost
from crossover.opcost.profiles import synthetic_profile
from crossover.opcost.trace import trace_module


def _families(per_matrix_s):
    rows = []
    for count in BATCHED_COUNTS:
        mm = 1e-6 + 2e-9 * count
        rows.append((mm, 0.0, dict(name="mm", shape=f"{count}x16x16x16")))
        rows.append((mm + per_matrix_s * count, 0.0, dict(name="bmm", shape=f"{count}x16x16x16")))
    return {BATCHED: rows}


def test_the_cost_per_matrix_is_recovered():
    assert fit_bmm_matrix_s(_families(9e-8)) == pytest.approx(9e-8)
    assert fit_bmm_matrix_s(_families(-1e-8)) == 0.0
    assert fit_bmm_matrix_s({}) == 0.0  # a calibration from before the primitives


def test_the_plan_times_the_pairs_on_a_cpu_and_each_step_runs():
    pairs = [p for p in points(PLANS["quick"]) if p.family == BATCHED]
    assert sorted((p.name, p.m) for p in pairs) == sorted((n, c) for c in BATCHED_COUNTS for n in ("bmm", "mm"))
    assert not [p for p in points(PLANS["quick"], "cuda") if p.family == BATCHED]
    first = [p for p in pairs if p.m == BATCHED_COUNTS[0]]
    shapes = {p.name: tuple(make_step(p, "cpu")().shape) for p in first}
    count = BATCHED_COUNTS[0]
    assert shapes == {"bmm": (count, 16, 16), "mm": (count * 16, 16)}


def test_a_traced_bmm_pays_per_matrix_on_a_cpu_only():
    class Scores(torch.nn.Module):
        def forward(self, q):
            return torch.bmm(q, q.transpose(1, 2))

    table = trace_module(Scores(), torch.empty((64, 16, 8), device="meta"))
    row = next(r for r in table.to_dict("records") if "bmm" in r["op"])
    assert batched_matrices(row) == 64 and batched_matrices(dict(row, op="aten.mm.default")) == 0
    cpu = synthetic_profile("cpu")
    paying = dataclasses.replace(cpu, overheads={**cpu.overheads, BMM_MATRIX: 1e-7})
    assert op_cost(paying, row).host_s == pytest.approx(op_cost(cpu, row).host_s + 64 * 1e-7)
    gpu = synthetic_profile("cuda")
    gpu_paying = dataclasses.replace(gpu, overheads={**gpu.overheads, BMM_MATRIX: 1e-7})
    assert op_cost(gpu_paying, row).device_s == op_cost(gpu, row).device_s  # one batched kernel on a GPU
