"""The physical terms the residuals called for: each recovered from synthetic data with known
parameters, and an impossible fitted parameter flagged against a device's peaks."""

import math

import numpy as np
import pandas as pd
import pytest

from crossover import analysis as A
from crossover.fit.latency_models import evaluate, features, fit_parameters, model_parameters, upper_bounds
from crossover.fit.peaks import check_parameters, find_peaks, peaks_for, spec_sheet_peaks, write_peaks

from test_analysis import CPU, fit_median, sizes, synthetic

#: A CPU whose weights stream from cache while the model fits in 8 MB, and at a layer-size-dependent
#: rate out of it; a matrix-matrix product packs its weights first.
CACHED_CPU = dict(step_s=20e-6, layer_s=10e-6, flops_per_s=150e9, cache_bytes_per_s=40e9, cache_bytes=8e6,
                  small_bytes_per_s=4e9, large_bytes_per_s=12e9, ramp_bytes=5e5, batch_half=8.0,
                  pack_bytes_per_s=30e9)
PACKING = "roofline+cache+ramp+hockney+pack"


def _fit_exact(model, truth, points=None):
    """Parameters of ``model`` fitted to noiseless times drawn from it at ``points``."""
    d, n, b = np.array(points or sizes(), dtype=float).T
    X = features(d, n, b)
    t = A.model_latency_s(model, truth, d, n, b)
    return dict(zip(model_parameters(model), fit_parameters(model, X, t)))


def test_packing_is_paid_only_by_a_matrix_matrix_product():
    packing = dict(CPU, pack_bytes_per_s=10e9)
    one, two = (float(A.model_latency_s("roofline+pack+serial", packing, 512, 1, b)) for b in (1, 2))
    plain = [float(A.model_latency_s("roofline+serial", CPU, 512, 1, b)) for b in (1, 2)]
    assert one == pytest.approx(plain[0], rel=1e-9)
    assert two - one == pytest.approx(plain[1] - plain[0] + 512 * 512 * 4 / 10e9, rel=1e-6)
    # with compute and memory overlapping (the default smooth max) packing still costs, less
    assert float(A.model_latency_s("roofline+pack", packing, 512, 1, 2)) > float(A.model_latency_s("roofline", CPU, 512, 1, 2))


def test_fit_recovers_the_packing_rate_and_cv_prefers_the_model_with_it():
    truth = dict(CPU, pack_bytes_per_s=8e9)
    frame = synthetic("roofline+pack", truth, noise=0.02, seed=3)
    fit = fit_median(frame, ["roofline", "roofline+pack"], n_boot=0)
    assert fit.model == "roofline+pack"
    value = fit.parameters().set_index("param").loc["pack_bytes_per_s", "value"] / 1e-9
    assert value == pytest.approx(8e9, rel=0.2)


def test_cache_with_a_ramp_out_of_cache_recovers_its_bandwidths():
    got = _fit_exact(PACKING, CACHED_CPU)
    for name in ("cache_bytes_per_s", "large_bytes_per_s", "flops_per_s", "pack_bytes_per_s"):
        assert got[name] == pytest.approx(CACHED_CPU[name], rel=0.1), name
    assert "dram_bytes_per_s" not in model_parameters(PACKING)  # the ramp is the out-of-cache bandwidth


def test_out_of_cache_bandwidth_rises_with_layer_size():
    small = A.model_latency_s(PACKING, CACHED_CPU, 64, 4096, 1) / 4096  # 67 MB of weights, 16 KB layers
    large = A.model_latency_s(PACKING, CACHED_CPU, 1024, 64, 1) / 64  # 268 MB, 4 MB layers
    rate_small = 64 * 64 * 4 / (small - CACHED_CPU["layer_s"])
    rate_large = 1024 * 1024 * 4 / (large - CACHED_CPU["layer_s"])
    assert rate_small < 5e9 < 10e9 < rate_large  # 4 and 12 GB/s at the ends of the ramp


def test_asynchronous_launches_overlap_with_kernels():
    gpu = dict(step_s=50e-6, layer_s=20e-6, flops_per_s=20e12, bytes_per_s=2e12, kernel_s=5e-6)
    # launch-bound: the host's 20 µs per layer; kernel-bound (d=8192: 134 MB per layer at 2 TB/s): the kernels'
    launch = A.model_latency_s("roofline+async", gpu, 64, 100, 1)
    kernel = A.model_latency_s("roofline+async", gpu, 8192, 100, 1)
    assert float(launch) == pytest.approx(50e-6 + 100 * 20e-6, rel=0.02)
    per_layer_kernel = 5e-6 + 8192 * 8192 * 4 / 2e12
    assert float(kernel) == pytest.approx(50e-6 + 100 * per_layer_kernel, rel=0.02)
    assert float(kernel) < float(A.model_latency_s("roofline", {k: v for k, v in gpu.items() if k != "kernel_s"},
                                                   8192, 100, 1))
    got = _fit_exact("roofline+async", gpu, sizes() + [(d, 32, 1) for d in (2048, 4096, 8192)])
    assert got["layer_s"] == pytest.approx(20e-6, rel=0.1)
    assert got["bytes_per_s"] == pytest.approx(2e12, rel=0.1)


def test_width_half_slows_small_matrices():
    truth = dict(CPU, batch_half=4.0, width_half=100.0)
    got = _fit_exact("roofline+hockney+width", truth)
    assert got["width_half"] == pytest.approx(100.0, rel=0.15)


def test_serial_adds_compute_and_memory():
    X = features(np.array([512.0]), np.array([1.0]), np.array([64.0]))
    theta = [1e-12, 1e-12, 100e9, 20e9]  # no step or layer overhead: compute and memory alone
    compute, memory = 2 * 64 * 512 * 512 / 100e9, (512 * 512 + 7 * 64 * 512) * 4 / 20e9
    assert float(evaluate("roofline+serial", theta, X)[0]) == pytest.approx(compute + memory, rel=1e-6)
    assert float(evaluate("roofline", theta, X)[0]) < compute + memory


# ------------------------------------------------------------------------------------- peaks
def _parameters(**values):
    rows = []
    for name, value in values.items():
        spec = A.PARAMS[name]
        rows.append(dict(series="s", model="m", param=name, label=spec.label, unit=spec.unit,
                         value=value * spec.scale, low=math.nan, high=math.nan, at_bound=False, identified=True))
    return pd.DataFrame(rows)


def test_a_bandwidth_above_the_measured_peak_is_flagged_and_not_identified():
    peaks = dict(dram_bytes_per_s=30e9, cache_bytes_per_s=120e9, flops_per_s=190e9, source="measured")
    table = check_parameters(_parameters(flops_per_s=150e9, cache_bytes_per_s=400e9, dram_bytes_per_s=10e9),
                             peaks).set_index("param")
    assert table.loc["cache_bytes_per_s", "above_peak"] and not table.loc["cache_bytes_per_s", "identified"]
    assert not table.loc["flops_per_s", "above_peak"] and table.loc["flops_per_s", "identified"]
    assert table.loc["dram_bytes_per_s", "peak"] == pytest.approx(30.0)  # GB/s: the streaming peak


def test_dram_faster_than_cache_is_flagged_even_without_peaks():
    # the H100 fit of the first edition: "DRAM" 29 TB/s above its 0.69 TB/s "cache" bandwidth
    table = check_parameters(_parameters(cache_bytes_per_s=0.69e12, dram_bytes_per_s=29e12), {}).set_index("param")
    assert table.loc["dram_bytes_per_s", "above_peak"]
    assert not table.loc["cache_bytes_per_s", "above_peak"]


def test_the_h100_spec_sheet_bounds_its_hbm_bandwidth():
    peaks = spec_sheet_peaks("NVIDIA H100 80GB HBM3")
    assert peaks["dram_bytes_per_s"] == 3.35e12
    table = check_parameters(_parameters(cache_bytes_per_s=5e12, dram_bytes_per_s=4.26e12), peaks).set_index("param")
    assert table.loc["dram_bytes_per_s", "above_peak"]
    assert math.isnan(table.loc["cache_bytes_per_s", "peak"])  # a spec sheet gives no in-cache peak
    assert spec_sheet_peaks("AMD EPYC") == {}


def test_peaks_are_found_beside_a_machines_runs_and_measured_ones_win(tmp_path):
    write_peaks(tmp_path / "vm", "vm", {"cpu": dict(flops_per_s=1e11, source="measured")})
    (tmp_path / "vm" / "quick").mkdir()
    found = find_peaks([tmp_path / "vm" / "quick"])
    assert peaks_for(found, "vm", "cpu")["flops_per_s"] == 1e11
    assert peaks_for(found, "other", "cuda", "NVIDIA H100 80GB HBM3")["flops_per_s"] == 67e12
    assert peaks_for(found, "other", "cpu") == {}


def test_a_single_bandwidth_is_bounded_by_streaming_and_the_reason_is_given():
    # the H100 eager fit's one bandwidth, 4.26 TB/s, serves sizes far out of its 50 MB L2
    table = check_parameters(_parameters(bytes_per_s=4.26e12), spec_sheet_peaks("NVIDIA H100 80GB HBM3"))
    row = table.iloc[0]
    assert row.above_peak and "above the device's peak" in row.impossible and row.peak == pytest.approx(3350)
    inverted = check_parameters(_parameters(cache_bytes_per_s=1e9, dram_bytes_per_s=1e12), {}).set_index("param")
    assert "in-cache" in inverted.loc["dram_bytes_per_s", "impossible"]


def test_peaks_bound_each_rate_by_the_peak_that_physically_limits_it():
    peaks = dict(dram_bytes_per_s=30e9, cache_bytes_per_s=120e9, flops_per_s=190e9, source="measured")
    bounds = upper_bounds(PACKING, peaks)
    assert bounds["flops_per_s"] == 190e9 and bounds["cache_bytes_per_s"] == 120e9
    assert bounds["large_bytes_per_s"] == 30e9 and bounds["small_bytes_per_s"] == 30e9  # out of cache: streaming
    assert bounds["pack_bytes_per_s"] == 120e9
    assert "step_s" not in bounds and "cache_bytes" not in bounds  # no peak bounds an overhead or a size
    assert upper_bounds("roofline", peaks)["bytes_per_s"] == 30e9  # one bandwidth serves out-of-cache sizes too
    assert upper_bounds("roofline", {}) == {} and upper_bounds("roofline", None) == {}


def test_a_fit_never_goes_above_the_devices_peak_and_says_the_rate_is_pinned_there():
    # the data want a 60 GB/s bandwidth on a device whose streaming peak is 30 GB/s (as the H100's
    # first-edition fit wanted 4.26 TB/s of a 3.35 TB/s HBM)
    truth = dict(CPU, bytes_per_s=60e9)
    frame = synthetic("roofline", truth, noise=0.02, seed=4)
    free = fit_median(frame, ["roofline"], n_boot=0, peaks=None)
    bounded = fit_median(frame, ["roofline"], n_boot=0, peaks=dict(dram_bytes_per_s=30e9, source="measured"))
    assert free.parameters().set_index("param").loc["bytes_per_s", "value"] == pytest.approx(60, rel=0.1)
    table = bounded.parameters().set_index("param")
    assert table.loc["bytes_per_s", "value"] <= 30.0 * 1.0001
    assert table.loc["bytes_per_s", "at_bound"] and not table.loc["bytes_per_s", "identified"]
    assert bounded.peaks["dram_bytes_per_s"] == 30e9
    checked = check_parameters(bounded.parameters(), bounded.peaks).set_index("param")
    assert not checked["above_peak"].any()


def test_a_fit_finds_the_peaks_beside_its_rows_results(tmp_path):
    write_peaks(tmp_path / "synth", "synth", {"cpu": dict(dram_bytes_per_s=30e9, source="measured")})
    frame = synthetic("roofline", dict(CPU, bytes_per_s=60e9), noise=0.02, seed=4)
    frame["results_dir"] = str(tmp_path / "synth" / "quick")
    fit = fit_median(frame, ["roofline"], n_boot=0)  # peaks="auto"
    assert fit.peaks["dram_bytes_per_s"] == 30e9
    assert fit.parameters().set_index("param").loc["bytes_per_s", "value"] <= 30.0 * 1.0001


def test_a_candidate_is_judged_on_interior_folds_not_on_one_extrapolating_end():
    from crossover.fit.validation import selection_score

    cv = pd.DataFrame([
        # a: one catastrophic end fold (batch 1 held out) but the best interpolation
        dict(model="a", axis="batch_size", mape_pct=700.0, interior_mape_pct=10.0),
        dict(model="a", axis="d_model", mape_pct=15.0, interior_mape_pct=12.0),
        dict(model="b", axis="batch_size", mape_pct=20.0, interior_mape_pct=15.0),
        dict(model="b", axis="d_model", mape_pct=20.0, interior_mape_pct=18.0),
        # an axis with no interior fold is judged on its full MAPE
        dict(model="c", axis="n_layers", mape_pct=30.0, interior_mape_pct=math.nan),
    ])
    assert selection_score(cv, "a") == pytest.approx(11.0)
    assert selection_score(cv, "b") == pytest.approx(16.5)
    assert selection_score(cv, "c") == pytest.approx(30.0)
    assert math.isnan(selection_score(cv, "missing"))


def test_a_cpu_series_gets_the_cpu_candidates_and_a_gpu_series_does_not():
    from crossover.fit.latency_models import CPU_MODELS, MODELS, default_models

    assert set(CPU_MODELS) <= set(default_models("cpu"))
    assert default_models("cuda") == tuple(MODELS) and not set(CPU_MODELS) & set(default_models("cuda"))
