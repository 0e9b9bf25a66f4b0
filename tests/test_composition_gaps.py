"""experiments/composition_gaps.py: the normalisation-layer count and the leave-one-kind-out fit."""

import pandas as pd
import pytest

from conftest import load_experiment


def test_norm_layers_counts_the_reference_models_normalisation_layers():
    gaps = load_experiment("composition_gaps")
    from crossover.opcost.reference_models import reference_model

    counts = {name: gaps.norm_layers(reference_model(name)) for name in ("mlp", "cnn", "deep_mlp", "norm_mlp", "bn_cnn")}
    assert counts == {"mlp": 0, "cnn": 0, "deep_mlp": 0, "norm_mlp": 1, "bn_cnn": 2}


def test_a_price_per_normalisation_layer_fitted_on_one_kind_predicts_another_unseen():
    """Steps whose gap beyond their primitives is 1.5 µs a host event plus 30 µs a normalisation layer:
    with the norm-layers features a kind left out is predicted exactly from the others (two kinds carry a
    normalisation layer, so either left out leaves the price identified); with the composition's own
    features the kinds with one read low and the others high."""
    gaps = load_experiment("composition_gaps")
    kinds = {"mlp": (14, 0), "deep_mlp": (29, 0), "norm_mlp": (11, 1), "bn_cnn": (22, 2), "cnn": (18, 0)}
    rows = []
    for model, (events, norms) in kinds.items():
        for batch, bare in ((1, 50e-6), (64, 150e-6)):
            rows.append(dict(calibration="c", model=model, workload="forward", batch_size=batch, bare_s=bare,
                             measured_s=bare + 1.5e-6 * events + 30e-6 * norms, autograd_s=0.0,
                             host_events=float(events), conv_forward_s=0.0, backward_kernels_s=0.0,
                             norm_layers=float(norms)))
    rows = pd.DataFrame(rows)
    exact = gaps.leave_one_kind_out(rows, gaps.FEATURE_SETS["norm-layers"])
    assert all(e == pytest.approx(0, abs=1e-9) for e in exact.values())
    current = gaps.leave_one_kind_out(rows, gaps.FEATURE_SETS["current"])
    assert current[("norm_mlp", "forward", 1)] < -0.05 and current[("deep_mlp", "forward", 1)] > 0.01
