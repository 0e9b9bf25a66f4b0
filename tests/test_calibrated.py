"""The calibrated latency model: the toy model's step costed on a profile, its parts scaled by a fit."""

import dataclasses

import numpy as np
import pandas as pd
import pytest

from crossover.fit.calibrated_model import (DEFAULT_PRIVATE_CACHE_BYTES, RUN_CALIBRATION_DIR,
                                            calibration_for_rows, core_cache_bytes, gemm_layers, part_names, toy_parts)
from crossover.errors import AnalysisError
from crossover.fit.latency_models import (CALIBRATED, CALIBRATED_GPU, WARM_LAYER_BYTES, default_models, evaluate,
                                          features, fit_parameters, model_parameters)
from crossover.measurement.toy_model import ResidualMLP
from crossover.opcost.module_predict import step_prediction, trace_step
from crossover.opcost.profiles import Grid, synthetic_profile, write_profile

from test_analysis import fit_median, sizes

US = 1e-6
PRIVATE = 2**19  # one core's private cache in two_speed_profile


def two_speed_profile(machine="testbox"):
    """A CPU whose matrix products run at 50 GFLOP/s with hot weights and 5 with cold ones."""
    base = synthetic_profile(dispatch_s=2 * US, flop_rate=5e10, bandwidth=5e9, machine=machine, module_call_s=1 * US)
    hot = Grid((1.0,), (1e-12,), ((2 * US,),), rate=5e10)
    cold = Grid((1.0,), (1e-12,), ((2 * US,),), rate=5e9)
    return dataclasses.replace(base, grids={"matmul": hot, "matmul_cold": cold}, llc_bytes=32 * 2**20, threads=2,
                               cache_bytes=2 * PRIVATE)


def direct_latency_s(profile, d_model, n_layers, batch_size, weights):
    """The step of the whole model costed at once (no one-and-two-layer shortcut)."""
    model = ResidualMLP(d_model, n_layers, device="meta")
    table, calls = trace_step(model, (d_model,), batch_size)
    param_bytes = sum(p.numel() * p.element_size() for p in model.parameters())
    return step_prediction(profile, table.to_dict("records"), module_calls=calls, n_params=n_layers,
                           param_bytes=param_bytes, weights=weights)["latency_s"]


@pytest.mark.parametrize("d_model, n_layers, batch_size", [(32, 5, 3), (64, 3, 1), (16, 9, 40)])
def test_the_parts_of_a_deep_stack_add_up_to_the_whole_step_costed_at_once(d_model, n_layers, batch_size):
    profile = two_speed_profile()
    parts = toy_parts(profile, d_model, n_layers, batch_size)
    for warmth in ("hot", "cold"):
        total = sum(float(parts[f"{part}_{warmth}_s"]) for part in ("floor", "memory", "compute"))
        assert total == pytest.approx(direct_latency_s(profile, d_model, n_layers, batch_size, warmth), rel=1e-9)
    assert float(parts["compute_cold_s"]) > float(parts["compute_hot_s"])  # cold weights: the slower grid


def test_forcing_the_weights_hot_or_cold_overrides_their_size():
    profile = two_speed_profile()
    hot, cold = (direct_latency_s(profile, 64, 2, 8, w) for w in ("hot", "cold"))
    assert cold > hot
    assert direct_latency_s(profile, 64, 2, 8, None) == pytest.approx(hot)  # 32 KB of weights: warm by size
    with pytest.raises(ValueError, match="lukewarm"):
        direct_latency_s(profile, 64, 2, 8, "lukewarm")


def gpu_profile():
    """A GPU whose kernels run at 1 TFLOP/s after a 3 µs floor; launches cost 7 µs on the host, a sync 5."""
    return synthetic_profile("cuda", dispatch_s=3 * US, flop_rate=1e12, bandwidth=1e12, launch_s=7 * US,
                             sync_s=5 * US, module_call_s=1 * US, machine="gpubox")


@pytest.mark.parametrize("d_model, n_layers, batch_size", [(32, 5, 3), (256, 3, 64)])
def test_a_gpu_steps_host_device_and_sync_parts_are_the_step_costed_at_once(d_model, n_layers, batch_size):
    profile = gpu_profile()
    parts = toy_parts(profile, d_model, n_layers, batch_size)
    assert set(parts) == {"host_s", "device_s", "sync_s"}
    model = ResidualMLP(d_model, n_layers, device="meta")
    table, calls = trace_step(model, (d_model,), batch_size)
    whole = step_prediction(profile, table.to_dict("records"), module_calls=calls, n_params=n_layers,
                            param_bytes=sum(p.numel() * p.element_size() for p in model.parameters()))
    for name in ("host_s", "device_s", "sync_s"):
        assert float(parts[name]) == pytest.approx(whole[name], rel=1e-9)
    assert float(parts["sync_s"]) == pytest.approx(5 * US)
    assert float(parts["host_s"]) > 3 * n_layers * 7 * US  # three launches a layer, 7 µs each, and module calls


GPU_TRUTH = dict(step_s=30 * US, host_scale=1.3, device_scale=0.8, gemm_layer_s=4 * US)


def test_a_gpu_product_on_cublas_one_row_path_pays_no_matrix_matrix_cost():
    """Up to 8 rows over a weight at most 64 wide a GPU layer pays nothing beyond one row (the H100's
    ``matmul_host`` cells: +0.2-1.3 µs), from 32 rows or over a 128-wide weight it does; a CPU layer pays
    from two rows at any width; ``features`` charges the GPU's rule on a CUDA calibration."""
    from crossover.fit.calibrated_model import GPU_ONE_ROW_PATH_ROWS, GPU_ONE_ROW_PATH_WIDTH

    assert (GPU_ONE_ROW_PATH_ROWS, GPU_ONE_ROW_PATH_WIDTH) == (8, 64)
    batch = np.array([1, 2, 8, 9, 32, 2, 2])
    width = np.array([48, 48, 64, 64, 48, 65, 128])
    assert list(gemm_layers(batch, width, 6, "cuda")) == [0, 0, 0, 6, 6, 6, 6]
    assert list(gemm_layers(batch, width, 6, "cpu")) == [0, 6, 6, 6, 6, 6, 6]
    X = features(np.array([48.0, 128.0]), 6.0, 2.0, calibration=gpu_profile())
    assert list(X.gemm_layers) == [0, 6]
    without = dict(GPU_TRUTH, gemm_layer_s=0.0)
    extra = (evaluate(CALIBRATED_GPU, [GPU_TRUTH[n] for n in model_parameters(CALIBRATED_GPU)], X)
             - evaluate(CALIBRATED_GPU, [without[n] for n in model_parameters(CALIBRATED_GPU)], X))
    assert extra[0] == 0.0 and extra[1] > 0.5 * 6 * GPU_TRUTH["gemm_layer_s"]


def test_a_fit_on_gpu_steps_drawn_from_the_calibrated_gpu_model_recovers_its_scales(tmp_path):
    profile = gpu_profile()
    run = tmp_path / "gpu-run"
    (run / RUN_CALIBRATION_DIR).mkdir(parents=True)
    write_profile(run / RUN_CALIBRATION_DIR, profile)
    # with sizes on cuBLAS's one-row path (at most 8 rows over at most 64 wide), which pay no gemm_layer_s
    d, L, B = (np.array(v, dtype=float) for v in zip(*(sizes() + [(48, 6, 2), (64, 8, 4), (32, 16, 8)])))
    X = features(d, L, B, calibration=profile)
    assert np.any((B > 1) & (X.gemm_layers == 0))
    t = evaluate(CALIBRATED_GPU, [GPU_TRUTH[n] for n in model_parameters(CALIBRATED_GPU)], X)
    host = GPU_TRUTH["host_scale"] * X.host_s + GPU_TRUTH["gemm_layer_s"] * gemm_layers(B, d, L, "cuda")
    device = GPU_TRUTH["device_scale"] * X.device_s
    assert np.all(t >= GPU_TRUTH["step_s"] + X.sync_s + np.maximum(host, device) - 1e-12)  # a smooth max
    assert np.any(host > device) and np.any(device > host)  # both regimes in the data: the scales are identified
    theta = fit_parameters(CALIBRATED_GPU, X, t)
    assert dict(zip(model_parameters(CALIBRATED_GPU), theta)) == pytest.approx(GPU_TRUTH, rel=1e-3)
    rows = pd.DataFrame(dict(d_model=d, n_layers=L, batch_size=B, median_s=t, device="cuda", machine="gpubox",
                             results_dir=str(run), threads=16))
    assert calibration_for_rows(rows).device == "cuda"
    assert default_models("cuda", calibrated=True)[-1] == CALIBRATED_GPU


TRUTH = dict(floor_scale=0.8, floor_evicted_scale=1.4, memory_scale=2.0, compute_scale=1.3, gemm_layer_s=3 * US,
             warm_bytes=2e6, warm_exponent=0.5)
#: TRUTH with one floor scale whatever the layer's size (the tests of where weights go cold).
ONE_FLOOR = dict(TRUTH, floor_evicted_scale=TRUTH["floor_scale"])


def _theta(values):
    return [values[name] for name in model_parameters(CALIBRATED)]


def _points():
    return np.array([(d, n, b) for d in (32, 64, 128, 256, 512, 1024) for n in (2, 8, 32, 128) for b in (1, 4, 32)],
                    float).T


def test_a_fit_recovers_known_scales_and_where_the_weights_go_cold():
    d, n, b = _points()
    X = features(d, n, b, calibration=two_speed_profile())
    t = evaluate(CALIBRATED, _theta(TRUTH), X)
    got = dict(zip(model_parameters(CALIBRATED), fit_parameters(CALIBRATED, X, t)))
    for name, value in TRUTH.items():
        assert got[name] == pytest.approx(value, rel=0.03), name


def test_the_floor_takes_its_evicted_scale_as_a_layer_fills_a_private_cache():
    profile = two_speed_profile()
    assert core_cache_bytes(profile) == PRIVATE
    scales = dict(TRUTH, floor_scale=1.0, floor_evicted_scale=2.0, gemm_layer_s=0.0)
    for d_model, evicted in ((16, 1 - np.exp(-16 * 16 * 4 / PRIVATE)), (362, 1 - np.exp(-362 * 362 * 4 / PRIVATE)),
                             (2048, 1.0)):
        X = features(d_model, 3, 1, calibration=profile)
        rest = evaluate(CALIBRATED, _theta(dict(scales, floor_scale=0.0, floor_evicted_scale=0.0)), X)
        floor = float(evaluate(CALIBRATED, _theta(scales), X) - rest)
        hot, cold = float(X.floor_hot_s), float(X.floor_cold_s)
        assert hot == pytest.approx(cold)  # the floor does not depend on where the weights are
        assert floor == pytest.approx((1.0 + evicted) * hot, rel=1e-9), d_model
    assert core_cache_bytes(dataclasses.replace(profile, cache_bytes=0)) == DEFAULT_PRIVATE_CACHE_BYTES
    assert core_cache_bytes(dataclasses.replace(profile, threads=0)) == 2 * PRIVATE  # as recorded


def test_a_matrix_matrix_kernel_costs_its_own_time_per_layer_from_batch_two():
    profile = two_speed_profile()
    without = dict(TRUTH, gemm_layer_s=0.0)
    for batch, layers in ((1, 4), (2, 4), (64, 9)):
        X = features(128, layers, batch, calibration=profile)
        extra = float(evaluate(CALIBRATED, _theta(TRUTH), X) - evaluate(CALIBRATED, _theta(without), X))
        assert extra == pytest.approx(0.0 if batch == 1 else layers * TRUTH["gemm_layer_s"], abs=1e-15), batch


def test_weights_go_cold_past_the_warm_size_and_never_stay_warm_past_the_last_level_cache():
    profile = two_speed_profile()
    theta = _theta(ONE_FLOOR)
    layer = int(np.sqrt(WARM_LAYER_BYTES / 4))  # a 256 KiB layer: warm up to warm_bytes = 2 MB

    def scaled(d, n):
        X = features(d, n, 1, calibration=profile)
        hot = sum(ONE_FLOOR[f"{p}_scale"] * getattr(X, f"{p}_hot_s") for p in ("floor", "memory", "compute"))
        cold = sum(ONE_FLOOR[f"{p}_scale"] * getattr(X, f"{p}_cold_s") for p in ("floor", "memory", "compute"))
        return float(evaluate(CALIBRATED, theta, X)), float(hot), float(cold)

    t, hot, cold = scaled(layer, 1)  # 0.26 MB: warm
    assert t == pytest.approx(hot, rel=0.01)
    t, hot, cold = scaled(layer, 32)  # 8 MB: cold
    assert t == pytest.approx(cold, rel=0.01)
    # 4 MiB layers would be warm up to 2 MB × 16^3 = 8 GB by the exponent alone; the midpoint stops at
    # the 32 MiB last-level cache, so 128 MiB of them are cold whatever the exponent
    wide = dict(ONE_FLOOR, warm_exponent=3.0)
    X = features(1024, 32, 1, calibration=profile)
    t = float(evaluate(CALIBRATED, [wide[name] for name in model_parameters(CALIBRATED)], X))
    cold = sum(wide[f"{p}_scale"] * float(getattr(X, f"{p}_cold_s")) for p in ("floor", "memory", "compute"))
    assert t == pytest.approx(cold, rel=0.01)


def test_the_calibrated_model_needs_a_calibration():
    with pytest.raises(AnalysisError, match="calibration"):
        evaluate(CALIBRATED, [TRUTH[name] for name in model_parameters(CALIBRATED)], features(64, 2, 1))


def test_only_a_cpu_series_with_a_calibration_gets_the_calibrated_candidate():
    assert CALIBRATED in default_models("cpu", calibrated=True)
    assert CALIBRATED not in default_models("cpu")
    assert CALIBRATED not in default_models("cuda", calibrated=True)


def _rows(machine="testbox", device="cpu", results_dir=None, threads=2):
    theta = [TRUTH[name] for name in model_parameters(CALIBRATED)]
    rng = np.random.default_rng(0)
    profile = two_speed_profile(machine)
    rows = []
    for d, n, b in sizes():
        true = float(evaluate(CALIBRATED, theta, features(d, n, b, calibration=profile)))
        raw = true * np.exp(0.01 * rng.standard_normal(9))
        rows.append(dict(machine=machine, device=device, workload="forward", mode="eager", dtype="float32",
                         regime="latency", transfer="device", threads=threads, d_model=d, n_layers=n, batch_size=b,
                         median_s=float(np.median(raw)), raw_times_s=tuple(raw),
                         results_dir=str(results_dir) if results_dir else None))
    return pd.DataFrame(rows)


def test_a_runs_own_calibration_is_found_beside_its_results(tmp_path):
    run = tmp_path / "run"
    (run / RUN_CALIBRATION_DIR).mkdir(parents=True)
    write_profile(run / RUN_CALIBRATION_DIR, two_speed_profile())
    found = calibration_for_rows(_rows(results_dir=run))
    assert found is not None and found.machine == "testbox"
    assert calibration_for_rows(_rows(results_dir=run, threads=4)) is None  # calibrated on 2 threads
    assert calibration_for_rows(_rows(machine="elsewhere", results_dir=run)) is None
    assert calibration_for_rows(_rows(device="cuda", results_dir=run)) is None


def test_a_fit_on_steps_drawn_from_the_calibrated_model_chooses_it_and_predicts_with_it(tmp_path):
    run = tmp_path / "run"
    (run / RUN_CALIBRATION_DIR).mkdir(parents=True)
    write_profile(run / RUN_CALIBRATION_DIR, two_speed_profile())
    frame = _rows(results_dir=run)
    fit = fit_median(frame, ["roofline+cache+hockney", CALIBRATED], n_boot=0, cache=False)
    assert fit.model == CALIBRATED and fit.calibration is not None
    values = fit.parameters().set_index("param")["value"]
    assert values["compute_scale"] == pytest.approx(TRUTH["compute_scale"], rel=0.05)
    measured = frame.set_index(["d_model", "n_layers", "batch_size"])["median_s"]
    predicted = fit.latency_s(256, 32, 16)
    assert float(predicted) == pytest.approx(measured[(256, 32, 16)], rel=0.05)
    cv = fit.cv[fit.cv["model"] == CALIBRATED]
    # a held-out axis value inside the range costs it nothing: its shape is calibrated. Holding out batch
    # 1 whole leaves a per-layer cost from batch 2 on indistinguishable from the floor (extrapolation)
    assert (cv["interior_mape_pct"] < 5).all() and (cv.loc[cv["axis"] != "batch_size", "mape_pct"] < 5).all()


def test_asking_for_the_calibrated_model_without_a_calibration_says_how_to_get_one():
    with pytest.raises(AnalysisError, match="crossover calibrate --device cpu\\|cuda --out RESULTS/calibration"):
        fit_median(_rows(), [CALIBRATED], n_boot=0, cache=False)


def test_the_parts_are_named_for_their_warmth():
    assert part_names() == ("floor_hot_s", "memory_hot_s", "compute_hot_s",
                            "floor_cold_s", "memory_cold_s", "compute_cold_s")


def test_a_parameter_no_resample_moved_is_not_identified(tmp_path):
    run = tmp_path / "run"
    (run / RUN_CALIBRATION_DIR).mkdir(parents=True)
    write_profile(run / RUN_CALIBRATION_DIR, two_speed_profile())
    fit = fit_median(_rows(results_dir=run), [CALIBRATED], n_boot=20, cache=False)
    table = fit.parameters().set_index("param")
    assert table["identified"].all() and not table["flat"].any()  # noisy steps move every parameter
    draws = fit.draws.copy()
    k = model_parameters(CALIBRATED).index("warm_exponent")
    draws[:, k] = fit.params[k]  # as when the warm size sits above the cache that caps it: no gradient
    table = dataclasses.replace(fit, draws=draws).parameters().set_index("param")
    assert table.loc["warm_exponent", "flat"] and not table.loc["warm_exponent", "identified"]
    assert table.drop(index="warm_exponent")["identified"].all()


def test_sizes_between_integers_are_interpolated_between_the_integers_around_them():
    profile = two_speed_profile()
    parts = toy_parts(profile, [64.0, 64.25, 65.0, 64.0], 4, [8.0, 8.5, 9.0, 8.5])
    for name, values in parts.items():
        at = {(d, b): float(toy_parts(profile, d, 4, b)[name]) for d in (64, 65) for b in (8, 9)}
        assert values[0] == pytest.approx(at[64, 8]) and values[2] == pytest.approx(at[65, 9])
        assert values[3] == pytest.approx((at[64, 8] + at[64, 9]) / 2)
        bilinear = 0.75 * (at[64, 8] + at[64, 9]) / 2 + 0.25 * (at[65, 8] + at[65, 9]) / 2
        assert values[1] == pytest.approx(bilinear)
        assert np.all(np.isfinite(values))
    with pytest.raises(ValueError, match="at least 1"):
        toy_parts(profile, 64, 4, 0.5)


def test_a_batch_just_below_a_rounded_geometric_knot_is_costed_between_integers():
    # The knot after 32 * 2**(12/8) rounds up to 99, above 98.97: the size must still get its parts
    # (it once got none: zero parts, a NaN step, a crossover search pinned at 99).
    profile = two_speed_profile()
    below, at = toy_parts(profile, 16, 4, 98.97), toy_parts(profile, 16, 4, 98.0)
    above = toy_parts(profile, 16, 4, 108.0)  # the next knot
    for name in below:
        assert float(at[name]) > 0
        low, high = sorted((float(at[name]), float(above[name])))
        assert low <= float(below[name]) <= high
