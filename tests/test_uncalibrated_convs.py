"""Convolutions the calibration does not time (transposed, dilated): the trace keeps the arguments that
tell them, and a prediction costing one says so."""

import pytest
from torch import nn

from crossover.opcost.conv_grids import uncalibrated_conv_warning
from crossover.opcost.module_predict import predict_module
from crossover.opcost.profiles import synthetic_profile
from crossover.opcost.trace import trace_module

import torch


def _convs(model, shape, workload="forward"):
    table = trace_module(model, torch.empty((2, *shape), device="meta"), workload)
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
    (nn.Conv1d(8, 16, 3, padding=2, dilation=2), (8, 64), "dilated"),
    (nn.Conv2d(3, 8, 3, stride=2, padding=1), (3, 16, 16), None),
])
def test_a_prediction_names_an_uncalibrated_convolution(layer, shape, warned):
    rows = _convs(layer, shape)
    message = uncalibrated_conv_warning(rows[0])
    assert (warned in message) if warned else message == ""
    predicted = predict_module(layer, sample_shape=shape, batch_sizes=(4,), profiles=[synthetic_profile("cpu")],
                               warn=False).iloc[0]
    assert (message in predicted["warnings"]) if warned else not any("convolution" in w for w in predicted["warnings"])


def test_an_uncovered_ops_time_widens_the_interval_by_the_factor_either_way():
    from crossover.opcost.module_predict import UNCOVERED_FACTOR, step_prediction, trace_step

    profile = synthetic_profile("cpu")
    plain = nn.Sequential(nn.Conv2d(8, 8, 3, padding=1), nn.ReLU())
    dilated = nn.Sequential(nn.Conv2d(8, 8, 3, padding=2, dilation=2), nn.ReLU())
    steps = []
    for model in (plain, dilated):
        table, calls = trace_step(model, (8, 16, 16), 4)
        steps.append(step_prediction(profile, table.to_dict("records"), module_calls=calls, n_params=2,
                                     param_bytes=2336))
    a, b = steps
    assert a["latency_s"] == pytest.approx(b["latency_s"], rel=1e-9)  # the same shapes, costed alike
    conv_s = next(op["seconds"] for op in b["top_ops"] if op["op"].startswith("aten.convolution"))
    assert not a["warnings"] and b["warnings"]
    assert b["latency_high_s"] - a["latency_high_s"] == pytest.approx(conv_s * (UNCOVERED_FACTOR - 1), rel=1e-6)
    assert a["latency_low_s"] - b["latency_low_s"] == pytest.approx(
        min(conv_s * (1 - 1 / UNCOVERED_FACTOR), a["latency_low_s"] - 0.1 * a["latency_s"]), rel=1e-6)
