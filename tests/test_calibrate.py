"""crossover calibrate: a tiny calibration writes a readable profile; overheads are derived as documented."""

import dataclasses
import json

import numpy as np
import pytest
import torch

from crossover.opcost.conv_neighbours import NEIGHBOUR_VISITS, NEIGHBOURS, neighbour_points
from crossover.opcost.calibrate import build_profile, read_calibration, run_calibration
from crossover.measurement.environment import llc_bytes
from crossover.opcost.calibration_plan import FRESH_PROBE_BYTES, PLANS, make_step, points
from crossover.opcost.profiles import load_profile
from test_cli import assert_clean_error


TINY = dataclasses.replace(PLANS["smoke"], rounds=2, conv_batches=(1,), sizes=(2**10,), elementwise_ops=("add",))


def test_tiny_calibration_writes_a_readable_profile(tmp_path):
    profile = run_calibration("cpu", tmp_path / "p", plan=TINY, machine="tiny")
    loaded = load_profile(tmp_path / "p")
    assert loaded.machine == "tiny" and loaded.device == "cpu" and loaded.meta["plan"] == "smoke"
    assert loaded.overheads == pytest.approx(profile.overheads)
    assert loaded.overheads["dispatch_s"] > 0 and loaded.overheads["view_s"] > 0
    assert set(loaded.curves) >= {"elementwise", "reduction", "attention"}
    assert loaded.grids["matmul"].m == (1, 16) and loaded.grids["matmul"].kn == (256, 4096)
    assert set(loaded.grids) == {"matmul", "matmul_cold", "matmul_outer", "conv@8", "conv_backward@8",
                                 "conv_native@8", "conv_backward_native@8"} and "pool" in loaded.curves
    # 1 image of 8 × 8; oneDNN's K·N: 1 and 2 plain input channels, 4 outputs padded to a block of 16
    assert loaded.grids["conv@8"].m == (64,) and loaded.grids["conv@8"].kn == (1 * 9 * 16, 2 * 9 * 16)
    assert loaded.grids["conv_backward@8"].kn == (72, 144) and loaded.grids["conv_native@8"].kn == (36, 72)  # FLOPs
    assert loaded.grids["conv_native@8"].m == (64, 128)  # 1 and 2 images
    assert loaded.grids["matmul_outer"].m == (1, 8) and loaded.grids["matmul_outer"].kn == (256, 4096)  # K × M·N
    assert loaded.cache_bytes > 0 and loaded.overheads["fresh_byte_s"] >= 0
    assert loaded.llc_bytes == llc_bytes() and loaded.meta["environment"]["cpu_model"]
    rows = read_calibration(tmp_path / "p")
    assert {r["round"] for r in rows} == {0, 1} and sum(r["reference"] for r in rows) == 2
    threads = loaded.threads  # the primitives of the threads the calibration ran at (a convolution among others: below 3)
    assert len(rows) == 2 * (len(points(TINY, "cpu", threads)) + 1 + (NEIGHBOUR_VISITS - 1) * len(neighbour_points(threads)))
    rebuilt = build_profile(rows, device="cpu", machine="tiny", llc=loaded.llc_bytes, threads=loaded.threads,
                            cache_bytes=loaded.cache_bytes)  # as rebuild_profile does: the reuse term reads both
    assert rebuilt.overheads == pytest.approx(loaded.overheads)
    with pytest.raises(Exception, match="already holds a profile"):
        run_calibration("cpu", tmp_path / "p", plan=TINY)


def _row(name, seconds, *, n=0, family="overhead", m=0, k=0, x=0.0, cold=False, round_=0, reference=False):
    return dict(round=round_, sequence=0, reference=reference, key=f"{family}/{name}/{m}x{k}x{n}/{cold}/{x}",
                family=family, name=name, m=m, k=k, n=k if family == "matmul" else n, x=x, cold=cold, shape="",
                median_s=seconds,
                calls_per_repeat=1, raw_times_s=";".join([repr(seconds)] * 3))


def test_each_reference_step_is_visited_as_often_a_round_as_the_plan_says(tmp_path):
    """The quick and full plans visit each reference step twice a round (a 2-thread visit on the VM runs
    in one of the host's modes for its whole length); the visits pool under the step's key."""
    assert PLANS["quick"].reference_visits == PLANS["full"].reference_visits == 2
    twice = dataclasses.replace(TINY, reference_visits=2)
    run_calibration("cpu", tmp_path / "p", plan=twice, machine="tiny")
    rows = read_calibration(tmp_path / "p")
    models = [r for r in rows if r["family"] == "model"]
    per_round = {}
    for r in models:
        per_round[(r["round"], r["key"])] = per_round.get((r["round"], r["key"]), 0) + 1
    assert set(per_round.values()) == {2} and len(per_round) == 2 * 2  # 2 rounds x (forward, train)
    threads = load_profile(tmp_path / "p").threads
    neighbours = (NEIGHBOUR_VISITS - 1) * len(neighbour_points(threads))  # a convolution among others: visited more
    assert len(rows) == 2 * (len(points(twice, "cpu", threads)) + 1 + 2 + neighbours)
    assert sum(r["family"] == NEIGHBOURS for r in rows) == 2 * NEIGHBOUR_VISITS * len(neighbour_points(threads))
    assert load_profile(tmp_path / "p").meta["reference_models"]  # pooled: one report per step


def test_a_step_visited_twice_a_round_keeps_each_rounds_quicker_visit():
    """Pooled whole, one fast visit of 16 falls under the 10th percentile a primitive's one fast visit of
    8 reaches; keeping each round's quicker visit gives the step the fast mode as a primitive gets it."""
    from crossover.opcost.calibrate import _statistics

    slow, fast = 110e-6, 62e-6
    rows = [_row("cnn/forward", slow, family="model", round_=r) for r in range(8) for _ in range(2)]
    rows[5] = _row("cnn/forward", fast, family="model", round_=2)  # round 2's second visit, the one fast one
    primitive = [_row("conv", fast if r == 2 else slow, family="conv", round_=r) for r in range(8)]
    stats = _statistics(rows + primitive)
    assert stats[rows[0]["key"]][0] == pytest.approx(stats[primitive[0]["key"]][0])
    assert stats[rows[0]["key"]][0] < 0.75 * slow
    assert _statistics(rows[:1] + rows[2:3])[rows[0]["key"]][0] == pytest.approx(slow)


def test_overheads_are_derived_from_the_chains():
    us = 1e-6
    rows = [_row("dispatch", 1 * us), _row("view", 0.5 * us), _row("module_call", 0.8 * us),
            # no_grad chains: 1 µs per multiplication; recording adds 0.5 µs per op
            _row("chain_nograd", 1.2 * us, n=1), _row("chain_nograd", 17.2 * us, n=17),
            _row("chain_grad", 1.7 * us, n=1), _row("chain_grad", 25.7 * us, n=17),
            # backward: 30 µs per call, 1 µs (its mul) + 2 µs (the engine) per op, + sum and ones_like (1 µs each)
            _row("chain_train", 1.7 * us + 30 * us + 3 * us + 2 * us, n=1),
            _row("chain_train", 25.7 * us + 30 * us + 17 * 3 * us + 2 * us, n=17),
            # SGD: 10 µs per step, 1 µs (add_) + 0.5 µs per parameter
            _row("sgd", 11.5 * us, n=1), _row("sgd", 10 * us + 16 * 1.5 * us, n=16),
            # page faults: 0.25 ns per byte of the 40 MiB probe
            _row("fresh_fill", 1e-3 + 0.25e-9 * FRESH_PROBE_BYTES), _row("reuse_fill", 1e-3)]
    rows += [_row("addmm", 1e-6 * m * k / 64, family="matmul", m=m, k=k, x=2.0 * m * k * k) for m in (1, 64)
             for k in (8, 64)]
    rows += [_row("add", 1e-6 + x / 1e10, family="elementwise", x=x) for x in (1e3, 1e6)]
    profile = build_profile(rows, device="cpu", machine="m")
    o = profile.overheads
    assert o["dispatch_s"] == pytest.approx(us) and o["view_s"] == pytest.approx(0.5 * us)
    assert o["grad_record_s"] == pytest.approx(0.5 * us)
    assert o["backward_op_s"] == pytest.approx(2 * us) and o["backward_call_s"] == pytest.approx(30 * us)
    assert o["optimizer_param_s"] == pytest.approx(0.5 * us) and o["optimizer_step_s"] == pytest.approx(10 * us)
    assert o["fresh_byte_s"] == pytest.approx(0.25e-9)
    assert profile.grids["matmul"](64, 64 * 64) == pytest.approx(64e-6)
    assert profile.peak_bandwidth == pytest.approx(1e6 / (1e-6 + 1e6 / 1e10))


def test_a_layer_primitives_module_call_is_not_counted_twice():
    # the bag's primitive is bag(ids): a module call (a model pays module_call_s per module) and the arange
    # F.embedding_bag makes of a 2-D input's offsets (a trace row of its own) come off its curve; the
    # depthwise convolution's conv(x) loses its module call; a GPU's curves keep both
    us = 1e-6
    rows = [_row("dispatch", 1 * us), _row("view", 0.5 * us), _row("module_call", 0.8 * us)]
    rows += [_row(f"chain_{m}", 1e-6 * c, n=c) for m in ("nograd", "grad", "train") for c in (1, 17)]
    rows += [_row("sgd", 1e-6 * c, n=c) for c in (1, 16)] + [_row("addmm", 1e-6, family="matmul", m=1, k=8, x=128.0)]
    rows += [_row(name, 20 * us + x * 1e-12, family=family, x=x) for family, name in
             (("gather", "embedding_bag"), ("conv_depthwise", "conv_depthwise"), ("pool1d", "max_pool1d"),
              ("batch_norm", "batch_norm")) for x in (1e4, 1e6)]
    cpu = build_profile(rows, device="cpu", machine="m")
    assert cpu.curves["gather"](1e4) == pytest.approx(20 * us + 1e-8 - 1.8 * us)
    assert cpu.curves["conv_depthwise"](1e4) == pytest.approx(20 * us + 1e-8 - 0.8 * us)
    assert cpu.curves["pool1d"](1e4) == pytest.approx(20 * us + 1e-8)  # F.max_pool1d: no module
    # norm(x): its module call and the empty row its trace costs as a view
    assert cpu.curves["batch_norm"](1e4) == pytest.approx(20 * us + 1e-8 - 0.8 * us - 0.5 * us)
    gpu = build_profile(rows + [_row("sync", 5 * us)], device="cuda", machine="m")
    assert gpu.curves["gather"](1e4) == pytest.approx(20 * us + 1e-8)
    # past its largest weights a CPU's product streams them at the edge cell's rate; a GPU's runs at its best
    assert cpu.grids["matmul"].weights_stream and not gpu.grids["matmul"].weights_stream


def test_drifted_rounds_are_reported_and_pooled_all_the_same():
    """A round whose drift reference read slow is reported, left out of the noise floor, and pooled into every cost:
    the fast repeats a host-bound primitive made in it set its 10th percentile (on the AMD VM the reference's slow
    rounds were not the slow ones of such primitives)."""
    base = [_row(n, 1e-6, n=c) for n, c in (("dispatch", 0), ("view", 0), ("module_call", 0))]
    base += [_row(f"chain_{m}", 1e-6 * c, n=c) for m in ("nograd", "grad", "train") for c in (1, 17)]
    base += [_row("sgd", 1e-6 * c, n=c) for c in (1, 16)] + [_row("addmm", 1e-6, family="matmul", m=1, k=8, x=128.0)]
    quiet = [dict(r, round=0) for r in base] + [_row("reference", 1e-3, family="reference", reference=True)]
    slow = [dict(r, round=1, raw_times_s="5e-7;5e-7;5e-7") for r in base]  # fast values in a slow round...
    slow += [_row("reference", 2e-3, family="reference", reference=True, round_=1)]  # ...which drifted
    steady = [dict(r, round=2) for r in base] + [_row("reference", 1e-3, family="reference", reference=True, round_=2)]
    profile = build_profile(quiet + slow + steady, device="cpu", machine="m")
    assert profile.meta["drifted_rounds"] == [1]
    assert profile.overheads["dispatch_s"] == pytest.approx(np.quantile([1e-6] * 6 + [5e-7] * 3, 0.1))
    assert profile.noise_floor_rel == 0.0  # the quiet rounds agree; the drifted one's slowness is no noise of a p10
    assert profile.meta["rounds_kept"] == 3  # a cost pools rounds 0-2: its spread over them is shrunk by sqrt(3)
    wobbly = [dict(r, round=3) for r in base] + [_row("reference", 1.2e-3, family="reference", reference=True, round_=3)]
    profile = build_profile(quiet + slow + steady + wobbly, device="cpu", machine="m")
    assert profile.meta["drifted_rounds"] == [1]  # 1.2 times the quiet level is under the drift limit
    assert profile.noise_floor_rel == pytest.approx((0 + 0 + 0.2) / 3)  # about the quiet rounds' median, 1e-3


def test_every_primitive_builds_and_runs():
    for point in points(TINY):
        make_step(point, "cpu", llc=2**16)()


def test_calibrate_cli(cli_in_process, tmp_path):
    out = tmp_path / "cal"
    result = cli_in_process("calibrate", "--smoke", "--rounds", 1, "--out", out, "--quiet", "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["schema"]["name"] == "crossover.profile" and (out / "profile.json").is_file()
    assert_clean_error(cli_in_process("calibrate", "--smoke", "--out", out), "already holds a profile")
    text = cli_in_process("calibrate", "--smoke", "--rounds", 1, "--out", out, "--force", "--quiet")
    assert text.returncode == 0 and "inside a model (fitted on the reference models)" in text.stdout
    assert "per host event, " in text.stdout and "per convolution of a training step; page faults" in text.stdout
    if not torch.cuda.is_available():
        assert_clean_error(cli_in_process("calibrate", "--device", "cuda", "--out", tmp_path / "gpu"), "CUDA is not available")


def _cuda_rows(us=1e-6):
    rows = [_row("dispatch", 7 * us), _row("view", 1 * us), _row("module_call", 1 * us), _row("sync", 5 * us),
            _row("launch_sync", 27 * us)]
    rows += [_row(f"chain_{m}", 7 * us * c, n=c) for m in ("nograd", "grad", "train") for c in (1, 17)]
    rows += [_row("sgd", 7 * us * c, n=c) for c in (1, 16)]
    rows += [_row("addmm", 11 * us, family="matmul", m=m, k=k, x=2.0 * m * k * k) for m in (1, 64) for k in (8, 64)]
    rows += [_row("add", 7 * us, family="elementwise", x=x) for x in (1e3, 1e6)]
    return rows


def test_a_gpu_calibration_times_bias_free_products_by_rows():
    """The CUDA plan times ``x @ w.t()`` at each of its ``host_mm_m`` rows (tiny kernels: the host's time
    per call); the profile holds them as the ``matmul_host`` grid (rows × K·N); a CPU plan has none."""
    plan = PLANS["quick"]
    host = [p for p in points(plan, "cuda") if p.family == "matmul_host"]
    assert sorted({p.m for p in host}) == sorted(plan.host_mm_m)
    assert sorted({p.k * p.n for p in host}) == sorted(k * k for k in plan.host_mm_k)
    assert not [p for p in points(plan, "cpu") if p.family == "matmul_host"]
    assert tuple(make_step(host[-1], "cpu")().shape) == (host[-1].m, host[-1].n)
    us = 1e-6
    rows = _cuda_rows() + [_row("mm", (12 if m < 32 else 15) * us, family="matmul_host", m=m, k=k, n=k,
                                x=2.0 * m * k * k) for m in (1, 64) for k in (64, 128)]
    grid = build_profile(rows, device="cuda", machine="gpu").grids["matmul_host"]
    assert grid.m == (1, 64) and grid.kn == (4096, 16384)
    assert grid(1, 4096) == pytest.approx(12 * us) and grid(64, 16384) == pytest.approx(15 * us)


def test_a_calibration_times_1d_convolutions_into_grids_of_their_own():
    """The quick plan times 1-D convolutions (none of the zoo's shapes) as PyTorch runs them and, on a CPU,
    on the native path; each runs, and the profile holds them as ``conv1d@L`` grids over the batch's
    output steps × ``C_in·k·C_out``."""
    from crossover.opcost.conv_primitives import CONV1D_CHANNELS, CONV1D_LENGTH

    cpu = [p for p in points(PLANS["quick"], "cpu") if p.family == "conv1d"]
    assert {p.name for p in cpu} == {"conv1d", "conv1d_native"}
    assert {p.name for p in points(PLANS["quick"], "cuda") if p.family == "conv1d"} == {"conv1d"}
    assert (8, 32, 5) not in CONV1D_CHANNELS and (32, 64, 5) not in CONV1D_CHANNELS  # the zoo's 1-D CNN's
    for point in cpu[:2] + cpu[-1:]:
        batch, c_in, c_out, kernel, length = point.shape
        assert tuple(make_step(point, "cpu")().shape) == (batch, c_out, length)
    us = 1e-6
    rows = [r for r in _cuda_rows() if r["name"] not in ("sync", "launch_sync")]
    for point in cpu:
        row = _row(point.name, 10 * us + point.x * 1e-11, family="conv1d", m=point.m, x=point.x)
        rows.append(dict(row, key=point.key, shape="x".join(map(str, point.shape))))
    profile = build_profile(rows, device="cpu", machine="m")
    grid = profile.grids[f"conv1d@{CONV1D_LENGTH}"]
    c_in, c_out, kernel = CONV1D_CHANNELS[0]
    m = 4 * CONV1D_LENGTH
    assert grid(m, c_in * kernel * c_out) == pytest.approx(10 * us + 2.0 * m * c_in * kernel * c_out * 1e-11)
    assert f"conv1d_native@{CONV1D_LENGTH}" in profile.grids and "conv1d" not in profile.curves


def test_a_gpu_profile_is_composed_for_synchronised_steps():
    """step_sync_s is a synchronised launch less its dispatch; the composition is fitted on the
    reference models' synchronised steps, not on the queued ones."""
    us = 1e-6
    rows = _cuda_rows()
    for family, seconds in (("model", 40 * us), ("model_sync", 90 * us)):
        rows.append(dict(_row("mlp/forward", seconds, family=family, m=1), key=f"{family}/mlp/forward/1x512",
                         shape="1x512"))
    profile = build_profile(rows, device="cuda", machine="gpu")
    assert profile.overheads["step_sync_s"] == pytest.approx(20 * us) and profile.overheads["sync_s"] == 5 * us
    (report,) = profile.meta["reference_models"]
    assert report["measured_s"] == pytest.approx(90 * us) and report["predicted_s"] == pytest.approx(90 * us, rel=1e-3)
    # a calibration from before the synchronised primitives: the queued steps and sync_s, as before
    old = [r for r in rows if r["family"] != "model_sync" and r["name"] != "launch_sync"]
    profile = build_profile(old, device="cuda", machine="gpu")
    assert "step_sync_s" not in profile.overheads
    assert profile.meta["reference_models"][0]["measured_s"] == pytest.approx(40 * us)


def test_past_a_gpu_convolution_grid_the_extra_flops_run_at_its_best_rate():
    """A GPU's convolution grid whose edge cells are launch-bound (every cell 20 µs: the host's issue rate)
    costs a larger convolution's extra FLOPs at the grid's best rate, not at the edge cell's own; a CPU's
    grid keeps the edge cell's rate (its time there is the kernel's own work)."""
    us = 1e-6
    rows = _cuda_rows()
    for m in (256, 1024):
        for kn in (200, 2000):
            seconds = 20 * us if (m, kn) != (1024, 2000) else 40 * us  # one compute-bound cell: 204.8 GFLOP/s
            row = _row("conv2d", seconds, family="conv", m=m, x=2.0 * m * kn)
            rows.append(dict(row, key=row["key"] + f"/{kn}", shape="1x3x16x16"))
    gpu = build_profile(rows, device="cuda", machine="gpu").grids["conv@16"]
    best = 2.0 * 1024 * 2000 / (40 * us)
    assert gpu.rate == pytest.approx(best) and gpu.best_rate == pytest.approx(best)
    # an output 8x the grid's largest at its smallest weight: the edge cell is 20 µs at 20.5 GFLOP/s
    extra = 2.0 * (8 * 1024 - 1024) * 200
    assert gpu(8 * 1024, 200) == pytest.approx(20 * us + extra / best)
    cpu = build_profile([r for r in rows if r["name"] not in ("sync", "launch_sync")], device="cpu",
                        machine="m").grids["conv@16"]
    assert cpu.rate is None and cpu(8 * 1024, 200) == pytest.approx(8 * 20 * us)


def test_a_gpu_profile_costs_products_past_its_grid_at_its_drift_references_rate():
    """On a GPU the drift reference (2048^3) runs faster per FLOP than any grid cell: the matrix grids'
    rate past their edge is the best of the two (the quiet rounds' reference), on a CPU the grid's own."""
    us = 1e-6
    rows = _cuda_rows()
    m = 2048
    flops = 2.0 * m**3
    for round_, seconds in enumerate((flops / 40e12, flops / 20e12)):  # the second round drifted (twice as slow)
        rows.append(dict(_row("addmm", seconds, family="reference", m=m, k=m, n=m, round_=round_, reference=True),
                         n=m))
    profile = build_profile(rows, device="cuda", machine="gpu")
    assert profile.grids["matmul"].rate == pytest.approx(40e12, rel=1e-6) and profile.peak_flop_rate == pytest.approx(40e12)
    grid_best = max(2.0 * a * b / profile.grids["matmul"](a, b) for a in profile.grids["matmul"].m
                    for b in profile.grids["matmul"].kn)
    assert grid_best < 1e12  # the grid's own cells are launch-bound (11 us each)


def test_the_gpu_drift_reference_times_the_device():
    from crossover.opcost.calibration_plan import GPU_REFERENCE_MNK, reference_point

    cpu, gpu = reference_point("cpu"), reference_point("cuda")
    assert (gpu.m, gpu.k, gpu.n) == GPU_REFERENCE_MNK and 2 * gpu.m * gpu.k * gpu.n > 1e10  # ~0.3 ms on an H100
    assert (cpu.m, cpu.k, cpu.n) == (64, 256, 256)
    keys = [p.key for p in points(PLANS["quick"], "cuda")]
    assert "overhead/launch_sync/0x0x0" in keys and sum(k.startswith("model_sync/") for k in keys) == 2 * len(PLANS["quick"].reference_models)
    assert not any(k.startswith("model_sync/") or "launch_sync" in k for k in (p.key for p in points(PLANS["quick"])))


def test_the_recurrent_primitive_runs_where_it_is_built():
    from crossover.opcost.calibration_plan import Point
    from crossover.opcost.gpu_ops import gru_flops

    point = next(p for p in points(PLANS["quick"], "cuda") if p.family == "rnn")
    b, t, h = point.shape
    assert point.x == gru_flops(b, t, h, h) == 2.0 * b * t * 2 * h * 3 * h
    step = make_step(Point("rnn", "gru", shape=(2, 5, 8)), "cpu")  # a GPU's step, built on the CPU
    out, state = step()
    assert out.shape == (2, 5, 8) and state.shape == (1, 2, 8)
    # timed in eval mode, as a forward prediction's model runs (cuDNN's inference forward, not its training one)
    gru = next(c.cell_contents for c in step.__closure__ if isinstance(c.cell_contents, torch.nn.GRU))
    assert not gru.training


def test_the_gpu_recurrent_curve_holds_a_wide_batch_at_a_narrow_width():
    """A GPU's GRU step spreads its batch over the device and lengthens with its hidden width. With a
    primitive time of that shape (batch free), the curve through the quick plan's shapes costs the zoo's
    GRU (32 -> 64, 50 steps) at batch 512 near its truth; without the plan's wide batch at width 64, the
    affine chord toward the 256-wide shape puts it half as high again (the H200's third visit: 482 µs
    predicted, 257-260 measured)."""
    import dataclasses

    from crossover.opcost.gpu_ops import gru_flops
    from crossover.opcost.op_costs import op_cost
    from crossover.opcost.profiles import Curve, synthetic_profile

    def truth_s(batch, steps, width, hidden):  # a call's floor, then each step by its hidden width alone
        return 100e-6 + steps * (1e-6 + 0.02e-6 * hidden)

    row = dict(op="aten._cudnn_rnn.default", kind="rnn", launches=2, flops=0.0, bytes=0.0,
               rnn=dict(batch=512, input=32, hidden=64, gates=3, layers=1, directions=1, steps=50))
    gpu = synthetic_profile("cuda", dispatch_s=5e-6, flop_rate=1e12)

    def device_s(shapes):
        shapes = sorted(shapes, key=lambda s: gru_flops(s[0], s[1], s[2], s[2]))
        curve = Curve.fit([gru_flops(b, t, h, h) for b, t, h in shapes], [truth_s(b, t, h, h) for b, t, h in shapes])
        return op_cost(dataclasses.replace(gpu, curves=dict(gpu.curves, rnn=curve)), row).device_s

    shapes = PLANS["quick"].rnn_shapes
    truth = truth_s(512, 50, 32, 64)
    assert device_s(shapes) == pytest.approx(truth, rel=0.2)
    narrow_wide = [s for s in shapes if s[0] >= 64 and s[2] == 64]
    assert narrow_wide and device_s([s for s in shapes if s not in narrow_wide]) > 1.4 * truth
