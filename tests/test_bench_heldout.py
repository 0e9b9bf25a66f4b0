"""experiments/bench_heldout.py's residual table: the chosen fit against every size of a run."""

import numpy as np

from conftest import ROOT, load_experiment


def test_the_residual_table_lists_every_size_with_the_fits_prediction_and_its_time_per_layer():
    bench = load_experiment("bench_heldout")
    from crossover.fit.calibrated_model import calibration_for_rows
    from crossover.fit.series_fit import fit_series

    run = ROOT / "experiments" / "results" / "nvidia-h200-16c" / "gpu-paired"
    frame = bench.device_rows(run, "cuda")
    fit = fit_series(frame, ["calibrated-gpu"], n_boot=0, statistic="p10", axes=(), cache=False,
                     calibration=calibration_for_rows(frame))
    table = bench.residual_table(frame, fit, "p10")
    held = table[table.held_out]
    assert len(held) == 10 and set(held.sweep) == {"heldout"}  # the quick suite's ten held-out sizes
    assert (~table.held_out).sum() > 50
    row = held[(held.d_model == 96) & (held.n_layers == 200)].iloc[0]
    assert row.us_per_layer == np.float64(1e6 * row.latency_s / 200)
    assert row.predicted_s == float(fit.latency_s(96, 200, 1))
    assert np.allclose(table.error_pct, 100 * (table.predicted_s / table.latency_s - 1))
    assert list(table.n_layers) == sorted(table.n_layers)
