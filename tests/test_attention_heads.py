"""Attention on a CPU costed per (batch, head) pair: the curves recovered from primitives, a call of many
pairs costed by them, one of few at least the FLOP curve's reading, a GPU as before."""

import dataclasses

import pytest
import torch
from torch import nn

from crossover.opcost.attention_heads import (BACKWARD, HEAD_BACKWARD_CURVE, HEAD_CURVE, MIN_PAIRS, backward_points,
                                              backward_step, head_curves, head_seconds)
from crossover.opcost.calibration_plan import PLANS, points
from crossover.opcost.op_costs import attention_flops
from crossover.opcost.profiles import Curve, synthetic_profile

US = 1e-6


def _pair_s(length, size):
    return 0.2 * US + 1e-10 * 4 * length * length * size  # one pair's time: its FLOPs at 10 GFLOP/s, and 0.2 µs


def _families():
    rows = {"attention": [], BACKWARD: []}
    for b, h, s, d in [(1, 4, 16, 64), (64, 4, 16, 64), (64, 4, 64, 64), (64, 4, 16, 16)]:
        pairs = b * h
        fixed = 5 * US if pairs < MIN_PAIRS else 0.0  # few pairs: a fixed cost the fit leaves out
        forward = fixed + pairs * _pair_s(s, d)
        rows["attention"].append((forward, 0.0, dict(shape=f"{b}x{h}x{s}x{d}")))
        rows[BACKWARD].append((forward + 3 * pairs * _pair_s(s, d), 0.0, dict(shape=f"{b}x{h}x{s}x{d}")))
    return rows


def test_the_per_pair_curves_are_recovered_from_calls_of_many_pairs():
    curves = head_curves(_families())
    for s, d in ((16, 64), (64, 64), (16, 16)):
        x = 4.0 * s * s * d
        assert curves[HEAD_CURVE](x) == pytest.approx(_pair_s(s, d))
        assert curves[HEAD_BACKWARD_CURVE](x) == pytest.approx(3 * _pair_s(s, d))
    assert head_curves({"attention": _families()["attention"][:1]}) == {}  # one call of few pairs: no curve


def test_a_call_is_costed_per_pair_with_the_flop_curve_as_its_floor():
    base = synthetic_profile("cpu")
    flop_curve = Curve((1e3, 1e12), (8 * US, 1e-3))
    cpu = dataclasses.replace(base, curves={**base.curves, "attention": flop_curve, **head_curves(_families())})
    q = (512, 4, 16, 16)
    flops = attention_flops("sdpa", (q, q, q))
    row = dict(op="aten._scaled_dot_product_flash_attention_for_cpu.default", input_shapes=(q, q, q))
    assert head_seconds(cpu, row, flops) == pytest.approx(2048 * _pair_s(16, 16))
    few = (1, 2, 16, 16)
    small = dict(row, input_shapes=(few, few, few))
    assert head_seconds(cpu, small, attention_flops("sdpa", (few,) * 3)) == pytest.approx(
        flop_curve(attention_flops("sdpa", (few,) * 3)))
    backward = dict(op="aten._scaled_dot_product_flash_attention_for_cpu_backward.default", input_shapes=(q, q, q, q))
    assert head_seconds(cpu, backward, 2.5 * flops) == pytest.approx(2048 * 3 * _pair_s(16, 16))
    gpu = dataclasses.replace(synthetic_profile("cuda"), curves=cpu.curves)
    assert head_seconds(gpu, row, flops) is None and head_seconds(base, row, flops) is None


def test_the_plan_times_attention_backward_on_a_cpu_and_its_step_runs():
    cpu = [p for p in points(PLANS["quick"]) if p.family == BACKWARD]
    from crossover.opcost.attention_heads import MAX_BACKWARD_FLOPS

    shapes = [tuple(q) for q in PLANS["quick"].attention_shapes]
    assert [p.shape for p in cpu] == [q for q in shapes if attention_flops("sdpa", (q, q, q)) <= MAX_BACKWARD_FLOPS]
    assert len(cpu) == len(shapes) - 1  # the largest left out
    assert any(q[0] * q[1] >= MIN_PAIRS and q[3] == 16 for q in PLANS["quick"].attention_shapes)
    assert not [p for p in points(PLANS["quick"], "cuda") if p.family == BACKWARD]
    grads = backward_step((2, 2, 8, 4))()
    assert [tuple(g.shape) for g in grads] == [(2, 2, 8, 4)] * 3
    assert len(backward_points(PLANS["quick"])) == len(cpu)


def test_a_training_step_of_attention_takes_the_per_pair_curves():
    from crossover.opcost.module_predict import trace_step
    from crossover.opcost.op_costs import op_cost

    class SelfAttention(nn.Module):
        def __init__(self):
            super().__init__()
            self.attention = nn.MultiheadAttention(64, 4, batch_first=True)

        def forward(self, x):
            return self.attention(x, x, x, need_weights=False)[0]

    table, _ = trace_step(SelfAttention(), (16, 64), 64, "train")
    rows = [r for r in table.to_dict("records") if r["kind"] == "attention"]
    assert {("backward" in r["op"]) for r in rows} == {False, True}
    base = synthetic_profile("cpu")
    cpu = dataclasses.replace(base, curves={**base.curves, **head_curves(_families())})
    for r in rows:
        assert op_cost(cpu, r).host_s > op_cost(base, r).host_s  # 256 pairs: more than the bare FLOP curve


def test_a_fused_encoder_layer_with_gelu_costs_a_gelu():
    """The fast path's feed-forward activation is an argument of ``_transformer_encoder_layer_fwd``, not in
    its shapes: a GELU layer was costed with a ReLU."""
    from crossover.opcost.module_predict import trace_step
    from crossover.opcost.fused_layers import fused_rows

    fused = {}
    for activation in ("relu", "gelu"):
        layer = nn.TransformerEncoderLayer(64, 4, dim_feedforward=128, activation=activation, batch_first=True)
        table, _ = trace_step(layer, (16, 64), 8)
        (row,) = [r for r in table.to_dict("records") if "encoder_layer" in r["op"]]
        assert row["args"] == {"heads": 4, "gelu": activation == "gelu"}
        fused[activation] = [r["op"] for r in fused_rows("_transformer_encoder_layer_fwd", row)]
    assert "aten.relu_.default" in fused["relu"] and "aten.gelu_.default" not in fused["relu"]
    assert "aten.gelu_.default" in fused["gelu"] and "aten.relu_.default" not in fused["gelu"]
