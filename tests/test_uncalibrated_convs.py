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
    assert down["conv"] == dict(stride=(2, 2), padding=(1, 1), dilation=(1, 1), transposed=False, groups=1)
    (up,) = _convs(nn.ConvTranspose2d(16, 8, 2, stride=2), (16, 7, 7))
    assert up["conv"]["transposed"] and up["conv"]["stride"] == (2, 2)
    (dilated,) = _convs(nn.Conv1d(32, 32, 3, padding=4, dilation=4, groups=2), (32, 64))
    assert dilated["conv"]["dilation"] == (4,) and dilated["conv"]["groups"] == 2
    forward, backward = _convs(nn.Conv1d(8, 8, 3, padding=2, dilation=2), (8, 64), "train")
    assert backward["op"].startswith("aten.convolution_backward") and backward["conv"] == forward["conv"]
    table = trace_module(nn.Linear(4, 4), torch.empty((2, 4), device="meta"))
    assert table["conv"].isna().all()


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
