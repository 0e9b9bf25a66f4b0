import functools
"""What the plot functions draw (lines' data, labels, scales, notes) on small synthetic results."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from crossover import analysis as A  # noqa: E402
from crossover import plots  # noqa: E402
from crossover.results.store import ResultsWriter  # noqa: E402

CPU = dict(step_s=50e-6, flops_per_s=100e9)
GPU = dict(step_s=2e-3, flops_per_s=10e12)

# These tests are about the models and the fitting, on synthetic medians: fit that statistic.
fit_median = functools.partial(A.fit_series, statistic="median")
fit_results_median = functools.partial(A.fit_results, statistic="median")


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
    cpu = fit_median(cpu_rows, ["affine"], axes=(), n_boot=0)
    gpu = fit_median(gpu_rows, ["affine"], axes=(), n_boot=0, label="synth/cuda")
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
    fit = fit_median(data, ["affine"], axes=(), n_boot=0)
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
    assert "highest achieved" in ax.lines[1].get_label() and ax.lines[3].get_label() == "cuda peak 20 TFLOP/s"
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
    ax = plots.overhead_plot(pd.concat([compiled, eager], ignore_index=True))
    assert [line.get_label() for line in ax.lines] == ["eager", "compile"]  # modes in their fixed order
    np.testing.assert_allclose(ax.lines[1].get_ydata(), 1e6 * compiled["median_s"] / compiled["n_layers"])
    assert "(µs)" in ax.get_ylabel() and ax.get_xscale() == "log"
    assert "CUDA graphs" in ax.get_legend().get_title().get_text()
    quiet = plots.overhead_plot(eager, gpu_note=False, ax=plt.figure().gca())
    assert quiet.get_legend().get_title().get_text() == ""


def test_overhead_plot_gives_cuda_graphs_their_own_line_per_batch():
    eager = rows(GPU, device="cuda", points=[(128, n, b) for n in (16, 128) for b in (1, 64)], sweep="mode")
    graph = eager.assign(mode="cudagraph", median_s=eager["median_s"] * 0.2)
    ax = plots.overhead_plot(pd.concat([graph, eager], ignore_index=True))
    assert [line.get_label() for line in ax.lines] == [
        "eager, batch_size=1", "eager, batch_size=64", "cudagraph, batch_size=1", "cudagraph, batch_size=64"]
    expected = graph[graph.batch_size == 64].sort_values("n_layers")
    np.testing.assert_allclose(ax.lines[3].get_ydata(), 1e6 * expected["median_s"] / expected["n_layers"])
    assert ax.lines[0].get_color() != ax.lines[2].get_color()
    assert ax.get_legend().get_title().get_text() == ""


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
    from crossover.plots.diagram import diagram_available

    names = {"sweep_batch_size", "sweep_d_model", "sweep_n_layers", "sweep_fixed_params", "throughput",
             "speedup_map", "speedup_params", "overhead", "best_mode", "forward_vs_train", "dtype",
             "accuracy_cpu", "accuracy_cuda"} | ({"diagram"} if diagram_available() else set())
    expected = {f"{name}.{fmt}" for name in names for fmt in ("png", "pdf")}
    assert {p.name for p in out.iterdir()} == expected
    assert all((out / name).stat().st_size > 0 for name in expected)
    assert f"wrote {len(expected)} files" in stdout


def test_the_figure_registry_is_the_documented_table_in_order():
    from crossover.plots import figures

    lines = figures.__doc__.splitlines()
    rules = [i for i, line in enumerate(lines) if line.startswith("=====")]
    rows = [line.split()[0] for line in lines[rules[1] + 1:rules[2]] if not line.startswith(" ")]
    assert [name.replace("_<series>", "") for name in rows] == list(figures.FIGURES)


def test_drift_plot_draws_each_run_over_its_quiet_level():
    from crossover.results.statistics import DRIFT_LIMIT

    data = pd.DataFrame(dict(run=["b", "a", "a", "b"], elapsed_min=[0.0, 0.0, 5.0, 4.0], drift=[1.0, 1.1, 1.6, 1.2]))
    ax = plots.drift_plot(data)
    assert [line.get_label() for line in ax.lines[:2]] == ["a", "b"]
    np.testing.assert_allclose(ax.lines[0].get_ydata(), [1.1, 1.6])
    assert list(ax.lines[2].get_ydata()) == [DRIFT_LIMIT, DRIFT_LIMIT]


# ------------------------------------------------------------------ crossovers, maps, modes, figures
def marker(x, low=None, high=None, a="h/cpu", b="h/cuda", roots=None, empirical=(), winner=None):
    return A.Crossover(axis="batch_size", fixed={}, a=a, b=b, x=x, roots=roots if roots is not None else
                       ([x] if x else []), low=low, high=high, never_fraction=0.0, winner_below=None,
                       winner_above=None, winner=winner, x_range=(1, 1024), empirical=list(empirical))


def test_sweep_plot_labels_each_crossover_with_its_pair_and_interval():
    data = pd.concat([rows(CPU), rows(GPU, device="cuda", seed=1)], ignore_index=True)
    ax = plots.sweep_plot(data, x="batch_size", crossover=[marker(30.0, 20.0, 40.0, empirical=[25.0]),
                                                          marker(None, winner="h/cpu")])
    lines = [line for line in ax.lines if line.get_label().startswith("h CPU =")]
    assert len(lines) == 1 and list(lines[0].get_xdata()) == [30.0, 30.0]
    assert lines[0].get_label() == "h CPU = h GPU at batch size 30 [20, 40]; measured points cross at 25"
    band = ax.patches[-1] if ax.patches else None
    assert band is not None and (band.get_x(), band.get_x() + band.get_width()) == pytest.approx((20.0, 40.0))
    title = ax.get_legend().get_title().get_text()
    assert "h CPU faster than h GPU" in title and "no crossover" in title


def test_crossover_label_names_both_machines_when_they_differ():
    text = plots.crossover_label(marker(1234.5, a="m1/cpu [threads=2]", b="m2/cuda"))
    assert text == "m1 CPU = m2 GPU at batch size 1234"


def test_batch_size_figure_crosses_only_devices_of_the_same_machine(tmp_path, monkeypatch):
    """A second machine's CPU is drawn, but the crossover pairs the host's own CPU and GPU."""
    from crossover.plots import figures
    from crossover.analysis import reference_study as study

    frames = []
    for machine, device, params, seed in (("other", "cpu", dict(step_s=10e-6, flops_per_s=20e9), 2),
                                          ("host", "cpu", CPU, 0), ("host", "cuda", GPU, 1)):
        for sweep, points in (("batch_size", None), ("d_model", [(d, 128, 1) for d in (64, 256, 512, 1024)])):
            frames.append(rows(params, device=device, seed=seed, sweep=sweep, points=points).assign(machine=machine))
    directory = tmp_path / "results"
    seen = set()
    for machine, part in pd.concat(frames, ignore_index=True).groupby("machine"):
        writer = ResultsWriter(directory / machine, "run1", {"machine": machine})
        for row in part.to_dict("records"):
            key = (row["device"], row["d_model"], row["n_layers"], row["batch_size"])
            if key not in seen:
                seen.add(key)
                writer.append(row)
        seen.clear()
    calls = []
    original = plots.sweep_plot

    def spy(data, **kwargs):
        calls.append((data, kwargs))
        return original(data, **kwargs)

    monkeypatch.setattr(plots, "sweep_plot", spy)
    monkeypatch.setattr(study, "N_BOOT", 20)  # the figures bootstrap the host's fits with the study's size
    import shutil

    monkeypatch.setattr(shutil, "which", lambda name: None)  # no graphviz: the diagram is left out, with a note
    notes = []
    written = figures.make_figures(directory, tmp_path / "figures", formats=("png",), log=notes.append)
    assert any(note.startswith("left out diagram: ") and "install" in note for note in notes)
    assert "diagram.png" not in {p.name for p in written}
    data, kwargs = calls[0]  # sweep_batch_size
    assert set(data["series"]) == {"other/cpu", "host/cpu", "host/cuda"}
    found = kwargs["crossover"]
    assert {found.a, found.b} == {"host/cpu", "host/cuda"}
    assert found.x is not None and found.low <= found.x <= found.high
    cpu_fit = fit_median(data[data.series == "host/cpu"], ["roofline+hockney"], axes=(), n_boot=0)
    gpu_fit = fit_median(data[data.series == "host/cuda"], ["roofline+hockney"], axes=(), n_boot=0)
    # the figure's fits also hold the d_model sweep's points: close to, not equal to, this refit
    assert found.x == pytest.approx(A.crossover(cpu_fit, gpu_fit, "batch_size", d_model=128, n_layers=128).x,
                                    rel=0.1)
    assert "host CPU = host GPU at batch size" in plots.crossover_label(found)


def test_speedup_map_cells_sit_at_their_sizes_and_the_frontier_in_the_same_coordinates():
    points = [(d, 128, b) for d in (64, 256) for b in (1, 16)] + [(128, 128, b) for b in (1, 4)]
    data = pd.concat([rows(CPU, points=points), rows(GPU, points=points, device="cuda", seed=1)],
                     ignore_index=True)
    frontier = pd.DataFrame(dict(d_model=[64.0, 100.0, 200.0], batch_size=[50.0, 10.0, 2.0],
                                 low=[40.0, 8.0, 1.5], high=[60.0, 12.0, 2.5]))
    ax = plots.speedup_map(data, frontier=frontier)
    mesh = ax.collections[0]
    assert mesh.get_array().shape == (3, 3)  # rows 1, 4, 16; columns 64, 128, 256
    assert np.ma.is_masked(mesh.get_array()[1, 0])  # (B=4, d=64) not measured
    assert ax.get_xscale() == ax.get_yscale() == "log"
    assert [t.get_text() for t in ax.get_xticklabels()] == ["64", "128", "256"]
    line = ax.lines[-1]
    np.testing.assert_allclose(line.get_xdata(), [64, 100, 200])  # data coordinates, not cell indices
    np.testing.assert_allclose(line.get_ydata(), [50, 10, 2])
    texts = {t.get_position(): t.get_text() for t in ax.texts}
    cpu = data[data.device == "cpu"].set_index(["d_model", "batch_size"])["median_s"]
    gpu = data[data.device == "cuda"].set_index(["d_model", "batch_size"])["median_s"]
    assert texts[(128.0, 4.0)] == f"{cpu[(128, 4)] / gpu[(128, 4)]:.2g}"


def test_speedup_scatter_places_every_point_measured_on_both_and_sets_ties_side_by_side():
    points = [(256, 32, 1), (512, 8, 1), (128, 128, 16), (128, 128, 64)]
    data = pd.concat([rows(CPU, points=points), rows(GPU, points=points + [(64, 8, 1)], device="cuda", seed=1)],
                     ignore_index=True)
    ax = plots.speedup_scatter(data)
    dots = ax.collections[0]
    offsets = dots.get_offsets()
    assert len(offsets) == 4  # (64, 8, 1) only on the GPU
    tied = offsets[np.asarray(offsets[:, 1]) == 1]
    assert len(tied) == 2 and tied[0, 0] < 2**21 < tied[1, 0]  # both 2^21 parameters, set apart
    cpu = data[data.device == "cpu"].set_index(["d_model", "n_layers", "batch_size"])["median_s"]
    gpu = data[data.device == "cuda"].set_index(["d_model", "n_layers", "batch_size"])["median_s"]
    expected = sorted(cpu[p] / gpu[p] for p in points)
    np.testing.assert_allclose(sorted(dots.get_array()), expected)
    assert ax.get_xscale() == "log" and "parameters" in ax.get_xlabel()


def test_mode_crossover_plot_marks_eager_and_fastest_mode_crossings():
    batches = [(128, 128, b) for b in (1, 4, 16, 64, 256)]
    cpu = rows(CPU, points=batches)
    gpu = rows(GPU, points=batches, device="cuda", seed=1)
    graph = gpu.assign(mode="cudagraph", median_s=gpu["median_s"] / 5)
    compiled = cpu.assign(mode="compile", median_s=cpu["median_s"] / 2)
    data = pd.concat([gpu, graph, cpu, compiled], ignore_index=True)
    ax = plots.mode_crossover_plot(data)
    labels = [line.get_label() for line in ax.lines]
    # one machine's devices are named as a reader names them (its machine label "synth")
    assert labels[:4] == ["synth CPU eager", "synth CPU compile", "synth GPU eager", "synth GPU cudagraph"]
    eager = [line for line in ax.lines if line.get_label().startswith("eager:")]
    best = [line for line in ax.lines if line.get_label().startswith("fastest modes:")]
    assert len(eager) == len(best) == 1
    expected_eager = A.empirical_crossover(cpu, gpu, "batch_size")
    assert eager[0].get_xdata()[0] == pytest.approx(expected_eager[0])
    expected_best = A.empirical_crossover(compiled, graph, "batch_size")
    assert best[0].get_xdata()[0] == pytest.approx(expected_best[0])
    assert best[0].get_xdata()[0] < eager[0].get_xdata()[0]  # faster modes help the GPU more here


def test_mode_crossover_plot_says_when_the_gpu_wins_everywhere():
    batches = [(128, 128, b) for b in (1, 16, 256)]
    cpu = rows(CPU, points=batches)
    gpu = rows(GPU, points=batches, device="cuda", seed=1)
    graph = gpu.assign(mode="cudagraph", median_s=cpu["median_s"].to_numpy() / 10)
    ax = plots.mode_crossover_plot(pd.concat([cpu, gpu, graph], ignore_index=True))
    assert "fastest modes: synth GPU faster at every batch_size measured (1–256)" in ax.get_legend().get_title().get_text()


def test_cli_diagram_without_torchview_exits_2_with_one_line(monkeypatch, tmp_path, capsys):
    import sys

    from crossover.cli import main

    monkeypatch.setitem(sys.modules, "torchview", None)
    assert main(["diagram", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "pip install" in err and "torchview" in err
    assert not list(tmp_path.iterdir())


def test_cli_diagram_without_dot_exits_2_and_figures_skip_it(monkeypatch, tmp_path, capsys):
    import shutil

    pytest.importorskip("torchview")
    from crossover.plots import diagram
    from crossover.cli import main

    monkeypatch.setattr(shutil, "which", lambda name: None)
    assert main(["diagram", "--out", str(tmp_path)]) == 2
    assert "graphviz" in capsys.readouterr().err
    with pytest.raises(diagram.DiagramUnavailable):
        diagram.draw_diagram(tmp_path)


def test_cli_diagram_draws_the_model(tmp_path):
    from crossover.plots import diagram
    from crossover.cli import main

    if not diagram.diagram_available():
        pytest.skip("torchview or graphviz missing")
    assert main(["diagram", "--out", str(tmp_path), "--n-layers", "2", "--d-model", "8"]) == 0
    png = (tmp_path / "diagram.png").read_bytes()
    assert png.startswith(b"\x89PNG") and (tmp_path / "diagram.pdf").stat().st_size > 0


def test_each_series_keeps_its_colour_and_a_plain_name_in_every_figure():
    from crossover.plots.theme import assign_series_colors, display_name, series_colors

    every = ["nvidia-h200-16c/cuda", "amd-epyc-2c/cpu", "nvidia-h200-16c/cpu", "nvidia-h100-80gb-hbm3-16c/cuda",
             "nvidia-h100-80gb-hbm3-16c/cpu"]
    assign_series_colors(every)
    try:
        all_at_once = series_colors(every)
        assert len(set(map(tuple, all_at_once.values()))) == 5
        # a figure with two of the series draws them in the colours they have everywhere
        assert series_colors(["nvidia-h200-16c/cpu", "nvidia-h200-16c/cuda"]) == {
            k: all_at_once[k] for k in ("nvidia-h200-16c/cpu", "nvidia-h200-16c/cuda")}
        # the CPU-only machine first, then each GPU machine's host and GPU side by side
        assert all_at_once["amd-epyc-2c/cpu"] == series_colors(["amd-epyc-2c/cpu"])["amd-epyc-2c/cpu"]
        other = series_colors(["something else"])["something else"]
        assert other not in list(all_at_once.values())
        ax = plots.sweep_plot(pd.DataFrame(dict(batch_size=[1, 2, 1, 2], median_s=[1e-3, 2e-3, 3e-3, 3e-3],
                                                series=["nvidia-h200-16c/cpu"] * 2 + ["nvidia-h200-16c/cuda"] * 2)),
                              x="batch_size", hue="series")
        assert [line.get_label() for line in ax.lines] == ["H200 host CPU", "H200 GPU"]
        assert tuple(ax.lines[1].get_color()) == tuple(all_at_once["nvidia-h200-16c/cuda"])
    finally:
        assign_series_colors([])
    assert display_name("amd-epyc-2c/cpu [threads=2]") == "AMD EPYC 2-core CPU" and display_name("cuda") == "cuda"
    assert display_name("local/cpu") == "local CPU"  # a slug of another form is kept
    assert display_name("nvidia-h100-80gb-hbm3-16c/cuda") == "H100 GPU"
