"""What ops cost inside a model beyond their calibration alone: the convolution kernel PyTorch picks,
page faults of fresh outputs, weight gradients at small batches, image sizes, weights that stop
being warm, and the composition factors fitted on the reference models."""

import dataclasses
from pathlib import Path
import math
import re

import numpy as np
import pytest
import torch
from torch import nn
from torch.profiler import ProfilerActivity, profile

from crossover.opcost.calibrate import _without_page_faults, measure_calibration
from crossover.opcost.composition import FIT_REFERENCES, with_composition
from crossover.opcost.calibration_plan import PLANS, REFERENCE_MODELS, fresh_buffers, output_bytes
from crossover.opcost.module_predict import predict_module, step_prediction, trace_step
from crossover.opcost.op_costs import FRESH_MIN_BYTES, conv_backend, fresh_bytes, onednn_buffers, onednn_copies, op_cost
from crossover.opcost.profiles import Grid, Profile, load_profile, synthetic_profile, write_profile
from crossover.opcost.trace import trace_module

US = 1e-6
needs_onednn = pytest.mark.skipif(not torch.backends.mkldnn.is_available(), reason="torch built without oneDNN")


def _flat(seconds: float) -> Grid:
    return Grid((1.0, 2.0**30), (1.0, 2.0**30), ((seconds, seconds), (seconds, seconds)), rate=math.inf)


def _linear(seconds_per_unit: float) -> Grid:
    """``t = seconds_per_unit · m · kn`` (exact under the grid's log-log interpolation): a wrong ``m`` or
    ``kn`` shows."""
    corners = (1.0, 2.0**30)
    return Grid(corners, corners, tuple(tuple(seconds_per_unit * m * kn for kn in corners) for m in corners))


@needs_onednn
@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("batch, c_in, size, c_out, kernel, stride", [
    (1, 3, 32, 8, 3, 1),  # one small image, 3×3: native
    (1, 1, 28, 6, 5, 1),  # 5×5: oneDNN
    (2, 3, 32, 8, 3, 1),  # two images: oneDNN
    (1, 3, 100, 8, 3, 1),  # an image over 20480 elements: oneDNN
    (1, 16, 8, 16, 1, 1),  # 1×1
    (4, 16, 8, 16, 1, 1),  # 1×1 on a batch: native on one thread only
    (1, 3, 32, 8, 3, 2),  # strided
    (4, 16, 8, 16, 1, 2),  # 1×1 strided on a batch: oneDNN on one thread too
])
def test_conv_backend_is_the_kernel_pytorch_runs(threads, batch, c_in, size, c_out, kernel, stride):
    previous = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        conv = nn.Conv2d(c_in, c_out, kernel, stride=stride, padding=kernel // 2)
        x = torch.randn(batch, c_in, size, size)
        with profile(activities=[ProfilerActivity.CPU]) as prof, torch.no_grad():
            conv(x)
        ran = "mkldnn" if any("mkldnn" in e.key for e in prof.key_averages()) else "native"
    finally:
        torch.set_num_threads(previous)
    rows = trace_module(conv, torch.empty(batch, c_in, size, size, device="meta"), "train")
    assert {conv_backend(r, threads) for r in rows.to_dict("records") if r["kind"] == "conv"} == {ran}


@needs_onednn
@pytest.mark.parametrize("batch, length", [(1, 100), (2, 100), (1, 30000)])
def test_conv1d_backend_is_that_of_its_2d_view(batch, length):
    conv = nn.Conv1d(3, 8, 3, padding=1)
    with profile(activities=[ProfilerActivity.CPU]) as prof, torch.no_grad():
        conv(torch.randn(batch, 3, length))
    ran = "mkldnn" if any("mkldnn" in e.key for e in prof.key_averages()) else "native"
    rows = trace_module(conv, torch.empty(batch, 3, length, device="meta"), "forward").to_dict("records")
    assert {conv_backend(r, 2) for r in rows if r["kind"] == "conv"} == {ran}


def test_native_convolutions_use_the_native_grid():
    base = synthetic_profile(dispatch_s=1 * US)
    grids = dict(base.grids, **{"conv@16": _linear(2e-9), "conv_native@16": _linear(1e-9)})
    p = Profile(**{**base.__dict__, "grids": grids, "threads": 2})
    [small] = [r for r in trace_module(nn.Conv2d(3, 8, 3, padding=1), torch.empty(1, 3, 16, 16, device="meta"),
                                       "forward").to_dict("records") if r["kind"] == "conv"]
    [batch] = [r for r in trace_module(nn.Conv2d(3, 8, 3, padding=1), torch.empty(2, 3, 16, 16, device="meta"),
                                       "forward").to_dict("records") if r["kind"] == "conv"]
    kn = 3 * 9 * 8  # C_in·k²·C_out; M = the output pixels of the batch
    assert op_cost(p, small).host_s == pytest.approx(1e-9 * 256 * kn)
    assert op_cost(p, batch).host_s == pytest.approx(2e-9 * 512 * kn)
    gpu = Profile(**{**p.__dict__, "device": "cuda", "overheads": dict(p.overheads, launch_s=1 * US)})
    assert op_cost(gpu, small).device_s == pytest.approx(2e-9 * 256 * kn)  # oneDNN or not is a CPU choice


def test_a_native_grid_is_continued_below_its_fewest_pixels_and_onednns_is_clamped():
    # t = 1 ns · m^0.5 · kn on rows m = 256 and 1024: a 1-D convolution of 128 steps (m = 128) is read off the
    # power law of the native grid's first rows; oneDNN's grid keeps its first row's time (a fixed cost)
    m_rows, kn = (256.0, 1024.0), (1.0, 2.0**30)
    power = Grid(m_rows, kn, tuple(tuple(1e-9 * m ** 0.5 * k for k in kn) for m in m_rows))
    base = synthetic_profile(dispatch_s=1 * US)
    p = Profile(**{**base.__dict__, "grids": dict(base.grids, **{"conv@16": power, "conv_native@16": power}),
                   "threads": 2})

    def cost(batch):
        conv = nn.Conv1d(32, 64, 5, padding=2)
        [row] = [r for r in trace_module(conv, torch.empty(batch, 32, 128, device="meta"), "forward").to_dict("records")
                 if r["kind"] == "conv"]
        return conv_backend(row, 2), op_cost(p, row).host_s

    kn_row = 32 * 5 * 64
    assert cost(1) == ("native", pytest.approx(1e-9 * 128 ** 0.5 * kn_row))
    assert cost(2) == ("mkldnn", pytest.approx(1e-9 * 256 ** 0.5 * kn_row))  # m = 256: on the grid
    [one] = [r for r in trace_module(nn.Conv1d(32, 64, 5, padding=2), torch.empty(1, 32, 100, device="meta"),
                                     "forward").to_dict("records") if r["kind"] == "conv"]
    clamped = Profile(**{**p.__dict__, "grids": dict(base.grids, **{"conv@16": power})})  # no native grid: oneDNN's
    assert op_cost(clamped, one).host_s == pytest.approx(1e-9 * 256 ** 0.5 * kn_row)


def test_convolutions_interpolate_between_calibrated_image_sides():
    base = synthetic_profile(dispatch_s=1 * US)
    p = Profile(**{**base.__dict__, "grids": dict(base.grids, **{"conv@16": _flat(1e-3), "conv@32": _flat(4e-3)})})

    def cost(side):
        conv = nn.Conv2d(4, 4, 3, padding=1)
        rows = trace_module(conv, torch.empty(2, 4, side, side, device="meta"), "forward").to_dict("records")
        return op_cost(p, next(r for r in rows if r["kind"] == "conv")).host_s

    assert cost(8) == pytest.approx(1e-3) and cost(16) == pytest.approx(1e-3) and cost(64) == pytest.approx(4e-3)
    assert cost(23) == pytest.approx(1e-3 * 4 ** (math.log(23 / 16) / math.log(2)))  # log-log between


def test_a_weight_gradient_alone_costs_half_the_calibrated_backward():
    base = synthetic_profile(dispatch_s=1 * US)
    p = Profile(**{**base.__dict__, "grids": dict(base.grids, **{"conv@16": _flat(1e-4),
                                                                  "conv_backward@16": _linear(1e-9)})})
    model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 8, 3, padding=1))
    rows = trace_module(model, torch.empty(4, 3, 16, 16, device="meta"), "train").to_dict("records")
    backward = [r for r in rows if "convolution_backward" in r["op"]]
    first, second = sorted(backward, key=lambda r: r["input_shapes"][1][1])  # by input channels: 3, then 8
    m = 4 * 16 * 16  # the gradient's pixels; the grid's K·N is both gradients': 2·C_in·k²·C_out
    assert op_cost(p, first).host_s == pytest.approx(0.5 * 1e-9 * m * 2 * 3 * 9 * 8)  # its input needs no gradient
    assert op_cost(p, second).host_s == pytest.approx(1e-9 * m * 2 * 8 * 9 * 8)


def test_short_inner_products_use_the_outer_grid():
    base = synthetic_profile(dispatch_s=1 * US)
    outer = Grid((1.0, 64.0), (1.0, 2.0**30), ((1e-9, 2.0**30 * 1e-9), (64e-9, 64 * 2.0**30 * 1e-9)))  # K · M·N ns
    p = Profile(**{**base.__dict__, "grids": dict(base.grids, matmul=_linear(1e-12), matmul_outer=outer)})
    rows = trace_module(nn.Linear(784, 128), torch.empty(8, 784, device="meta"), "train").to_dict("records")
    mm = {tuple(map(tuple, r["input_shapes"])): op_cost(p, r).host_s for r in rows if r["kind"] == "matmul"}
    assert mm[((128, 8), (8, 784))] == pytest.approx(1e-9 * 8 * 128 * 784)  # the weight gradient, K = 8
    assert mm[((128,), (8, 784), (784, 128))] == pytest.approx(1e-12 * 8 * 784 * 128)  # the forward, K = 784
    narrow = trace_module(nn.Linear(16, 128), torch.empty(256, 16, device="meta"), "forward").to_dict("records")
    [forward] = [r for r in narrow if r["kind"] == "matmul"]
    assert op_cost(p, forward).host_s == pytest.approx(1e-12 * 256 * 16 * 128)  # K = 16, but a forward


def test_fresh_bytes_count_outputs_from_32_mib_and_inside_fused_layers():
    big = {"op": "aten.relu.default", "output_shapes": ((8, 2**20),), "bytes_written": 32.0 * 2**20, "launches": 1}
    assert fresh_bytes(big) == FRESH_MIN_BYTES == 32 * 2**20
    assert fresh_bytes(dict(big, output_shapes=((8, 2**20 - 1),), bytes_written=4.0 * 8 * (2**20 - 1))) == 0
    assert fresh_bytes(dict(big, op="aten.relu_.default")) == 0  # in place
    layer = nn.TransformerEncoderLayer(256, 4, batch_first=True).eval()
    with torch.no_grad():
        rows = trace_module(layer, torch.empty(64, 64, 256, device="meta"), "forward").to_dict("records")
    assert sum(fresh_bytes(r) for r in rows) == 64 * 64 * 2048 * 4  # its feed-forward hidden layer


def test_calibration_takes_page_faults_out_of_large_primitives():
    row = dict(family="elementwise", name="relu", n=2**24, shape="16777216")
    small = dict(row, n=2**20, shape="1048576")
    assert output_bytes("elementwise", "relu", 2**24) == 2**26 and output_bytes("rng", "bernoulli", 2**24) == 0
    out = _without_page_faults({"big": (20e-3, 0.1, row), "small": (1e-3, 0.1, small)}, fresh_byte_s=0.25e-9)
    assert out["big"][0] == pytest.approx(20e-3 - 2**26 * 0.25e-9) and out["small"][0] == 1e-3
    assert _without_page_faults({"big": (5e-3, 0.1, row)}, fresh_byte_s=1e-9)["big"][0] == pytest.approx(0.5e-3)


def test_weights_are_warm_up_to_the_last_level_cache():
    """Weights the shared last-level cache holds come back from it each step (on the 2-core VM at one
    thread the toy's 2 MB, over its 1 MiB L2, measured as hot); only larger ones are costed cold."""
    base = synthetic_profile(dispatch_s=1 * US)
    p = Profile(**{**base.__dict__, "grids": {"matmul": _flat(1 * US), "matmul_cold": _flat(9 * US)},
                   "llc_bytes": 8 * 2**20, "cache_bytes": 2 * 2**20})
    middle = nn.Linear(1024, 1024)  # 4 MiB: over the private caches, under the last level
    assert predict_module(middle, sample_shape=(1024,), batch_sizes=(1,), profiles=[p]).iloc[0]["weights"] == "hot"
    large = nn.Linear(2048, 2048)  # 16 MiB: over the last level
    assert predict_module(large, sample_shape=(2048,), batch_sizes=(1,), profiles=[p]).iloc[0]["weights"] == "cold"
    assert dataclasses.replace(p, llc_bytes=0).warm_bytes == 2 * 2**20  # no LLC known: the private caches


def test_new_profile_fields_survive_json(tmp_path):
    p = dataclasses.replace(synthetic_profile(dispatch_s=1 * US), cache_bytes=2**21, train_host_extra=1.3,
                            conv_forward_extra=0.2, backward_extra=0.25,
                            grids={"matmul": _flat(1 * US), "matmul_outer": _flat(2 * US), "conv@16": _flat(3 * US)})
    write_profile(tmp_path, p)
    q = load_profile(tmp_path)
    assert (q.cache_bytes, q.train_host_extra, q.conv_forward_extra, q.backward_extra) == (2**21, 1.3, 0.2, 0.25)
    assert set(q.grids) == {"matmul", "matmul_outer", "conv@16"}


def _reference_steps_of(truth: Profile) -> list:
    """(step prediction on ``truth``, calibration row) of each reference model, batch 1 and 32, forward
    and training step: the measurements a calibration would make on a device that is ``truth``."""
    from crossover.opcost.calibration_plan import reference_model

    out = []
    for name, batch, workload in [(n, b, w) for n in REFERENCE_MODELS for b in (1, 32) for w in ("forward", "train")]:
        model = reference_model(name)
        table, calls = trace_step(model, REFERENCE_MODELS[name], batch, workload)
        params = list(model.parameters())
        step = step_prediction(truth, table.to_dict("records"), module_calls=calls, n_params=len(params),
                               param_bytes=sum(q.numel() * 4 for q in params))
        out.append((step, {"name": f"{name}/{workload}", "m": batch}))
    return out


def test_composition_fit_recovers_known_factors():
    """Reference steps made with known factors are fitted back to them (pure: nothing is timed)."""
    base = synthetic_profile(dispatch_s=2 * US, flop_rate=5e10, bandwidth=2e10, module_call_s=1 * US,
                             grad_record_s=0.5 * US, backward_call_s=20 * US, backward_op_s=3 * US,
                             optimizer_step_s=15 * US, optimizer_param_s=1 * US)
    truth = dataclasses.replace(base, overheads=dict(base.overheads, event_s=0.8 * US, conv_train_s=40 * US),
                                train_host_extra=1.5, conv_forward_extra=0.25, backward_extra=0.3)
    models = [(step["latency_s"], row) for step, row in _reference_steps_of(truth)]
    fitted = with_composition(base, models)
    assert fitted.overheads["conv_train_s"] == pytest.approx(40 * US, rel=1e-6)
    assert fitted.train_host_extra == pytest.approx(1.5, rel=1e-6)
    assert fitted.conv_forward_extra == pytest.approx(0.25, rel=1e-6)
    assert fitted.backward_extra == pytest.approx(0.3, rel=1e-6)
    assert fitted.overheads["event_s"] == pytest.approx(0.8 * US, rel=1e-6) and fitted.model_error_rel < 1e-9
    # the report's features are what the terms scale: each step's gap over its uncorrected cost is theirs
    for line in fitted.meta["reference_models"]:
        f = line["features"]
        gap = (1.5 * f["autograd_s"] + 0.8 * US * f["host_events"] + 0.25 * f["conv_forward_s"]
               + 0.3 * f["backward_kernels_s"] + 40 * US * f["conv_trains"])
        assert line["measured_s"] - line["uncorrected_s"] == pytest.approx(gap, rel=1e-6, abs=1e-12)


def test_the_forward_terms_are_fitted_on_forward_steps_alone():
    """A training step's autograd left unexplained (its steps measured 30% slower than the truth's) moves
    the training terms, not the host-event cost or the convolutions' share a forward pass is costed with."""
    base = synthetic_profile(dispatch_s=2 * US, flop_rate=5e10, bandwidth=2e10, module_call_s=1 * US,
                             grad_record_s=0.5 * US, backward_call_s=20 * US, backward_op_s=3 * US,
                             optimizer_step_s=15 * US, optimizer_param_s=1 * US)
    truth = dataclasses.replace(base, overheads=dict(base.overheads, event_s=0.8 * US), train_host_extra=1.5,
                                conv_forward_extra=0.25, backward_extra=0.3)
    steps = _reference_steps_of(truth)
    slower = with_composition(base, [(step["latency_s"] * (1.3 if row["name"].endswith("/train") else 1.0), row)
                                     for step, row in steps])
    assert slower.overheads["event_s"] == pytest.approx(0.8 * US, rel=1e-6)
    assert slower.conv_forward_extra == pytest.approx(0.25, rel=1e-6)
    assert slower.train_host_extra > 1.5 and slower.backward_extra > 0.3


def test_the_interval_is_the_reference_models_leave_one_out_error_at_its_coverage():
    """Measured steps the terms cannot explain (each scaled by its own factor): the median leave-one-out
    error is ``model_error_rel``, the 80% one of the forward steps ``interval_rel`` and of the training
    steps ``train_interval_rel``, and a forward pass's and a training step's interval are that wide."""
    from crossover.opcost.composition import INTERVAL_COVERAGE

    base = synthetic_profile(dispatch_s=2 * US, flop_rate=5e10, bandwidth=2e10, module_call_s=1 * US,
                             grad_record_s=0.5 * US, backward_call_s=20 * US, backward_op_s=3 * US,
                             optimizer_step_s=15 * US, optimizer_param_s=1 * US)
    steps = _reference_steps_of(base)
    factors = [1.0, 1.3, 0.8, 1.1, 0.95, 1.5, 1.02, 0.7][:len(steps)] * (len(steps) // 8 + 1)
    fitted = with_composition(base, [(step["latency_s"] * f, row) for (step, row), f in zip(steps, factors)])
    report = fitted.meta["reference_models"]
    errors = [abs(r["leave_one_out_error"] if "leave_one_out_error" in r else r["error"]) for r in report]
    assert {r["model"] for r in report if r.get("held_out")} == set(REFERENCE_MODELS) - set(FIT_REFERENCES)
    assert all("leave_one_out_error" in r for r in report if not r.get("held_out"))
    moved = [(step["latency_s"] * f * (3.0 if row["name"].split("/")[0] not in FIT_REFERENCES else 1.0), row)
             for (step, row), f in zip(steps, factors)]
    assert with_composition(base, moved).meta["composition_fit"] == fitted.meta["composition_fit"]  # not fitted
    assert fitted.model_error_rel == pytest.approx(float(np.median(errors)))
    forward = [e for e, r in zip(errors, report) if r["workload"] == "forward"]
    train = [e for e, r in zip(errors, report) if r["workload"] == "train"]
    assert len(forward) == len(train) == 2 * len(REFERENCE_MODELS)  # each kind at one sample and a batch
    assert fitted.interval_rel == pytest.approx(float(np.quantile(forward, INTERVAL_COVERAGE)))
    assert fitted.train_interval_rel == pytest.approx(float(np.quantile(train, INTERVAL_COVERAGE)))
    assert fitted.interval_rel != pytest.approx(fitted.train_interval_rel)
    model = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 10))
    table, calls = trace_step(model, (64,), 8, "forward")
    step = step_prediction(fitted, table.to_dict("records"), module_calls=calls, n_params=4, param_bytes=4 * 4810)
    assert step["latency_high_s"] / step["latency_s"] - 1 == pytest.approx(max(fitted.interval_rel,
                                                                                   fitted.noise_floor_rel))
    older = dataclasses.replace(fitted, interval_rel=0.0)  # a profile from before: the median
    step = step_prediction(older, table.to_dict("records"), module_calls=calls, n_params=4, param_bytes=4 * 4810)
    assert step["latency_high_s"] / step["latency_s"] - 1 == pytest.approx(fitted.model_error_rel)
    trained = trace_step(model, (64,), 8, "train")  # its loss ops, which no primitive covers, widen it more

    def train_high(profile):
        step = step_prediction(profile, trained[0].to_dict("records"), module_calls=trained[1], n_params=4,
                               param_bytes=4 * 4810)
        return step["latency_high_s"], step["latency_s"]

    wider, latency = train_high(dataclasses.replace(fitted, train_interval_rel=fitted.train_interval_rel + 0.1))
    assert wider - train_high(fitted)[0] == pytest.approx(0.1 * latency)  # the training steps' width
    assert train_high(dataclasses.replace(fitted, interval_rel=fitted.interval_rel + 0.1)) == train_high(fitted)
    loaded = write_and_load(fitted)
    assert (loaded.interval_rel, loaded.train_interval_rel) == (fitted.interval_rel, fitted.train_interval_rel)


def write_and_load(profile):
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        write_profile(folder, profile)
        return load_profile(folder)


def test_a_gpu_composition_fits_only_the_host_terms():
    base = synthetic_profile("cuda", dispatch_s=0.5 * US, launch_s=5 * US, flop_rate=1e15, bandwidth=1e14,
                             module_call_s=1 * US,
                             grad_record_s=0.5 * US, backward_call_s=20 * US, backward_op_s=3 * US,
                             optimizer_step_s=15 * US, optimizer_param_s=1 * US, sync_s=5 * US)
    truth = dataclasses.replace(base, overheads=dict(base.overheads, event_s=1 * US), train_host_extra=0.5)
    steps = _reference_steps_of(truth)
    assert all(step["host_s"] > 2 * step["device_s"] for step, _ in steps)  # launch-bound: the host terms add up
    fitted = with_composition(base, [(step["latency_s"], row) for step, row in steps])
    assert fitted.train_host_extra == pytest.approx(0.5, rel=1e-6)
    assert fitted.overheads["event_s"] == pytest.approx(1 * US, rel=1e-6)
    assert fitted.conv_forward_extra == 0 and fitted.backward_extra == 0
    assert max(abs(r["error"]) for r in fitted.meta["reference_models"]) < 1e-9


def test_extra_steps_are_timed_in_the_calibration_rounds_but_kept_apart():
    plan = dataclasses.replace(PLANS["smoke"], rounds=2, conv_batches=(1,), native_batches=(1,), sizes=(2**10,),
                               elementwise_ops=("add",), conv_channels=((1, 4, 3),), reduction_ops=("sum",),
                               reference_models=())
    calls = []
    run = measure_calibration("cpu", plan, extra_steps=[("mine", lambda: calls.append(1))])
    assert [v["round"] for v in run.extra_visits] == [0, 1] and all(v["key"] == "mine" for v in run.extra_visits)
    assert not any(r["key"] == "mine" for r in run.rows) and calls
    with pytest.raises(ValueError, match="extra step"):
        measure_calibration("cpu", plan, extra_steps=[(run.rows[1]["key"], lambda: None)])


@pytest.mark.parametrize("workload", ["forward", "train"])
def test_the_encoder_layers_trace_holds_the_ops_a_real_step_runs(workload):
    """In eval mode without grad an encoder layer takes PyTorch's fused path
    (``_transformer_encoder_layer_fwd``) on the CPU too; a training step runs the decomposed ops. The
    trace must record what the profiler sees a real step run, not the work the Python source suggests."""
    from crossover.measurement.module_rounds import example_input, make_module_step
    from crossover.opcost.module_predict import model_mode

    layer = nn.TransformerEncoderLayer(d_model=64, nhead=4, dim_feedforward=128, batch_first=True)
    step = make_module_step(layer, example_input((16, 64), 2), workload)
    step()
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        step()
    ran = {e.key for e in prof.key_averages() if e.key.startswith("aten::")}
    with model_mode(layer, workload == "train"):
        rows = trace_module(layer, torch.empty(2, 16, 64, device="meta"), workload).to_dict("records")
    traced = {"aten::" + r["op"].replace("aten.", "").split(".")[0] for r in rows if r.get("phase") != "optimizer"}
    fused = "aten::_transformer_encoder_layer_fwd"
    assert (fused in traced) == (fused in ran) == (workload == "forward")
    heavy = {"aten::addmm", "aten::mm", "aten::bmm", "aten::_transformer_encoder_layer_fwd",
             "aten::_native_multi_head_attention", "aten::native_layer_norm"}
    assert traced & heavy <= ran, sorted((traced & heavy) - ran)  # every costly op traced is one that ran


_VERBOSE_CONVS = """
import torch
torch.set_num_threads(2)
with torch.no_grad():
    for c_in, groups, side in ((3, 1, 32), (16, 16, 32), (32, 1, 8)):
        x = torch.randn(64, c_in, side, side)
        torch.nn.functional.conv2d(x, torch.randn(16 if groups == 1 else c_in, c_in // groups, 3, 3), None, 1, 1, 1, groups)
        print("conv done", flush=True)
"""


@needs_onednn
def test_onednn_buffers_are_the_reorders_onednn_reports():
    # ONEDNN_VERBOSE lists every reorder a convolution makes: the input's into blocks (absent for a first
    # layer of fewer than 16 channels) and the blocked output's back into the plain layout
    import subprocess
    import sys

    run = subprocess.run([sys.executable, "-c", _VERBOSE_CONVS], env=dict(__import__("os").environ, ONEDNN_VERBOSE="1"),
                         capture_output=True, text=True, timeout=120, check=True)
    calls = run.stdout.split("conv done")[:3]
    if not any("onednn_verbose" in c for c in calls):
        pytest.skip("this oneDNN prints no verbose lines")
    for (c_in, groups, side), lines in zip(((3, 1, 32), (16, 16, 32), (32, 1, 8)), calls):
        execs = [line.split(",") for line in lines.splitlines() if ",exec," in line]
        activation_reorders = [e for e in execs if e[5] == "reorder" and re.search(r"aBcd\d+b", ",".join(e))]  # not weights
        rows = trace_module(nn.Conv2d(c_in, 16 if groups == 1 else c_in, 3, padding=1, groups=groups),
                            torch.empty(64, c_in, side, side, device="meta"), "forward").to_dict("records")
        [row] = [r for r in rows if r["kind"] == "conv"]
        assert len(onednn_buffers(row, 2)) == len(activation_reorders), (c_in, groups, activation_reorders)


_PADDED_COPIES = """
import resource, torch
from crossover.measurement.allocator import settle_allocator
torch.set_num_threads(2)
settle_allocator()
conv = torch.nn.Conv1d(24, 24, 3, padding=1)
x = torch.randn(512, 24, 512)  # 24 MiB: under glibc's settled 31 MiB mmap threshold; 32 MiB with 32 channels
with torch.no_grad():
    for _ in range(3):
        conv(x)
    faulted = []
    for _ in range(8):  # the median call: now and then the heap grows its top, even with nothing mapped afresh
        before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        conv(x)
        faulted.append((resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) * resource.getpagesize())
    print(sorted(faulted)[4])
"""


@needs_onednn
def test_onednn_copies_pad_channels_to_whole_blocks_and_those_of_32_mib_fault_every_call():
    """oneDNN's blocked layout pads 24 channels to 32: the two 32 MiB copies of a ``Conv1d(24, 24, 3)`` over
    512 x 512 steps are mapped afresh at every call (faulted in), where unpadded 24 MiB copies would come
    from the heap. Counted in a process of its own (glibc settled as a measurement is); and none in a
    process started with :data:`NO_FRESH_PAGES_ENV` (the median call: now and then the heap grows its top)."""
    import platform
    import subprocess
    import sys

    assert onednn_copies((512, 24, 512), 24, (512, 24, 512)) == [(512, 32, 512), (512, 32, 512)]
    assert onednn_copies((8, 3, 32, 32), 3, (8, 40, 32, 32)) == [(8, 48, 32, 32)]  # a first layer's plain input
    assert onednn_copies((8, 40, 100), 1, (8, 40, 100)) == [(8, 48, 100), (8, 48, 100)]  # depthwise
    if platform.libc_ver()[0] != "glibc":
        pytest.skip("glibc's mmap threshold is what this counts against")
    run = subprocess.run([sys.executable, "-c", _PADDED_COPIES], capture_output=True, text=True, timeout=120,
                         check=True, env=dict(__import__("os").environ, PYTHONPATH=str(Path(__file__).parents[1])))
    per_call = float(run.stdout.split()[-1])
    padded = 4.0 * 512 * 32 * 512
    assert per_call >= 1.5 * padded, per_call  # both copies (2 x 32 MiB) faulted in, call after call
    # glibc told to map nothing afresh and give nothing back (what a prediction's low end assumes): none
    from crossover.measurement.allocator import NO_FRESH_PAGES_ENV

    env = dict(__import__("os").environ, PYTHONPATH=str(Path(__file__).parents[1]), **NO_FRESH_PAGES_ENV)
    kept = subprocess.run([sys.executable, "-c", _PADDED_COPIES], capture_output=True, text=True, timeout=120,
                          check=True, env=env)
    assert float(kept.stdout.split()[-1]) < 0.05 * padded, kept.stdout


def test_the_calibration_counts_a_primitives_onednn_buffers_as_a_model_does():
    out = 4.0 * 64 * 16 * 32 * 32
    assert fresh_buffers("conv_depthwise", "conv_depthwise", 0, (64, 16, 32, 32)) == [out, out, out]
    assert fresh_buffers("conv", "conv2d", 0, (64, 3, 16, 3, 32)) == [out, out]  # a first layer: plain input
    assert fresh_buffers("conv", "conv2d", 0, (64, 16, 16, 3, 32)) == [out, out, out]
    assert fresh_buffers("conv", "conv2d_native", 0, (1, 16, 16, 3, 32)) == [out / 64]
    big = dict(family="conv_depthwise", name="conv_depthwise", n=0, shape="512x16x32x32")  # 32 MiB each
    assert _without_page_faults({"k": (40e-3, 0.1, big)}, fresh_byte_s=0.1e-9)["k"][0] == pytest.approx(
        40e-3 - 3 * 2**25 * 0.1e-9)


def test_a_1d_convolution_is_costed_on_the_1d_grids_where_the_profile_has_them():
    """A 1-D convolution row takes the ``conv1d`` grid at its output's length (the native one for a single
    sequence PyTorch runs natively); a profile without 1-D grids costs it on the 2-D grids, as before."""
    import dataclasses

    from crossover.opcost.profiles import Grid, synthetic_profile
    from crossover.opcost.trace import trace_module

    two_d = Grid((64.0, 65536.0), (100.0, 100000.0), ((5e-6, 5e-4), (5e-4, 5e-2)))
    base = synthetic_profile("cpu", dispatch_s=1e-6)
    base = dataclasses.replace(base, threads=2, grids={**base.grids, "conv@16": two_d, "conv_native@16": two_d})
    one_d = Grid((200.0, 51200.0), (100.0, 100000.0), ((2e-6, 2e-4), (2e-4, 2e-2)))
    native = Grid((200.0, 400.0), (100.0, 100000.0), ((1e-6, 1e-4), (2e-6, 2e-4)))
    with_1d = dataclasses.replace(base, grids={**base.grids, "conv1d@200": one_d, "conv1d_native@200": native})
    conv = torch.nn.Conv1d(8, 32, 5, padding=2)
    for batch, grid in ((8, one_d), (1, native)):
        rows = [r for r in trace_module(conv, torch.empty(batch, 8, 256, device="meta"), "forward").to_dict("records")
                if r["kind"] == "conv"]
        (row,) = rows
        assert conv_backend(row, 2) == ("native" if batch == 1 else "mkldnn")
        m, kn = batch * 256.0, 8 * 5 * 32.0
        assert op_cost(with_1d, row).host_s == pytest.approx(grid(m, kn))
        assert op_cost(base, row).host_s == pytest.approx(two_d(m, kn))
        assert (op_cost(with_1d, row).family, op_cost(base, row).family) == ("conv1d", "conv")
    # the composition's conv_forward_extra, fitted on the reference CNN's 2-D convolutions, scales a 1-D
    # convolution costed on the 2-D grids (as before the 1-D primitives), not one costed on its own grid
    from crossover.opcost.module_predict import step_prediction

    for profile, scaled in ((with_1d, False), (base, True)):
        extra = dataclasses.replace(profile, conv_forward_extra=0.5)
        steps = [step_prediction(p, rows, module_calls=1, n_params=2, param_bytes=0)["latency_s"] for p in (profile, extra)]
        assert (steps[1] > steps[0] * 1.1) == scaled
