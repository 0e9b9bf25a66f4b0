"""crossover.opcost.trace: per-op traces on fake tensors, checked against FlopCounterMode on real ones."""

import resource
import time

import pytest
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

import crossover
from crossover.errors import AnalysisError, TraceError
from crossover.measurement.toy_counts import forward_flops, step_bytes, step_flops
from crossover.measurement.toy_model import ResidualMLP
from crossover.opcost.trace import COLUMNS, KINDS, PHASES, op_kind, trace_batches, trace_module


def mlp():
    return nn.Sequential(nn.Flatten(), nn.Linear(784, 128), nn.ReLU(), nn.Linear(128, 10))


def cnn():
    return nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                         nn.Linear(8 * 14 * 14, 10))


def encoder_layer():
    return nn.TransformerEncoderLayer(d_model=64, nhead=4, batch_first=True)


CASES = {"mlp": (mlp, (4, 1, 28, 28)), "cnn": (cnn, (4, 1, 28, 28)), "encoder": (encoder_layer, (2, 16, 64))}


def real_step_flops(model, x, workload):
    """FlopCounterMode's total for the step trace_module traces, run for real (default loss, SGD)."""
    with FlopCounterMode(display=False) as counter:
        if workload == "forward":
            with torch.no_grad():
                model(x)
        else:
            out = model(x)
            loss = (F.cross_entropy(out, torch.zeros(out.shape[0], dtype=torch.long)) if out.dim() == 2
                    else F.mse_loss(out, torch.zeros_like(out)))
            loss.backward()
            torch.optim.SGD(model.parameters(), lr=0.01, foreach=False).step()
    return counter.get_total_flops()


@pytest.mark.parametrize("workload", ["forward", "train"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_traced_flops_equal_flop_counter_on_the_real_model(case, workload):
    build, shape = CASES[case]
    torch.manual_seed(0)
    model, x = build(), torch.randn(shape)
    before = {name: p.detach().clone() for name, p in model.named_parameters()}
    table = trace_module(model, x, workload)
    # the user's model is untouched: same values, no gradients, no hooks left behind
    assert all(torch.equal(p, before[name]) and p.grad is None for name, p in model.named_parameters())
    assert not torch.nn.modules.module._global_forward_hooks
    assert not torch.nn.modules.module._global_forward_pre_hooks
    assert list(table.columns) == list(COLUMNS)
    assert list(table["index"]) == list(range(len(table)))
    assert set(table["kind"]) <= set(KINDS) and set(table["phase"]) <= set(PHASES)
    assert table["flops"].sum() > 0
    assert table["flops"].sum() == real_step_flops(model, x, workload)
    expected_phases = ["forward"] if workload == "forward" else list(PHASES)
    assert list(dict.fromkeys(table["phase"])) == expected_phases


def test_ops_are_classified_and_attributed_to_their_module():
    table = trace_module(cnn(), torch.randn(2, 1, 28, 28), "train")
    forward = table[table.phase == "forward"]
    conv = forward[forward.op == "aten.convolution.default"].iloc[0]
    assert (conv.kind, conv.module, conv.launches) == ("conv", "0", 1)
    assert conv.input_shapes[:2] == ((2, 1, 28, 28), (8, 1, 3, 3))
    assert conv.output_shapes == ((2, 8, 28, 28),)
    assert conv.bytes_read == 4 * (2 * 28 * 28 + 8 * 9 + 8) and conv.bytes_written == 4 * 2 * 8 * 28 * 28
    assert forward[forward.op == "aten.addmm.default"].iloc[0].module == "4"
    assert "reduction" in set(forward[forward.module == "2"].kind)  # max pooling
    backward = table[table.phase == "backward"]
    assert "aten.convolution_backward.default" in set(backward.op)
    assert set(backward[backward.op == "aten.convolution_backward.default"].kind) == {"conv"}
    optimizer = table[table.phase == "optimizer"]  # SGD, foreach=False: one add_ per parameter
    assert list(optimizer.op) == ["aten.add_.Tensor"] * 4 and set(optimizer.kind) == {"elementwise"}


def test_op_kinds():
    aten = torch.ops.aten
    assert op_kind(aten.mm.default) == op_kind(aten.baddbmm.default) == "matmul"
    assert op_kind(aten.convolution_backward.default) == "conv"
    assert op_kind(aten._scaled_dot_product_flash_attention_for_cpu.default) == "attention"
    for view in (aten.view.default, aten._unsafe_view.default, aten.t.default, aten.expand.default,
                 aten.permute.default, aten.detach.default, aten.select.int, aten.as_strided.default):
        assert op_kind(view) == "view", view
    assert op_kind(aten.add_.Tensor) == op_kind(aten.relu.default) == "elementwise"  # in place is no view
    assert op_kind(aten.clone.default) == op_kind(aten.copy_.default) == "copy"
    assert op_kind(aten.sum.dim_IntList) == op_kind(aten._log_softmax.default) == "reduction"
    assert op_kind(aten._foreach_add_.Scalar) == "optimizer"
    assert op_kind(aten.embedding.default) == "other"


class Views(nn.Module):
    def forward(self, x):  # x: (batch, 64)
        y = x.view(x.shape[0], 4, 16).transpose(1, 2).transpose(1, 2)
        return y.reshape(x.shape[0], 64).unsqueeze(0).squeeze(0).permute(1, 0).t()


def test_views_add_rows_but_no_launches_and_no_bytes():
    x = torch.randn(8, 64)
    views = trace_module(Views(), x)
    assert len(views) >= 7 and set(views.kind) == {"view"}
    assert views[["launches", "bytes_read", "bytes_written", "flops"]].to_numpy().sum() == 0
    plain = trace_module(nn.Sequential(nn.Linear(64, 64)), x)
    viewed = trace_module(nn.Sequential(nn.Linear(64, 64), Views()), x)
    assert len(viewed) == len(plain) + len(views)
    for column in ("launches", "bytes_read", "bytes_written", "flops"):
        assert viewed[column].sum() == plain[column].sum() > 0


@pytest.mark.parametrize("d_model, n_layers, batch_size", [(32, 3, 5), (48, 2, 1)])
def test_the_toy_model_matches_its_closed_forms(d_model, n_layers, batch_size):
    model, x = ResidualMLP(d_model, n_layers), torch.randn(batch_size, d_model)
    forward = trace_module(model, x)
    assert forward.flops.sum() == forward_flops(d_model, n_layers, batch_size)
    kernels = forward[forward.launches > 0]
    assert list(kernels.op) == ["aten.mm.default", "aten.relu.default", "aten.add.Tensor"] * n_layers
    assert list(kernels.module) == [name for i in range(n_layers)
                                    for name in (f"blocks.{i}.linear", f"blocks.{i}", f"blocks.{i}")]
    assert forward.launches.sum() == 3 * n_layers
    assert (forward.bytes_read.sum() + forward.bytes_written.sum()
            == step_bytes(d_model, n_layers, batch_size, workload="forward"))
    train = trace_module(model, x, "train")
    assert train.flops.sum() == step_flops(d_model, n_layers, batch_size, "train")
    assert (train[train.phase == "optimizer"].op == "aten.add_.Tensor").sum() == n_layers


def test_a_shape_error_names_the_layer_that_failed():
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Sequential(nn.Identity(), nn.Linear(32, 4)))
    with pytest.raises(TraceError) as caught:
        trace_module(model, torch.randn(2, 8))
    message = str(caught.value)
    assert isinstance(caught.value, AnalysisError) and "\n" not in message
    assert "'2.1' (Linear)" in message and "(2, 8)" in message
    assert "16" in message and "32" in message  # torch's own words: the mismatched sizes
    assert not torch.nn.modules.module._global_forward_hooks  # the hooks go away on errors too
    with pytest.raises(TraceError, match="'2.1' .Linear."):
        trace_module(model, torch.randn(2, 8), "train")


def test_a_ten_billion_parameter_model_traces_without_allocating():
    model = nn.Linear(100_000, 100_000, device="meta")
    rss_before_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.perf_counter()
    table = trace_module(model, torch.randn(4, 100_000), "train")
    assert time.perf_counter() - start < 10
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss_before_kb < 500_000  # < 0.5 GB
    # forward addmm and the weight gradient's mm; the input needs no gradient
    assert table.flops.sum() == 2 * (2 * 4 * 10**10)
    assert table[table.phase == "optimizer"].bytes_read.sum() == 2 * 4 * (10**10 + 10**5)
    assert model.weight.device.type == "meta" and model.weight.grad is None


def test_a_custom_loss_and_a_foreach_optimizer_are_traced():
    model = nn.Sequential(nn.Linear(10, 5))
    table = trace_module(model, torch.randn(3, 10), "train", loss=lambda out: out.pow(2).sum(),
                         optimizer=lambda params: torch.optim.Adam(params, foreach=True))
    assert list(table[table.phase == "loss"].op) == ["aten.pow.Tensor_Scalar", "aten.sum.default"]
    foreach = table[table.op.str.startswith("aten._foreach_")]
    assert len(foreach) >= 4 and set(foreach.kind) == {"optimizer"} and set(foreach.phase) == {"optimizer"}
    with pytest.raises(TraceError, match="one-element tensor"):
        trace_module(model, torch.randn(3, 10), "train", loss=lambda out: out)
    with pytest.raises(ValueError, match="unknown optimizer"):
        trace_module(model, torch.randn(3, 10), "train", optimizer="adam")
    with pytest.raises(ValueError, match="unknown workload"):
        trace_module(model, torch.randn(3, 10), "inference")


@pytest.mark.parametrize("case", ["mlp", "cnn"])
def test_a_training_steps_gradient_copies_are_the_ones_eager_pytorch_makes(case):
    """Eager autograd steals a fresh gradient as ``.grad`` (no ``new_empty_strided``, no ``copy_``); the
    trace, whose recorder holds every tensor, would clone each one: the trace's backward copies are as
    many as the profiler's, and its grads are as large as the parameters."""
    from torch.profiler import ProfilerActivity, profile

    make, shape = CASES[case]
    model = make()
    x = torch.randn(*shape)
    table = trace_module(model, x, "train")

    def backward_copies(names):
        return sum(1 for name in names if name in ("new_empty_strided", "copy_"))

    traced = table[table.phase == "backward"].op.map(lambda op: op.split(".")[1])
    loss = F.cross_entropy(model(x), torch.zeros(shape[0], dtype=torch.long))
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        loss.backward()
    ran = [e.key.split("::")[-1] for e in prof.events() if e.key.startswith("aten::")]
    assert backward_copies(traced) == backward_copies(ran) == 0 and "mm" in ran
    # the gradient kept as .grad is the one its backward op wrote: that op's row counts it as the step's state
    written = table[(table.phase == "backward") & (table.kind == "matmul")]
    weights = sorted(4 * p.numel() for p in model.parameters() if p.dim() == 2)
    assert all(state >= b for state, b in zip(sorted(written.state_bytes)[-len(weights):], weights))


def test_trace_batches_traces_every_batch_size():
    model = ResidualMLP(32, 2)
    table = trace_batches(model, (32,), [1, 4, 16], "forward")
    assert list(table.columns) == ["batch_size", *COLUMNS]
    flops = table.groupby("batch_size").flops.sum()
    assert flops.to_dict() == {b: forward_flops(32, 2, b) for b in (1, 4, 16)}
    first = table[table.batch_size == 4].iloc[1]
    assert first.op == "aten.mm.default" and first.input_shapes == ((4, 32), (32, 32))


def test_the_package_exports_the_tracer_lazily():
    assert crossover.trace_module is trace_module and crossover.TraceError is TraceError
