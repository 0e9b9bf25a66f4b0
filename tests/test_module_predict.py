"""crossover.opcost.module_predict and crossover.opcost.op_costs: predictions compose as they should on synthetic profiles."""

import dataclasses
import math

import numpy as np
import pytest
import torch
from torch import nn

import crossover
from crossover.measurement.toy_model import ResidualMLP
from crossover.opcost.module_predict import module_crossover, predict_module
from crossover.opcost.op_costs import attention_flops, op_cost
from crossover.opcost.profiles import (Curve, Grid, Profile, isotonic, load_profile, synthetic_profile,
                                       write_profile)
from crossover.opcost.trace import trace_module

US = 1e-6


def mnist_mlp():
    return nn.Sequential(nn.Flatten(), nn.Linear(784, 128), nn.ReLU(), nn.Linear(128, 10))


def launches(model, shape, workload="forward"):
    model.train(workload == "train")
    table = trace_module(model, torch.empty(shape, device="meta"), workload)
    return int(table["launches"].sum()), int((table["launches"] == 0).sum())


@pytest.mark.parametrize("workload", ["forward", "train"])
def test_dispatch_only_profile_costs_dispatch_times_launches(workload):
    profile = synthetic_profile(dispatch_s=10 * US)  # infinite FLOP rate and bandwidth, no other overheads
    for batch in (1, 64):
        frame = predict_module(mnist_mlp(), sample_shape=(1, 28, 28), batch_sizes=(batch,), profiles=[profile],
                               workload=workload)
        n, _ = launches(mnist_mlp(), (batch, 1, 28, 28), workload)
        assert frame["latency_s"].iloc[0] == pytest.approx(10 * US * n, rel=1e-9)
        assert frame["launches"].iloc[0] == n
        assert frame["bound"].iloc[0] == "launch" and frame["launch_share"].iloc[0] == pytest.approx(1.0)


def test_views_module_calls_and_training_overheads_add_up():
    profile = synthetic_profile(dispatch_s=10 * US, view_s=1 * US, module_call_s=2 * US)
    n, views = launches(mnist_mlp(), (8, 1, 28, 28))
    frame = predict_module(mnist_mlp(), sample_shape=(1, 28, 28), batch_sizes=(8,), profiles=[profile])
    # Sequential, Flatten, Linear, ReLU, Linear: five module calls
    assert frame["latency_s"].iloc[0] == pytest.approx(10 * US * n + 1 * US * views + 2 * US * 5, rel=1e-9)
    train = synthetic_profile(dispatch_s=10 * US, optimizer_step_s=7 * US, optimizer_param_s=3 * US,
                              backward_call_s=5 * US)
    n_train, _ = launches(mnist_mlp(), (8, 1, 28, 28), "train")
    frame = predict_module(mnist_mlp(), sample_shape=(1, 28, 28), batch_sizes=(8,), profiles=[train], workload="train")
    assert frame["latency_s"].iloc[0] == pytest.approx(10 * US * n_train + 5 * US + 7 * US + 4 * 3 * US, rel=1e-9)


def test_a_training_step_pays_conv_train_s_per_forward_convolution_and_a_forward_pass_does_not():
    """Two convolutions (LeNet-style): the training step rises by two prices, the forward pass and an MLP's
    training step by nothing."""
    cnn = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 8, 3, padding=1), nn.Flatten(),
                        nn.Linear(8 * 8 * 8, 10))
    base, priced = synthetic_profile(dispatch_s=2 * US), synthetic_profile(dispatch_s=2 * US, conv_train_s=50 * US)

    def latency(model, shape, profile, workload):
        return predict_module(model, sample_shape=shape, batch_sizes=(1,), profiles=[profile],
                              workload=workload)["latency_s"].iloc[0]

    gap = latency(cnn, (3, 8, 8), priced, "train") - latency(cnn, (3, 8, 8), base, "train")
    assert gap == pytest.approx(2 * 50 * US, rel=1e-9)
    assert latency(cnn, (3, 8, 8), priced, "forward") == pytest.approx(latency(cnn, (3, 8, 8), base, "forward"))
    assert latency(mnist_mlp(), (1, 28, 28), priced, "train") == pytest.approx(
        latency(mnist_mlp(), (1, 28, 28), base, "train"))


def test_bandwidth_and_flop_rate_compose_per_op():
    profile = synthetic_profile(dispatch_s=1 * US, flop_rate=1e10, bandwidth=1e9)
    relu = {"op": "aten.relu.default", "kind": "elementwise", "input_shapes": ((1000,),), "output_shapes": ((1000,),),
            "flops": 0, "bytes_read": 4000, "bytes_written": 4000, "launches": 1}
    assert op_cost(profile, relu).host_s == pytest.approx(1 * US + 8000 / 1e9)
    mm = {"op": "aten.mm.default", "kind": "matmul", "input_shapes": ((64, 256), (256, 512)),
          "output_shapes": ((64, 512),), "flops": 2 * 64 * 256 * 512, "bytes_read": 0, "bytes_written": 0,
          "launches": 1}
    assert op_cost(profile, mm).host_s == pytest.approx(1 * US + 2 * 64 * 256 * 512 / 1e10, rel=1e-6)
    assert op_cost(profile, mm).compute_s == pytest.approx(2 * 64 * 256 * 512 / 1e10, rel=1e-6)
    assert op_cost(profile, relu).compute_s == 0 and op_cost(profile, relu).floor_s == pytest.approx(1 * US)
    frame = predict_module(mnist_mlp(), sample_shape=(1, 28, 28), batch_sizes=(1024,), profiles=[profile])
    shares = frame.iloc[0][["launch_share", "memory_share", "compute_share"]]
    assert shares.sum() == pytest.approx(1.0) and frame["bound"].iloc[0] == "compute" and shares["memory_share"] > 0
    view = dict(relu, kind="view", launches=0)
    assert op_cost(profile, view).host_s == 0 and op_cost(profile, view).family == "view"


def test_matmul_grid_recovers_a_power_law_and_scales_past_it():
    def law(m, kn):
        return 3e-6 * m**0.7 * kn**0.9

    m, kn = (1, 4, 16, 64, 256, 1024), (256, 4096, 65536, 2**20)
    grid = Grid(m, kn, tuple(tuple(law(a, b) for b in kn) for a in m))
    for a, b in [(2, 1000), (37, 12345), (700, 500000), (1, 256), (1024, 2**20)]:
        assert grid(a, b) == pytest.approx(law(a, b), rel=1e-9)
    # beyond the grid the extra FLOPs run at the edge's rate: twice the rows, twice the time there
    edge = law(1024, 2**20)
    assert grid(2048, 2**20) == pytest.approx(2 * edge, rel=1e-9)
    assert grid(1, 16) == pytest.approx(law(1, 256))  # below: the floor


def test_a_cpu_grid_streams_weights_past_its_largest_at_the_edge_cells_rate():
    # one row: memory-bound, 1 µs per 2^20 weights; 1024 rows: compute-bound at the best rate, 1e11 FLOP/s
    grid = Grid((1.0, 1024.0), (2.0**10, 2.0**20), ((1e-6 / 1024, 1e-6), (2 * 1024 * 2**10 / 1e11, 2 * 1024 * 2**20 / 1e11)),
                rate=1e11)
    streams = dataclasses.replace(grid, weights_stream=True)
    assert streams(1, 2**22) == pytest.approx(4e-6)  # four times the weights, four times the edge cell's time
    assert grid(1, 2**22) == pytest.approx(1e-6 + 2 * (2**22 - 2**20) / 1e11)  # at the best rate: far less
    assert streams(1024, 2**22) == pytest.approx(grid(1024, 2**22))  # compute-bound: its own rate is the best
    assert streams(4096, 2**20) == pytest.approx(grid(4096, 2**20))  # more rows: the best rate, as before
    assert streams(2, 2**15) == grid(2, 2**15)  # inside: as before
    assert Grid.from_json(streams.to_json()) == streams and Grid.from_json(grid.to_json()) == grid


def test_curve_fit_is_monotone_and_interpolates_log_log():
    assert list(isotonic([1, 3, 2, 4])) == [1, 2.5, 2.5, 4]
    x = [1e3, 1e4, 1e5, 1e6]
    curve = Curve.fit(x, [2e-6, 1e-6, 3e-5, 3e-4])  # a noisy dip at 1e4 is pooled away
    assert all(b >= a for a, b in zip(curve.time_s, curve.time_s[1:]))
    power = Curve(tuple(x), tuple(1e-9 * v**0.8 for v in x))
    assert power(31622.0) == pytest.approx(1e-9 * 31622.0**0.8, rel=1e-9)
    assert power(10.0) == power.time_s[0]  # the dispatch floor below the smallest size
    assert power(2e6) == pytest.approx(2 * power.time_s[-1], rel=1e-9)


def test_uncovered_ops_are_predicted_with_a_warning_naming_them():
    profile = synthetic_profile(dispatch_s=1 * US, flop_rate=1e10, bandwidth=1e9)
    row = {"op": "aten.frobnicate.default", "kind": "other", "input_shapes": ((10,),), "output_shapes": ((10,),),
           "flops": 0, "bytes_read": 4e6, "bytes_written": 0, "launches": 1}
    cost = op_cost(profile, row)
    assert cost.family == "generic" and "aten.frobnicate.default" in cost.warning
    assert cost.host_s == pytest.approx(4e6 / 1e9)

    class Sorter(nn.Module):
        def forward(self, x):
            return torch.sort(x, dim=-1).values

    with pytest.warns(UserWarning, match="aten.sort"):
        frame = predict_module(Sorter(), sample_shape=(16,), batch_sizes=(2,), profiles=[profile])
    assert any("aten.sort" in w for w in frame["warnings"].iloc[0])


def test_fused_transformer_layer_costs_its_kernels():
    layer = nn.TransformerEncoderLayer(d_model=64, nhead=4, batch_first=True)
    frame = predict_module(layer, sample_shape=(16, 64), batch_sizes=(2,),
                           profiles=[synthetic_profile(dispatch_s=10 * US)])
    # the fast path's one op runs 4 projections, 5 attention kernels, 2 adds, 2 layer norms and a ReLU
    assert frame["launches"].iloc[0] == 14 and frame["latency_s"].iloc[0] == pytest.approx(140 * US)
    assert not frame["warnings"].iloc[0]
    assert attention_flops("sdpa", [(2, 4, 16, 16)] * 3) == 2 * 2 * 4 * 16 * 16 * 32


def test_gpu_step_is_max_of_host_and_device_plus_sync():
    gpu = synthetic_profile("cuda", dispatch_s=5 * US, sync_s=20 * US, module_call_s=1 * US)
    n, _ = launches(mnist_mlp(), (4, 1, 28, 28))
    row = predict_module(mnist_mlp(), sample_shape=(1, 28, 28), batch_sizes=(4,), profiles=[gpu]).iloc[0]
    assert row["host_s"] == pytest.approx(n * 5 * US + 5 * US)  # launches + 5 module calls
    assert row["device_s"] == pytest.approx(n * 5 * US)
    assert row["latency_s"] == pytest.approx(max(row["host_s"], row["device_s"]) + 20 * US)
    slow = synthetic_profile("cuda", dispatch_s=5 * US, flop_rate=1e9, sync_s=20 * US)
    row = predict_module(mnist_mlp(), sample_shape=(1, 28, 28), batch_sizes=(4,), profiles=[slow]).iloc[0]
    assert row["device_s"] > row["host_s"] and row["latency_s"] == pytest.approx(row["device_s"] + 20 * US)


def test_crossover_between_a_cpu_and_a_gpu():
    cpu = synthetic_profile("cpu", dispatch_s=2 * US, flop_rate=2e10, machine="laptop")
    gpu = synthetic_profile("cuda", dispatch_s=8 * US, flop_rate=1e13, sync_s=30 * US, machine="server")
    sizes = (1, 8, 64, 512, 4096)
    frame = predict_module(mnist_mlp(), sample_shape=(1, 28, 28), batch_sizes=sizes, profiles=[cpu, gpu])
    c = frame.attrs["crossover"]
    assert c == frame.attrs["crossovers"][0] and c["between"] == ["laptop/cpu", "server/cuda"]
    assert c["winner_below"] == "laptop/cpu" and c["winner_above"] == "server/cuda"
    assert 1 < c["at"] < 4096 and c["low"] <= c["at"] <= c["high"]
    # brute force: the CPU still wins just below the interpolated crossing, the GPU just above it
    for batch, winner in ((math.floor(c["at"] / 1.05), "laptop/cpu"), (math.ceil(c["at"] * 1.05), "server/cuda")):
        times = predict_module(mnist_mlp(), sample_shape=(1, 28, 28), batch_sizes=(batch,), profiles=[cpu, gpu])
        assert times.set_index("profile")["latency_s"].idxmin() == winner
    coarse = module_crossover(frame, "laptop/cpu", "server/cuda")  # from the requested sizes only
    assert 1 < coarse["at"] < 8 and coarse["winner_below"] == c["winner_below"]
    never = predict_module(mnist_mlp(), sample_shape=(1, 28, 28), batch_sizes=(1, 2), profiles=[cpu, gpu])
    assert never.attrs["crossover"]["at"] is None and never.attrs["crossover"]["winner_everywhere"] == "laptop/cpu"


def test_crossover_ends_are_where_the_intervals_allow_the_hand_over():
    """Power laws cross exactly in log-log: a CPU at 10·√b µs against a flat 100 µs GPU hands over at
    batch 100; with ±10% intervals the earliest hand-over is where 11·√b meets 90 and the latest where
    9·√b meets 110, both closed inside the range."""
    import pandas as pd

    from crossover.crossings import crossover_ends

    batch = [2.0**k for k in range(13)]
    cpu = [10 * b**0.5 * US for b in batch]
    gpu = [100 * US] * len(batch)
    low, high, low_open, high_open = crossover_ends(batch, [0.9 * t for t in cpu], [1.1 * t for t in cpu],
                                                    [0.9 * t for t in gpu], [1.1 * t for t in gpu])
    assert low == pytest.approx((90 / 11) ** 2) and high == pytest.approx((110 / 9) ** 2)
    assert not low_open and not high_open
    rows = [dict(profile=name, batch_size=b, latency_s=t, latency_low_s=0.9 * t, latency_high_s=1.1 * t)
            for name, times in (("vm/cpu", cpu), ("h200/cuda", gpu)) for b, t in zip(batch, times)]
    c = module_crossover(pd.DataFrame(rows), "vm/cpu", "h200/cuda")
    assert c["at"] == pytest.approx(100) and (c["low"], c["high"]) == pytest.approx((low, high))


def test_a_near_tie_crossover_spans_the_range_and_says_so():
    """The H200's fourth visit predicted the MNIST training step's devices within each other's intervals
    at every batch (run4/zoo/predict-mnist_mlp-train.json): the hand-over may lie anywhere, so the
    interval is the whole range with both ends open, not the pessimistic pair's first crossing (batch 1.3,
    on the far side of the estimate, 450)."""
    import pandas as pd

    batch = [1, 8, 64, 512]
    cpu = dict(latency_s=[580, 222, 301, 728], latency_low_s=[433, 166, 225, 543], latency_high_s=[727, 279, 377, 912])
    gpu = dict(latency_s=[654, 653, 685, 686], latency_low_s=[464, 463, 486, 486], latency_high_s=[844, 843, 885, 885])
    rows = [dict(profile=name, batch_size=b, **{k: v[i] * US for k, v in times.items()})
            for name, times in (("h200/cpu", cpu), ("h200/cuda", gpu)) for i, b in enumerate(batch)]
    c = module_crossover(pd.DataFrame(rows), "h200/cpu", "h200/cuda")
    assert 64 < c["at"] < 512 and c["winner_below"] == "h200/cpu"
    assert (c["low"], c["high"], c["low_open"], c["high_open"]) == (1.0, 512.0, True, True)
    assert c["low"] <= c["at"] <= c["high"]


def test_cold_weights_use_the_cold_grid():
    hot = Grid((1.0, 1024.0), (1.0, 2.0**20), ((1e-6, 1e-6), (1e-6, 1e-6)), rate=math.inf)
    cold = Grid((1.0, 1024.0), (1.0, 2.0**20), ((9e-6, 9e-6), (9e-6, 9e-6)), rate=math.inf)
    base = synthetic_profile(dispatch_s=1 * US)
    profile = Profile(device="cpu", machine="m", overheads=base.overheads, grids={"matmul": hot, "matmul_cold": cold},
                      curves=base.curves, llc_bytes=10**6)
    small = predict_module(nn.Linear(64, 64), sample_shape=(64,), batch_sizes=(1,), profiles=[profile]).iloc[0]
    big = predict_module(nn.Linear(1024, 1024), sample_shape=(1024,), batch_sizes=(1,), profiles=[profile]).iloc[0]
    assert small["weights"] == "hot" and small["latency_s"] == pytest.approx(1 * US)
    assert big["weights"] == "cold" and big["latency_s"] == pytest.approx(9 * US)


def test_interval_mode_restored_and_api(tmp_path):
    profile = synthetic_profile(dispatch_s=3 * US, flop_rate=1e10, bandwidth=1e9)
    profile = Profile(**{**profile.__dict__, "noise_floor_rel": 0.07, "spread_rel": {"matmul": 0.2}})
    write_profile(tmp_path, profile)
    loaded = load_profile(tmp_path)
    assert loaded.noise_floor_rel == 0.07 and loaded.grids["matmul"].m == profile.grids["matmul"].m
    model = ResidualMLP(64, 4).train()
    frame = crossover.predict_module(model, torch.randn(8, 64), profiles=[tmp_path])
    row = frame.iloc[0]
    assert row["batch_size"] == 8 and model.training  # the trace ran in eval mode, the mode is restored
    r = (row["latency_high_s"] - row["latency_s"]) / row["latency_s"]
    assert 0.07 <= r <= 0.2 + 1e-12 and row["latency_low_s"] == pytest.approx(row["latency_s"] * (1 - r))
    assert row["top_ops"][0]["kind"] == "matmul" and np.isclose(sum(row["kind_shares"].values()), 1.0)


def test_the_interval_takes_the_spread_of_the_pooled_statistic_not_of_one_round():
    """A primitive's cost pools its repeats over the rounds kept: its round-to-round spread, divided by
    the square root of their number, is what the pooled cost can be off by (a profile that does not say
    how many: one round's, as before)."""
    profile = synthetic_profile(dispatch_s=3 * US, flop_rate=1e10, bandwidth=1e9)
    profile = dataclasses.replace(profile, spread_rel={"matmul": 0.4})

    def width(p):
        row = predict_module(nn.Linear(64, 64), sample_shape=(64,), batch_sizes=(8,), profiles=[p]).iloc[0]
        return row["latency_high_s"] / row["latency_s"] - 1

    one_round = width(profile)
    assert 0.3 < one_round <= 0.4  # the matmul's share of the step (most of it) times its spread
    pooled = width(dataclasses.replace(profile, meta={"rounds_kept": 4}))
    assert pooled == pytest.approx(one_round / 2)
    floor = width(dataclasses.replace(profile, meta={"rounds_kept": 4}, noise_floor_rel=0.25))
    assert floor == pytest.approx(0.25)  # the noise floor where it is wider


def test_a_synchronised_gpu_step_pays_each_familys_host_floor_and_the_step_sync():
    """On a GPU a cuBLAS product costs the host its family's floor (the queued calibration's time at
    the smallest size), more than an elementwise launch; the step adds step_sync_s where the profile
    has it (sync_s where it does not)."""
    import dataclasses

    from crossover.opcost.gpu_ops import host_floor_s
    from crossover.opcost.profiles import Grid

    gpu = synthetic_profile("cuda", dispatch_s=5 * US, sync_s=4 * US, module_call_s=1 * US)
    gpu = dataclasses.replace(gpu, grids=dict(gpu.grids, matmul=Grid((1.0,), (1e-12,), ((11 * US,),), rate=math.inf)))
    assert host_floor_s(gpu, "matmul") == pytest.approx(11 * US) and host_floor_s(gpu, "elementwise") == 5 * US
    row = predict_module(mnist_mlp(), sample_shape=(1, 28, 28), batch_sizes=(4,), profiles=[gpu]).iloc[0]
    n, _ = launches(mnist_mlp(), (4, 1, 28, 28))
    products = 2  # the two Linear layers' addmm
    assert row["host_s"] == pytest.approx(products * 11 * US + (n - products) * 5 * US + 5 * US)
    assert row["latency_s"] == pytest.approx(max(row["host_s"], row["device_s"]) + 4 * US)
    synced = dataclasses.replace(gpu, overheads=dict(gpu.overheads, step_sync_s=20 * US))
    row = predict_module(mnist_mlp(), sample_shape=(1, 28, 28), batch_sizes=(4,), profiles=[synced]).iloc[0]
    assert row["sync_s"] == pytest.approx(20 * US)
    assert row["latency_s"] == pytest.approx(max(row["host_s"], row["device_s"]) + 20 * US)


def test_a_gpu_products_host_cost_follows_its_own_shape():
    """cuBLAS's host work per product depends on the shape (on the H100 and H200 hosts a product with bias
    of 32 rows or more is issued every ~21 µs, one of 16 rows every ~11.5 µs): the host pays the queued
    grid's time at the product's own rows and weight, at most its rows' host-bound level (a large
    product's queued time is its kernel's, not the host's); a bias-free product is costed on the
    matmul_host grid where the profile has one."""
    import dataclasses

    from crossover.opcost.gpu_ops import bias_free_queued_s, host_floor_s, matmul_host_s

    grid = Grid((1.0, 64.0), (256.0, 16384.0, 65536.0, 1048576.0),
                ((11 * US,) * 4, (21 * US, 21 * US, 15 * US, 60 * US)))
    assert matmul_host_s(grid, 1, 1048576) == pytest.approx(11 * US)
    assert matmul_host_s(grid, 64, 256) == pytest.approx(21 * US)
    assert matmul_host_s(grid, 64, 65536) == pytest.approx(15 * US)  # another kernel, issued faster
    assert matmul_host_s(grid, 64, 1048576) == pytest.approx(21 * US)  # the 60 µs are the kernel's
    gpu = synthetic_profile("cuda", dispatch_s=5 * US, sync_s=4 * US)
    gpu = dataclasses.replace(gpu, grids=dict(gpu.grids, matmul=grid))
    assert host_floor_s(gpu, "matmul") == pytest.approx(11 * US)  # no shape: the smallest time, as before
    assert host_floor_s(gpu, "matmul", (64.0, 256.0), bias=False) == pytest.approx(11 * US)  # no matmul_host grid
    bias_free = Grid((1.0, 64.0), (4096.0, 16384.0), ((12 * US,) * 2, (15 * US,) * 2))
    gpu = dataclasses.replace(gpu, grids=dict(gpu.grids, matmul_host=bias_free))
    addmm = dict(op="aten.addmm.default", kind="matmul", output_shapes=((64, 16),), flops=2.0 * 64 * 16 * 16,
                 launches=1)
    mm = dict(addmm, op="aten.mm.default")
    assert op_cost(gpu, addmm).host_s == pytest.approx(21 * US)
    assert op_cost(gpu, mm).host_s == pytest.approx(15 * US)
    assert op_cost(gpu, dict(mm, output_shapes=((1, 16),), flops=2.0 * 16 * 16)).host_s == pytest.approx(12 * US)
    # weights past 128² (the plan's 256² and 512² columns): a bias-free product's host work is the cheapest
    # host-bound cell of its rows; a dearer cell (4 rows of a 256² weight: 16 µs, where 64² takes 11) is
    # its kernel's, which the device pays
    wide = Grid((4.0, 512.0), (4096.0, 16384.0, 65536.0, 262144.0),
                ((11 * US, 13 * US, 16 * US, 16 * US), (13 * US, 14 * US, 30 * US, 90 * US)))
    assert matmul_host_s(wide, 4, 65536, by_flops=True) == pytest.approx(11 * US)
    assert bias_free_queued_s(wide, 4, 65536) == pytest.approx(16 * US)
    assert matmul_host_s(wide, 4, 65536) == pytest.approx(12 * US)  # the plateau of 64² and 128² alone
    assert matmul_host_s(wide, 512, 262144, by_flops=True) == pytest.approx(13 * US)  # 0.27 GFLOP: its row's host level
    assert bias_free_queued_s(wide, 512, 262144) is None  # past the host-bound FLOPs: the grid with bias's kernel
    assert bias_free_queued_s(wide, 4, 1048576) is None  # past the grid's widest weight


def test_a_gpu_bias_free_product_whose_kernel_outlasts_the_host_costs_the_device():
    """cuBLAS runs a few bias-free shapes with a long kernel (the H200: 28 µs at 8 rows of a 256² weight,
    where 64² and 512² take 2-4 µs and the host issues each in ~10): the bias-free grid's queued cell is
    then the kernel's time, charged to the device, while the host pays its rows' cheapest cell; a
    product with bias, a shape off the long kernel and a backward pass's product (not the grid's layout)
    keep their device costs."""
    import dataclasses

    gpu = synthetic_profile("cuda", dispatch_s=5 * US, sync_s=4 * US)
    with_bias = Grid((1.0, 8.0, 64.0), (4096.0, 65536.0, 262144.0), ((11 * US,) * 3, (10 * US,) * 3, (21 * US,) * 3))
    bias_free = Grid((1.0, 8.0, 64.0), (4096.0, 65536.0, 262144.0),
                     ((9 * US,) * 3, (9.5 * US, 31 * US, 11 * US), (13 * US, 16 * US, 16 * US)))
    gpu = dataclasses.replace(gpu, grids=dict(gpu.grids, matmul=with_bias, matmul_host=bias_free))
    mm = dict(op="aten.mm.default", kind="matmul", input_shapes=((8, 256), (256, 256)), output_shapes=((8, 256),),
              flops=2.0 * 8 * 256 * 256, launches=1)
    cost = op_cost(gpu, mm)
    assert cost.host_s == pytest.approx(9.5 * US)
    assert cost.device_s == pytest.approx(31 * US)
    addmm = op_cost(gpu, dict(mm, op="aten.addmm.default"))
    assert addmm.device_s == pytest.approx(10 * US) and addmm.host_s == pytest.approx(10 * US)
    narrow = op_cost(gpu, dict(mm, input_shapes=((8, 64), (64, 64)), output_shapes=((8, 64),), flops=2.0 * 8 * 64 * 64))
    assert narrow.device_s == pytest.approx(10 * US)  # its cell is the host's: the grid with bias's time stands
    backward = op_cost(gpu, dict(mm, phase="backward"))  # another layout than the grid's x @ weight.t()
    assert backward.device_s == pytest.approx(10 * US) and backward.host_s == pytest.approx(9.5 * US)


def test_a_gpu_runs_a_recurrent_layer_as_one_fused_call():
    """The trace records PyTorch's CPU path of nn.GRU (each time step's products and gates); a GPU
    profile costs cuDNN's one call instead: from its own calibration curve where the profile has one."""
    import dataclasses

    from crossover.opcost.gpu_ops import gru_flops
    from crossover.opcost.module_predict import gpu_records, trace_step
    from crossover.opcost.gpu_ops import RNN_WARNING
    from crossover.opcost.op_costs import op_cost
    from crossover.opcost.profiles import Curve

    class Classifier(nn.Module):
        def __init__(self):
            super().__init__()
            self.gru, self.head = nn.GRU(8, 16, batch_first=True), nn.Linear(16, 3)

        def forward(self, x):
            return self.head(self.gru(x)[0][:, -1])

    model = Classifier()
    table, _ = trace_step(model, (12, 8), 4)
    records = table.to_dict("records")
    fused = gpu_records(records, model, 4)
    (rnn,) = [r for r in fused if r["kind"] == "rnn"]
    assert not any(r.get("module") == "gru" and r["kind"] != "rnn" for r in fused)
    assert rnn["rnn"] == dict(batch=4, input=8, hidden=16, gates=3, layers=1, directions=1, steps=12)
    assert sum(r["module"] == "gru" for r in records) > 12 * 5  # the CPU path: several ops per step
    gpu = synthetic_profile("cuda", dispatch_s=5 * US, flop_rate=1e12)
    assert op_cost(gpu, rnn).warning == RNN_WARNING
    # a floor and a throughput, sampled far apart: affine between the points, the log-log chord above it
    curve = Curve((1e3, 1e9), (40 * US + 1e3 / 1e12, 40 * US + 1e9 / 1e12))
    calibrated = dataclasses.replace(gpu, curves=dict(gpu.curves, rnn=curve))
    cost = op_cost(calibrated, rnn)
    flops = gru_flops(4, 12, 8, 16)
    assert not cost.warning and cost.device_s == pytest.approx(40 * US + flops / 1e12, rel=1e-9)
    assert curve(flops) > 1.5 * cost.device_s
    assert cost.host_s == pytest.approx(curve.time_s[0])  # the host floor: the smallest shape's time
    cpu_row, gpu_row = (predict_module(model, sample_shape=(12, 8), batch_sizes=(4,), profiles=[p], warn=False).iloc[0]
                        for p in (synthetic_profile("cpu", dispatch_s=5 * US), calibrated))
    assert gpu_row["launches"] < cpu_row["launches"] / 10


def test_layer_kinds_are_costed_on_their_own_primitives():
    """MaxPool1d in a forward pass runs the CPU's 1-D kernel (the trace records the 2-D pooling with
    indices), adaptive pooling, a depthwise convolution and an embedding bag each have a curve of
    their own; a profile without those curves costs them as before."""
    import dataclasses

    from crossover.opcost.layer_primitives import LAYER_FAMILIES, layer_family, moved_bytes
    from crossover.opcost.module_predict import trace_step
    from crossover.opcost.op_costs import op_cost
    from crossover.opcost.profiles import Curve

    model = nn.Sequential(nn.Conv1d(4, 8, 3, padding=1), nn.MaxPool1d(2), nn.Conv1d(8, 8, 3, padding=1, groups=8),
                          nn.AdaptiveMaxPool1d(1))
    records = trace_step(model, (4, 64), 2)[0].to_dict("records")
    families = {r["op"]: layer_family(r, r["op"].split(".")[1], inference=True) for r in records}
    assert families["aten.max_pool2d_with_indices.default"] == "pool1d"
    assert families["aten.adaptive_max_pool2d.default"] == "adaptive_pool"
    convs = [layer_family(r, "convolution", inference=True) for r in records if "convolution" in r["op"]]
    assert convs == [None, "conv_depthwise"]  # a dense convolution keeps its grid
    pool = next(r for r in records if "max_pool2d" in r["op"])
    assert layer_family(pool, "max_pool2d_with_indices", inference=False) is None  # autograd: the 2-D kernel
    assert moved_bytes(pool, "pool1d") == 4.0 * (2 * 8 * 64 + 2 * 8 * 32)  # input and values, no indices
    bag_records = trace_step(nn.EmbeddingBag(1000, 16), (5,), 3, dtype=torch.long)[0].to_dict("records")
    bag = next(r for r in bag_records if "embedding_bag" in r["op"])
    assert layer_family(bag, "_embedding_bag", inference=True) == "gather"
    assert moved_bytes(bag, "gather") == 4.0 * 15 * 16 + 4.0 * 3 * 16 + 8.0 * 15  # the rows, not the table

    base = synthetic_profile("cpu", dispatch_s=1 * US, bandwidth=1e9)
    curves = {family: Curve((1.0,), (50 * US,), rate=1e12) for family in LAYER_FAMILIES}
    calibrated = dataclasses.replace(base, curves=dict(base.curves, **curves))
    for row in (pool, bag):
        assert op_cost(calibrated, row, inference=True).family in LAYER_FAMILIES
        assert op_cost(base, row, inference=True).family not in LAYER_FAMILIES  # no curve: as before
    assert op_cost(calibrated, pool, inference=True).host_s == pytest.approx(50 * US + moved_bytes(pool, "pool1d") / 1e12)


def test_adaptive_max_pooling_is_costed_between_its_long_and_short_plane_curves():
    """The kernel pays per plane as well as per element: planes of 128 lie 2/3 of the way (in log
    length) from the curve of planes of 32 to that of planes of 256; planes outside stay at the nearer
    curve, and a profile without the short curve uses the long one alone."""
    import dataclasses

    from crossover.opcost.calibration_plan import PLANS, points
    from crossover.opcost.layer_primitives import SHORT_PLANES, over_plane_length
    from crossover.opcost.module_predict import trace_step
    from crossover.opcost.op_costs import op_cost
    from crossover.opcost.profiles import Curve

    def pool_row(length):
        records = trace_step(nn.AdaptiveMaxPool1d(1), (16, length), 4)[0].to_dict("records")
        return next(r for r in records if "adaptive_max_pool" in r["op"])

    base = synthetic_profile("cpu", dispatch_s=1 * US)
    long_only = dataclasses.replace(base, curves=dict(base.curves, adaptive_pool=Curve((1.0,), (40 * US,), rate=1e30)))
    both = dataclasses.replace(long_only, curves=dict(long_only.curves, **{SHORT_PLANES: Curve((1.0,), (10 * US,),
                                                                                             rate=1e30)}))
    assert op_cost(long_only, pool_row(128), inference=True).host_s == pytest.approx(40 * US)
    assert op_cost(both, pool_row(128), inference=True).host_s == pytest.approx(40 * US * (10 / 40) ** (1 / 3))
    assert op_cost(both, pool_row(512), inference=True).host_s == pytest.approx(40 * US)  # longer: the long curve
    assert op_cost(both, pool_row(8), inference=True).host_s == pytest.approx(10 * US)  # shorter: the short one
    assert over_plane_length({"op": "x"}, 3.0, 1.0) == 3.0  # no shapes: the long curve
    families = {p.family for p in points(PLANS["quick"], "cpu")}
    assert {"adaptive_pool", SHORT_PLANES} <= families


def test_eval_batch_norm_is_costed_on_its_own_curves_between_long_and_short_planes():
    """An eval-mode batch norm without autograd takes the ``batch_norm`` curves (its planes read and
    written), between the curve of planes of 32 × 32 and that of 8 × 8 by its plane length in log scale
    (16 × 16 lies half way); in training it takes the training family; any norm on a profile without the
    curves is a reduction as before."""
    import dataclasses

    from crossover.opcost.calibration_plan import PLANS, points
    from crossover.opcost.layer_primitives import BATCH_NORM, BATCH_NORM_SHORT, BATCH_NORM_TRAIN, layer_family, moved_bytes
    from crossover.opcost.module_predict import trace_step
    from crossover.opcost.op_costs import op_cost

    def norm_row(side, train=False):
        model = nn.BatchNorm2d(8).train(train)
        records = trace_step(model, (8, side, side), 4, "train" if train else "forward")[0].to_dict("records")
        return next(r for r in records if "batch_norm" in r["op"] and r.get("phase") != "backward")

    row = norm_row(16)
    assert layer_family(row, "_native_batch_norm_legit_no_training", inference=True) == BATCH_NORM
    assert layer_family(row, "_native_batch_norm_legit_no_training", inference=False) is None
    trained = norm_row(16, train=True)  # batch statistics: another kernel, another family
    assert "no_training" not in trained["op"]
    assert layer_family(trained, trained["op"].split(".")[1], inference=True) == BATCH_NORM_TRAIN
    assert moved_bytes(row, BATCH_NORM) == 4.0 * 2 * 4 * 8 * 16 * 16
    base = synthetic_profile("cpu", dispatch_s=1 * US)
    long_only = dataclasses.replace(base, curves=dict(base.curves, **{BATCH_NORM: Curve((1.0,), (40 * US,), rate=1e30)}))
    both = dataclasses.replace(long_only, curves=dict(long_only.curves,
                                                      **{BATCH_NORM_SHORT: Curve((1.0,), (10 * US,), rate=1e30)}))
    assert op_cost(base, row, inference=True).family == "reduction"
    assert op_cost(long_only, row, inference=True).host_s == pytest.approx(40 * US)
    assert op_cost(both, row, inference=True).host_s == pytest.approx(20 * US)  # sqrt(40 · 10)
    assert op_cost(both, norm_row(64), inference=True).host_s == pytest.approx(40 * US)  # longer: the long curve
    assert op_cost(both, norm_row(4), inference=True).host_s == pytest.approx(10 * US)  # shorter: the short one
    families = {p.family for p in points(PLANS["quick"], "cpu")}
    assert {BATCH_NORM, BATCH_NORM_SHORT} <= families


def test_the_batch_norm_primitive_counts_the_bytes_a_models_row_moves():
    """Each batch-norm primitive runs (its output the input's shape), and its curve's ``x`` is what
    :func:`moved_bytes` counts for the row a model's batch norm of the same shape traces (eval mode in a
    forward pass; the forward and backward ops of a training step)."""
    from crossover.opcost.layer_primitives import (BATCH_NORM, BATCH_NORM_BACKWARD, BATCH_NORM_TRAIN, layer_points,
                                                   layer_step, moved_bytes)
    from crossover.opcost.module_predict import trace_step

    for family, _, _, x, shape in (p for p in layer_points((16384, 65536)) if p[0].startswith(BATCH_NORM)):
        out = layer_step(family, shape)()
        assert tuple((out[0] if isinstance(out, tuple) else out).shape) == tuple(shape)
        training = family in (BATCH_NORM_TRAIN, BATCH_NORM_BACKWARD)
        model = nn.BatchNorm2d(shape[1]).train(training)
        records = trace_step(model, shape[1:], shape[0], "train" if training else "forward")[0].to_dict("records")
        wanted = "batch_norm_backward" if family == BATCH_NORM_BACKWARD else "batch_norm"
        row = next(r for r in records if wanted in r["op"])
        assert moved_bytes(row, family if training else BATCH_NORM) == x


def test_a_cpu_mean_pays_its_division_beside_the_sum():
    """ATen's CPU mean sums, then divides its output in place: a kernel more than the reduction curve's
    sum, costed as an elementwise op over the output (at least a dispatch); a GPU's mean is one kernel."""
    import dataclasses

    from crossover.opcost.module_predict import trace_step
    from crossover.opcost.op_costs import op_cost

    class Mean(nn.Module):
        def forward(self, x):
            return x.mean(dim=(2, 3))

    row = next(r for r in trace_step(Mean(), (16, 8, 8), 4)[0].to_dict("records") if "mean" in r["op"])
    summed = dict(row, op="aten.sum.dim_IntList")
    cpu = synthetic_profile("cpu", dispatch_s=3 * US)
    cpu = dataclasses.replace(cpu, curves=dict(cpu.curves, reduction=Curve((1.0,), (5 * US,), rate=1e30),
                                               elementwise=Curve((1.0,), (1 * US,), rate=1e30)))
    assert op_cost(cpu, summed, inference=True).host_s == pytest.approx(5 * US)
    assert op_cost(cpu, row, inference=True).host_s == pytest.approx(5 * US + 3 * US)  # the dispatch: more than 1 µs
    quick = dataclasses.replace(cpu, overheads=dict(cpu.overheads, dispatch_s=0.5 * US))
    assert op_cost(quick, row, inference=True).host_s == pytest.approx(5 * US + 1 * US)  # the division's curve
    gpu = dataclasses.replace(cpu, device="cuda")
    assert op_cost(gpu, row, inference=True).device_s == op_cost(gpu, summed, inference=True).device_s


def test_a_maxpool1d_forward_runs_the_1d_kernel_the_trace_maps_to():
    """What the profiler sees a no-grad forward run (``aten::max_pool1d``, no indices) is what the
    trace's fallback row (2-D pooling with indices, on fake tensors) is costed as; with autograd the
    2-D kernel with indices really runs, and the row keeps its family."""
    from torch.profiler import ProfilerActivity, profile

    from crossover.opcost.layer_primitives import layer_family
    from crossover.opcost.module_predict import trace_step

    model = nn.Sequential(nn.Conv1d(4, 8, 3, padding=1), nn.MaxPool1d(2)).eval()
    x = torch.randn(2, 4, 64)
    for grad in (False, True):
        with torch.set_grad_enabled(grad), profile(activities=[ProfilerActivity.CPU]) as prof:
            model(x.requires_grad_(grad))
        ran = {e.key for e in prof.key_averages()}
        assert ("aten::max_pool1d_with_indices" in ran or "aten::max_pool2d_with_indices" in ran) == grad
        assert ("aten::max_pool1d" in ran) and (grad or "aten::max_pool2d_with_indices" not in ran)
    rows = trace_step(model, (4, 64), 2)[0].to_dict("records")
    pool = next(r for r in rows if "max_pool" in r["op"])
    assert pool["op"].startswith("aten.max_pool2d_with_indices")
    assert layer_family(pool, "max_pool2d_with_indices", inference=True) == "pool1d"
    assert layer_family(pool, "max_pool2d_with_indices", inference=False) is None


def test_a_cpu_recurrent_steps_terms_are_fitted_on_the_primitives_and_cost_each_time_step():
    """The CPU GRU primitives (input width = hidden) are fitted for a time step's fixed cost, its gates'
    elementwise work, its FLOPs and its weights read; the fit recovers known terms, and a layer of
    another width and length is costed from them step by step (where a curve over FLOPs alone costs a
    batch-512 layer, whose gates' elementwise work dominates, as a cheaper product)."""
    import dataclasses

    from crossover.opcost.calibration_plan import PLANS
    from crossover.opcost.gpu_ops import CPU_RNN_CALL, CPU_RNN_TERMS, cpu_recurrent_features, fit_cpu_recurrent

    truth = dict(zip(CPU_RNN_TERMS, (8 * US, 1.5e-9, 1e-11, 2e-11)), **{CPU_RNN_CALL: 18 * US})

    def cell(b, t, h):
        step = sum(truth[name] * f for name, f in zip(CPU_RNN_TERMS, cpu_recurrent_features(b, h, h)))
        return b, t, h, truth[CPU_RNN_CALL] + t * step

    shapes = PLANS["quick"].cpu_rnn_shapes
    assert len({t for _, t, _ in shapes}) == 2  # two lengths: a call's fixed cost told from a step's
    fitted = fit_cpu_recurrent([cell(*shape) for shape in shapes])
    assert fitted == pytest.approx(truth, rel=1e-6)
    one_length = fit_cpu_recurrent([(b, t, h, s - truth[CPU_RNN_CALL]) for b, t, h, s in map(lambda x: cell(*x), shapes)
                                    if t == 16])
    assert one_length[CPU_RNN_CALL] == 0.0  # one length: no call term, the steps' terms as before
    assert {k: one_length[k] for k in CPU_RNN_TERMS} == pytest.approx({k: truth[k] for k in CPU_RNN_TERMS}, rel=1e-6)
    assert fit_cpu_recurrent([cell(*shape) for shape in shapes[:3]]) == {}  # fewer primitives than terms
    cpu = synthetic_profile("cpu", dispatch_s=2 * US, flop_rate=1e10)
    cpu = dataclasses.replace(cpu, overheads=dict(cpu.overheads, **fitted))  # the terms alone: no curve needed
    model = nn.GRU(32, 64, batch_first=True)
    row = predict_module(model, sample_shape=(50, 32), batch_sizes=(512,), profiles=[cpu], warn=False).iloc[0]
    per_step = sum(truth[t] * f for t, f in zip(CPU_RNN_TERMS, cpu_recurrent_features(512, 32, 64)))
    assert row["latency_s"] == pytest.approx(truth[CPU_RNN_CALL] + 50 * per_step + row["overhead_s"], rel=1e-6)


def test_a_cpu_profile_with_a_recurrent_primitive_costs_the_layer_whole_per_time_step():
    """A CPU calibration times PyTorch's GRU loop at CPU_RNN_STEPS steps; a layer over another length
    costs that many steps of it (its per-step ops are not summed), one of the same length the curve."""
    import dataclasses

    from crossover.opcost.gpu_ops import CPU_RNN_STEPS
    from crossover.opcost.gpu_ops import gru_flops
    from crossover.opcost.profiles import Curve

    model = nn.GRU(8, 16, batch_first=True)
    cpu = synthetic_profile("cpu", dispatch_s=2 * US, flop_rate=1e10)
    curve = Curve((1e3, 1e9), (50 * US, 5e-3))
    timed = dataclasses.replace(cpu, curves=dict(cpu.curves, rnn=curve))
    for steps in (CPU_RNN_STEPS, 3 * CPU_RNN_STEPS):
        row = predict_module(model, sample_shape=(steps, 8), batch_sizes=(4,), profiles=[timed], warn=False).iloc[0]
        expected = steps / CPU_RNN_STEPS * curve(gru_flops(4, CPU_RNN_STEPS, 8, 16))
        assert row["latency_s"] == pytest.approx(expected + row["overhead_s"], rel=1e-9)
    plain = predict_module(model, sample_shape=(12, 8), batch_sizes=(4,), profiles=[cpu], warn=False).iloc[0]
    assert plain["launches"] > 12 * 3  # without the primitive: the per-step ops the trace records


def test_page_faults_of_large_buffers_widen_the_interval_down_and_warn():
    """A CPU step's buffers of 32 MiB or more cost ``fresh_byte_s`` each byte; whether a process pays it
    depends on its heap, so the interval's low end is the step without them, and a warning says so."""
    import dataclasses

    profile = dataclasses.replace(synthetic_profile(dispatch_s=10e-3, fresh_byte_s=1e-10), noise_floor_rel=0.1)
    relu = nn.Sequential(nn.ReLU())  # out of place: one output of the input's size
    big = predict_module(relu, sample_shape=(1024, 1024), batch_sizes=(16,), profiles=[profile], warn=False).iloc[0]
    fault_s = 16 * 2**22 * 1e-10  # 64 MiB faulted in
    assert big["fault_s"] == pytest.approx(fault_s)
    assert big["latency_s"] == pytest.approx(10e-3 + fault_s, rel=1e-9)
    assert big["latency_low_s"] == pytest.approx(10e-3 * 0.9, rel=1e-9)
    assert big["latency_high_s"] == pytest.approx(big["latency_s"] * 1.1, rel=1e-9)
    assert big["memory_share"] == pytest.approx(fault_s / big["latency_s"])  # the memory system's work
    assert any("64 MiB of this step's buffers are 32 MiB or larger" in w for w in big["warnings"])
    small = predict_module(relu, sample_shape=(1024,), batch_sizes=(16,), profiles=[profile], warn=False).iloc[0]
    assert small["fault_s"] == 0.0 and small["latency_low_s"] == pytest.approx(small["latency_s"] * 0.9)
    assert not any("MiB of this step's buffers" in w for w in small["warnings"])
    gpu = predict_module(relu, sample_shape=(1024, 1024), batch_sizes=(16,), warn=False,
                         profiles=[dataclasses.replace(profile, device="cuda")]).iloc[0]
    assert gpu["fault_s"] == 0.0


def test_the_forward_convolution_share_scales_a_depthwise_convolution_on_its_curve_not_a_pointwise_one():
    """``conv_forward_extra`` (fitted on the reference CNN's dense convolutions) scales a depthwise
    convolution costed on its own curve by the same share beyond its floor."""
    import dataclasses

    from crossover.opcost.layer_primitives import LAYER_FAMILIES
    from crossover.opcost.module_predict import step_prediction, trace_step
    from crossover.opcost.op_costs import op_cost
    from crossover.opcost.profiles import Curve

    base = synthetic_profile("cpu", dispatch_s=1 * US, bandwidth=1e9)
    curves = {family: Curve((1.0,), (50 * US,), rate=1e12) for family in LAYER_FAMILIES}
    calibrated = dataclasses.replace(base, curves=dict(base.curves, **curves))
    model = nn.Sequential(nn.Conv2d(8, 8, 3, padding=1, groups=8, bias=False))
    rows = trace_step(model, (8, 16, 16), 2)[0].to_dict("records")
    (conv,) = [r for r in rows if "convolution" in r["op"]]
    cost = op_cost(calibrated, conv, inference=True)
    assert cost.family == "conv_depthwise"

    def step(extra):
        profile = dataclasses.replace(calibrated, conv_forward_extra=extra)
        return step_prediction(profile, rows, module_calls=1, n_params=1, param_bytes=0)["latency_s"]

    assert step(0.5) - step(0.0) == pytest.approx(0.5 * (cost.host_s - cost.floor_s), rel=1e-6)


def test_training_batch_norm_is_costed_on_its_own_curves_and_its_primitives_run_the_traced_ops():
    """A training step's batch norm (statistics computed) and its backward op take the
    ``batch_norm_train`` and ``batch_norm_backward`` curves over the bytes they move (the input and
    output; the output's gradient, the input and its gradient), on a profile with them; without them, a
    reduction over the trace's bytes as before. The primitives call the very ops the trace records."""
    import dataclasses

    from crossover.opcost.layer_primitives import (BATCH_NORM_BACKWARD, BATCH_NORM_TRAIN, layer_family, layer_step,
                                                   moved_bytes)
    from crossover.opcost.module_predict import trace_step
    from crossover.opcost.op_costs import op_cost
    from crossover.opcost.trace import op_name

    records = trace_step(nn.Sequential(nn.Conv2d(3, 8, 3), nn.BatchNorm2d(8)), (3, 18, 18), 4, "train")[0]
    rows = records.to_dict("records")
    forward = next(r for r in rows if "batch_norm" in r["op"] and r.get("phase") != "backward")
    backward = next(r for r in rows if "batch_norm_backward" in r["op"])
    assert layer_family(forward, op_name(forward["op"]), inference=False) == BATCH_NORM_TRAIN
    assert layer_family(backward, op_name(backward["op"]), inference=False) == BATCH_NORM_BACKWARD
    elements = 4 * 8 * 16 * 16
    assert moved_bytes(forward, BATCH_NORM_TRAIN) == 4.0 * 2 * elements
    assert moved_bytes(backward, BATCH_NORM_BACKWARD) == 4.0 * 3 * elements
    base = synthetic_profile("cpu", dispatch_s=1 * US)
    curves = {BATCH_NORM_TRAIN: Curve((1.0,), (30 * US,), rate=1e30), BATCH_NORM_BACKWARD: Curve((1.0,), (50 * US,), rate=1e30)}
    calibrated = dataclasses.replace(base, curves=dict(base.curves, **curves))
    assert op_cost(base, forward).family == op_cost(base, backward).family == "reduction"
    assert op_cost(calibrated, forward).host_s == pytest.approx(30 * US)
    assert op_cost(calibrated, backward).host_s == pytest.approx(50 * US)
    for family in (BATCH_NORM_TRAIN, BATCH_NORM_BACKWARD):
        out = layer_step(family, (2, 16, 8, 8))()
        assert tuple(out[0].shape) == (2, 16, 8, 8)
