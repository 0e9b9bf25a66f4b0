"""Every figure the results allow, drawn from a results directory into PNG and PDF files.

:func:`make_figures` is what ``crossover figures`` and ``make figures`` run: it loads the results
(by default the reference data shipped in ``experiments/results``), fits the roofline+hockney
latency model per series without bootstrap (fast), refits the host's CPU and GPU (below) with the
model grouped cross-validation chooses and a bootstrap (as ``crossover predict`` does), and draws
with :mod:`crossover.plots`:

=======================  ===================================================================
file                     what it shows
=======================  ===================================================================
sweep_batch_size         latency vs batch size (d_model, n_layers fixed), IQR bands, fit
sweep_d_model            latency vs d_model (n_layers, batch fixed)
sweep_n_layers           latency vs n_layers (d_model, batch fixed)
sweep_fixed_params       latency vs d_model at a fixed parameter count (n_layers = P / d²)
throughput               achieved FLOP/s vs FLOPs per step against each device's measured peak
speedup_map              the host's CPU/GPU speed-up over d_model x batch size (every eager
                         float32 forward point at that depth) with the fitted frontier
speedup_params           the same speed-up at every point measured on both, over parameters x batch
overhead                 time per layer (µs) vs n_layers per execution mode, a panel per device
best_mode                latency vs batch per device and mode: eager-vs-eager and fastest-mode
                         crossovers
forward_vs_train         forward pass vs training step latency, a panel per device
dtype                    float32 vs lower-precision latency, a panel per device
accuracy_<series>        held-out predicted vs measured latency (grouped CV), ±10% band
drift                    each run's drift-reference readings over its quiet level, through the run
diagram                  the model drawn by torchview (left out, with a note, without it)
=======================  ===================================================================

The *host* is the machine whose CPU and GPU were both measured. Every sweep draws all machines'
lines, but the crossover marked (with its bootstrap interval) is always the host's own CPU against
its own GPU. A figure whose rows are absent is left out (and named in the log); figures that compare
with a GPU draw the CPU alone and say "no GPU data yet" when the results hold none. Each run of a
device is drawn from one results directory (the one with the most points of that machine and
device), so repeated runs are not mixed on one line.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Callable, Optional, Sequence, Union

if TYPE_CHECKING:  # numpy, pandas and matplotlib load on use: `crossover --help` stays fast
    import pandas as pd

__all__ = ["make_figures", "FIT_MODEL", "FORMATS"]

#: The latency model overlaid on the sweeps (one candidate, no bootstrap: seconds, not minutes).
FIT_MODEL = "roofline+hockney"
#: Bootstrap resamples of the host's CPU and GPU fits (the crossover intervals drawn).
N_BOOT = 100
#: File formats written per figure.
FORMATS = ("png", "pdf")
SOURCE = "crossover.figures.make_figures"


# -------------------------------------------------------------------------------- data slices
def _at(frame: pd.DataFrame, coords: pd.DataFrame) -> pd.DataFrame:
    """Rows of ``frame`` at the (d_model, n_layers, batch_size) points listed in ``coords``."""
    keys = ["d_model", "n_layers", "batch_size"]
    return frame.merge(coords[keys].drop_duplicates(), on=keys, how="inner")


def _mode(values) -> float:
    import pandas as pd

    return pd.Series(values).value_counts().idxmax()


def _host(base: pd.DataFrame) -> Optional[str]:
    """The machine whose CPU and GPU were both measured (the one with most such rows), or None."""
    devices = base.assign(gpu=base["device"].astype(str).str.startswith("cuda"))
    both = devices.groupby("machine")["gpu"].agg(["any", "all", "size"])
    both = both[both["any"] & ~both["all"]]
    return None if both.empty else str(both["size"].idxmax())


# ---------------------------------------------------------------------------------- drawing
def _save(fig, out_dir: Path, name: str, formats: Sequence[str]) -> list:
    paths = []
    for fmt in formats:
        path = out_dir / f"{name}.{fmt}"
        fig.savefig(path, metadata={"Creator": SOURCE} if fmt in ("png", "pdf") else None)
        paths.append(path)
    return paths


def make_figures(results_dir: Union[str, Path, Sequence], out_dir: Union[str, Path], *,
                 formats: Sequence[str] = FORMATS, log: Optional[Callable[[str], None]] = None,
                 diagram: bool = True) -> list:
    """Draw every figure the results allow into ``out_dir`` (created if missing).

    Parameters
    ----------
    results_dir : path or sequence of paths
        Results to draw (see :func:`crossover.load_results`).
    out_dir : path
        Where the files go (``<name>.<format>``, names as in the module docstring).
    formats : sequence of str
        Matplotlib output formats (default PNG and PDF).
    log : callable, optional
        Called with one line per figure written or left out.
    diagram : bool
        Also draw the model diagram (left out, with a note, when torchview or graphviz is missing).

    Returns
    -------
    list of pathlib.Path
        The files written.
    """
    import numpy as np
    from matplotlib.figure import Figure

    from . import analysis as A
    from . import plots
    from .paper_numbers import PAPER_STATISTIC, baseline_rows, main_runs
    from .results import load_results

    log = log or (lambda line: None)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    frame = load_results(results_dir, raw=True)
    if frame.empty:
        raise A.AnalysisError(f"no measured points in {results_dir}")
    frame = main_runs(frame)
    multi = frame["machine"].nunique() > 1
    hue = "series" if multi else "device"
    frame = frame.assign(series=frame["machine"] + "/" + frame["device"])
    base = baseline_rows(frame)
    host = _host(base)

    fits = {}
    try:
        all_fits = A.fit_results(base, [FIT_MODEL], n_boot=0, axes=(), statistic=PAPER_STATISTIC)
    except A.AnalysisError as exc:
        log(f"no fits: {exc}")
        all_fits = {}
    for fit in all_fits.values():
        fits[f"{fit.key['machine']}/{fit.key['device']}"] = fit
    cpu = gpu = None
    if host is not None:  # the host's CPU and GPU again, with bootstrap draws for the crossover intervals
        pair = []
        for i, device in enumerate(("cpu", "cuda")):
            series = f"{host}/{device}"
            rows = base[base["series"] == series]
            if len(rows) >= 8:
                # the model grouped CV chooses, as `crossover fit` and `crossover predict` use
                # seeded by the label (series_seed, as every entry point seeds it), so the paper quotes these draws
                fits[series] = A.fit_series(rows, tuple(A.MODELS), n_boot=N_BOOT, seed=A.series_seed(series),
                                            label=series, statistic=PAPER_STATISTIC)
                pair.append(fits[series])
        if len(pair) == 2:
            cpu, gpu = pair
    if cpu is not None:
        chosen = sorted({cpu.model, gpu.model})
        fit_legend = (f"dashed: fits ({', '.join(chosen)} chosen by CV on the host"
                      + (f"; others {FIT_MODEL})" if len(fits) > 2 else ")"))
    else:
        fit_legend = f"{FIT_MODEL} fit (dashed, colour of its series)"
    base = base.drop(columns=["raw_times_s"], errors="ignore")
    frame = frame.drop(columns=["raw_times_s"], errors="ignore")
    named = (lambda text: f"{host}: {text}") if host and multi else (lambda text: text)

    written = []

    def figure(name: str, title: str, draw, *, ncols: int = 1, size=None, sharey: bool = False) -> None:
        with plots.style():
            width, height = plots.RC["figure.figsize"]
            fig = Figure(figsize=size or (width * (1 if ncols == 1 else 0.8 * ncols), height),
                         layout="constrained" if ncols > 1 else None)
            axes = [fig.add_subplot(1, ncols, 1)]
            axes += [fig.add_subplot(1, ncols, i + 1, sharey=axes[0] if sharey else None) for i in range(1, ncols)]
            draw(axes[0] if ncols == 1 else axes)
            if ncols == 1:
                axes[0].set_title(title)
            else:
                fig.suptitle(title, fontsize=plots.RC["axes.titlesize"])
            written.extend(_save(fig, out_dir, name, formats))
        log(f"wrote {name}")

    def overlay(rows):
        return {f"{s} fit": fits[s] for s in dict.fromkeys(rows["series"]) if s in fits}

    # -- the four sweeps: every machine's lines; the crossover of the host's own CPU and GPU
    sweeps = {"batch_size": "batch_size", "d_model": "d_model", "n_layers": "n_layers", "fixed_params": "d_model"}
    markers = {}
    for sweep, x in sweeps.items():
        swept = base[base["sweep"] == sweep]
        if swept.empty:
            log(f"left out sweep_{sweep}: no rows of that sweep")
            continue
        if sweep == "fixed_params":
            fixed = dict(params=_mode(swept["params"]), batch_size=_mode(swept["batch_size"]))
            title = (f"Fixed parameter count n_layers·d_model² = {fixed['params']:.3g}, "
                     f"batch_size={fixed['batch_size']}")
        else:
            fixed = {a: _mode(swept[a]) for a in A.AXES if a != x}
            title = f"Latency vs {x} (" + ", ".join(f"{a}={v}" for a, v in fixed.items()) + ")"
        mask = np.ones(len(base), bool)
        for column, value in fixed.items():
            mask &= (base[column] == value).to_numpy()
        rows = base[mask]
        marker = None
        if cpu is not None and gpu is not None:
            try:
                if sweep == "fixed_params":
                    own = rows[rows["machine"] == host][x]
                    marker = A.fixed_params_crossover(cpu, gpu, float(fixed["params"]),
                                                      batch_size=float(fixed["batch_size"]),
                                                      x_range=(float(own.min()), float(own.max())))
                    mine = rows[rows["machine"] == host]
                    marker.empirical = A.empirical_crossover(mine[mine["device"] == "cpu"],
                                                             mine[mine["device"] == "cuda"], "d_model",
                                                             column=A.STATISTICS[cpu.statistic].column)
                else:
                    span = rows.loc[rows["machine"] == host, x]
                    marker = A.crossover(cpu, gpu, x, **{k: float(v) for k, v in fixed.items()},
                                         x_range=(float(span.min()), float(span.max())))
            except (A.AnalysisError, ValueError) as exc:
                log(f"no crossover on {sweep}: {exc}")
        markers[sweep] = marker
        figure(f"sweep_{sweep}", title,
               lambda ax: plots.sweep_plot(rows, x=x, hue=hue, fits=overlay(rows), crossover=marker,
                                           fit_legend=fit_legend,
                                           legend="below" if multi else "best", ax=ax))

    # -- throughput against the measured peak
    figure("throughput", "Achieved throughput vs work per step (forward, eager, float32)",
           lambda ax: plots.throughput_plot(base, hue=hue, ax=ax))

    # -- speed-up maps of the host (CPU time / GPU time): d_model x batch with the fitted frontier,
    #    and parameters x batch over every point measured on both
    own = base[base["machine"] == host] if host else base
    grid = own[own["sweep"] == "map"]
    n_layers = _mode((grid if len(grid) else own)["n_layers"])
    cells = own[own["n_layers"] == n_layers]
    frontier = None
    if cpu is not None and gpu is not None:
        try:
            d_models = np.geomspace(cells["d_model"].min(), cells["d_model"].max(), 25)
            frontier = A.crossover_frontier(cpu, gpu, d_models, n_layers=float(n_layers),
                                            batch_range=(float(cells["batch_size"].min()),
                                                         float(cells["batch_size"].max())))
        except A.AnalysisError as exc:
            log(f"no frontier: {exc}")
    figure("speedup_map", named(f"CPU/GPU speed-up, n_layers={n_layers}"),
           lambda ax: plots.speedup_map(cells, x="d_model", y="batch_size", a="cpu", b="cuda",
                                        frontier=frontier, ax=ax), size=(5.0, 3.8))
    figure("speedup_params", named("CPU/GPU speed-up over parameters × batch"),
           lambda ax: plots.speedup_scatter(own, x="params", y="batch_size", a="cpu", b="cuda", ax=ax),
           size=(5.0, 3.6))

    # -- execution modes: time per layer, one panel per device of the machine that measured them
    modes = baseline_rows(frame, free=("mode",))
    mode_rows = modes[modes["sweep"] == "mode"]
    if mode_rows.empty:
        log("left out overhead: no mode sweep")
    else:
        counts = mode_rows["machine"].value_counts()
        machine = host if host in counts.index else counts.idxmax()
        mode_rows = mode_rows[mode_rows["machine"] == machine]
        d_model = _mode(mode_rows["d_model"])
        rows = modes[(modes["machine"] == machine) & (modes["d_model"] == d_model)
                     & modes["batch_size"].isin(mode_rows["batch_size"].unique())]
        devices = sorted(rows["device"].unique(), key=lambda d: (str(d).startswith("cuda"), str(d)))

        def draw_modes(axes):
            axes = axes if isinstance(axes, list) else [axes]
            for ax, device in zip(axes, devices):
                part = rows[rows["device"] == device]
                plots.overhead_plot(part, gpu_note=host is None, legend="below", ax=ax)
                threads = part["threads"].dropna()
                ax.set_title(f"{device}" + (f" ({int(threads.iloc[0])} threads)"
                                            if device == "cpu" and len(threads) else ""))
            for ax in axes[1:]:
                ax.set_ylabel("")

        figure("overhead", (f"{machine}: " if multi else "") + f"per-layer time by execution mode (d_model={d_model})",
               draw_modes, ncols=len(devices), sharey=True, size=(3.4 * len(devices), 3.6))

    # -- each device in its fastest mode, against batch size (at the batch-size sweep's d_model, n_layers)
    batch_sweep = own[own["sweep"] == "batch_size"] if host is not None else own.iloc[:0]
    if batch_sweep.empty:
        log("left out best_mode: no CPU and GPU batch-size sweep of one machine")
    else:
        d_model, depth = _mode(batch_sweep["d_model"]), _mode(batch_sweep["n_layers"])
        at = modes[(modes["machine"] == host) & (modes["d_model"] == d_model) & (modes["n_layers"] == depth)]
        if at["mode"].nunique() > 1:
            eager = markers.get("batch_size")
            figure("best_mode", named(f"each device eager and in its fastest mode\n(d_model={d_model}, "
                                      f"n_layers={depth})"),
                   lambda ax: plots.mode_crossover_plot(at, x="batch_size", a="cpu", b="cuda", crossover=eager,
                                                        ax=ax), size=(4.4, 3.2))
        else:
            log("left out best_mode: one execution mode only")

    # -- forward vs training step, float32 vs lower precision: one panel per device of one machine
    for name, column, sweep, title in (("forward_vs_train", "workload", "workload", "Forward pass vs training step"),
                                       ("dtype", "dtype", "dtype", "float32 vs lower precision")):
        candidates = baseline_rows(frame, free=(column,))
        swept = candidates[candidates["sweep"] == sweep]
        if swept.empty:
            log(f"left out {name}: no {sweep} sweep")
            continue
        counts = swept["machine"].value_counts()
        machine = host if host in counts.index else counts.idxmax()
        swept = swept[swept["machine"] == machine]
        rows = _at(candidates[candidates["machine"] == machine], swept)
        devices = sorted(rows["device"].unique(), key=lambda d: (str(d).startswith("cuda"), str(d)))
        varying = [c for c in ("n_layers", "d_model") if rows[c].nunique() > 1]
        style = varying[0] if varying else None
        fixed = [f"{c}={_mode(rows[c])}" for c in ("d_model", "n_layers") if c not in varying]

        def draw_comparison(axes, rows=rows, devices=devices, column=column, style=style):
            axes = axes if isinstance(axes, list) else [axes]
            for ax, device in zip(axes, devices):
                plots.comparison_plot(rows[rows["device"] == device], by=column, x="batch_size", style=style,
                                      gpu_note=host is None, ax=ax)
                ax.set_title(str(device))
            for ax in axes[1:]:
                ax.set_ylabel("")

        figure(name, (f"{machine}: " if multi else "") + f"{title}" + (f" ({', '.join(fixed)})" if fixed else ""),
               draw_comparison, ncols=len(devices), sharey=True, size=(3.4 * len(devices), 3.3))

    # -- accuracy of the fitted model on held-out points
    for series, fit in fits.items():
        rows = base[base["series"] == series]
        predictions = A.cross_validate(rows, fit.model, statistic=fit.statistic)
        if predictions.empty:
            log(f"left out accuracy for {series}: too few points to hold any out")
            continue
        figure(f"accuracy_{fit.key['device']}" if not multi else f"accuracy_{series.replace('/', '_')}",
               f"Held-out accuracy of {fit.model}\n{series if multi else fit.key['device']}",
               lambda ax: plots.accuracy_plot(predictions, hue="axis", ax=ax))

    # -- the drift of every run that measured drift references
    from .drift import drift_plot, drift_table

    drift = drift_table(load_results(results_dir, combine_rounds=False, include_reference=True))
    if drift.empty:
        log("left out drift: no run measured drift references")
    else:
        figure("drift", "Drift of each run: the reference point's reading over its quiet level",
               lambda ax: drift_plot(drift, ax=ax), size=(6.4, 3.6))

    # -- the model diagram (optional: torchview and graphviz)
    if diagram:
        from .diagram import DiagramUnavailable, draw_diagram

        try:
            written.extend(draw_diagram(out_dir, formats=formats))
            log("wrote diagram")
        except DiagramUnavailable as exc:
            log(f"left out diagram: {exc}")
    return written
