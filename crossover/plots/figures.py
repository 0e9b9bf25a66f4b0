"""Every figure the results allow, drawn from a results directory into PNG and PDF files.

:func:`make_figures` is what ``crossover figures`` and ``make figures`` run: it loads the results
(by default the reference data shipped in ``experiments/results``), fits the roofline+hockney
latency model per series without bootstrap (fast), refits the host's CPU and GPU (below) with the
model grouped cross-validation chooses and a bootstrap (as ``crossover predict`` does, with the
statistic, bootstrap size and series seeds of :mod:`crossover.analysis.reference_study`, so the paper quotes the same
intervals), and draws with :mod:`crossover.plots`. Each figure is one function of a
:class:`FigureContext` (the loaded rows, the fits, the host, where to write, the log; see
:mod:`crossover.plots.figure_context`); :data:`FIGURES` lists them in the order drawn:

=======================  ===================================================================
file                     what it shows
=======================  ===================================================================
sweep_batch_size         latency vs batch size (d_model, n_layers fixed), IQR bands, fit
sweep_d_model            latency vs d_model (n_layers, batch fixed)
sweep_n_layers           latency vs n_layers (d_model, batch fixed)
sweep_fixed_params       latency vs d_model at a fixed parameter count (n_layers = P / d²)
throughput               achieved FLOP/s vs FLOPs per step against each device's measured peak (crossover peaks)
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

The *host* is the machine whose CPU and GPU were both measured (:func:`crossover.analysis.reference_study.host_machine`).
Every sweep draws all machines' lines, but the crossover marked (with its bootstrap interval) is
always the host's own CPU against its own GPU. A figure whose rows are absent is left out (and named
in the log); figures that compare with a GPU draw the CPU alone and say "no GPU data yet" when the
results hold none. Each run of a device is drawn from one results directory (the one with the most
points of that machine and device), so repeated runs are not mixed on one line.
"""


from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Dict, Optional, Sequence, Union

from .figure_context import FIT_MODEL, FORMATS, SWEEPS, FigureContext, _machine_name, _mode, load_context

if TYPE_CHECKING:  # numpy, pandas and matplotlib load on use: `crossover --help` stays fast
    import pandas as pd

__all__ = ["make_figures", "FigureContext", "FIGURES", "FIT_MODEL", "FORMATS"]


# -------------------------------------------------------------------------------- data slices
def _at(frame: pd.DataFrame, coords: pd.DataFrame) -> pd.DataFrame:
    """Rows of ``frame`` at the (d_model, n_layers, batch_size) points listed in ``coords``."""
    keys = ["d_model", "n_layers", "batch_size"]
    return frame.merge(coords[keys].drop_duplicates(), on=keys, how="inner")


def _machine_of(swept: pd.DataFrame, host: Optional[str]) -> str:
    """The machine whose panels a setting figure draws: the host if it measured the sweep, else the
    machine with most rows of it."""
    counts = swept["machine"].value_counts()
    return host if host in counts.index else counts.idxmax()


# ------------------------------------------------------------------------------------- sweeps
def sweep_figure(ctx: FigureContext, sweep: str) -> None:
    """``sweep_<sweep>``: every machine's lines along one sweep, the host's crossover marked."""
    from .. import plots

    data = ctx.sweep(sweep)
    if data is None:
        ctx.log(f"left out sweep_{sweep}: no rows of that sweep")
        return
    rows = data["rows"]
    ctx.save(f"sweep_{sweep}", data["title"],
             lambda ax: plots.sweep_plot(rows, x=data["x"], hue=ctx.hue, fits=ctx.overlay(rows),
                                         crossover=data["marker"], fit_legend=ctx.fit_legend,
                                         legend="below" if ctx.multi else "best", ax=ax))


def throughput_figure(ctx: FigureContext) -> None:
    """``throughput``: achieved FLOP/s against each device's peak (``crossover peaks``' matrix products,
    from the ``peaks.json`` beside the results; else the highest rate achieved, labelled so)."""
    from .. import plots
    from ..fit.peaks import find_peaks

    roots = ctx.results_dir if isinstance(ctx.results_dir, (list, tuple)) else [ctx.results_dir]
    found = find_peaks([*roots, *sorted(ctx.frame["results_dir"].dropna().unique())] if "results_dir" in ctx.frame
                       else list(roots))
    peaks = {}
    for value, rows in ctx.base.groupby(ctx.hue):
        machine, device = str(rows["machine"].iloc[0]), str(rows["device"].iloc[0])
        rate = found.get(machine, {}).get(device, {}).get("flops_per_s")
        if rate:
            peaks[value] = float(rate)
    ctx.save("throughput", "Achieved throughput vs work per step (forward, eager, float32)",
             lambda ax: plots.throughput_plot(ctx.base, hue=ctx.hue, peak_flops_per_s=peaks, ax=ax))


# --------------------------------------------------------------------------------- speed-ups
def _map_depth(own: pd.DataFrame):
    """The depth of the speed-up map: the map sweep's (or, without one, the host's usual) n_layers."""
    grid = own[own["sweep"] == "map"]
    return _mode((grid if len(grid) else own)["n_layers"])


def speedup_map_figure(ctx: FigureContext) -> None:
    """``speedup_map``: the host's CPU/GPU speed-up over d_model x batch with the fitted frontier."""
    import numpy as np

    from .. import analysis as A
    from .. import plots

    n_layers = _map_depth(ctx.own)
    cells = ctx.own[ctx.own["n_layers"] == n_layers]
    frontier = None
    if ctx.cpu is not None and ctx.gpu is not None:
        try:
            d_models = np.geomspace(cells["d_model"].min(), cells["d_model"].max(), 25)
            frontier = A.crossover_frontier(ctx.cpu, ctx.gpu, d_models, n_layers=float(n_layers),
                                            batch_range=(float(cells["batch_size"].min()),
                                                         float(cells["batch_size"].max())))
        except A.AnalysisError as exc:
            ctx.log(f"no frontier: {exc}")
    ctx.save("speedup_map", ctx.named(f"CPU/GPU speed-up, n_layers={n_layers}"),
             lambda ax: plots.speedup_map(cells, x="d_model", y="batch_size", a="cpu", b="cuda",
                                          frontier=frontier, ax=ax), size=(5.0, 3.8))


def speedup_params_figure(ctx: FigureContext) -> None:
    """``speedup_params``: the host's speed-up at every point measured on both, parameters x batch."""
    from .. import plots

    ctx.save("speedup_params", ctx.named("CPU/GPU speed-up over parameters × batch"),
             lambda ax: plots.speedup_scatter(ctx.own, x="params", y="batch_size", a="cpu", b="cuda", ax=ax),
             size=(5.0, 3.6))


# ------------------------------------------------------------------------------------ settings
def overhead_figure(ctx: FigureContext) -> None:
    """``overhead``: time per layer by execution mode, one panel per device of the machine that
    measured the modes."""
    from .. import plots

    modes = ctx.modes
    mode_rows = modes[modes["sweep"] == "mode"]
    if mode_rows.empty:
        ctx.log("left out overhead: no mode sweep")
        return
    machine = _machine_of(mode_rows, ctx.host)
    mode_rows = mode_rows[mode_rows["machine"] == machine]
    d_model = _mode(mode_rows["d_model"])
    rows = modes[(modes["machine"] == machine) & (modes["d_model"] == d_model)
                 & modes["batch_size"].isin(mode_rows["batch_size"].unique())]

    def draw(ax, part, device):
        plots.overhead_plot(part, gpu_note=ctx.host is None, legend="below", ax=ax)
        threads = part["threads"].dropna()
        from .theme import display_name

        name = display_name(f"{machine}/{device}")
        ax.set_title(name + (f" ({int(threads.iloc[0])} threads)" if device == "cpu" and len(threads) else ""))

    title = (f"{_machine_name(machine)}: " if ctx.multi else "") + f"per-layer time by execution mode (d_model={d_model})"
    ctx.save_panels("overhead", title, rows, draw, height=3.6)


def best_mode_figure(ctx: FigureContext) -> None:
    """``best_mode``: each device eager and in its fastest mode against batch size (at the batch-size
    sweep's d_model and n_layers), with the eager crossover of ``sweep_batch_size``."""
    from .. import plots

    own, modes = ctx.own, ctx.modes
    batch_sweep = own[own["sweep"] == "batch_size"] if ctx.host is not None else own.iloc[:0]
    if batch_sweep.empty:
        ctx.log("left out best_mode: no CPU and GPU batch-size sweep of one machine")
        return
    d_model, depth = _mode(batch_sweep["d_model"]), _mode(batch_sweep["n_layers"])
    at = modes[(modes["machine"] == ctx.host) & (modes["d_model"] == d_model) & (modes["n_layers"] == depth)]
    if at["mode"].nunique() <= 1:
        ctx.log("left out best_mode: one execution mode only")
        return
    eager = (ctx.sweep("batch_size") or {}).get("marker")
    ctx.save("best_mode", ctx.named(f"each device eager and in its fastest mode\n(d_model={d_model}, "
                                    f"n_layers={depth})"),
             lambda ax: plots.mode_crossover_plot(at, x="batch_size", a="cpu", b="cuda", crossover=eager, ax=ax),
             size=(4.4, 3.2))


def comparison_figure(ctx: FigureContext, name: str, column: str, title: str) -> None:
    """``forward_vs_train`` or ``dtype``: latency per value of ``column`` (as measured by the sweep of
    that name), one panel per device of one machine."""
    from .. import plots
    from ..analysis.reference_study import baseline_rows

    candidates = baseline_rows(ctx.frame, free=(column,))
    swept = candidates[candidates["sweep"] == column]
    if swept.empty:
        ctx.log(f"left out {name}: no {column} sweep")
        return
    machine = _machine_of(swept, ctx.host)
    swept = swept[swept["machine"] == machine]
    rows = _at(candidates[candidates["machine"] == machine], swept)
    varying = [c for c in ("n_layers", "d_model") if rows[c].nunique() > 1]
    style = varying[0] if varying else None
    fixed = [f"{c}={_mode(rows[c])}" for c in ("d_model", "n_layers") if c not in varying]

    def draw(ax, part, device):
        plots.comparison_plot(part, by=column, x="batch_size", style=style, gpu_note=ctx.host is None, ax=ax)
        ax.set_title(str(device))

    ctx.save_panels(name, (f"{_machine_name(machine)}: " if ctx.multi else "") + title + (f" ({', '.join(fixed)})" if fixed else ""),
                    rows, draw, height=3.3)


# ------------------------------------------------------------------------------------- checks
def accuracy_figures(ctx: FigureContext) -> None:
    """``accuracy_<series>`` (``accuracy_<device>`` with one machine): the fitted model's held-out
    accuracy, one figure per fitted series."""
    from .. import analysis as A
    from .. import plots

    for series, fit in ctx.fits.items():
        predictions = A.cross_validate(ctx.base[ctx.base["series"] == series], fit.model, statistic=fit.statistic,
                                       calibration=fit.calibration)
        if predictions.empty:
            ctx.log(f"left out accuracy for {series}: too few points to hold any out")
            continue
        ctx.save(f"accuracy_{fit.key['device']}" if not ctx.multi else f"accuracy_{series.replace('/', '_')}",
                 f"Held-out accuracy of {fit.model}\n{series if ctx.multi else fit.key['device']}",
                 lambda ax: plots.accuracy_plot(predictions, hue="axis", ax=ax))


def drift_figure(ctx: FigureContext) -> None:
    """``drift``: the drift of every run that measured drift references."""
    from .. import plots
    from ..results.drift import drift_table
    from ..results.store import load_results

    drift = drift_table(load_results(ctx.results_dir, combine_rounds=False, include_reference=True))
    if drift.empty:
        ctx.log("left out drift: no run measured drift references")
        return
    ctx.save("drift", "Drift of each run: the reference point's reading over its quiet level",
             lambda ax: plots.drift_plot(drift, ax=ax), size=(6.4, 3.6))


def diagram_figure(ctx: FigureContext) -> None:
    """``diagram``: the model drawn by torchview (optional: torchview and graphviz)."""
    if not ctx.diagram:
        return
    from .diagram import DiagramUnavailable, draw_diagram

    try:
        ctx.written.extend(draw_diagram(ctx.out_dir, formats=ctx.formats))
        ctx.log("wrote diagram")
    except DiagramUnavailable as exc:
        ctx.log(f"left out diagram: {exc}")


#: Every figure, in the order drawn: name (the file, or the family of files) -> function of the context.
FIGURES: Dict[str, Callable[[FigureContext], None]] = {
    **{f"sweep_{sweep}": partial(sweep_figure, sweep=sweep) for sweep in SWEEPS},
    "throughput": throughput_figure,
    "speedup_map": speedup_map_figure,
    "speedup_params": speedup_params_figure,
    "overhead": overhead_figure,
    "best_mode": best_mode_figure,
    "forward_vs_train": partial(comparison_figure, name="forward_vs_train", column="workload",
                                title="Forward pass vs training step"),
    "dtype": partial(comparison_figure, name="dtype", column="dtype", title="float32 vs lower precision"),
    "accuracy": accuracy_figures,
    "drift": drift_figure,
    "diagram": diagram_figure,
}


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
    from .theme import assign_series_colors

    ctx = load_context(results_dir, out_dir, formats=formats, log=log, diagram=diagram)
    assign_series_colors(sorted(ctx.frame["series"].unique()))  # one colour per device in every figure
    try:
        for draw in FIGURES.values():
            draw(ctx)
    finally:
        assign_series_colors([])
    return ctx.written
