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


# Rows shorter than one vector of floats (short_rows' sub-vector primitives).

from crossover.opcost.calibrate import build_profile  # noqa: E402
from crossover.opcost.short_rows import (SUBVECTOR_BACKWARD, SUBVECTOR_FORWARD, subvector_family,  # noqa: E402
                                         subvector_row, vector_floats)


def test_the_vector_holds_16_floats_on_avx512_and_8_elsewhere():
    assert vector_floats("AVX512") == 16 and vector_floats("AVX512_BF16") == 16
    assert vector_floats("AVX2") == 8 and vector_floats("DEFAULT") == 8
    assert subvector_row(16) == 10 and subvector_row(8) == 5


def test_the_plan_times_softmax_rows_below_the_vector_forward_and_backward_and_their_steps_run():
    lanes = vector_floats()
    below = [p for p in points(PLANS["quick"]) if p.family in (SUBVECTOR_FORWARD, SUBVECTOR_BACKWARD)]
    assert {(p.family, p.name) for p in below} == {(SUBVECTOR_FORWARD, "softmax"), (SUBVECTOR_FORWARD, "log_softmax"),
                                                   (SUBVECTOR_BACKWARD, "softmax_backward")}
    assert all(p.k == lanes and p.shape[-1] == subvector_row(lanes) < lanes for p in below)
    assert all(p.x == (8 if p.family == SUBVECTOR_FORWARD else 12) * p.shape[0] * p.shape[1] for p in below)
    assert min(p.shape[0] for p in below) == 1  # one row: the curves' floor is a batch-1 classifier's
    assert not [p for p in points(PLANS["quick"], "cuda") if p.family in (SUBVECTOR_FORWARD, SUBVECTOR_BACKWARD)]
    for point in below[:3]:
        assert tuple(make_step(point, "cpu")().shape) == point.shape


class _Classifier(nn.Module):
    def __init__(self, classes):
        super().__init__()
        self.linear = nn.Linear(8, classes)

    def forward(self, x):
        return self.linear(x)


def _softmax_rows(classes, workload="train"):
    table, _ = trace_step(_Classifier(classes), (8,), 64, workload)
    return [r for r in table.to_dict("records") if "softmax" in r["op"]]


@pytest.mark.parametrize("classes, lanes, below", [(10, 16, True), (15, 16, True), (16, 16, False), (10, 8, False),
                                                   (5, 8, True), (10, 0, False)])
def test_a_softmax_row_below_the_vector_is_costed_on_its_own_curves(classes, lanes, below):
    forward, backward = _softmax_rows(classes)  # cross-entropy's log-softmax and its backward
    assert "_log_softmax_backward_data" in backward["op"]
    assert subvector_family(forward, lanes) == (SUBVECTOR_FORWARD if below else "")
    assert subvector_family(backward, lanes) == (SUBVECTOR_BACKWARD if below else "")
    base = synthetic_profile("cpu")
    flat = lambda seconds: Curve((1.0, 1e12), (seconds, seconds))  # noqa: E731
    curves = {**base.curves, "reduction": flat(2e-6), SUBVECTOR_FORWARD: flat(30e-6), SUBVECTOR_BACKWARD: flat(12e-6)}
    profile = dataclasses.replace(base, curves=curves, meta=dict(base.meta, vector_floats=lanes))
    assert op_cost(profile, forward).host_s == pytest.approx(30e-6 if below else 2e-6)
    assert op_cost(profile, backward).host_s == pytest.approx(12e-6 if below else 2e-6)


def test_a_calibration_records_the_vector_and_its_softmax_curves():
    """The profile built from sub-vector rows: curves of the seconds timed against the bytes, and the
    vector's floats the points were planned for; a calibration without them records none."""
    from calibration_rows import overhead_rows, row

    rows = overhead_rows()
    rows += [row(name, n * rate, family=family, n=n, k=16, x=per * n)
             for n in (2**10, 2**16) for name, family, rate, per in
             (("softmax", SUBVECTOR_FORWARD, 14e-9, 8.0), ("softmax_backward", SUBVECTOR_BACKWARD, 6e-9, 12.0))]
    profile = build_profile(rows, device="cpu", machine="m", threads=1)
    assert profile.meta["vector_floats"] == 16
    assert profile.curves[SUBVECTOR_FORWARD](8.0 * 4096) == pytest.approx(4096 * 14e-9, rel=1e-6)
    assert profile.curves[SUBVECTOR_BACKWARD](12.0 * 4096) == pytest.approx(4096 * 6e-9, rel=1e-6)
    assert "vector_floats" not in build_profile(overhead_rows(), device="cpu", machine="m").meta



def test_sub_vector_points_are_distinct_shapes_from_one_row_up():
    from crossover.opcost.short_rows import subvector_points

    points = subvector_points((8, 16, 20, 1024, 2**20), 16)
    shapes = [(family, name, shape) for family, name, _, _, shape in points]
    assert len(shapes) == len(set(shapes))
    assert sorted({shape[0] for _, _, shape in shapes}) == [1, 2, 16, 102]  # 2^20 is past the largest timed


class _SoftmaxOver(nn.Module):
    def __init__(self, dim, dtype=torch.float32):
        super().__init__()
        self.dim, self.dtype = dim, dtype

    def forward(self, x):
        return torch.log_softmax(x.to(self.dtype), self.dim)


@pytest.mark.parametrize("dim, dtype, below", [(-1, torch.float32, True), (2, torch.float32, True),
                                               (1, torch.float32, False), (-1, torch.float64, False)])
def test_only_float32_rows_over_the_last_dimension_take_the_sub_vector_curves(dim, dtype, below):
    """A softmax over another dimension runs ATen's other kernel (rows across the tensor), and a double's
    vector holds 8 of them: neither is costed on the float rows' curves."""
    table, _ = trace_step(_SoftmaxOver(dim, dtype), (80, 8), 4)
    (row,) = [r for r in table.to_dict("records") if "_log_softmax" in r["op"]]
    assert row["args"]["dim"] == (2 if dim == -1 else dim)
    assert subvector_family(row, 16) == (SUBVECTOR_FORWARD if below else "")


def test_softmax_backward_rows_of_16_to_256_keep_the_long_row_curve():
    """The short-row interpolation is the forward ops' (rows of 16 against 256); a backward row stays on the
    reduction curve, as before the sub-vector primitives."""
    (_, backward) = _softmax_rows(32)
    base = synthetic_profile("cpu")
    flat = lambda seconds: Curve((1.0, 1e12), (seconds, seconds))  # noqa: E731
    profile = dataclasses.replace(base, curves={**base.curves, "reduction": flat(2e-6), SHORT_ROWS: flat(8e-6)})
    assert op_cost(profile, backward).host_s == pytest.approx(2e-6)


def test_a_profile_from_before_the_sub_vector_rows_warns_of_them_and_widens_the_interval():
    from crossover.opcost.module_predict import step_prediction

    base = synthetic_profile("cpu")
    flat = lambda seconds: Curve((1.0, 1e12), (seconds, seconds))  # noqa: E731
    old = dataclasses.replace(base, curves={**base.curves, "reduction": flat(2e-6)})
    forward, backward = _softmax_rows(10)
    assert "predates the sub-vector softmax primitives" in op_cost(old, forward).warning
    assert "predates" in op_cost(old, backward).warning
    assert not op_cost(old, _softmax_rows(16)[0]).warning  # rows of a whole vector: nothing to say
    new = dataclasses.replace(old, curves={**old.curves, SUBVECTOR_FORWARD: flat(30e-6), SUBVECTOR_BACKWARD: flat(12e-6)},
                              meta=dict(old.meta, vector_floats=16))
    assert not op_cost(new, forward).warning
    table, calls = trace_step(_Classifier(10), (8,), 64, "train")
    rows = table.to_dict("records")
    sizes = dict(module_calls=calls, n_params=2, param_bytes=4 * 90)
    widened, timed = step_prediction(old, rows, **sizes), step_prediction(new, rows, **sizes)
    assert any("predates" in w for w in widened["warnings"]) and not any("predates" in w for w in timed["warnings"])
    assert widened["latency_high_s"] / widened["latency_s"] > timed["latency_high_s"] / timed["latency_s"]
