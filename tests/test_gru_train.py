"""A GRU's training step on a CPU: the trace attributes its backward ops to it, and a profile with the GRU
training-step primitives' backward terms costs its forward and backward passes as two calls."""

import dataclasses

import pytest
import torch
from torch import nn

from crossover.opcost.calibration_plan import PLANS, Point, make_step, points
from crossover.opcost.gpu_ops import CPU_RNN_CALL, CPU_RNN_TERMS, cpu_recurrent_seconds
from crossover.opcost.module_predict import predict_module, trace_step
from crossover.opcost.op_costs import op_cost
from crossover.opcost.profiles import synthetic_profile
from crossover.opcost.recurrent_layers import (GRU_BACKWARD_CALL, RNN_BACKWARD_OP, GRU_BACKWARD_TERMS, GRU_TRAIN,
                                               fit_gru_backward, train_records)

US = 1e-6
GRU = {"rnn_step_s": 14 * US, "rnn_gate_element_s": 1e-9, "rnn_flop_s": 1e-11, "rnn_weight_element_s": 2e-11,
       "rnn_call_s": 18 * US}
BACKWARD = {"gru_backward_step_s": 40 * US, "gru_backward_gate_element_s": 3e-9, "gru_backward_flop_s": 2e-11,
            "gru_backward_weight_element_s": 5e-11, "gru_backward_call_s": 30 * US}
HOST = {"module_call_s": 1 * US, "backward_call_s": 8 * US}


class Classifier(nn.Module):
    """An embedding-free GRU classifier: ``GRU(16, 24, 2 layers)`` → the last step → ``Linear(24 → 3)``."""

    def __init__(self):
        super().__init__()
        self.gru = nn.GRU(16, 24, num_layers=2, batch_first=True)
        self.head = nn.Linear(24, 3)

    def forward(self, x):
        return self.head(self.gru(x)[0][:, -1])


def test_the_trace_attributes_a_grus_backward_ops_to_it():
    table, _ = trace_step(Classifier(), (7, 16), 4, "train")
    backward = table[table["phase"] == "backward"]
    mine = backward[backward["module"] == "gru"]
    assert len(mine) > 7 * 2 * 5  # every time step of both layers: products and gates
    assert set(backward[backward["module"] != "gru"]["module"]) == {""}  # the head's and the loss's are not its
    assert any(op.startswith("aten.mm") for op in backward[backward["module"] == ""]["op"])  # the head's gradient


def test_a_training_step_keeps_its_other_ops_and_gets_two_gru_calls():
    table, _ = trace_step(Classifier(), (7, 16), 4, "train")
    records = table.to_dict("records")
    fused = train_records(records, Classifier(), 4)
    mine = [r for r in fused if r.get("module") == "gru"]
    assert [(r["op"], r["phase"]) for r in mine] == [("aten._cudnn_rnn.default", "forward"),
                                                     (RNN_BACKWARD_OP, "backward")]
    assert mine[1]["rnn"]["backward"] and mine[1]["rnn"]["layers"] == 2 and mine[1]["rnn"]["steps"] == 7
    others = [r["index"] for r in records if r.get("module") != "gru"]
    assert [r["index"] for r in fused if r.get("module") != "gru"] == others  # in their order
    order = [r["op"] for r in fused]
    assert order.index(RNN_BACKWARD_OP) > max(i for i, r in enumerate(fused) if r["op"] == "aten.mm.default"
                                              and r.get("phase") == "backward")  # after the head's gradient


def _train_items(shapes):
    forward = {(b, t, h): cpu_recurrent_seconds(GRU, b, t, h, h) for b, t, h in shapes}
    items = [(HOST["module_call_s"] + HOST["backward_call_s"] + forward[(b, t, h)]
              + cpu_recurrent_seconds(BACKWARD, b, t, h, h, 3, GRU_BACKWARD_TERMS, GRU_BACKWARD_CALL), 0.0,
              {"shape": f"{b}x{t}x{h}"}) for b, t, h in shapes]
    return items, [(b, t, h, s) for (b, t, h), s in forward.items()]


def test_the_backward_terms_are_recovered_from_the_training_step_primitives():
    items, forward_cells = _train_items(PLANS["quick"].cpu_rnn_shapes)
    assert fit_gru_backward(items, forward_cells, HOST) == pytest.approx(BACKWARD, rel=1e-6)
    assert fit_gru_backward(items, [], HOST) == {}  # no forward primitive of the same shapes: nothing fitted


def test_the_plan_times_a_gru_training_step_on_a_cpu():
    keys = [p.key for p in points(PLANS["quick"], "cpu")]
    assert sum(k.startswith(f"{GRU_TRAIN}/gru/") for k in keys) == len(PLANS["quick"].cpu_rnn_shapes)
    assert not any(k.startswith(f"{GRU_TRAIN}/") for k in (p.key for p in points(PLANS["quick"], "cuda")))
    step = make_step(Point(GRU_TRAIN, "gru", shape=(2, 5, 8)), "cpu")
    assert step().shape == (2, 5, 8)
    gru = next(c.cell_contents for c in step.__closure__ if isinstance(c.cell_contents, nn.GRU))
    assert all(p.grad is not None for p in gru.parameters())


def _profile(with_backward=True):
    base = synthetic_profile("cpu", dispatch_s=2 * US, flop_rate=1e10)
    return dataclasses.replace(base, overheads={**base.overheads, **HOST, **GRU,
                                                **(BACKWARD if with_backward else {})})


def test_the_backward_call_is_costed_per_layer_on_its_terms_and_the_step_on_both():
    table, _ = trace_step(Classifier(), (7, 16), 4, "train")
    fused = train_records(table.to_dict("records"), Classifier(), 4)
    row = next(r for r in fused if r["op"] == RNN_BACKWARD_OP)
    cost = op_cost(_profile(), row)
    expected = sum(cpu_recurrent_seconds(BACKWARD, 4, 7, width, 24, 3, GRU_BACKWARD_TERMS, GRU_BACKWARD_CALL)
                   for width in (16, 24))
    assert cost.family == "rnn" and not cost.warning and cost.host_s == pytest.approx(expected, rel=1e-9)
    whole = predict_module(Classifier(), sample_shape=(7, 16), batch_sizes=(4,), profiles=[_profile()],
                           workload="train", warn=False).iloc[0]
    per_op = predict_module(Classifier(), sample_shape=(7, 16), batch_sizes=(4,), profiles=[_profile(False)],
                            workload="train", warn=False).iloc[0]  # a calibration from before: the ops one by one
    assert whole["latency_s"] > expected
    assert whole["latency_s"] != pytest.approx(per_op["latency_s"], rel=0.05)


def test_a_frozen_gru_gets_its_forward_call_and_no_backward_call():
    model = Classifier()
    model.gru.requires_grad_(False)  # nothing of the GRU needs a gradient: autograd records none of its ops
    table, _ = trace_step(model, (7, 16), 4, "train")
    assert not any(table[table["phase"] == "backward"]["module"] == "gru")
    fused = train_records(table.to_dict("records"), model, 4)
    assert [r["op"] for r in fused if r.get("module") == "gru"] == ["aten._cudnn_rnn.default"]


class _LstmLast(nn.Module):
    """``LSTM(16, 24)``'s last step (a tensor, for the loss)."""

    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(16, 24, batch_first=True)

    def forward(self, x):
        return self.lstm(x)[0][:, -1]


def test_on_a_gpu_a_recurrent_training_step_is_cudnns_two_calls_the_backward_estimated_and_warned():
    """cuDNN runs a GRU or an LSTM whole, forward and backward: a GPU profile's training step gets the layer's
    forward call and a backward call of twice its kernels, with a warning (no primitive times it)."""
    from crossover.opcost.recurrent_layers import GPU_BACKWARD_PER_FORWARD, GPU_BACKWARD_WARNING

    gpu = synthetic_profile("cuda", dispatch_s=5 * US, flop_rate=1e12)
    for model in (Classifier(), _LstmLast()):
        table, _ = trace_step(model, (7, 16), 4, "train")
        fused = train_records(table.to_dict("records"), model, 4, "cuda")
        path = "gru" if hasattr(model, "gru") else "lstm"
        mine = [r for r in fused if r.get("module") == path]
        assert [r["op"] for r in mine] == ["aten._cudnn_rnn.default", RNN_BACKWARD_OP]
        forward, backward = (op_cost(gpu, r) for r in mine)
        assert backward.device_s == pytest.approx(GPU_BACKWARD_PER_FORWARD * forward.device_s)
        assert backward.warning == GPU_BACKWARD_WARNING and backward.family == "rnn"
    cpu_rows = train_records(table.to_dict("records"), model, 4, "cpu")  # a CPU keeps oneDNN's LSTM ops
    assert not any(r["op"] == RNN_BACKWARD_OP for r in cpu_rows)
    with pytest.warns(UserWarning, match="cuDNN's recurrent backward pass is not calibrated"):
        predict_module(Classifier(), sample_shape=(7, 16), batch_sizes=(4,), profiles=[gpu], workload="train")


class _Seeded(nn.Module):
    """A GRU whose first state comes from the input through a layer of its own, passed by keyword."""

    def __init__(self):
        super().__init__()
        self.init = nn.Linear(16, 24)
        self.gru = nn.GRU(16, 24, batch_first=True)

    def forward(self, x):
        return self.gru(x, hx=torch.tanh(self.init(x.mean(1))).unsqueeze(0))[0][:, -1]


class _Decoder(nn.Module):
    """One GRU called once per output step (a decoder), a head between the calls."""

    def __init__(self):
        super().__init__()
        self.gru = nn.GRU(16, 16, batch_first=True)
        self.head = nn.Linear(16, 16)

    def forward(self, x):
        h, y = None, x[:, :1]
        for _ in range(4):
            y, h = self.gru(y, h)
            y = self.head(y)
        return y[:, -1]


def test_a_keyword_state_bounds_the_grus_backward_ops_and_a_repeated_gru_stays_op_by_op():
    table, _ = trace_step(_Seeded(), (7, 16), 4, "train")
    backward = table[table["phase"] == "backward"]
    theirs = backward[backward["module"] != "gru"]["op"].tolist()
    assert any(op.startswith("aten.tanh_backward") for op in theirs)  # the state's layer: not the GRU's
    assert sum(op.startswith("aten.mm") for op in theirs) >= 1
    table, _ = trace_step(_Decoder(), (5, 16), 4, "train")
    records = table.to_dict("records")
    assert train_records(records, _Decoder(), 4) == records  # four calls: not one fused call of one step
