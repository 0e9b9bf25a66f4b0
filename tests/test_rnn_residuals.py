"""A CPU GRU costed as the calibration's GRU primitives measured it where they measured its batch and width."""

import dataclasses

import pytest
from torch import nn

from crossover.opcost.gpu_ops import (CPU_RNN_TERMS, RNN_RESIDUAL_GRID, cpu_recurrent_residuals, cpu_recurrent_seconds,
                                      fit_cpu_recurrent, residual_ratio)
from crossover.opcost.module_predict import predict_module
from crossover.opcost.profiles import synthetic_profile

US = 1e-6
TRUE = {"rnn_step_s": 5 * US, "rnn_gate_element_s": 1e-9, "rnn_flop_s": 1e-11, "rnn_weight_element_s": 2e-11,
        "rnn_call_s": 10 * US}
SHAPES = ((1, 16, 32), (1, 16, 128), (8, 16, 64), (64, 16, 64), (64, 16, 256), (512, 16, 64), (1, 64, 64), (8, 64, 64))


def _cells(bump_at_8=1.0):
    """The plan's shapes timed as the terms say, batch 8 ``bump_at_8`` times slower."""
    return [(b, t, h, cpu_recurrent_seconds(TRUE, b, t, h, h) * (bump_at_8 if b == 8 else 1.0)) for b, t, h in SHAPES]


def test_exact_terms_leave_no_residual():
    fitted = fit_cpu_recurrent(_cells())
    grid = cpu_recurrent_residuals(_cells(), fitted)
    assert all(v == pytest.approx(1.0, rel=1e-6) for row in grid.time_s for v in row)


def test_a_shape_the_terms_miss_is_costed_as_its_primitives_measured():
    cells = _cells(bump_at_8=1.25)
    fitted = fit_cpu_recurrent(cells)
    grid = cpu_recurrent_residuals(cells, fitted)
    profile = dataclasses.replace(synthetic_profile(), overheads={**synthetic_profile().overheads, **fitted},
                                  grids={**synthetic_profile().grids, RNN_RESIDUAL_GRID: grid})
    measured = cells[SHAPES.index((8, 64, 64))][3]
    plain = cpu_recurrent_seconds(fitted, 8, 64, 64, 64)
    assert plain < 0.95 * measured  # four linear terms cannot follow a bump at one batch
    assert plain * residual_ratio(profile, 8, 64) == pytest.approx(measured, rel=0.05)
    assert residual_ratio(profile, 512, 64) == pytest.approx(cells[SHAPES.index((512, 16, 64))][3]
                                                             / cpu_recurrent_seconds(fitted, 512, 16, 64, 64), rel=0.05)
    assert residual_ratio(profile, 4096, 1024) == residual_ratio(profile, 512, 256)  # held at the edges


def test_a_models_gru_takes_the_ratio_and_a_profile_without_the_grid_does_not():
    fitted = fit_cpu_recurrent(_cells(bump_at_8=1.25))
    base = dataclasses.replace(synthetic_profile(), overheads={**synthetic_profile().overheads, **fitted})
    with_grid = dataclasses.replace(base, grids={**base.grids,
                                                 RNN_RESIDUAL_GRID: cpu_recurrent_residuals(_cells(1.25), fitted)})
    model = nn.GRU(64, 64, batch_first=True)
    before = predict_module(model, sample_shape=(64, 64), batch_sizes=(8,), profiles=[base])["latency_s"].iloc[0]
    after = predict_module(model, sample_shape=(64, 64), batch_sizes=(8,), profiles=[with_grid])["latency_s"].iloc[0]
    assert after / before == pytest.approx(residual_ratio(with_grid, 8, 64), rel=0.05)
    assert cpu_recurrent_residuals([], fitted) is None and cpu_recurrent_residuals(_cells(), {}) is None
    assert set(CPU_RNN_TERMS) <= set(fitted)
