"""A CPU's 1 × 1 convolutions costed as the products and reorders they run (crossover.opcost.pointwise_convs)."""

import dataclasses

import pytest
from torch import nn

from crossover.opcost.module_predict import trace_step
from crossover.opcost.op_costs import conv_backend, op_cost
from crossover.opcost.pointwise_convs import is_pointwise, pointwise_conv_s
from crossover.opcost.profiles import Curve, Grid, synthetic_profile

US = 1e-6


def _conv_row(conv: nn.Module, shape: tuple, batch: int) -> dict:
    records = trace_step(conv.eval(), shape, batch)[0].to_dict("records")
    return next(r for r in records if r["kind"] == "conv")


def _profile(threads: int = 1):
    """Products at 1 ns per row per weight element, copies at 1 ps per byte (power laws: the grids and
    curves interpolate them exactly); a conv grid that costs every convolution 1 s (so that a row costed
    on it shows)."""
    base = synthetic_profile("cpu", dispatch_s=2 * US)
    products = Grid((1.0, 1e6), (1.0, 1e6), [[1e-9 * m * kn for kn in (1.0, 1e6)] for m in (1.0, 1e6)])
    conv = Grid((1.0, 1e7), (1.0, 1e7), [[1.0, 1.0], [1.0, 1.0]])
    copy = Curve((1.0, 1e9), (1e-12, 1e-3))
    return dataclasses.replace(base, threads=threads, grids=dict(base.grids, matmul=products, conv=conv),
                               curves=dict(base.curves, copy=copy))


def test_only_a_forward_one_by_one_dense_unstrided_2d_convolution_is_pointwise():
    assert is_pointwise(_conv_row(nn.Conv2d(16, 32, 1, bias=False), (16, 8, 8), 4))
    assert not is_pointwise(_conv_row(nn.Conv2d(16, 32, 3, padding=1), (16, 8, 8), 4))
    assert not is_pointwise(_conv_row(nn.Conv2d(16, 32, 1, stride=2), (16, 8, 8), 4))  # a downsampling one
    assert not is_pointwise(_conv_row(nn.Conv2d(16, 32, 1, groups=4), (16, 8, 8), 4))
    assert not is_pointwise(_conv_row(nn.Conv1d(16, 32, 1), (16, 64), 4))  # the 1-D grids cost it


def test_a_onednn_pointwise_convolution_is_one_product_and_its_reorders():
    """64 images of 16 × 16 pixels, 16 → 32 channels: a product of 16384 rows by 512 weight elements,
    and reorders of the output (2 MiB) and the input (1 MiB, 16 channels), each read and written."""
    profile = _profile(threads=1)
    row = _conv_row(nn.Conv2d(16, 32, 1, bias=False), (16, 16, 16), 64)
    assert conv_backend(row, 1) == "mkldnn"  # a batch of 16 or more
    product = 1e-9 * 64 * 256 * 512
    reorders = 1e-12 * 2 * (2**21 + 2**20)
    assert pointwise_conv_s(profile, row, "mkldnn") == pytest.approx(product + reorders)
    assert op_cost(profile, row, inference=True).host_s == pytest.approx(product + reorders)
    few = _conv_row(nn.Conv2d(8, 32, 1, bias=False), (8, 16, 16), 64)  # under 16 input channels: read plain
    assert pointwise_conv_s(profile, few, "mkldnn") == pytest.approx(
        1e-9 * 64 * 256 * 256 + 1e-12 * 2 * 2**21)


def test_a_native_pointwise_convolution_is_a_product_per_image_with_one_dispatch():
    profile = _profile(threads=1)
    row = _conv_row(nn.Conv2d(16, 32, 1, bias=False), (16, 16, 16), 8)
    assert conv_backend(row, 1) == "native"  # one thread, a batch under 16
    per_image = 1e-9 * 256 * 512
    assert op_cost(profile, row, inference=True).host_s == pytest.approx(per_image + 7 * (per_image - 2 * US))
    assert conv_backend(row, 2) == "mkldnn"  # more threads: oneDNN whatever the batch


def test_other_convolutions_and_devices_keep_the_grids():
    profile = _profile()
    dense = _conv_row(nn.Conv2d(16, 32, 3, padding=1), (16, 16, 16), 64)
    assert op_cost(profile, dense, inference=True).host_s == pytest.approx(1.0)  # the conv grid's
    no_copy = dataclasses.replace(profile, curves={k: v for k, v in profile.curves.items() if k != "copy"})
    pointwise = _conv_row(nn.Conv2d(16, 32, 1), (16, 16, 16), 64)
    assert op_cost(no_copy, pointwise, inference=True).host_s == pytest.approx(1.0)  # no copy curve: as before
    gpu = dataclasses.replace(profile, device="cuda")
    assert op_cost(gpu, pointwise, inference=True).device_s == pytest.approx(1.0)
