"""oneDNN's LSTM layer in a CPU training step: ``mkldnn_rnn_layer`` and ``mkldnn_rnn_layer_backward`` costed on
the LSTM's forward terms and on backward terms fitted on the calibration's training-step primitives."""

import dataclasses

import pytest
import torch
from torch import nn

from crossover.opcost.calibration_plan import PLANS, Point, make_step, points
from crossover.opcost.gpu_ops import CPU_LSTM_CALL, CPU_LSTM_TERMS, cpu_recurrent_seconds
from crossover.opcost.module_predict import predict_module, trace_step
from crossover.opcost.op_costs import op_cost
from crossover.opcost.profiles import synthetic_profile
from crossover.opcost.recurrent_layers import (LSTM_BACKWARD_CALL, LSTM_BACKWARD_TERMS, LSTM_TRAIN, fit_lstm_backward,
                                               fit_recurrent_terms)

US = 1e-6
LSTM = {"lstm_step_s": 2 * US, "lstm_gate_element_s": 3e-10, "lstm_flop_s": 6e-12, "lstm_weight_element_s": 1e-11,
        "lstm_call_s": 5 * US}
BACKWARD = {"lstm_backward_step_s": 5 * US, "lstm_backward_gate_element_s": 9e-10, "lstm_backward_flop_s": 1.5e-11,
            "lstm_backward_weight_element_s": 3e-11, "lstm_backward_call_s": 20 * US}
HOST = {"module_call_s": 1 * US, "backward_call_s": 8 * US}


def _seconds(terms, call, overheads, batch, steps, width, hidden):
    return cpu_recurrent_seconds(overheads, batch, steps, width, hidden, 4, terms, call)


def _train_items(shapes):
    """What each training-step primitive would take: its module call, the backward's start, forward and backward."""
    return [(HOST["module_call_s"] + HOST["backward_call_s"] + _seconds(CPU_LSTM_TERMS, CPU_LSTM_CALL, LSTM, b, t, h, h)
             + _seconds(LSTM_BACKWARD_TERMS, LSTM_BACKWARD_CALL, BACKWARD, b, t, h, h), 0.0,
             {"shape": f"{b}x{t}x{h}"}) for b, t, h in shapes]


def test_the_backward_terms_are_recovered_from_the_training_step_primitives():
    items = _train_items(PLANS["quick"].cpu_lstm_shapes)
    assert fit_lstm_backward(items, {**HOST, **LSTM}) == pytest.approx(BACKWARD, rel=1e-6)
    assert fit_lstm_backward(items, HOST) == {}  # no forward terms to take off: nothing fitted
    lstm_cells = [(b, t, h, _seconds(CPU_LSTM_TERMS, CPU_LSTM_CALL, LSTM, b, t, h, h))
                  for b, t, h in PLANS["quick"].cpu_lstm_shapes]
    fitted = fit_recurrent_terms([], lstm_cells, {LSTM_TRAIN: items}, HOST)  # the forward terms fitted first, then the backward's
    assert {k: fitted[k] for k in BACKWARD} == pytest.approx(BACKWARD, rel=1e-6)


def test_the_plan_times_an_lstm_training_step_on_a_cpu_and_it_fills_the_gradients():
    keys = [p.key for p in points(PLANS["quick"], "cpu")]
    assert sum(k.startswith(f"{LSTM_TRAIN}/lstm/") for k in keys) == len(PLANS["quick"].cpu_lstm_shapes)
    assert not any(k.startswith(f"{LSTM_TRAIN}/") for k in (p.key for p in points(PLANS["quick"], "cuda")))
    step = make_step(Point(LSTM_TRAIN, "lstm", shape=(2, 5, 8)), "cpu")
    out = step()
    lstm = next(c.cell_contents for c in step.__closure__ if isinstance(c.cell_contents, nn.LSTM))
    assert out.shape == (2, 5, 8) and lstm.training
    assert all(p.grad is not None and torch.isfinite(p.grad).all() for p in lstm.parameters())
    first = [p.grad.clone() for p in lstm.parameters()]
    step()  # the gradients are set anew each step, not accumulated
    assert all(torch.equal(a, p.grad) for a, p in zip(first, lstm.parameters()))


class _Outputs(nn.Module):
    """An LSTM's output sequence (a training step's loss needs a tensor, not the LSTM's tuple)."""

    def __init__(self, **kwargs):
        super().__init__()
        self.lstm = nn.LSTM(batch_first=True, **kwargs)

    def forward(self, x):
        return self.lstm(x)[0]


def _profile(with_backward=True):
    base = synthetic_profile("cpu", dispatch_s=2 * US, flop_rate=1e10)
    return dataclasses.replace(base, overheads={**base.overheads, **HOST, **LSTM,
                                                **(BACKWARD if with_backward else {})})


def test_a_training_steps_lstm_layers_are_costed_on_their_terms():
    """A two-layer LSTM's training step: each layer's forward call and backward call from their shapes (the
    second layer reads the first's 64 features), not from the generic model (FLOPs the op reports as 0)."""
    model = _Outputs(input_size=32, hidden_size=64, num_layers=2)
    table, _ = trace_step(model, (24, 32), 8, "train")
    rows = [r for r in table.to_dict("records") if r["op"].startswith("aten.mkldnn_rnn_layer")]
    assert [r["op"].split(".")[1] for r in rows] == ["mkldnn_rnn_layer"] * 2 + ["mkldnn_rnn_layer_backward"] * 2
    profile = _profile()
    costs = [op_cost(profile, r) for r in rows]
    assert {c.family for c in costs} == {"rnn"} and not any(c.warning for c in costs)
    expected = [_seconds(CPU_LSTM_TERMS, CPU_LSTM_CALL, LSTM, 8, 24, 32, 64),
                _seconds(CPU_LSTM_TERMS, CPU_LSTM_CALL, LSTM, 8, 24, 64, 64),
                _seconds(LSTM_BACKWARD_TERMS, LSTM_BACKWARD_CALL, BACKWARD, 8, 24, 64, 64),  # the last layer first
                _seconds(LSTM_BACKWARD_TERMS, LSTM_BACKWARD_CALL, BACKWARD, 8, 24, 32, 64)]
    assert [c.host_s for c in costs] == pytest.approx(expected, rel=1e-9)
    old = op_cost(_profile(with_backward=False), rows[-1])  # a calibration from before the primitives
    assert old.family == "generic" and "no calibration covers aten.mkldnn_rnn_layer_backward" in old.warning


def test_an_lstm_training_step_prediction_includes_its_backward_calls():
    model = _Outputs(input_size=32, hidden_size=64)
    with_terms = predict_module(model, sample_shape=(24, 32), batch_sizes=(8,), profiles=[_profile()],
                                workload="train", warn=False)["latency_s"].iloc[0]
    backward = _seconds(LSTM_BACKWARD_TERMS, LSTM_BACKWARD_CALL, BACKWARD, 8, 24, 32, 64)
    assert with_terms > backward + _seconds(CPU_LSTM_TERMS, CPU_LSTM_CALL, LSTM, 8, 24, 32, 64)
