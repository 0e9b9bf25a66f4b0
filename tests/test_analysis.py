import functools
"""Analysis on synthetic results drawn from known parameters with multiplicative noise (fixed seeds)."""

import json

import numpy as np
import pandas as pd
import pytest

from crossover import analysis as A
from crossover.cli import main
from crossover.results.store import ResultsWriter, raw_times_to_text

CPU = dict(step_s=20e-6, layer_s=15e-6, flops_per_s=100e9, bytes_per_s=20e9)
GPU = dict(step_s=2e-3, layer_s=1e-6, flops_per_s=20e12, bytes_per_s=2e12)

# These tests are about the models and the fitting, on synthetic medians: fit that statistic.
fit_median = functools.partial(A.fit_series, statistic="median")
fit_results_median = functools.partial(A.fit_results, statistic="median")


def sizes():
    """A one-axis-at-a-time design around (128, 128, 1) plus a small grid, like the quick suite."""
    points = {(128, 128, b) for b in (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)}
    points |= {(d, 128, 1) for d in (64, 128, 256, 384, 512, 768, 1024)}
    points |= {(128, n, 1) for n in (16, 32, 64, 128, 256, 512)}
    points |= {(d, n, b) for d in (64, 256, 512) for n in (8, 32) for b in (1, 16, 128)}
    return sorted(points)


def synthetic(model, params, *, device="cpu", machine="synth", noise=0.05, repeats=15, seed=0):
    """A results frame (as from ``load_results(raw=True)``) drawn from ``model`` with ``params``."""
    rng = np.random.default_rng(seed)
    rows = []
    for d, n, b in sizes():
        true = float(A.model_latency_s(model, params, d, n, b))
        raw = true * np.exp(noise * rng.standard_normal(repeats))
        flops, nbytes = A.step_counts(d, n, b)
        rows.append(dict(machine=machine, device=device, workload="forward", mode="eager", dtype="float32",
                         regime="latency", transfer="device", threads=2, d_model=d, n_layers=n, batch_size=b,
                         params=n * d * d, flops=int(flops), bytes=int(nbytes), median_s=float(np.median(raw)),
                         iqr_s=float(np.subtract(*np.percentile(raw, [75, 25]))), raw_times_s=tuple(raw)))
    return pd.DataFrame(rows)


@pytest.fixture(scope="module")
def two_devices():
    """Affine CPU (cheap steps, slow FLOPs) and GPU (costly steps, fast FLOPs): an analytic crossover."""
    cpu_true = dict(step_s=50e-6, flops_per_s=100e9)
    gpu_true = dict(step_s=2e-3, flops_per_s=10e12)
    cpu = fit_median(synthetic("affine", cpu_true, seed=1), ["affine"], axes=(), n_boot=60, seed=1)
    gpu = fit_median(synthetic("affine", gpu_true, device="cuda", seed=2), ["affine"], axes=(), n_boot=60,
                       seed=2, label="synth/cuda")
    return cpu, gpu, cpu_true, gpu_true


def affine_root_batch(a, b, d_model=128, n_layers=128, prices=(1, 1)):
    """Batch where p_a (s_a + F/R_a) = p_b (s_b + F/R_b), F = 2 B d² L."""
    pa, pb = prices
    flops = (pb * b["step_s"] - pa * a["step_s"]) / (pa / a["flops_per_s"] - pb / b["flops_per_s"])
    return flops / (2 * d_model**2 * n_layers)


def test_fit_recovers_roofline_parameters():
    fit = fit_median(synthetic("roofline", CPU, noise=0.05), ["roofline"], axes=(), n_boot=40)
    table = fit.parameters().set_index("param")
    for name, true in CPU.items():
        row = table.loc[name]
        assert row.value / A.PARAMS[name].scale == pytest.approx(true, rel=0.3 if name == "step_s" else 0.1)
        assert row.low <= row.value <= row.high
    assert table.loc["layer_s", "unit"] == "µs" and table.loc["flops_per_s", "unit"] == "GFLOP/s"
    assert table.loc["bytes_per_s", "unit"] == "GB/s"


def test_fit_recovers_cache_bandwidths_and_cv_prefers_the_cache_model():
    truth = dict(CPU, cache_bytes_per_s=200e9, dram_bytes_per_s=10e9, cache_bytes=16e6)
    truth.pop("bytes_per_s")
    fit = fit_median(synthetic("roofline+cache", truth, noise=0.03), ["roofline", "roofline+cache"],
                       axes=("d_model",), n_boot=0)
    assert fit.model == "roofline+cache"
    params = dict(zip(A.MODELS[fit.model], fit.params))
    assert params["dram_bytes_per_s"] == pytest.approx(10e9, rel=0.15)
    assert params["layer_s"] == pytest.approx(15e-6, rel=0.15)
    cv = fit.cv.set_index("model")
    assert cv.loc["roofline+cache", "mape_pct"] < 5 < cv.loc["roofline", "mape_pct"]
    assert cv.loc["roofline+cache", "within_10_pct"] >= 95


def test_model_names_compose_refinements():
    assert A.model_parameters("roofline+ramp+overlap") == (
        "step_s", "layer_s", "flops_per_s", "small_bytes_per_s", "large_bytes_per_s", "ramp_bytes", "smooth_p")
    for bad in ("roofline+nope", "affine+cache", "roofline+cache+cache", "nonsense"):
        with pytest.raises(A.AnalysisError):
            A.model_parameters(bad)
    params = dict(CPU, act_bytes_per_s=1e12, smooth_p=1.0)
    # p = 1: compute, weight traffic and activation traffic (at their own bandwidth) add up
    per_layer = 2 * 16 * 64**2 / 100e9 + 64**2 * 4 / 20e9 + 7 * 16 * 64 * 4 / 1e12
    expected = CPU["step_s"] + 8 * (CPU["layer_s"] + per_layer)
    assert A.model_latency_s("roofline+split+overlap", params, 64, 8, 16) == pytest.approx(expected, rel=1e-3)


@pytest.mark.parametrize("axis", A.AXES)
def test_grouped_cv_splits_never_train_on_the_held_out_value(axis):
    frame = synthetic("roofline", CPU)
    splits = A.cv_splits(frame, axis)
    assert splits
    held = set()
    for value, train, test in splits:
        assert value not in set(frame[axis].iloc[train])
        assert set(frame[axis].iloc[test]) == {value}
        assert len(train) + len(test) == len(frame)
        held.add(value)
    # every value is held out once, except an anchor carrying more than half of the points
    anchors = {v for v, n in frame[axis].value_counts().items() if n > len(frame) / 2}
    assert held == set(frame[axis]) - anchors
    everything = A.cv_splits(frame, axis, max_held_out_fraction=1.0)
    assert {v for v, _, _ in everything} == set(frame[axis])


def test_cross_validate_reports_held_out_predictions():
    predictions = A.cross_validate(synthetic("roofline", CPU, noise=0.02), "roofline", ("n_layers",))
    assert set(predictions["axis"]) == {"n_layers"}
    assert (predictions["rel_error"].abs() < 0.1).mean() > 0.95
    assert predictions.loc[predictions["held_out"] == 512, "extrapolated"].all()


def test_crossover_lands_on_the_analytic_root(two_devices):
    cpu, gpu, cpu_true, gpu_true = two_devices
    truth = affine_root_batch(cpu_true, gpu_true)
    c = A.crossover(cpu, gpu, "batch_size", d_model=128, n_layers=128)
    assert c.x == pytest.approx(truth, rel=0.1)
    assert c.low <= truth <= c.high and c.low <= c.x <= c.high
    assert c.never_fraction == 0
    assert (c.winner_below, c.winner_above, c.winner) == (cpu.label, gpu.label, None)
    # the solver is exact on the fitted curves
    fitted = [dict(zip(A.MODELS["affine"], f.params)) for f in (cpu, gpu)]
    assert c.x == pytest.approx(affine_root_batch(*fitted), rel=1e-6)
    # the measured points cross near the same place
    assert len(c.empirical) == 1 and c.empirical[0] == pytest.approx(truth, rel=0.25)


def test_crossover_along_d_model(two_devices):
    cpu, gpu, *_ = two_devices
    c = A.crossover(cpu, gpu, "d_model", n_layers=128, batch_size=4, x_range=(16, 4096))
    fitted = [dict(zip(A.MODELS["affine"], f.params)) for f in (cpu, gpu)]
    d_root = np.sqrt(affine_root_batch(*fitted, d_model=1) / 4)
    assert c.x == pytest.approx(d_root, rel=1e-6) and c.low <= c.x <= c.high


def test_fixed_params_crossover_solves_along_the_width_depth_trade_off():
    from scipy import optimize

    params, batch = 2**21, 4
    fits = [fit_median(synthetic("roofline", truth, device=device, noise=0.01, seed=seed), ["roofline"], axes=(),
                       n_boot=20, label=device) for truth, device, seed in ((CPU, "cpu", 13), (GPU, "cuda", 14))]
    c = A.fixed_params_crossover(*fits, params, batch_size=batch, x_range=(16, 4096))
    assert (c.axis, c.fixed) == ("d_model", {"params": params, "batch_size": batch})

    def log_ratio(d, a, b):  # the fitted or the true latencies at n_layers = params / d²
        return float(np.log(a(d, params / d**2) / b(d, params / d**2)))

    on_fits = [lambda d, n, f=f: f.latency_s(d, n, batch) for f in fits]
    assert c.x == pytest.approx(optimize.brentq(log_ratio, 16, 4096, args=tuple(on_fits)), rel=1e-6)
    truths = [lambda d, n, t=t: A.model_latency_s("roofline", t, d, n, batch) for t in (CPU, GPU)]
    assert c.x == pytest.approx(optimize.brentq(log_ratio, 16, 4096, args=tuple(truths)), rel=0.1)
    assert c.low <= c.x <= c.high and c.never_fraction < 0.5


def test_a_series_gets_the_same_draws_alone_or_fitted_among_others():
    cpu = synthetic("affine", dict(step_s=50e-6, flops_per_s=100e9), seed=15)
    gpu = synthetic("affine", dict(step_s=2e-3, flops_per_s=10e12), device="cuda", seed=16)
    both = fit_results_median(pd.concat([cpu, gpu], ignore_index=True), ["affine"], axes=(), n_boot=20)
    alone = fit_median(gpu, ["affine"], axes=(), n_boot=20)
    assert alone.label == "synth/cuda"
    np.testing.assert_array_equal(both["synth/cuda"].draws, alone.draws)
    seeded = fit_median(gpu, ["affine"], axes=(), n_boot=20, seed=A.series_seed("synth/cuda"))
    np.testing.assert_array_equal(seeded.draws, alone.draws)


def test_never_crossing_is_reported(two_devices):
    cpu, _, cpu_true, _ = two_devices
    slower = fit_median(synthetic("affine", {k: v * (2 if k == "step_s" else 0.5) for k, v in cpu_true.items()},
                                    device="cuda", seed=3), ["affine"], axes=(), n_boot=30, label="slow")
    c = A.crossover(cpu, slower, "batch_size")
    assert c.x is None and c.roots == [] and c.low is None and c.high is None
    assert c.winner == cpu.label and c.winner_below is None
    assert c.never_fraction == 1.0 and c.empirical == []


def test_frontier_matches_the_analytic_crossover(two_devices):
    cpu, gpu, *_ = two_devices
    fitted = [dict(zip(A.MODELS["affine"], f.params)) for f in (cpu, gpu)]
    d_models = [8, 64, 128, 256, 8192]  # the CPU wins up to batch 4096 at d=8; the GPU everywhere at 8192
    frontier = A.crossover_frontier(cpu, gpu, d_models, n_layers=128, batch_range=(1, 4096))
    for row in frontier.itertuples():
        root = affine_root_batch(*fitted, d_model=row.d_model)
        if 1 <= root <= 4096:
            assert row.batch_size == pytest.approx(root, rel=1e-6)
            assert row.low <= row.batch_size <= row.high
        else:
            assert row.batch_size is None or np.isnan(row.batch_size)
            assert row.winner == (cpu.label if root > 4096 else gpu.label)
    assert set(frontier["winner"].dropna()) == {cpu.label, gpu.label}
    assert list(frontier["params"]) == [128 * d * d for d in d_models]


def test_cost_per_million_samples_and_cost_crossover(two_devices):
    assert A.cost_per_million_samples(0.01, 10, 3.6) == pytest.approx(1.0)
    assert np.allclose(A.cost_per_million_samples([0.01, 0.02], [10, 10], 3.6), [1.0, 2.0])
    cpu, gpu, *_ = two_devices
    fitted = [dict(zip(A.MODELS["affine"], f.params)) for f in (cpu, gpu)]
    c = A.cost_crossover(cpu, gpu, 0.5, 4.0)
    assert c.x == pytest.approx(affine_root_batch(*fitted, prices=(0.5, 4.0)), rel=1e-6)
    at = dict(d_model=128, n_layers=128, batch_size=c.x)
    costs = [A.cost_per_million_samples(f.latency_s(**at), c.x, p) for f, p in ((cpu, 0.5), (gpu, 4.0))]
    assert costs[0] == pytest.approx(costs[1], rel=1e-6)
    with pytest.raises(A.AnalysisError):
        A.cost_crossover(cpu, gpu, 0, 1)


def test_predict_names_the_winner_and_the_crossover(two_devices):
    cpu, gpu, cpu_true, gpu_true = two_devices
    fits = {cpu.label: cpu, gpu.label: gpu}
    result = A.predict(fits, 128, 128, 4)
    by_device = {item["device"]: item for item in result["devices"]}
    assert set(by_device) == {"cpu", "cuda"}
    for item, true in ((by_device["cpu"], cpu_true), (by_device["cuda"], gpu_true)):
        expected = A.model_latency_s("affine", true, 128, 128, 4)
        assert item["latency_s"] == pytest.approx(expected, rel=0.05)
        assert item["latency_low_s"] <= item["latency_s"] <= item["latency_high_s"]
    assert result["winner"] == cpu.label
    assert result["speedup"] == pytest.approx(by_device["cuda"]["latency_s"] / by_device["cpu"]["latency_s"])
    assert result["crossover"]["batch_size"] == pytest.approx(A.crossover(cpu, gpu).x)
    with pytest.raises(A.AnalysisError):
        A.predict(fits, 128, 128, 4, dtype="bfloat16")


# ------------------------------------------------------------------------------------------- CLI
@pytest.fixture(scope="module")
def results_dir(tmp_path_factory):
    """A tiny results directory: an affine CPU and GPU of one synthetic machine."""
    directory = tmp_path_factory.mktemp("results") / "synth"
    writer = ResultsWriter(directory, "run1", {"machine": "synth"})
    for frame in (synthetic("affine", dict(step_s=50e-6, flops_per_s=100e9), seed=4),
                  synthetic("affine", dict(step_s=2e-3, flops_per_s=10e12), device="cuda", seed=5)):
        for row in frame.to_dict("records"):
            row.update(status="ok", threads_requested=0, round=0, raw_times_s=raw_times_to_text(row["raw_times_s"]))
            writer.append(row)
    return directory


def run(capsys, *args):
    status = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return status, out, err


def test_cli_fit_json(capsys, results_dir):
    status, out, err = run(capsys, "fit", "--results", results_dir, "--models", "affine,roofline",
                           "--n-boot", 20, "--json", "--quiet")
    assert status == 0, err
    data = json.loads(out)
    series = {s["device"]: s for s in data["series"]}
    assert set(series) == {"cpu", "cuda"}
    cpu = series["cpu"]
    params = {p["param"]: p for p in cpu["parameters"]}
    assert params["step_s"]["unit"] == "µs" and params["step_s"]["low"] <= params["step_s"]["value"]
    assert {a["axis"] for a in cpu["accuracy"]} == set(A.AXES)
    assert all(0 <= a["within_10_pct"] <= 100 for a in cpu["accuracy"])


def test_cli_fit_text(capsys, results_dir):
    status, out, err = run(capsys, "fit", "--results", results_dir, "--models", "affine", "--n-boot", 10)
    assert status == 0, err
    assert "synth/cpu" in out and "GFLOP/s" in out and "MAPE" in out
    hints = [line for line in out.splitlines() if "crossover calibrate --device cpu" in line]
    assert len(hints) == 1  # the CPU series, which has no calibration; not the GPU's


def test_cli_predict_json(capsys, results_dir):
    status, out, err = run(capsys, "predict", "--d-model", 320, "--n-layers", 24, "--batch-size", 12,
                           "--results", results_dir, "--models", "affine", "--n-boot", 20, "--json")
    assert status == 0, err
    data = json.loads(out)
    devices = {item["device"]: item for item in data["devices"]}
    assert set(devices) == {"cpu", "cuda"}
    for item in devices.values():
        assert item["latency_s"] > 0 and item["latency_low_s"] <= item["latency_s"] <= item["latency_high_s"]
        assert item["prediction_low_s"] < item["latency_s"] < item["prediction_high_s"]
    assert data["winner"] and data["speedup"] >= 1
    crossing = data["crossover"]
    assert crossing["low"] <= crossing["batch_size"] <= crossing["high"]
    status, out, err = run(capsys, "predict", "--d-model", 320, "--n-layers", 24, "--batch-size", 12,
                           "--results", results_dir, "--models", "affine", "--n-boot", 5)
    assert status == 0 and "winner" in out and "crossover at batch size" in out


SIZES = ["--d-model", 8, "--n-layers", 2, "--batch-size", 1]


@pytest.mark.parametrize("args, fragment", [
    (["predict", "--d-model", 0, "--n-layers", 2, "--batch-size", 1], "positive integer"),
    (["predict", *SIZES, "--results", "/nonexistent/x"], "does not exist"),
    (["fit", "--models", "nonsense"], "unknown models"),
    (["predict", *SIZES, "--dtype", "float16"], "no measured points"),
])
def test_cli_errors_are_one_line(capsys, results_dir, args, fragment):
    if "--results" not in args:
        args += ["--results", results_dir]
    status, out, err = run(capsys, *args)
    assert status == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("crossover") and fragment in lines[0]


def test_bootstrap_resamples_around_the_fitted_medians():
    # Rounds: median_s is the median of round medians, not the median of the pooled repeats. Here the
    # pooled repeats sit 30% above median_s; the parameter interval must still cover the fit.
    frame = synthetic("affine", dict(step_s=50e-6, flops_per_s=100e9), seed=7)
    frame["raw_times_s"] = [tuple(np.asarray(raw) * 1.3) for raw in frame["raw_times_s"]]
    fit = fit_median(frame, ["affine"], axes=(), n_boot=40, seed=3)
    table = fit.parameters()
    assert ((table["low"] <= table["value"]) & (table["value"] <= table["high"])).all()


def _drifted(frame, spread, seed):
    """Each point's repeats moved together by a lognormal factor: drift between runs, which the
    repeats of one measurement cannot see."""
    rng = np.random.default_rng(seed)
    frame = frame.copy()
    factors = np.exp(spread * rng.standard_normal(len(frame)))
    frame["raw_times_s"] = [tuple(np.asarray(raw) * f) for raw, f in zip(frame["raw_times_s"], factors)]
    frame["median_s"] = frame["median_s"] * factors
    return frame


def test_residual_bootstrap_covers_drift_that_repeats_miss():
    truth = dict(step_s=50e-6, flops_per_s=100e9)
    frame = _drifted(synthetic("affine", truth, noise=0.005, seed=11), spread=0.2, seed=12)
    by_residuals = fit_median(frame, ["affine"], axes=(), n_boot=200, seed=1).parameters().set_index("param")
    by_repeats = fit_median(frame, ["affine"], axes=(), n_boot=200, seed=1,
                              bootstrap="repeats").parameters().set_index("param")
    for name in ("step_s", "flops_per_s"):
        scale = A.PARAMS[name].scale
        width = lambda t: np.log(t.loc[name, "high"] / t.loc[name, "low"])  # noqa: E731
        assert width(by_residuals) > 3 * width(by_repeats)  # repeats see only the 0.5% noise
        assert by_residuals.loc[name, "low"] <= truth[name] * scale <= by_residuals.loc[name, "high"]
    with pytest.raises(A.AnalysisError, match="unknown bootstrap"):
        fit_median(frame, ["affine"], axes=(), n_boot=5, bootstrap="cases")


def test_parameters_flag_estimates_on_their_bound():
    # A per-step overhead of 1 ps is far below the 1 ns the fit searches down to: not identified.
    truth = dict(CPU, step_s=1e-12)
    table = fit_median(synthetic("roofline", truth, noise=0.02), ["roofline"], axes=(),
                         n_boot=0).parameters().set_index("param")
    assert bool(table.loc["step_s", "at_bound"])
    assert not table.drop(index="step_s")["at_bound"].any()


def test_cli_predict_machine_filter(capsys, results_dir):
    args = ["predict", *SIZES, "--results", results_dir, "--models", "affine", "--n-boot", 5]
    status, out, err = run(capsys, *args, "--only-machine", "synth", "--json")
    assert status == 0, err
    assert {item["machine"] for item in json.loads(out)["devices"]} == {"synth"}
    status, out, err = run(capsys, *args, "--only-machine", "elsewhere")
    assert status == 2 and "machine=elsewhere" in err


def test_predict_crossover_along_d_model(two_devices):
    cpu, gpu, _, _ = two_devices
    fits = {cpu.label: cpu, gpu.label: gpu}
    result = A.predict(fits, 128, 128, 1, axis="d_model", batch_range=(16, 4096))
    c = result["crossover"]
    expected = A.crossover(cpu, gpu, "d_model", n_layers=128, batch_size=1, x_range=(16, 4096))
    assert c["axis"] == "d_model" and c["fixed"] == {"d_model": None, "n_layers": 128, "batch_size": 1}
    # affine truths: 50 µs + F/100 GFLOP/s = 2 ms + F/10 TFLOP/s with F = 2·d²·128 -> d ≈ 877
    analytic = np.sqrt((2e-3 - 50e-6) / (2 * 128 * (1 / 100e9 - 1 / 10e12)))
    assert c["at"] == pytest.approx(expected.x) == pytest.approx(analytic, rel=0.1)
    assert c["batch_size"] is None and c["batch_range"] is None  # the same keys along every axis


def test_fit_reports_the_noise_floor_of_points_measured_in_rounds():
    frame = synthetic("affine", dict(step_s=50e-6, flops_per_s=100e9), seed=8)
    frame["round_deviation"] = np.nan
    frame.loc[:9, "round_deviation"] = 0.1
    frame.loc[10:19, "round_deviation"] = 0.3
    fit = fit_median(frame, ["affine"], axes=(), n_boot=0)
    assert fit.noise_floor_pct == pytest.approx(20.0) and fit.noise_floor_points == 20
    assert np.isnan(fit_median(frame.drop(columns="round_deviation"), ["affine"], axes=(),
                                 n_boot=0).noise_floor_pct)


def test_predict_pairs_the_winner_with_the_other_kind_of_device(two_devices):
    cpu, gpu, cpu_true, _ = two_devices
    slower_cpu = fit_median(synthetic("affine", dict(step_s=80e-6, flops_per_s=60e9), machine="other", seed=9),
                              ["affine"], axes=(), n_boot=20, seed=9)
    fits = {cpu.label: cpu, slower_cpu.label: slower_cpu, gpu.label: gpu}
    result = A.predict(fits, 128, 128, 1)
    assert result["winner"] == cpu.label and result["devices"][1]["series"] == slower_cpu.label
    assert result["crossover"]["between"] == [cpu.label, gpu.label]
    assert result["crossover"]["batch_size"] == pytest.approx(A.crossover(cpu, gpu).x)
    # and every CPU against the GPU: your own CPU against a shipped GPU
    pairs = {tuple(c["between"]): c for c in result["crossovers"]}
    assert set(pairs) == {(cpu.label, gpu.label), (slower_cpu.label, gpu.label)}
    assert pairs[slower_cpu.label, gpu.label]["batch_size"] == pytest.approx(A.crossover(slower_cpu, gpu).x)


def test_a_size_measured_twice_counts_once():
    frame = synthetic("affine", dict(step_s=50e-6, flops_per_s=100e9), seed=10)
    again = frame.iloc[[0]].assign(median_s=frame["median_s"].iloc[0] * 3)
    fit = fit_median(pd.concat([frame, again], ignore_index=True), ["affine"], axes=(), n_boot=0)
    assert len(fit.points) == len(frame)
    first = fit.points.iloc[0]
    assert first["latency_s"] == pytest.approx(frame["median_s"].iloc[0] * 2)  # median of x and 3x


def test_parameters_with_intervals_over_two_decades_are_not_identified():
    fit = fit_median(synthetic("affine", dict(step_s=50e-6, flops_per_s=100e9), seed=12), ["affine"],
                       axes=(), n_boot=0)
    fit.draws = np.array([[50e-6, 1e9], [50e-6, 1e12], [51e-6, 1e11]])
    table = fit.parameters().set_index("param")
    assert table.loc["step_s", "identified"] and not table.loc["flops_per_s", "identified"]


def test_cv_summary_reports_interpolation_apart_from_extrapolation():
    predictions = pd.DataFrame(dict(model="roofline", axis="n_layers", held_out=[16, 128, 256, 3840],
                                    extrapolated=[True, False, False, True], rel_error=[2.0, 0.1, -0.3, 0.5]))
    from crossover.fit.validation import cv_summary

    row = cv_summary(predictions).iloc[0]
    assert row["mape_pct"] == pytest.approx(100 * (2.0 + 0.1 + 0.3 + 0.5) / 4)
    assert row["interior_mape_pct"] == pytest.approx(100 * (0.1 + 0.3) / 2)


# ------------------------------------------------------------------- statistic and gemm refinement
def _rounds_dir(tmp_path, frame, slow_factor, slow_rows):
    """A results directory with each point in three rounds: round 0 at the truth, rounds 1-2
    ``slow_factor`` slower at the rows where ``slow_rows`` is True (a run measured in a slow spell)."""
    writer = ResultsWriter(tmp_path / "synth", "run1", {"machine": "synth"})
    for round_ in range(3):
        for slow, row in zip(slow_rows, frame.to_dict("records")):
            factor = slow_factor if (round_ and slow) else 1.0
            raw = np.asarray(row["raw_times_s"]) * factor
            row.update(status="ok", threads_requested=0, round=round_, median_s=float(np.median(raw)),
                       min_s=float(raw.min()), raw_times_s=raw_times_to_text(raw))
            writer.append(row)
    return tmp_path / "synth"


def test_p10_statistic_sees_past_slow_rounds_that_the_median_follows(tmp_path):
    from crossover.results.store import load_results

    # The GPU's shipped data in miniature: every batch > 1 point re-measured in a 1.5x slower run.
    truth = dict(step_s=20e-6, layer_s=15e-6, flops_per_s=100e9, bytes_per_s=20e9)
    frame = synthetic("roofline", truth, noise=0.02, seed=21)
    directory = _rounds_dir(tmp_path, frame, 1.5, (frame["batch_size"] > 1).to_numpy())
    loaded = load_results(directory, raw=True)
    assert {"p10_s", "p10_round_deviation"} <= set(loaded.columns)
    row = loaded.iloc[0]
    assert row["p10_s"] == pytest.approx(np.quantile(row["raw_times_s"], 0.1))
    by = {s: A.fit_series(loaded, ["roofline"], n_boot=0, statistic=s) for s in ("median", "p10", "min")}
    assert by["p10"].statistic == "p10" and by["median"].statistic == "median"
    # the median takes the slow rounds' value at batch > 1: the per-layer cost and the accuracy suffer
    for quiet in ("p10", "min"):
        table = by[quiet].parameters().set_index("param")
        assert table.loc["layer_s", "value"] / 1e6 == pytest.approx(truth["layer_s"], rel=0.1)
        assert table.loc["flops_per_s", "value"] * 1e9 == pytest.approx(truth["flops_per_s"], rel=0.15)
        assert by[quiet].cv_score() < 0.5 * by["median"].cv_score()
    assert by["min"].points["latency_s"].to_numpy() == pytest.approx(loaded["min_s"].to_numpy())
    # the noise floor follows the statistic. At a slow point the rounds' medians are (1, 1.5, 1.5) x,
    # median 1.5 x: one round lies 1/3 away, in a third of the rounds. The pooled 10th percentile is
    # the fast round's (~1 x): the two slow rounds' 10th percentiles lie 0.5 away.
    slow = (frame["batch_size"] > 1).mean()
    assert by["median"].noise_floor_pct == pytest.approx(100 * slow / 9, rel=0.25)
    assert by["p10"].noise_floor_pct == pytest.approx(100 * slow / 3, rel=0.25)
    assert by["min"].noise_floor_pct == pytest.approx(100 * slow / 3, rel=0.25)
    # a crossover compares two fits of one statistic
    with pytest.raises(A.AnalysisError, match="same statistic"):
        A.crossover(by["median"], by["p10"])
    result = A.predict({"m": by["median"]}, 128, 128, 1)
    assert result["devices"][0]["statistic"] == "median"
    with pytest.raises(A.AnalysisError, match="unknown statistic"):
        A.fit_series(loaded, ["roofline"], n_boot=0, statistic="mean")
    with pytest.raises(A.AnalysisError, match="lack p10_s"):
        A.fit_series(frame, ["roofline"], n_boot=0, statistic="p10")


def test_p10_repeats_bootstrap_resamples_the_quantile(tmp_path):
    from crossover.results.store import load_results

    frame = synthetic("affine", dict(step_s=50e-6, flops_per_s=100e9), noise=0.03, seed=22)
    loaded = load_results(_rounds_dir(tmp_path, frame, 1.0, np.zeros(len(frame), bool)), raw=True)
    fit = A.fit_series(loaded, ["affine"], axes=(), n_boot=40, statistic="p10", bootstrap="repeats")
    table = fit.parameters()
    assert ((table["low"] <= table["value"]) & (table["value"] <= table["high"])).all()
    assert fit.points["latency_s"].to_numpy() == pytest.approx(loaded["p10_s"].to_numpy())
    assert "median_s" not in fit.points  # a fit's points never carry another statistic under that name


def test_fit_recovers_the_matrix_matrix_cost_and_cv_prefers_the_gemm_model():
    truth = dict(CPU, gemm_layer_s=10e-6)
    frame = synthetic("roofline+gemm", truth, noise=0.02, seed=23)
    fit = fit_median(frame, ["roofline", "roofline+gemm"], n_boot=0)
    assert fit.model == "roofline+gemm"
    table = fit.parameters().set_index("param")
    assert table.loc["gemm_layer_s", "value"] / 1e6 == pytest.approx(10e-6, rel=0.15)
    assert table.loc["layer_s", "value"] / 1e6 == pytest.approx(CPU["layer_s"], rel=0.15)
    # paid only at batch > 1: a batch of one is the plain roofline
    one = A.model_latency_s("roofline+gemm", truth, 128, 64, 1)
    assert one == pytest.approx(A.model_latency_s("roofline", CPU, 128, 64, 1))
    two = A.model_latency_s("roofline+gemm", truth, 128, 64, 2)
    assert two - A.model_latency_s("roofline", CPU, 128, 64, 2) == pytest.approx(64 * 10e-6)


def test_cli_fit_statistic(capsys, results_dir):
    status, out, err = run(capsys, "fit", "--results", results_dir, "--models", "affine", "--n-boot", 0,
                           "--statistic", "p10", "--json")
    assert status == 0, err
    assert {s["statistic"] for s in json.loads(out)["series"]} == {"p10"}
    status, out, err = run(capsys, "fit", "--results", results_dir, "--models", "affine", "--n-boot", 0,
                           "--statistic", "p10", "--quiet")
    assert "latency = 10th percentile of the repeats" in out
    status, out, err = run(capsys, "fit", "--results", results_dir, "--statistic", "mean")
    assert status == 2 and "--statistic" in err


def test_the_prediction_interval_spans_sizes_and_interior_axis_values_left_out():
    from crossover.fit.series_fit import one_row_per_size
    from crossover.fit.validation import check_frame, held_out_predictions, interior_log_errors

    frame = synthetic("roofline", CPU, noise=0.05, seed=3)
    fit = fit_median(frame, ["roofline"], n_boot=0, cache=False)
    rows = one_row_per_size(check_frame(frame, "median"))
    interior = interior_log_errors(held_out_predictions(rows, "roofline"))
    assert len(interior) > 0 and len(fit.cv_log_errors) == len(rows) + len(interior)
    assert np.allclose(np.sort(fit.cv_log_errors[len(rows):]), np.sort(interior), rtol=1e-6, atol=1e-9)
    low, high = fit.prediction_interval_s(200, 40, 12)
    spread = np.exp(np.percentile(fit.cv_log_errors, [2.5, 97.5]))
    assert (low, high) == pytest.approx(tuple(float(fit.latency_s(200, 40, 12)) * spread))


def _in_rounds(frame, factors, noise=0.005, repeats=5, seed=0):
    """``frame`` measured in rounds: round r slows every point by ``factors[r]`` (a shared machine's slow
    spell), with ``noise`` between repeats; each point's latency is the median of its rounds' medians."""
    rng = np.random.default_rng(seed)
    rows = []
    for _, row in frame.iterrows():
        rounds = tuple((r, tuple(row["median_s"] * f * np.exp(noise * rng.standard_normal(repeats))))
                       for r, f in enumerate(factors))
        medians = [np.median(times) for _, times in rounds]
        rows.append(dict(row, round_raw_s=rounds, raw_times_s=tuple(v for _, t in rounds for v in t),
                         median_s=float(np.median(medians))))
    return pd.DataFrame(rows)


def test_round_bootstrap_covers_a_slow_spell_that_moves_every_point():
    """A slow round moves every point together: the residuals barely see it (the fit absorbs a common
    shift), resampling whole rounds does; a series of one round cannot be resampled so."""
    truth = dict(step_s=50e-6, flops_per_s=100e9)
    frame = _in_rounds(synthetic("affine", truth, noise=0.0, seed=3), factors=(1.0, 1.0, 1.6, 1.0, 1.3, 1.0))
    fits = {b: fit_median(frame, ["affine"], axes=(), n_boot=150, seed=1, bootstrap=b).parameters().set_index("param")
            for b in ("residuals", "rounds")}
    for name in ("step_s", "flops_per_s"):
        width = {b: np.log(t.loc[name, "high"] / t.loc[name, "low"]) for b, t in fits.items()}
        assert width["rounds"] > 3 * width["residuals"], width
    one = _in_rounds(synthetic("affine", truth, noise=0.0, seed=3), factors=(1.0,))
    with pytest.raises(A.AnalysisError, match="two or more rounds"):
        fit_median(one, ["affine"], axes=(), n_boot=5, bootstrap="rounds", cache=False)
    with pytest.raises(A.AnalysisError, match="each point's rounds"):
        fit_median(synthetic("affine", truth, seed=3), ["affine"], axes=(), n_boot=5, bootstrap="rounds", cache=False)


def test_loaded_results_keep_each_points_rounds(results_dir):
    """``load_results(raw=True)`` keeps every point's repeats by round (what the rounds bootstrap draws);
    without ``raw`` they are dropped with the pooled repeats."""
    from crossover.results.store import load_results

    raw = load_results(results_dir, raw=True)
    assert "round_raw_s" in raw and "round_raw_s" not in load_results(results_dir)
    for pairs, pooled, rounds in zip(raw["round_raw_s"], raw["raw_times_s"], raw["n_rounds"]):
        assert len(pairs) == rounds and sorted(v for _, t in pairs for v in t) == sorted(pooled)


def test_auto_bootstrap_resamples_rounds_where_a_series_has_enough():
    """The default resamples whole rounds in a series of MIN_BOOTSTRAP_ROUNDS rounds or more and the
    residuals otherwise; the fit records which."""
    from crossover.fit.bootstrap import MIN_BOOTSTRAP_ROUNDS

    truth = dict(step_s=50e-6, flops_per_s=100e9)
    many = _in_rounds(synthetic("affine", truth, noise=0.0, seed=4), factors=(1.0,) * MIN_BOOTSTRAP_ROUNDS)
    few = _in_rounds(synthetic("affine", truth, noise=0.0, seed=4), factors=(1.0,) * (MIN_BOOTSTRAP_ROUNDS - 1))
    assert fit_median(many, ["affine"], axes=(), n_boot=5, cache=False).bootstrap == "rounds"
    assert fit_median(few, ["affine"], axes=(), n_boot=5, cache=False).bootstrap == "residuals"
    assert fit_median(synthetic("affine", truth), ["affine"], axes=(), n_boot=5, cache=False).bootstrap == "residuals"


def test_impossible_parameters_are_named():
    """A fit no device can have: a rate above the device's measured peak, or data out of cache moving
    faster than in cache. Such a fit is not chosen while a physical candidate remains."""
    from crossover.fit.series_fit import impossible_parameters

    # step, layer, FLOP/s, in-cache B/s, DRAM B/s, cache bytes (SI)
    physical = (50e-6, 1e-6, 1e12, 100e9, 20e9, 1e6)
    assert impossible_parameters("roofline+cache", physical, {}) == []
    assert impossible_parameters("roofline+cache", physical[:3] + (20e9, 100e9) + physical[5:], {}) == \
        ["dram_bytes_per_s"]
    assert impossible_parameters("roofline+cache", physical, {"flops_per_s": 0.5e12}) == ["flops_per_s"]


def test_brent_root_takes_scipys_brentq_steps():
    """The crossover's root finder is scipy's brentq ported step for step (so that predict need not import
    scipy.optimize): the same root, bit for bit, on functions of every shape."""
    from scipy import optimize

    from crossover.crossings import brent_root

    rng = np.random.default_rng(0)
    for _ in range(200):
        a, b, c = rng.normal(size=3) * 3
        f = lambda u, a=a, b=b, c=c: np.tanh(u - a) + 0.003 * (u - b) ** 3 + 0.01 * c  # noqa: E731
        if np.sign(f(-20.0)) != np.sign(f(20.0)):
            assert brent_root(f, -20.0, 20.0) == optimize.brentq(f, -20.0, 20.0)
    with pytest.raises(ValueError):
        brent_root(lambda u: u * u + 1, -1.0, 1.0)
