"""What the plot functions draw (lines' data, labels, scales, notes) on small synthetic results."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from crossover import analysis as A  # noqa: E402
from crossover import plots  # noqa: E402
from crossover.results import ResultsWriter  # noqa: E402

CPU = dict(step_s=50e-6, flops_per_s=100e9)
GPU = dict(step_s=2e-3, flops_per_s=10e12)


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def rows(params, *, device="cpu", sweep="batch_size", points=None, seed=0, **extra):
    """Rows like load_results' from the affine model with ``params`` and 5% noise (fixed seed)."""
    rng = np.random.default_rng(seed)
    points = points or [(128, 128, b) for b in (1, 4, 16, 64, 256, 1024)]
    out = []
    for d, n, b in points:
        true = float(A.model_latency_s("affine", params, d, n, b))
        median = true * float(np.exp(0.05 * rng.standard_normal()))
        flops, nbytes = A.step_counts(d, n, b)
        out.append(dict(machine="synth", device=device, sweep=sweep, workload="forward", mode="eager",
                        dtype="float32", regime="latency", transfer="device", threads=2, threads_requested=0,
                        round=0, status="ok", d_model=d, n_layers=n, batch_size=b, params=n * d * d,
                        flops=int(flops), bytes=int(nbytes), median_s=median, q1_s=0.9 * median,
                        q3_s=1.1 * median, iqr_s=0.2 * median, **extra))
    return pd.DataFrame(out)


def test_sweep_plot_draws_one_line_per_device_with_the_medians():
    data = pd.concat([rows(CPU), rows(GPU, device="cuda", seed=1)], ignore_index=True)
    ax = plots.sweep_plot(data, x="batch_size")
    assert len(ax.lines) == 2 and [line.get_label() for line in ax.lines] == ["cpu", "cuda"]
    for line, device in zip(ax.lines, ("cpu", "cuda")):
        expected = data[data.device == device].sort_values("batch_size")
        np.testing.assert_array_equal(line.get_xdata(), expected["batch_size"])
        np.testing.assert_allclose(line.get_ydata(), expected["median_s"])
    assert len(ax.collections) == 2  # the IQR bands
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    assert "(s)" in ax.get_ylabel() and "(samples)" in ax.get_xlabel()
    assert ax.get_legend().get_title().get_text() == ""


def test_sweep_plot_overlays_fits_and_marks_the_crossover():
    cpu_rows, gpu_rows = rows(CPU), rows(GPU, device="cuda", seed=1)
    cpu = A.fit_series(cpu_rows, ["affine"], axes=(), n_boot=0)
    gpu = A.fit_series(gpu_rows, ["affine"], axes=(), n_boot=0, label="synth/cuda")
    marker = A.Crossover(axis="batch_size", fixed={}, a="cpu", b="cuda", x=30.0, roots=[30.0], low=20.0,
                         high=40.0, never_fraction=0.0, winner_below="cpu", winner_above="cuda", winner=None,
                         x_range=(1, 1024), empirical=[])
    ax = plots.sweep_plot(pd.concat([cpu_rows, gpu_rows]), x="batch_size", fits={"fit cpu": cpu, "fit gpu": gpu},
                          crossover=marker)
    assert len(ax.lines) == 4 + 1  # two data lines, two fitted curves, the crossover line
    curve = ax.lines[2]
    assert curve.get_label() == "fit cpu" and curve.get_linestyle() == "--"
    np.testing.assert_allclose(curve.get_ydata(), cpu.latency_s(128, 128, curve.get_xdata()))
    assert ax.lines[2].get_color() == ax.lines[0].get_color()  # a fit takes its device's colour
    assert list(ax.lines[4].get_xdata()) == [30.0, 30.0]


def test_sweep_plot_without_gpu_rows_says_so():
    ax = plots.sweep_plot(rows(CPU), x="batch_size")
    assert len(ax.lines) == 1
    assert ax.get_legend().get_title().get_text() == plots.NO_GPU_NOTE


def test_fit_curve_follows_the_other_sizes_along_a_fixed_parameter_sweep():
    points = [(d, 2**20 // (d * d), 1) for d in (64, 128, 256, 512)]
    data = rows(CPU, points=points, sweep="fixed_params")
    fit = A.fit_series(data, ["affine"], axes=(), n_boot=0)
    ax = plots.sweep_plot(data, x="d_model", fits={"fit": fit})
    curve = ax.lines[1]
    d = curve.get_xdata()
    np.testing.assert_allclose(curve.get_ydata(), fit.latency_s(d, 2**20 / d**2, 1), rtol=1e-9)


def test_throughput_plot_points_and_measured_peak():
    data = pd.concat([rows(CPU), rows(GPU, device="cuda", seed=1)], ignore_index=True)
    ax = plots.throughput_plot(data, peak_flops_per_s={"cuda": 20e12})
    assert len(ax.lines) == 4  # per device: points, peak
    cpu = data[data.device == "cpu"].sort_values("flops")
    np.testing.assert_allclose(ax.lines[0].get_ydata(), cpu["flops"] / cpu["median_s"])
    assert ax.lines[1].get_ydata()[0] == pytest.approx((cpu["flops"] / cpu["median_s"]).max())
    assert ax.lines[3].get_ydata()[0] == 20e12
    assert "FLOP/s" in ax.get_ylabel() and "FLOP" in ax.get_xlabel()
    assert ax.get_xscale() == ax.get_yscale() == "log"


def test_speedup_map_is_the_time_ratio_with_a_frontier():
    points = [(d, 128, b) for d in (64, 256, 1024) for b in (1, 16, 256)]
    data = pd.concat([rows(CPU, points=points), rows(GPU, points=points, device="cuda", seed=1)],
                     ignore_index=True)
    frontier = pd.DataFrame(dict(d_model=[64, 256, 1024], batch_size=[100.0, 20.0, None]))
    ax = plots.speedup_map(data, frontier=frontier)
    values = ax.collections[0].get_array().reshape(3, 3)
    cpu = data[data.device == "cpu"].set_index(["batch_size", "d_model"])["median_s"]
    gpu = data[data.device == "cuda"].set_index(["batch_size", "d_model"])["median_s"]
    assert values[1, 2] == pytest.approx(cpu[(16, 1024)] / gpu[(16, 1024)])
    norm = ax.collections[0].norm
    assert norm.vmin * norm.vmax == pytest.approx(1.0)  # centred at 1 on a log scale
    assert len(ax.lines) == 1 and len(ax.lines[0].get_xdata()) == 2  # the frontier, NaN row left out
    assert [t.get_text() for t in ax.get_xticklabels()] == ["64", "256", "1024"]


def test_speedup_map_without_gpu_draws_nothing_but_a_note():
    ax = plots.speedup_map(rows(CPU))
    assert not ax.collections and not ax.lines
    assert any(plots.NO_GPU_NOTE in t.get_text() for t in ax.texts)


def test_overhead_plot_is_time_per_layer_per_mode():
    eager = rows(CPU, points=[(128, n, 1) for n in (16, 64, 256)], sweep="mode")
    compiled = eager.assign(mode="compile", median_s=eager["median_s"] * 0.8)
    ax = plots.overhead_plot(pd.concat([eager, compiled], ignore_index=True))
    assert [line.get_label() for line in ax.lines] == ["eager", "compile"]
    np.testing.assert_allclose(ax.lines[1].get_ydata(), compiled["median_s"] / compiled["n_layers"])
    assert "(s)" in ax.get_ylabel() and ax.get_xscale() == "log"
    assert "CUDA graphs" in ax.get_legend().get_title().get_text()


def test_accuracy_plot_has_a_series_per_axis_and_the_diagonal():
    predictions = A.cross_validate(rows(CPU, points=[(d, n, b) for d in (64, 128, 256) for n in (8, 16)
                                                     for b in (1, 8, 64)]), "affine")
    ax = plots.accuracy_plot(predictions)
    axes = list(dict.fromkeys(predictions["axis"]))
    assert len(ax.lines) == len(axes) + 1
    first = predictions[predictions["axis"] == axes[0]]
    np.testing.assert_allclose(ax.lines[0].get_xdata(), first["measured_s"])
    np.testing.assert_allclose(ax.lines[0].get_ydata(), first["predicted_s"])
    diagonal = ax.lines[-1]
    np.testing.assert_allclose(diagonal.get_xdata(), diagonal.get_ydata())
    assert ax.get_xscale() == ax.get_yscale() == "log" and "(s)" in ax.get_xlabel()


def test_comparison_plot_one_line_per_workload():
    forward = rows(CPU, points=[(128, 16, b) for b in (1, 64, 512)], sweep="workload")
    train = forward.assign(workload="train", median_s=forward["median_s"] * 3)
    ax = plots.comparison_plot(pd.concat([forward, train], ignore_index=True), by="workload")
    assert [line.get_label() for line in ax.lines] == ["forward", "train"]
    np.testing.assert_allclose(ax.lines[1].get_ydata(), train["median_s"])
    assert "(samples)" in ax.get_xlabel() and "(s)" in ax.get_ylabel()


def test_plots_draw_on_the_current_axes_by_default():
    fig, (left, right) = plt.subplots(1, 2)
    plt.sca(right)
    assert plots.sweep_plot(rows(CPU), x="batch_size") is right
    assert plots.sweep_plot(rows(CPU), x="batch_size", ax=left) is left


@pytest.fixture
def results_dir(tmp_path):
    """A tiny results directory: every sweep make_figures draws, on an affine CPU and GPU."""
    grid = [(d, 128, b) for d in (64, 256) for b in (1, 16, 256)]
    frames = []
    for device, params, seed in (("cpu", CPU, 0), ("cuda", GPU, 1)):
        frames += [
            rows(params, device=device, seed=seed),
            rows(params, device=device, seed=seed, sweep="d_model", points=[(d, 128, 1) for d in (64, 256, 512)]),
            rows(params, device=device, seed=seed, sweep="n_layers", points=[(128, n, 1) for n in (16, 32, 64)]),
            rows(params, device=device, seed=seed, sweep="fixed_params",
                 points=[(d, 2**22 // (d * d), 1) for d in (64, 128, 256)]),
            rows(params, device=device, seed=seed, sweep="map", points=grid),
        ]
    frames.append(rows(CPU, sweep="mode", points=[(128, 16, 1), (128, 128, 1)]).assign(mode="compile"))
    frames.append(rows(CPU, sweep="workload", points=[(128, 128, 1), (128, 128, 64)]).assign(workload="train"))
    frames.append(rows(CPU, sweep="dtype", points=[(128, 128, 1), (128, 128, 64)]).assign(dtype="bfloat16"))
    directory = tmp_path / "results" / "synth"
    writer = ResultsWriter(directory, "run1", {"machine": "synth"})
    seen = set()
    for row in pd.concat(frames, ignore_index=True).to_dict("records"):
        key = tuple(row[k] for k in ("device", "d_model", "n_layers", "batch_size", "mode", "workload", "dtype"))
        if key not in seen:
            seen.add(key)
            writer.append(row)
    return tmp_path / "results"


def test_cli_figures_writes_every_figure(results_dir, tmp_path, capsys):
    from crossover.cli import main

    out = tmp_path / "figures"
    status = main(["figures", "--results", str(results_dir), "--out", str(out), "--quiet"])
    stdout, err = capsys.readouterr()
    assert status == 0, err
    names = {"sweep_batch_size", "sweep_d_model", "sweep_n_layers", "sweep_fixed_params", "throughput",
             "speedup_map", "overhead", "forward_vs_train", "dtype", "accuracy_cpu", "accuracy_cuda"}
    expected = {f"{name}.{fmt}" for name in names for fmt in ("png", "pdf")}
    assert {p.name for p in out.iterdir()} == expected
    assert all((out / name).stat().st_size > 0 for name in expected)
    assert f"wrote {len(expected)} files" in stdout
