"""Every figure the results allow, drawn from a results directory into PNG and PDF files.

:func:`make_figures` is what ``crossover figures`` and ``make figures`` run: it loads the results
(by default the reference data shipped in ``experiments/results``), fits the roofline+hockney
latency model per series without bootstrap (fast), and draws with :mod:`crossover.plots`:

=======================  ===================================================================
file                     what it shows
=======================  ===================================================================
sweep_batch_size         latency vs batch size (d_model, n_layers fixed), IQR bands, fit
sweep_d_model            latency vs d_model (n_layers, batch fixed)
sweep_n_layers           latency vs n_layers (d_model, batch fixed)
sweep_fixed_params       latency vs d_model at a fixed parameter count (n_layers = P / d²)
throughput               achieved FLOP/s vs FLOPs per step against each device's measured peak
speedup_map              CPU/GPU speed-up over d_model x batch size with the fitted frontier
overhead                 time per layer vs n_layers, per execution mode
forward_vs_train         forward pass vs training step latency
dtype                    float32 vs lower-precision latency
accuracy_<device>        held-out predicted vs measured latency (grouped CV), ±10% band
=======================  ===================================================================

A figure whose rows are absent is left out (and named in the log); figures that compare with a GPU
draw the CPU alone and say "no GPU data yet" when the results hold none. Each run of a device is
drawn from one results directory (the one with the most points of that machine and device), so
repeated runs are not mixed on one line.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Optional, Sequence, Union

if TYPE_CHECKING:  # numpy, pandas and matplotlib load on use: `crossover --help` stays fast
    import pandas as pd

__all__ = ["make_figures", "add_figures", "FIT_MODEL", "FORMATS"]

#: The latency model overlaid on the sweeps (one candidate, no bootstrap: seconds, not minutes).
FIT_MODEL = "roofline+hockney"
#: File formats written per figure.
FORMATS = ("png", "pdf")
SOURCE = "crossover.figures.make_figures"
BASELINE = dict(workload="forward", mode="eager", dtype="float32", regime="latency", transfer="device")


# -------------------------------------------------------------------------------- data slices
def _main_runs(frame: pd.DataFrame) -> pd.DataFrame:
    """Per (machine, device), the rows of the results directory holding most of its points."""
    import pandas as pd

    keep = []
    for _, rows in frame.groupby(["machine", "device"], sort=False):
        best = rows["results_dir"].value_counts().idxmax()
        keep.append(rows[rows["results_dir"] == best])
    return pd.concat(keep, ignore_index=True)


def _main_threads(frame: pd.DataFrame) -> pd.Series:
    """Per row, whether it ran at its machine and device's most common thread count."""
    threads = frame["threads"].astype("float").fillna(-1)
    common = threads.groupby([frame["machine"], frame["device"]]).transform(lambda t: t.value_counts().idxmax())
    return threads == common


def _baseline(frame: pd.DataFrame, **free) -> pd.DataFrame:
    """Rows at the baseline setting (forward, eager, float32, main thread count), except the
    columns named in ``free`` (value True: any value)."""
    mask = _main_threads(frame)
    for column, value in BASELINE.items():
        if column not in free:
            mask &= frame[column] == value
    return frame[mask]


def _at(frame: pd.DataFrame, coords: pd.DataFrame) -> pd.DataFrame:
    """Rows of ``frame`` at the (d_model, n_layers, batch_size) points listed in ``coords``."""
    keys = ["d_model", "n_layers", "batch_size"]
    return frame.merge(coords[keys].drop_duplicates(), on=keys, how="inner")


def _mode(values) -> float:
    import pandas as pd

    return pd.Series(values).value_counts().idxmax()


# ---------------------------------------------------------------------------------- drawing
def _save(fig, out_dir: Path, name: str, formats: Sequence[str]) -> list:
    paths = []
    for fmt in formats:
        path = out_dir / f"{name}.{fmt}"
        fig.savefig(path, metadata={"Creator": SOURCE} if fmt in ("png", "pdf") else None)
        paths.append(path)
    return paths


def make_figures(results_dir: Union[str, Path, Sequence], out_dir: Union[str, Path], *,
                 formats: Sequence[str] = FORMATS, log: Optional[Callable[[str], None]] = None) -> list:
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

    Returns
    -------
    list of pathlib.Path
        The files written.
    """
    import numpy as np
    from matplotlib.figure import Figure

    from . import analysis as A
    from . import plots
    from .results import load_results

    log = log or (lambda line: None)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    frame = load_results(results_dir)
    if frame.empty:
        raise A.AnalysisError(f"no measured points in {results_dir}")
    frame = _main_runs(frame)
    multi = frame.groupby("device")["machine"].nunique().max() > 1
    hue = "series" if multi else "device"
    frame = frame.assign(series=frame["machine"] + "/" + frame["device"])
    base = _baseline(frame)

    fits = {}
    try:
        all_fits = A.fit_results(frame, [FIT_MODEL], n_boot=0)
    except A.AnalysisError as exc:
        log(f"no fits: {exc}")
        all_fits = {}
    threads = base.groupby("series")["threads"].first().to_dict()
    for fit in all_fits.values():
        series = f"{fit.key['machine']}/{fit.key['device']}"
        if all(fit.key[k] == v for k, v in BASELINE.items()) and series in threads \
                and fit.key["threads"] == threads[series]:
            fits[series] = fit
    cpu = next((f for s, f in fits.items() if f.key["device"] == "cpu"), None)
    gpu = next((f for s, f in fits.items() if str(f.key["device"]).startswith("cuda")), None)

    written = []

    def figure(name: str, title: str, draw) -> None:
        with plots.style():
            fig = Figure()
            ax = fig.add_subplot()
            draw(ax)
            ax.set_title(title)
            written.extend(_save(fig, out_dir, name, formats))
        log(f"wrote {name}")

    def overlay(rows):
        return {f"{FIT_MODEL} fit ({fits[s].key['device'] if not multi else s})": fits[s]
                for s in dict.fromkeys(rows["series"]) if s in fits}

    # -- the four sweeps
    sweeps = {"batch_size": "batch_size", "d_model": "d_model", "n_layers": "n_layers", "fixed_params": "d_model"}
    for sweep, x in sweeps.items():
        swept = base[base["sweep"] == sweep]
        if swept.empty:
            log(f"left out sweep_{sweep}: no rows of that sweep")
            continue
        if sweep == "fixed_params":
            fixed = dict(params=_mode(swept["params"]), batch_size=_mode(swept["batch_size"]))
            title = (f"Fixed parameter count n_layers·d_model² = {fixed['params']:.2g}, "
                     f"batch_size={fixed['batch_size']}")
        else:
            fixed = {a: _mode(swept[a]) for a in A.AXES if a != x}
            title = f"Latency vs {x} (" + ", ".join(f"{a}={v}" for a, v in fixed.items()) + ")"
        mask = np.ones(len(base), bool)
        for column, value in fixed.items():
            mask &= (base[column] == value).to_numpy()
        rows = base[mask]
        marker = None
        if cpu is not None and gpu is not None and sweep != "fixed_params":
            try:
                marker = A.crossover(cpu, gpu, x, **{k: float(v) for k, v in fixed.items()})
            except A.AnalysisError as exc:
                log(f"no crossover on {sweep}: {exc}")
        figure(f"sweep_{sweep}", title,
               lambda ax: plots.sweep_plot(rows, x=x, hue=hue, fits=overlay(rows), crossover=marker, ax=ax))

    # -- throughput against the measured peak
    figure("throughput", "Achieved throughput vs work per step",
           lambda ax: plots.throughput_plot(base, hue=hue, ax=ax))

    # -- speed-up map (CPU time / GPU time) with the fitted frontier
    grid = base[base["sweep"] == "map"]
    if grid.empty:
        grid = base
    n_layers = _mode(grid["n_layers"])
    cells = base[(base["n_layers"] == n_layers)
                 & base["d_model"].isin(grid["d_model"].unique())
                 & base["batch_size"].isin(grid["batch_size"].unique())]
    frontier = None
    if cpu is not None and gpu is not None:
        try:
            frontier = A.crossover_frontier(cpu, gpu, sorted(cells["d_model"].unique()), n_layers=float(n_layers),
                                            batch_range=(float(cells["batch_size"].min()),
                                                         float(cells["batch_size"].max())))
        except A.AnalysisError as exc:
            log(f"no frontier: {exc}")
    figure("speedup_map", f"CPU/GPU speed-up, n_layers={n_layers}",
           lambda ax: plots.speedup_map(cells, x="d_model", y="batch_size", a="cpu", b="cuda",
                                        frontier=frontier, ax=ax))

    # -- execution modes: time per layer
    modes = _baseline(frame, mode=True)
    mode_rows = modes[modes["sweep"] == "mode"]
    if mode_rows.empty:
        log("left out overhead: no mode sweep")
    else:
        d_model = _mode(mode_rows["d_model"])
        rows = modes[(modes["d_model"] == d_model) & modes["batch_size"].isin(mode_rows["batch_size"].unique())]
        figure("overhead", f"Per-layer time by execution mode (d_model={d_model})",
               lambda ax: plots.overhead_plot(rows, ax=ax))

    # -- forward vs training step, float32 vs lower precision
    for name, column, sweep, title in (("forward_vs_train", "workload", "workload", "Forward pass vs training step"),
                                       ("dtype", "dtype", "dtype", "float32 vs lower precision")):
        candidates = _baseline(frame, **{column: True})
        swept = candidates[candidates["sweep"] == sweep]
        if swept.empty:
            log(f"left out {name}: no {sweep} sweep")
            continue
        rows = _at(candidates, swept)
        d_model = _mode(rows["d_model"])
        figure(name, f"{title} (d_model={d_model})",
               lambda ax: plots.comparison_plot(rows, by=column, x="batch_size", style="n_layers", ax=ax))

    # -- accuracy of the fitted model on held-out points
    for series, fit in fits.items():
        rows = base[base["series"] == series]
        predictions = A.cross_validate(rows, fit.model)
        if predictions.empty:
            log(f"left out accuracy for {series}: too few points to hold any out")
            continue
        figure(f"accuracy_{fit.key['device']}" if not multi else f"accuracy_{series.replace('/', '_')}",
               f"Held-out accuracy of {fit.model} ({fit.key['device']})",
               lambda ax: plots.accuracy_plot(predictions, hue="axis", ax=ax))
    return written


# ------------------------------------------------------------------------------------- CLI
def add_figures(sub) -> None:
    """Register ``crossover figures``."""
    from .cli_analysis import DEFAULT_RESULTS

    p = sub.add_parser(
        "figures",
        help="draw every figure the results allow (PNG and PDF)",
        description="Draw every figure the results allow into --out: the four sweeps with the fitted "
                    f"{FIT_MODEL} model, throughput, the CPU/GPU speed-up map, execution modes, forward vs "
                    "train, dtypes and the held-out accuracy. Needs no GPU; figures that compare with a "
                    "GPU say so when the results hold none.",
    )
    p.add_argument("--results", type=Path, nargs="+", default=[DEFAULT_RESULTS], metavar="DIR",
                   help="results directories (default: the shipped reference data)")
    p.add_argument("--out", type=Path, default=Path("figures"), metavar="DIR",
                   help="output directory (default: figures)")
    p.add_argument("--quiet", action="store_true", help="print only the summary line")
    p.set_defaults(func=_cmd_figures)


def _cmd_figures(args) -> int:
    import sys

    start = time.perf_counter()
    log = (lambda line: None) if args.quiet else (lambda line: print(line, file=sys.stderr))
    paths = make_figures(args.results, args.out, log=log)
    print(f"wrote {len(paths)} files to {args.out} in {time.perf_counter() - start:.1f} s")
    return 0
