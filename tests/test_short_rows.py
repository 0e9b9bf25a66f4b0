"""Softmax and layer norm over short rows: timed over rows of 16 beside the rows of 256, and a row costed
between the two by its length."""

import dataclasses

import pytest
import torch
from torch import nn

from crossover.opcost.calibration_plan import PLANS, make_step, points
from crossover.opcost.module_predict import trace_step
from crossover.opcost.op_costs import op_cost
from crossover.opcost.profiles import Curve, synthetic_profile
from crossover.opcost.short_rows import SHORT_ROW, SHORT_ROWS, over_row_length, row_length


def _rows(model, shape, batch=4):
    table, _ = trace_step(model, shape, batch)
    return table.to_dict("records")


class _Softmax(nn.Module):
    def forward(self, x):
        return torch.softmax(x, -1)


def test_the_plan_times_short_rows_on_a_cpu_and_the_step_runs():
    short = [p for p in points(PLANS["quick"]) if p.family == SHORT_ROWS]
    assert {p.name for p in short} == {"softmax", "layer_norm"}
    assert all(p.shape[-1] == SHORT_ROW and p.shape[0] * SHORT_ROW == p.n for p in short)
    assert not [p for p in points(PLANS["quick"], "cuda") if p.family == SHORT_ROWS]
    out = make_step(short[0], "cpu")()
    assert tuple(out.shape) == short[0].shape


def test_a_rows_length_is_what_it_normalises():
    (softmax,) = [r for r in _rows(_Softmax(), (8, 24)) if "softmax" in r["op"]]
    assert row_length(softmax) == 24
    norm = next(r for r in _rows(nn.LayerNorm([4, 16]), (4, 16)) if "layer_norm" in r["op"])
    assert row_length(norm) == 64
    relu = next(r for r in _rows(nn.ReLU(), (8,)) if "relu" in r["op"])
    assert row_length(relu) == 0 and over_row_length(relu, 2.0, 9.0) == 2.0


@pytest.mark.parametrize("length, expected", [(16, 8.0), (256, 2.0), (64, 4.0), (4, 8.0), (1024, 2.0)])
def test_a_row_is_costed_between_the_curves_by_its_length(length, expected):
    base = synthetic_profile("cpu")
    flat = lambda seconds: Curve((1.0, 1e12), (seconds, seconds))  # noqa: E731
    profile = dataclasses.replace(base, curves={**base.curves, "reduction": flat(2e-6), SHORT_ROWS: flat(8e-6)})
    (softmax,) = [r for r in _rows(_Softmax(), (length,)) if "softmax" in r["op"]]
    assert op_cost(profile, softmax).host_s == pytest.approx(expected * 1e-6, rel=1e-6)
    long_only = dataclasses.replace(base, curves={**base.curves, "reduction": flat(2e-6)})
    assert op_cost(long_only, softmax).host_s == pytest.approx(2e-6, rel=1e-6)  # no short curve: as before
