"""oneDNN's channel blocks: a CPU's oneDNN forward convolution computes whole blocks of 16 channels, so its
grids are indexed by the blocked ``C_in·k·C_out`` (the calibration's cells and a model's rows alike)."""

import dataclasses

import pytest
from torch import nn

from calibration_rows import overhead_rows, row
from crossover.opcost.calibrate import build_profile
from crossover.opcost.conv_primitives import BLOCKED_KN, CONV1D_LENGTH, cell_kn, onednn_kn
from crossover.opcost.module_predict import trace_step
from crossover.opcost.op_costs import op_cost

US = 1e-6


def _conv(layer, sample_shape, batch):
    table, _ = trace_step(layer, sample_shape, batch, "forward")
    (conv,) = [r for r in table.to_dict("records") if "convolution" in r["op"]]
    return conv


def test_channels_are_padded_to_whole_blocks_but_a_first_layers_few_inputs_are_not():
    assert onednn_kn(24, 24, 3) == 32 * 3 * 32
    assert onednn_kn(16, 48, 9) == 16 * 9 * 48  # whole blocks: as the FLOPs count them
    assert onednn_kn(3, 6, 25) == 3 * 25 * 16  # a plain first-layer input; the output padded
    assert onednn_kn(40, 17, 1) == 48 * 32
    assert onednn_kn(8, 32, 1) == 16 * 32  # a 1×1 kernel: its few inputs padded too


def test_a_cells_kn_is_blocked_for_a_cpus_onednn_forward_grids_only():
    cell = dict(family="conv1d", name="conv1d", shape=f"4x20x20x3x{CONV1D_LENGTH}", x=2.0 * 800 * 20 * 3 * 20)
    assert cell_kn(cell, 800, "cpu") == 32 * 3 * 32
    assert cell_kn(cell, 800, "cuda") == 20 * 3 * 20
    assert cell_kn(dict(cell, name="conv1d_native"), 800, "cpu") == 20 * 3 * 20  # im2col + GEMM: no blocks
    assert cell_kn(dict(cell, family="conv_backward", name="conv2d"), 800, "cpu") == 20 * 3 * 20


def _profile():
    """A CPU calibration's 1-D grid: two channel counts, time linear in the blocked K·N."""
    rows = overhead_rows()
    for (c, k), batch in [((16, 3), 1), ((16, 3), 64), ((48, 3), 1), ((48, 3), 64)]:
        m = batch * CONV1D_LENGTH
        seconds = 3 * US + 1e-11 * m * onednn_kn(c, c, k)
        rows.append(dict(row("conv1d", seconds, family="conv1d", m=m, x=2.0 * m * c * k * c),
                         shape=f"{batch}x{c}x{c}x{k}x{CONV1D_LENGTH}"))
    return build_profile(rows, device="cpu", machine="test", threads=2)


def test_a_row_between_whole_blocks_is_costed_as_the_blocks_it_computes():
    profile = _profile()
    assert profile.meta["conv_kn"] == BLOCKED_KN
    grid = profile.grids[f"conv1d@{CONV1D_LENGTH}"]
    assert grid.kn == (16 * 3 * 16.0, 48 * 3 * 48.0)
    conv = _conv(nn.Conv1d(24, 24, 3, padding=1), (24, CONV1D_LENGTH), batch=8)
    assert op_cost(profile, conv).host_s == pytest.approx(grid(8 * CONV1D_LENGTH, 32 * 3 * 32))
    assert op_cost(profile, conv).host_s > grid(8 * CONV1D_LENGTH, 24 * 3 * 24) * 1.3
    older = dataclasses.replace(profile, meta={k: v for k, v in profile.meta.items() if k != "conv_kn"})
    assert op_cost(older, conv).host_s == pytest.approx(grid(8 * CONV1D_LENGTH, 24 * 3 * 24))  # as its cells were


def test_a_grouped_convolution_keeps_its_flops_kn():
    from crossover.opcost.conv_grids import blocked_dims
    from crossover.opcost.op_costs import conv_dims

    profile = _profile()
    grouped = _conv(nn.Conv1d(24, 24, 3, padding=1, groups=2), (24, CONV1D_LENGTH), batch=8)
    dense = _conv(nn.Conv1d(24, 24, 3, padding=1), (24, CONV1D_LENGTH), batch=8)
    assert blocked_dims(profile, grouped, conv_dims(grouped)) == conv_dims(grouped)
    assert blocked_dims(profile, dense, conv_dims(dense)) == (conv_dims(dense)[0], 32 * 3 * 32.0)


def test_an_avx2_cpus_blocks_hold_eight_channels():
    """oneDNN blocks channels by the CPU's vector (``aBcd8b`` on the AMD VM's AVX2): a profile that counted its
    vector floats indexes its cells and costs a model's rows in its own blocks; an older one in AVX-512's 16."""
    from crossover.opcost.conv_primitives import ONEDNN_CHANNEL_BLOCK, channel_block
    from crossover.opcost.conv_grids import blocked_dims

    assert (channel_block(8), channel_block(16), channel_block(None), channel_block(4)) == (8, 16, ONEDNN_CHANNEL_BLOCK, 16)
    assert onednn_kn(8, 32, 1, block=8) == 8 * 32  # the pointwise cell of 8 channels: no longer a 16-channel one
    assert onednn_kn(24, 24, 3, block=8) == 24 * 3 * 24 and onednn_kn(3, 6, 25, block=8) == 3 * 25 * 8
    cell = dict(family="conv_pointwise", name="conv2d", shape="256x8x32x1x8", x=2.0 * 256 * 64 * 8 * 32)
    assert cell_kn(cell, 256 * 64, "cpu", block=8) == 8 * 32 and cell_kn(cell, 256 * 64, "cpu") == 16 * 32
    profile = _profile()
    conv = _conv(nn.Conv1d(24, 24, 3, padding=1), (24, CONV1D_LENGTH), batch=8)
    avx2 = dataclasses.replace(profile, meta={**profile.meta, "vector_floats": 8})
    assert blocked_dims(avx2, conv, (8 * CONV1D_LENGTH, 0))[1] == 24 * 3 * 24
    assert blocked_dims(profile, conv, (8 * CONV1D_LENGTH, 0))[1] == 32 * 3 * 32


def test_a_calibration_on_an_avx2_cpu_indexes_its_cells_in_blocks_of_eight():
    from crossover.opcost.short_rows import SUBVECTOR_FORWARD

    rows = overhead_rows() + [row("softmax", 1 * US, family=SUBVECTOR_FORWARD, m=1, k=5, x=40.0),
                              row("softmax", 1 * US, family=SUBVECTOR_FORWARD, m=1, k=8, x=64.0)]
    for (c_in, c_out), batch in [((8, 32), 1), ((8, 32), 64), ((32, 32), 1), ((32, 32), 64)]:
        m = batch * 64
        rows.append(dict(row("conv2d", 1 * US + 1e-11 * m * c_in * c_out, family="conv_pointwise", m=m,
                             x=2.0 * m * c_in * c_out), shape=f"{batch}x{c_in}x{c_out}x1x8"))
    avx2 = build_profile(rows, device="cpu", machine="test", threads=1)
    assert avx2.meta["vector_floats"] == 8 and avx2.grids["conv_pointwise@8"].kn == (8 * 32.0, 32 * 32.0)
    avx512 = build_profile(rows[:-6] + rows[-4:], device="cpu", machine="test", threads=1)  # no count: 16 a block
    assert avx512.grids["conv_pointwise@8"].kn == (16 * 32.0, 32 * 32.0)
