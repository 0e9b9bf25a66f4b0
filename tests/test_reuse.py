"""A step's state read back from the shared cache: which trace rows touch the model's parameters and
gradients, the calibration's reuse curve from its primitives, and what a step pays at its footprint."""

import dataclasses

import pytest
import torch
from torch import nn

from crossover.opcost.calibrate import build_profile
from crossover.opcost.calibration_plan import PLANS, make_step, points
from crossover.opcost.module_predict import step_prediction
from crossover.opcost.profiles import Curve, synthetic_profile
from crossover.opcost.reuse import (PROBE_BYTES, REUSE, REUSE_FACTORS, fit_reuse, reuse_s,
                                    step_footprint_bytes)
from crossover.opcost.trace import trace_module
from calibration_rows import US, overhead_rows, row

MIB = 2**20


def _mlp():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 10))


def _bytes(*shapes):
    return sum(4 * torch.Size(s).numel() for s in shapes)


def test_rows_count_the_parameters_and_gradients_they_touch():
    model = _mlp()
    forward = trace_module(model, torch.empty(8, 64, device="meta"), "forward")
    products = forward[forward.op == "aten.addmm.default"]
    assert list(products.state_bytes) == [_bytes((32, 64), (32,)), _bytes((10, 32), (10,))]  # weight and bias
    assert forward.state_bytes.sum() == _bytes(*(p.shape for p in model.parameters()))  # the input is not state
    assert (forward[forward.launches == 0].state_bytes == 0).all()  # views (the weights' .t()) move nothing
    train = trace_module(model, torch.empty(8, 64, device="meta"), "train")
    updates = train[train.phase == "optimizer"]
    # each SGD update reads its parameter and its gradient (the parameter written in place: one storage)
    assert sorted(updates.state_bytes) == sorted(2 * _bytes(p.shape) for p in model.parameters())
    backward = train[train.phase == "backward"]
    assert backward.state_bytes.sum() > 0  # the gradients written, the second layer's weight read
    assert (train[train.phase == "loss"].state_bytes == 0).all()


def _families(times_s):
    return {REUSE: [(t, 0.0, dict(x=x)) for x, t in zip(REUSE_FACTORS, times_s)]}


def test_the_curve_is_the_extra_per_byte_over_the_product_alone():
    alone = 3 * US
    extras = [0.0, 0.0, 1e-6, 3e-6, 6e-6, 7e-6, 7e-6, 7e-6, 9e-6, 12e-6, 12e-6, 12e-6]  # at REUSE_FACTORS
    assert len(extras) == len(REUSE_FACTORS)
    curve = fit_reuse(_families([alone + e for e in extras]))
    assert curve.x == REUSE_FACTORS[1:]
    assert curve.time_s[-1] == pytest.approx(12e-6 / PROBE_BYTES)
    assert curve.time_s[2] == pytest.approx(3e-6 / PROBE_BYTES)
    assert curve.time_s[7] == pytest.approx(9e-6 / PROBE_BYTES)  # past four private caches: the shared level's share
    # a noisy dip is pooled with its neighbour: never cheaper to read from farther
    noisy = fit_reuse(_families([alone + e for e in (0.0, 0.0, 1e-6, 5e-6, 3e-6, 7e-6, 7e-6, 7e-6, 7e-6, 7e-6, 7e-6, 7e-6)]))
    assert all(b >= a for a, b in zip(noisy.time_s, noisy.time_s[1:]))
    assert noisy.time_s[2] == pytest.approx(4e-6 / PROBE_BYTES)
    assert fit_reuse({}) is None  # a calibration without the primitives: no curve


def _profile(cache_bytes=2 * MIB, device="cpu"):
    """A machine whose state past 2 caches is read back at 25 ps a byte, nothing within one cache."""
    curve = Curve((0.25, 1.0, 2.0, 4.0), (1e-15, 1e-15, 25e-12, 25e-12))
    base = synthetic_profile(device)
    return dataclasses.replace(base, cache_bytes=cache_bytes, curves={**base.curves, REUSE: curve})


def _rows(*weights_bytes, written=0):
    return [dict(op="aten.addmm.default", launches=1, state_bytes=w, bytes_written=written) for w in weights_bytes]


def test_a_step_pays_its_state_at_its_footprint():
    small = _rows(256 * 1024, 256 * 1024)  # 0.5 MiB: fits the private caches
    assert reuse_s(_profile(), small) == (pytest.approx(0.0, abs=1e-7), 0.5 * MIB)
    large = _rows(*[256 * 1024] * 24)  # 6 MiB: 3 caches, past the curve's plateau
    seconds, footprint = reuse_s(_profile(), large)
    assert footprint == 6 * MIB
    assert seconds == pytest.approx(6 * MIB * 25e-12, rel=1e-4)
    # a weight read from the shared level by its own primitive (5 MiB alone: past the plateau) pays nothing more
    assert reuse_s(_profile(), _rows(5 * MIB))[0] == pytest.approx(0.0, abs=1e-7)
    # halfway between one and two caches, linearly
    assert reuse_s(_profile(), _rows(*[256 * 1024] * 12))[0] == pytest.approx(3 * MIB * 12.5e-12, rel=1e-4)
    # activations count in the footprint, not in what is read back
    assert reuse_s(_profile(), _rows(256 * 1024, 0, written=6 * MIB))[0] == pytest.approx(256 * 1024 * 25e-12, rel=1e-4)
    # more threads, more private cache: the same step fits
    assert reuse_s(_profile(cache_bytes=8 * MIB), large)[0] == pytest.approx(0.0, abs=1e-7)  # 0.75 caches
    assert reuse_s(_profile(device="cuda"), large) == (0.0, 0.0)
    assert reuse_s(_profile(), large, cold=True) == (0.0, 0.0)  # the cold grid cycles its weights already
    assert reuse_s(synthetic_profile("cpu"), large) == (0.0, 0.0)  # no curve


def test_a_prediction_adds_what_its_state_pays():
    model = nn.Sequential(nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 512))
    table = trace_module(model, torch.empty(1, 512, device="meta"), "train")
    rows = table.to_dict("records")
    sizes = dict(module_calls=6, n_params=6, param_bytes=sum(4 * p.numel() for p in model.parameters()))
    without = step_prediction(dataclasses.replace(_profile(), curves=synthetic_profile("cpu").curves), rows, **sizes)
    with_it = step_prediction(_profile(), rows, **sizes)
    assert step_footprint_bytes(rows) > 4 * 2 * MIB  # 3 MiB of weights, their gradients and updates
    assert with_it["reuse_s"] > 0 and with_it["footprint_bytes"] == step_footprint_bytes(rows)
    assert with_it["latency_s"] - without["latency_s"] == pytest.approx(with_it["reuse_s"])
    assert without["reuse_s"] == 0.0


def test_the_calibration_times_the_probe_over_each_span_and_builds_the_curve():
    plan = PLANS["quick"]
    probes = [p for p in points(plan, "cpu", 2) if p.family == REUSE]
    assert sorted(p.x for p in probes) == sorted(REUSE_FACTORS) and len({p.key for p in probes}) == len(probes)
    assert not [p for p in points(plan, "cuda") if p.family == REUSE]
    step = make_step(probes[0], "cpu")
    assert tuple(step().shape) == (1, 256)
    rows = overhead_rows() + [row("gemv_pool", 3 * US + (2 * US if x >= 1 else 0), family=REUSE, m=round(x * 100),
                                  k=256, n=256, x=x) for x in REUSE_FACTORS]
    profile = build_profile(rows, device="cpu", machine="test", threads=1, cache_bytes=2 * MIB)
    assert profile.curves[REUSE].time_s[-1] == pytest.approx(2 * US / PROBE_BYTES)


def test_spans_past_the_widest_are_left_out_of_the_plan():
    from crossover.opcost.reuse import MAX_SPAN_BYTES, reuse_points

    assert [x for _, _, x, _ in reuse_points(2**19)] == list(REUSE_FACTORS)  # the AMD VM at one thread: 32 MiB at most
    sixteen = [x for _, _, x, _ in reuse_points(16 * 2 * MIB)]  # a 16-thread host with 2 MiB of L2 a core
    assert sixteen == [x for x in REUSE_FACTORS if x <= 8.0] and 8.0 * 32 * MIB == MAX_SPAN_BYTES
    assert [x for _, _, x, _ in reuse_points(2**40)] == [x for x in REUSE_FACTORS if x <= 4.0]  # four caches always


def test_the_probe_reads_every_copy_at_the_start_of_a_visit(monkeypatch):
    from crossover.opcost import reuse

    step = reuse.reuse_step(2.0, 4 * PROBE_BYTES)  # 8 copies
    calls = []
    real_mm = torch.mm
    monkeypatch.setattr(torch, "mm", lambda *a: calls.append(1) or real_mm(*a))
    step()
    assert len(calls) == 8 + 1  # every copy once, then the timed product
    step()
    assert len(calls) == 8 + 2  # within the visit: the next copy only
    monkeypatch.setattr(reuse, "REWARM_AFTER_S", -1.0)  # as if the visit had ended
    step()
    assert len(calls) == 8 + 2 + 9


def test_tensors_without_storage_are_no_state_and_old_rows_pay_nothing():
    # a sparse embedding's gradient has no storage: the training step still traces, its table still counts
    model = nn.Sequential(nn.Embedding(10, 4, sparse=True), nn.Flatten(), nn.Linear(8, 2))
    table = trace_module(model, torch.zeros(3, 2, dtype=torch.long, device="meta"), "train")
    assert table.state_bytes.sum() > 0
    # rows traced before the column, or read back from a table without it (NaN), count nothing
    rows = [dict(op="aten.addmm.default", launches=1, bytes_written=8 * MIB),
            dict(op="aten.addmm.default", launches=1, state_bytes=float("nan"), bytes_written=0)]
    assert reuse_s(_profile(), rows) == (0.0, 8 * MIB)


def test_a_recurrent_layer_costed_whole_carries_all_its_weights():
    from crossover.opcost.gpu_ops import fused_recurrent_row

    gru = nn.GRU(16, 32, batch_first=True)
    model = nn.Sequential(gru)
    table = trace_module(model, torch.empty(2, 5, 16, device="meta"), "forward")
    row = fused_recurrent_row(table.to_dict("records"), gru, "0", 2)
    assert row["state_bytes"] == sum(4 * p.numel() for p in gru.parameters())


def test_a_fused_layer_pays_for_each_weight_its_products_keep_alone():
    """A fused encoder layer's products are costed one by one, each weight repeated alone: its weight
    matrices fit the private caches each (at most 1 MiB of 2) but not together (3.5 MiB: 1.75 caches, three
    quarters of the way to the plateau's 25 ps a byte), so each pays the step's rate, where an unfused row
    holding as much state would pay only what the step's rate adds to its own."""
    from crossover.opcost.reuse import fused_inner_written_bytes, own_state_parts

    weights = [(512, 256), (256, 256), (1024, 256), (256, 1024), (512, 256), (256, 256)]
    fused = dict(op="aten._transformer_encoder_layer_fwd.default", kind="attention", launches=1,
                 input_shapes=((1, 16, 256), *weights, (256,)), output_shapes=((1, 16, 256),),
                 bytes_read=_bytes(*weights), bytes_written=_bytes((1, 16, 256)), state_bytes=_bytes(*weights, (256,)))
    parts = own_state_parts(fused, fused["state_bytes"])
    assert parts[:-1] == [_bytes(w) for w in weights] and parts[-1] == 1024
    seconds, footprint = reuse_s(_profile(), [fused])
    assert fused_inner_written_bytes(fused) == 0.0  # a row whose shapes the decomposition does not read
    assert footprint == fused["state_bytes"]
    assert seconds == pytest.approx(sum(_bytes(w) for w in weights) * 0.75 * 25e-12, rel=1e-3)  # each cached alone
    plain = dict(fused, op="aten.addmm.default", input_shapes=((1, 256), (256, 256)))
    assert fused_inner_written_bytes(plain) == 0.0
    assert own_state_parts(plain, plain["state_bytes"]) == [plain["state_bytes"]]
    assert reuse_s(_profile(), [plain])[0] == pytest.approx(0.0, abs=1e-9)  # its own state's span: the step's


def test_a_fused_layer_writes_its_kernels_activations_into_the_footprint():
    """An encoder layer run fused is one row, but its kernels write q, k, v, the scores, the heads and the
    feed-forward's hidden layer between its weights' reads, as the same layer unfused would: they count in
    the step's footprint (the zoo's encoder layer at batch 1: 2 MiB beside 5 MiB of weights)."""
    from crossover.opcost.fused_layers import fused_rows
    from crossover.opcost.reuse import fused_inner_written_bytes

    layer = nn.TransformerEncoderLayer(256, 4, 2048, dropout=0.0, batch_first=True).eval()
    rows = trace_module(nn.Sequential(layer).eval(), torch.empty(1, 64, 256, device="meta"), "forward").to_dict("records")
    fused = [r for r in rows if "_transformer_encoder_layer_fwd" in r["op"]]
    assert len(fused) == 1
    inner = fused_inner_written_bytes(fused[0])
    assert inner == sum(k["bytes_written"] for k in fused_rows("_transformer_encoder_layer_fwd", fused[0]))
    assert inner > _bytes((64, 2048))  # the hidden layer at least
    state = sum(4 * p.numel() for p in layer.parameters())
    matrices = sum(4 * p.numel() for p in layer.parameters() if p.dim() == 2)  # its products (64 rows) pack them
    assert step_footprint_bytes(rows) == pytest.approx(state + inner + matrices + sum(
        r["bytes_written"] for r in rows if not r.get("state_bytes") and int(r.get("launches", 1) or 0)))


def test_products_of_many_rows_count_the_packed_copy_of_what_they_multiply():
    """A product of PACKED_MIN_ROWS rows or more packs its right-hand operand as it runs: a layer's weight
    forward counts twice in the footprint, a weight gradient's product its activations (never more than its
    state); fewer rows, nothing; and repeated alone such a product spans its copy too."""
    from crossover.opcost.reuse import PACKED_MIN_ROWS, packed_copy_bytes

    model = nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 10))
    weights = [_bytes((512, 256)), _bytes((10, 512))]
    for batch, packed in ((PACKED_MIN_ROWS - 1, [0.0, 0.0]), (PACKED_MIN_ROWS, weights)):
        rows = trace_module(model, torch.empty(batch, 256, device="meta"), "forward").to_dict("records")
        products = [r for r in rows if r["op"] == "aten.addmm.default"]
        assert [packed_copy_bytes(r) for r in products] == packed
        assert step_footprint_bytes(rows) == pytest.approx(sum(packed) + sum(
            r["state_bytes"] or r["bytes_written"] for r in rows if int(r.get("launches", 1) or 0)))
    train = trace_module(model, torch.empty(64, 256, device="meta"), "train").to_dict("records")
    gradients = [r for r in train if r["phase"] == "backward" and r["op"] == "aten.mm.default"
                 and tuple(r["output_shapes"][0]) == (512, 256)]
    assert len(gradients) == 1 and packed_copy_bytes(gradients[0]) == _bytes((64, 256))  # the layer's input
    assert packed_copy_bytes(dict(kind="matmul", op="aten.bmm.default", state_bytes=MIB, launches=1,
                                  input_shapes=((8, 64, 64), (8, 64, 64)), output_shapes=((8, 64, 64),))) == 0.0

    def product(rows_out):  # 1 MiB of weight, multiplied by rows_out rows
        return dict(op="aten.addmm.default", kind="matmul", launches=1, state_bytes=MIB, bytes_written=0,
                    input_shapes=((1024,), (rows_out, 256), (256, 1024)), output_shapes=((rows_out, 1024),))

    # two packing products: 4 MiB touched (two caches, the plateau), each alone 2 MiB (one cache, nothing)
    seconds, footprint = reuse_s(_profile(), [product(64), product(64)])
    assert footprint == 4 * MIB and seconds == pytest.approx(2 * MIB * 25e-12, rel=1e-4)
    assert reuse_s(_profile(), [product(16), product(16)]) == (pytest.approx(0.0, abs=1e-7), 2 * MIB)
