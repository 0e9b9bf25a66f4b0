"""crossover.opcost.streaming: memory-bound ops costed as a step's stream runs them, from the chain primitive."""

import dataclasses

import pytest
from torch import nn

from calibration_rows import overhead_rows, row
from crossover.opcost.calibrate import build_profile
from crossover.opcost.calibration_plan import PLANS, fresh_buffers, make_step, points
from crossover.opcost.module_predict import predict_module
from crossover.opcost.op_costs import op_cost
from crossover.opcost.profiles import Curve, synthetic_profile
from crossover.opcost.streaming import CHAIN_FAMILY, CHAIN_MIN_BYTES, CHAIN_OPS, in_stream, stream_factor

MIB = 2.0**20
US = 1e-6


def _with_chain(device="cpu"):
    """1 GB/s alone; the chain 1.5x slower at 32 MiB, as fast at 2 and 128 MiB."""
    profile = synthetic_profile(device, dispatch_s=1 * US, bandwidth=1e9)
    x = (2 * MIB, 32 * MIB, 128 * MIB)
    alone = Curve(x, tuple(b / 1e9 for b in x))
    chain = Curve(x, (2 * MIB / 1e9, 1.5 * 32 * MIB / 1e9, 128 * MIB / 1e9))
    return dataclasses.replace(profile, curves={**profile.curves, "elementwise": alone, CHAIN_FAMILY: chain})


def test_the_factor_is_the_chains_time_over_the_lone_ops():
    profile = _with_chain()
    assert stream_factor(profile, 32 * MIB) == pytest.approx(1.5)
    assert stream_factor(profile, 2 * MIB) == pytest.approx(1.0)
    assert 1.0 < stream_factor(profile, 8 * MIB) < 1.5  # between two sizes: interpolated curves
    assert stream_factor(profile, 1024 * MIB) == pytest.approx(1.0)  # held at the largest size's
    assert stream_factor(profile, 0.25 * MIB) == 1.0  # in the private caches


def test_without_the_chain_or_on_a_gpu_nothing_changes():
    assert stream_factor(synthetic_profile(bandwidth=1e9), 32 * MIB) == 1.0
    gpu = dataclasses.replace(_with_chain(), device="cuda")
    assert stream_factor(gpu, 32 * MIB) == 1.0


def test_a_memory_bound_op_costs_at_least_its_bytes_at_the_streams_rate():
    profile = _with_chain()
    stream = 1.5 * 32 * MIB / 1e9  # the chain's time at 32 MiB
    alone = 32 * MIB / 1e9  # the lone ReLU's time at 32 MiB
    assert in_stream(profile, alone, 32 * MIB) == pytest.approx(stream)  # as slow as the ReLU alone: the stream's
    assert in_stream(profile, 40e-3, 32 * MIB) == pytest.approx(stream)  # slower alone, quicker than the stream
    assert in_stream(profile, 0.1, 32 * MIB) == 0.1  # a kernel slower than the stream: as it is
    assert in_stream(synthetic_profile(bandwidth=1e9), 1e-3, 32 * MIB) == 1e-3  # no chain
    # where the stream is no slower than the lone op, an op cheaper than a ReLU of its bytes keeps its time
    assert in_stream(profile, 1e-6, 128 * MIB) == 1e-6 and in_stream(profile, 1e-6, 0.25 * MIB) == 1e-6
    # where it is slower, such an op pays the stream's extra over the lone ReLU on its own time
    assert in_stream(profile, 1e-3, 32 * MIB) == pytest.approx(1e-3 + 0.5 * 32 * MIB / 1e9)
    edge = [in_stream(profile, 1e-6, b * MIB) for b in (0.5, 0.5001)]  # the factor fades in: no jump
    assert edge[1] == pytest.approx(edge[0], rel=1e-3)
    relu = dict(op="aten.relu.default", kind="elementwise", input_shapes=[(2**22,)], output_shapes=[(2**22,)],
                bytes_read=16 * MIB, bytes_written=16 * MIB, launches=1)
    assert op_cost(profile, relu).host_s == pytest.approx(stream)
    product = dict(op="aten.mm.default", kind="matmul", input_shapes=[(4096, 1024), (1024, 1024)],
                   output_shapes=[(4096, 1024)], flops=2 * 4096 * 1024**2, bytes_read=32 * MIB,
                   bytes_written=16 * MIB, launches=1)
    assert op_cost(profile, product).host_s == op_cost(synthetic_profile(dispatch_s=1 * US, bandwidth=1e9),
                                                       product).host_s  # a matrix product: not a memory family


def test_a_models_relu_over_16_mib_costs_the_chains_time():
    model = nn.Sequential(nn.ReLU())
    shape = (4 * 2**20,)  # 16 MiB in, 16 MiB out
    plain = synthetic_profile(dispatch_s=1 * US, bandwidth=1e9)
    before = predict_module(model, sample_shape=shape, batch_sizes=(1,), profiles=[plain])["latency_s"].iloc[0]
    after = predict_module(model, sample_shape=shape, batch_sizes=(1,), profiles=[_with_chain()])["latency_s"].iloc[0]
    assert after - before == pytest.approx(0.5 * 32 * MIB / 1e9, rel=0.02)


def test_the_chain_primitive_is_timed_from_its_smallest_bytes_on_a_cpu_only():
    chain = [p for p in points(PLANS["quick"]) if p.family == CHAIN_FAMILY]
    assert chain and min(p.x for p in chain) == CHAIN_MIN_BYTES  # the quick plan's sizes reach it exactly
    assert all(p.x == 8.0 * p.n for p in chain)  # one ReLU's input and output
    assert not [p for p in points(PLANS["quick"], "cuda") if p.family == CHAIN_FAMILY]
    assert fresh_buffers(CHAIN_FAMILY, "relu_chain", 2**20) == [4.0 * 2**20] * CHAIN_OPS
    point = dataclasses.replace(chain[0], n=1024, x=8192.0, shape=(1024,))
    out = make_step(point, "cpu")()
    assert out.shape == (1024,) and bool((out >= 0).all())


def test_the_chains_curve_is_seconds_per_relu():
    rows = overhead_rows()
    rows += [row("relu", 100 * US, family="elementwise", x=8 * MIB, n=2**20)]
    rows += [row("relu_chain", CHAIN_OPS * 150 * US, family=CHAIN_FAMILY, x=8 * MIB, n=2**20)]
    profile = build_profile(rows, device="cpu", machine="m")
    assert profile.curves[CHAIN_FAMILY](8 * MIB) == pytest.approx(150 * US)
    assert stream_factor(profile, 8 * MIB) == pytest.approx(1.5)


def test_the_chains_page_faults_are_taken_out_past_the_mmap_threshold():
    """At 2^23 elements each ReLU's 32 MiB output is mapped afresh every call: the calibration takes the four
    buffers' faults out of the chain's time (a step's faults are costed apart, by the buffers it allocates)."""
    from crossover.opcost.calibration_plan import FRESH_PROBE_BYTES

    fault_s_per_byte = 0.25e-9
    rows = overhead_rows()
    rows += [row("fresh_fill", 1e-3 + fault_s_per_byte * FRESH_PROBE_BYTES), row("reuse_fill", 1e-3)]
    n = 2**23  # 32 MiB a ReLU's output
    relu_s = 64 * MIB / 1e9
    faults_s = CHAIN_OPS * 32 * MIB * fault_s_per_byte
    rows += [row("relu", relu_s + 32 * MIB * fault_s_per_byte, family="elementwise", x=8.0 * n, n=n)]
    rows += [row("relu_chain", CHAIN_OPS * 1.5 * relu_s + faults_s, family=CHAIN_FAMILY, x=8.0 * n, n=n)]
    profile = build_profile(rows, device="cpu", machine="m")
    assert profile.overheads["fresh_byte_s"] == pytest.approx(fault_s_per_byte)
    assert profile.curves[CHAIN_FAMILY](8.0 * n) == pytest.approx(1.5 * relu_s, rel=1e-6)
    assert profile.curves["elementwise"](8.0 * n) == pytest.approx(relu_s, rel=1e-6)
    assert stream_factor(profile, 8.0 * n) == pytest.approx(1.5, rel=1e-6)
