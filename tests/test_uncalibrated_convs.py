"""Convolutions the calibration does not time (transposed, dilated): the trace keeps the arguments that
tell them, and a prediction costing one says so."""

import pytest
from torch import nn

from crossover.opcost.conv_grids import uncalibrated_conv_warning
from crossover.opcost.module_predict import predict_module
from crossover.opcost.profiles import synthetic_profile
from crossover.opcost.trace import trace_module

import torch


def _convs(model, shape, workload="forward", batch=2):
    table = trace_module(model, torch.empty((batch, *shape), device="meta"), workload)
    return [r for r in table.to_dict("records") if r["op"].startswith("aten.convolution")]


def test_the_trace_keeps_a_convolutions_arguments():
    (down,) = _convs(nn.Conv2d(1, 8, 3, stride=2, padding=1), (1, 28, 28))
    assert down["args"] == dict(stride=(2, 2), padding=(1, 1), dilation=(1, 1), transposed=False, groups=1)
    (up,) = _convs(nn.ConvTranspose2d(16, 8, 2, stride=2), (16, 7, 7))
    assert up["args"]["transposed"] and up["args"]["stride"] == (2, 2)
    (dilated,) = _convs(nn.Conv1d(32, 32, 3, padding=4, dilation=4, groups=2), (32, 64))
    assert dilated["args"]["dilation"] == (4,) and dilated["args"]["groups"] == 2
    forward, backward = _convs(nn.Conv1d(8, 8, 3, padding=2, dilation=2), (8, 64), "train")
    assert backward["op"].startswith("aten.convolution_backward") and backward["args"] == forward["args"]
    table = trace_module(nn.Linear(4, 4), torch.empty((2, 4), device="meta"))
    assert table["args"].isna().all()


@pytest.mark.parametrize("layer, shape, warned", [
    (nn.ConvTranspose2d(16, 8, 2, stride=2), (16, 7, 7), "transposed"),
    (nn.Conv1d(8, 16, 3, padding=2, dilation=2), (8, 64), None),  # its forward: costed, see below
    (nn.Conv2d(3, 8, 3, stride=2, padding=1), (3, 16, 16), None),
])
def test_a_prediction_names_an_uncalibrated_convolution(layer, shape, warned):
    rows = _convs(layer, shape)
    message = uncalibrated_conv_warning(rows[0])
    assert (warned in message) if warned else message == ""
    predicted = predict_module(layer, sample_shape=shape, batch_sizes=(4,), profiles=[synthetic_profile("cpu")],
                               warn=False).iloc[0]
    assert (message in predicted["warnings"]) if warned else not any("convolution" in w for w in predicted["warnings"])


def test_a_dilated_convolutions_gradients_are_named():
    _, backward = _convs(nn.Conv1d(8, 8, 3, padding=2, dilation=2), (8, 64), "train")
    assert "dilated" in uncalibrated_conv_warning(backward)


def test_a_dilated_native_convolution_pays_its_unfolding_as_a_strided_one():
    import dataclasses

    from crossover.opcost.conv_grids import strided_unfold_elements
    from crossover.opcost.op_costs import conv_backend, op_cost
    from crossover.opcost.profiles import Grid

    one = _convs(nn.Conv1d(32, 32, 3, padding=2, dilation=2), (32, 256), batch=1)
    one += _convs(nn.Conv1d(32, 32, 3, padding=1), (32, 256), batch=1)
    assert conv_backend(one[0], 1) == "native"
    assert strided_unfold_elements(one[0]) == 32 * 3 * 256 and strided_unfold_elements(one[1]) == 0
    base = synthetic_profile("cpu")
    grid = Grid((16.0, 4096.0), (16.0, 1e5), ((1e-6, 1e-5), (2e-5, 2e-4)))
    profile = dataclasses.replace(base, grids={**base.grids, "conv@16": grid, "conv_native@16": grid},
                                  overheads={**base.overheads, "native_stride_column_s": 1e-9})
    assert op_cost(profile, one[0]).host_s == pytest.approx(op_cost(profile, one[1]).host_s + 32 * 3 * 256 * 1e-9)


def test_an_uncovered_ops_time_widens_the_interval_by_the_factor_either_way(monkeypatch):
    from crossover.opcost import module_predict
    from crossover.opcost.module_predict import UNCOVERED_FACTOR, step_prediction, trace_step

    profile = synthetic_profile("cpu")
    table, calls = trace_step(nn.ConvTranspose2d(16, 8, 2, stride=2), (16, 7, 7), 4)
    rows = table.to_dict("records")
    widened = step_prediction(profile, rows, module_calls=calls, n_params=2, param_bytes=2080)
    monkeypatch.setattr(module_predict, "UNCOVERED_FACTOR", 1.0)
    plain = step_prediction(profile, rows, module_calls=calls, n_params=2, param_bytes=2080)
    conv_s = next(op["seconds"] for op in widened["top_ops"] if op["op"].startswith("aten.convolution"))
    assert widened["warnings"] and widened["latency_s"] == plain["latency_s"]
    assert widened["latency_high_s"] - plain["latency_high_s"] == pytest.approx(conv_s * (UNCOVERED_FACTOR - 1))
    assert plain["latency_low_s"] - widened["latency_low_s"] == pytest.approx(
        min(conv_s * (1 - 1 / UNCOVERED_FACTOR), plain["latency_low_s"] - 0.1 * plain["latency_s"]))
