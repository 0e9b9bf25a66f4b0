"""A convolution among a step's other kernels: the calibration times it in rotation with four small kernels
against each alone, reads a price per call for each path ATen runs a convolution on, and a step pays it for
each forward convolution by its path, on a CPU only."""

import dataclasses

import pytest
import torch
from torch import nn

from crossover.opcost.calibrate import build_profile
from crossover.opcost.calibration_plan import PLANS, make_step, points
from crossover.opcost.conv_neighbours import (CONVOLUTIONS, NEIGHBOURS, OTHERS_NAME, fit_neighbours, neighbour_points,
                                              neighbours_s, price_name)
from crossover.opcost.module_predict import step_prediction, trace_step
from crossover.opcost.op_costs import conv_backend
from crossover.opcost.profiles import synthetic_profile
from calibration_rows import US, overhead_rows, row

PRICES_S = {"native": 9 * US, "mkldnn": 25 * US}


def _primitive_rows():
    """The primitives of a machine where the native path's convolution (40 µs alone) costs 9 µs more among
    the others (50 µs in rotation) and oneDNN's (120 µs) 25 µs."""
    alone = {"native": 40 * US, "mkldnn": 120 * US}
    seconds = {OTHERS_NAME: 50 * US}
    for backend in CONVOLUTIONS:
        seconds[f"{backend}/alone"] = alone[backend]
        seconds[f"{backend}/rotation"] = alone[backend] + 50 * US + PRICES_S[backend]
    return [row(name, seconds[name], family=family) for family, name in neighbour_points()]


def test_each_paths_price_is_recovered_and_a_calibration_without_the_primitives_has_none():
    families = {NEIGHBOURS: [(r["median_s"], 0.0, r) for r in _primitive_rows()]}
    fitted = fit_neighbours(families)
    assert fitted == pytest.approx({price_name(b): PRICES_S[b] for b in CONVOLUTIONS})
    quicker = {NEIGHBOURS: [(s * (0.5 if r["name"].endswith("rotation") else 1.0), a, r) for s, a, r in families[NEIGHBOURS]]}
    assert set(fit_neighbours(quicker).values()) == {0.0}  # a rotation quicker than its parts prices nothing
    assert fit_neighbours({}) == {}


def test_a_profile_built_from_the_primitives_holds_the_prices_and_no_curve_of_them():
    profile = build_profile(overhead_rows() + _primitive_rows(), device="cpu", machine="test", threads=1)
    assert profile.overhead(price_name("native")) == pytest.approx(PRICES_S["native"])
    assert profile.overhead(price_name("mkldnn")) == pytest.approx(PRICES_S["mkldnn"])
    assert NEIGHBOURS not in profile.curves


def test_the_primitives_run_on_the_paths_they_are_named_for_in_a_cpu_plan_only():
    cpu = [p for p in points(PLANS["smoke"], "cpu", 1) if p.family == NEIGHBOURS]
    assert sorted(p.name for p in cpu) == sorted(name for _, name in neighbour_points())
    assert not [p for p in points(PLANS["smoke"], "cuda", 1) if p.family == NEIGHBOURS]
    for p in cpu:
        assert make_step(p)() is None  # each runs (its kernels' outputs dropped)
    outputs = {"native": (1, 32, 1, 256), "mkldnn": (1, 16, 10, 10)}  # padded 2 as the 1-D CNN's; LeNet-5's unpadded
    for backend, (shape, weight) in CONVOLUTIONS.items():  # ATen's rule puts each on the path it prices
        as_2d = [list(s if len(s) == 4 else (*s[:2], 1, s[2])) for s in (shape, weight)]
        conv = dict(op="aten.convolution.default", input_shapes=as_2d, output_shapes=[list(outputs[backend])])
        assert conv_backend(conv, 1) == backend and conv_backend(conv, 2) == backend


def test_a_step_pays_each_forward_convolution_its_paths_price_on_a_cpu_only():
    """The 1-D CNN's batch-1 step runs two convolutions on the native path, LeNet-5-like 5×5 ones on oneDNN's;
    a training step pays for its forward convolutions only; a GPU profile pays nothing."""
    prices = {price_name(b): s for b, s in PRICES_S.items()}
    cpu = dataclasses.replace(synthetic_profile(dispatch_s=2 * US, **prices), threads=1)
    one_d = nn.Sequential(nn.Conv1d(8, 32, 5, padding=2), nn.ReLU(), nn.Conv1d(32, 64, 5, padding=2), nn.ReLU())
    five = nn.Sequential(nn.Conv2d(1, 6, 5), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(6, 16, 5))
    for model, shape, backend in ((one_d, (8, 256), "native"), (five, (1, 28, 28), "mkldnn")):
        table, calls = trace_step(model, shape, 1, "forward")
        rows = table.to_dict("records")
        step = step_prediction(cpu, rows, module_calls=calls, n_params=0, param_bytes=0)
        bare = step_prediction(synthetic_profile(dispatch_s=2 * US), rows, module_calls=calls, n_params=0, param_bytes=0)
        assert step["neighbours_s"] == pytest.approx(2 * PRICES_S[backend]) == neighbours_s(cpu, rows)
        assert step["latency_s"] - bare["latency_s"] == pytest.approx(2 * PRICES_S[backend])
        gpu = synthetic_profile("cuda", dispatch_s=2 * US, **prices)
        assert step_prediction(gpu, rows, module_calls=calls, n_params=0, param_bytes=0)["neighbours_s"] == 0.0
    torch.manual_seed(0)
    table, calls = trace_step(one_d, (8, 256), 1, "train")
    rows = table.to_dict("records")
    assert neighbours_s(cpu, rows) == pytest.approx(2 * PRICES_S["native"])  # not the backward convolutions


def test_from_three_threads_no_primitive_is_timed_and_no_price_is_charged():
    """At three threads or more a batch-1 convolution's team churns (the thread-start term's business): the
    plan times no such primitive there, and a profile made there that holds a price (the H200 host's of
    29 November, 16 threads) charges none of it; at one and two threads both as before."""
    assert neighbour_points(1) and neighbour_points(2) and not neighbour_points(3) and not neighbour_points(16)
    assert not neighbour_points(0)  # torch's default: several threads
    for threads, timed in ((1, True), (2, True), (3, False), (16, False)):
        plan = points(PLANS["smoke"], "cpu", threads)
        assert any(p.family == NEIGHBOURS for p in plan) == timed
    prices = {price_name(b): s for b, s in PRICES_S.items()}
    five = nn.Sequential(nn.Conv2d(1, 6, 5), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(6, 16, 5))
    rows = trace_step(five, (1, 28, 28), 8, "forward")[0].to_dict("records")
    for threads, charged in ((1, 2 * PRICES_S["mkldnn"]), (2, 2 * PRICES_S["mkldnn"]), (3, 0.0), (16, 0.0)):
        profile = dataclasses.replace(synthetic_profile(dispatch_s=2 * US, **prices), threads=threads)
        assert neighbours_s(profile, rows) == pytest.approx(charged)
