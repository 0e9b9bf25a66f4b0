"""A CPU LSTM: oneDNN's RNN layer (one op the trace records whole), costed over every time step on its
own calibration primitives; a profile without them says so."""

import dataclasses

import pytest
import torch
from torch import nn

from crossover.opcost.calibration_plan import PLANS, Point, make_step, points
from crossover.opcost.gpu_ops import (CPU_LSTM_CALL, CPU_LSTM_TERMS, CPU_RNN_TERMS, LSTM_FIT, LSTM_WARNING,
                                      cpu_recurrent_seconds, fit_cpu_recurrent, gru_flops)
from crossover.opcost.module_predict import gpu_records, predict_module, trace_step
from crossover.opcost.profiles import synthetic_profile

US = 1e-6
GRU = {"rnn_step_s": 14 * US, "rnn_gate_element_s": 1e-9, "rnn_flop_s": 1e-11, "rnn_weight_element_s": 2e-11,
       "rnn_call_s": 18 * US}
LSTM = {"lstm_step_s": 2 * US, "lstm_gate_element_s": 3e-10, "lstm_flop_s": 6e-12, "lstm_weight_element_s": 1e-11,
        "lstm_call_s": 5 * US}


def _lstm_seconds(batch, steps, width, hidden):
    return cpu_recurrent_seconds(LSTM, batch, steps, width, hidden, 4, CPU_LSTM_TERMS, CPU_LSTM_CALL)


def test_the_trace_of_a_cpu_lstm_gives_every_time_step():
    """PyTorch hands a float LSTM's whole sequence to oneDNN (``mkldnn_rnn_layer``, no unbind per step):
    the fused row counts the sequence's steps and the products' FLOPs, which the op itself reports as 0."""
    model = nn.LSTM(32, 64, batch_first=True)
    table, _ = trace_step(model, (24, 32), 8)
    assert any(op.startswith("aten.mkldnn_rnn_layer") for op in table["op"])
    fused = [r for r in gpu_records(table.to_dict("records"), model, 8) if r.get("kind") == "rnn"]
    assert len(fused) == 1 and fused[0]["rnn"]["steps"] == 24 and fused[0]["rnn"]["gates"] == 4
    assert fused[0]["flops"] == gru_flops(8, 24, 32, 64, 4) == 2 * 8 * 24 * (32 + 64) * 4 * 64


def test_the_lstm_terms_are_fitted_on_the_lstm_primitives():
    shapes = PLANS["quick"].cpu_lstm_shapes
    assert len({t for _, t, _ in shapes}) == 2 and len(shapes) > len(CPU_LSTM_TERMS) + 1
    cells = [(b, t, h, _lstm_seconds(b, t, h, h)) for b, t, h in shapes]
    assert fit_cpu_recurrent(cells, **LSTM_FIT) == pytest.approx(LSTM, rel=1e-6)
    as_gru = fit_cpu_recurrent(cells, gates=3, terms=CPU_LSTM_TERMS, call=CPU_LSTM_CALL)  # three gates' features
    assert set(as_gru) == set(LSTM) and as_gru != pytest.approx(LSTM, rel=0.01)


def test_the_plan_times_the_lstm_on_a_cpu_and_its_step_runs():
    keys = [p.key for p in points(PLANS["quick"], "cpu")]
    assert sum(k.startswith("rnn/lstm/") for k in keys) == len(PLANS["quick"].cpu_lstm_shapes)
    assert not any(k.startswith("rnn/lstm/") for k in (p.key for p in points(PLANS["quick"], "cuda")))
    step = make_step(Point("rnn", "lstm", shape=(2, 5, 8)), "cpu")
    out, (h, c) = step()
    assert out.shape == (2, 5, 8) and h.shape == c.shape == (1, 2, 8)
    lstm = next(c.cell_contents for c in step.__closure__ if isinstance(c.cell_contents, torch.nn.LSTM))
    assert not lstm.training


def test_a_cpu_lstm_is_costed_on_its_own_terms_and_without_them_warns():
    model = nn.LSTM(32, 64, batch_first=True)
    base = synthetic_profile("cpu", dispatch_s=2 * US, flop_rate=1e10)
    with_lstm = dataclasses.replace(base, overheads=dict(base.overheads, **GRU, **LSTM))
    row = predict_module(model, sample_shape=(24, 32), batch_sizes=(64,), profiles=[with_lstm], warn=False).iloc[0]
    assert row["latency_s"] == pytest.approx(_lstm_seconds(64, 24, 32, 64) + row["overhead_s"], rel=1e-6)
    assert LSTM_WARNING not in row["warnings"]
    gru_only = dataclasses.replace(base, overheads=dict(base.overheads, **GRU))
    row = predict_module(model, sample_shape=(24, 32), batch_sizes=(64,), profiles=[gru_only], warn=False).iloc[0]
    gru_loop = cpu_recurrent_seconds(GRU, 64, 24, 32, 64, 4, CPU_RNN_TERMS)
    assert row["latency_s"] == pytest.approx(gru_loop + row["overhead_s"], rel=1e-6)
    assert LSTM_WARNING in row["warnings"]


def test_a_gpu_lstm_counts_every_time_step_too():
    """The trace of an LSTM is the CPU's (one oneDNN op): a GPU's fused call is costed over all its steps."""
    from crossover.opcost.profiles import Curve

    model = nn.LSTM(32, 64, batch_first=True)
    base = synthetic_profile("cuda")
    gpu = dataclasses.replace(base, curves={**base.curves, "rnn": Curve((1e3, 1e9), (10 * US, 1e-3))})
    rows = [predict_module(model, sample_shape=(steps, 32), batch_sizes=(8,), profiles=[gpu], warn=False).iloc[0]
            for steps in (4, 64)]
    curve = gpu.curves["rnn"]
    assert [r["device_s"] for r in rows] == pytest.approx([curve.affine(gru_flops(8, t, 32, 64, 4)) for t in (4, 64)])
