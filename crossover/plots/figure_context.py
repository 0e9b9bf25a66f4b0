"""What the figures draw: the results loaded, the host found and the series fitted, once.

:func:`load_context` reads a results directory the way the reference study does
(:mod:`crossover.analysis.reference_study`: the main run of each machine and device, the baseline rows, the host, the
paper's statistic and bootstrap size, series-seeded), fits every series and returns a
:class:`FigureContext`; each figure function of :mod:`crossover.plots.figures` takes it, draws from it
and writes through :meth:`FigureContext.save`.
"""

from __future__ import annotations

import contextlib
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Optional, Sequence, Union

if TYPE_CHECKING:  # numpy, pandas and matplotlib load on use: `crossover --help` stays fast
    import pandas as pd

__all__ = ["FigureContext", "load_context", "FIT_MODEL", "FORMATS", "SWEEPS"]

#: The latency model overlaid on the sweeps (one candidate, no bootstrap: seconds, not minutes).
FIT_MODEL = "roofline+hockney"
#: File formats written per figure.
FORMATS = ("png", "pdf")
#: The ``Creator`` written into every PNG and PDF.
SOURCE = "crossover.plots.figures.make_figures"
#: The swept column of each sweep figure (``fixed_params`` sweeps d_model at a fixed parameter count).
SWEEPS = {"batch_size": "batch_size", "d_model": "d_model", "n_layers": "n_layers", "fixed_params": "d_model"}


def _mode(values) -> float:
    """The most frequent of ``values`` (the first seen among ties)."""
    import pandas as pd

    return pd.Series(values).value_counts().idxmax()


def _machine_name(machine: str) -> str:
    """A machine slug as the figures name it: ``nvidia-h200-16c`` -> ``H200 machine``,
    ``amd-epyc-2c`` -> ``AMD EPYC 2-core machine`` (:func:`crossover.plots.theme.display_name`)."""
    from .theme import display_name

    return display_name(f"{machine}/cpu").removesuffix(" host CPU").removesuffix(" CPU") + " machine"


# ------------------------------------------------------------------------------------ context
@dataclass
class FigureContext:
    """What every figure function reads (the rows, the fits, the host) and where it writes."""

    #: Every row of the main runs (one results directory per machine and device, any setting), with
    #: a ``series`` column (``machine/device``).
    frame: Any
    #: The baseline rows of ``frame`` (forward, eager, float32, each device's usual threads).
    base: Any
    #: The machine whose CPU and GPU were both measured (None: no such machine).
    host: Optional[str]
    #: ``series`` -> its fit (:class:`crossover.analysis.SeriesFit`).
    fits: dict
    #: The host's CPU and GPU fits with bootstrap draws (None without a host or enough points).
    cpu: Any
    gpu: Any
    #: The results drawn (the drift figure reads their reference rows).
    results_dir: Any
    #: Where the files go, in which matplotlib formats.
    out_dir: Path
    formats: Sequence[str] = FORMATS
    #: Called with one line per figure written or left out.
    log: Callable[[str], None] = lambda line: None
    #: Whether the diagram figure is drawn.
    diagram: bool = True
    #: The files written so far.
    written: list = field(default_factory=list)
    _cache: dict = field(default_factory=dict, repr=False)

    @property
    def multi(self) -> bool:
        """More than one machine: lines are named by series, titles by machine."""
        return self.frame["machine"].nunique() > 1

    @property
    def hue(self) -> str:
        return "series" if self.multi else "device"

    @property
    def own(self) -> pd.DataFrame:
        """The host's baseline rows (every baseline row without a host)."""
        return self.base[self.base["machine"] == self.host] if self.host else self.base

    @property
    def modes(self) -> pd.DataFrame:
        """Baseline rows in every execution mode (computed once)."""
        if "modes" not in self._cache:
            from ..analysis.reference_study import baseline_rows

            self._cache["modes"] = baseline_rows(self.frame, free=("mode",))
        return self._cache["modes"]

    @property
    def fit_legend(self) -> str:
        """The one legend entry of the fitted curves: which models, chosen how."""
        if self.cpu is None:
            return f"{FIT_MODEL} fit (dashed, colour of its series)"
        chosen = sorted({self.cpu.model, self.gpu.model})
        return (f"dashed: fits ({', '.join(chosen)} chosen by CV on the host"
                + (f"; others {FIT_MODEL})" if len(self.fits) > 2 else ")"))

    def named(self, text: str) -> str:
        """A title about the host, prefixed with its name when there are several machines."""
        return f"{_machine_name(self.host)}: {text}" if self.host and self.multi else text

    def overlay(self, rows: pd.DataFrame) -> dict:
        """The fits of the series in ``rows``, labelled for :func:`crossover.plots.sweep_plot`."""
        return {f"{s} fit": self.fits[s] for s in dict.fromkeys(rows["series"]) if s in self.fits}

    def save(self, name: str, title: str, draw, *, ncols: int = 1, size=None, sharey: bool = False) -> None:
        """Draw a figure of ``ncols`` panels in the package's style (``draw(ax)``, or ``draw(axes)``
        with several), title it, write it in every format and log it."""
        from matplotlib.figure import Figure

        from .. import plots

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
            for fmt in self.formats:
                path = self.out_dir / f"{name}.{fmt}"
                fig.savefig(path, metadata={"Creator": SOURCE} if fmt in ("png", "pdf") else None)
                self.written.append(path)
        self.log(f"wrote {name}")

    def save_panels(self, name: str, title: str, rows: pd.DataFrame, draw, *, height: float) -> None:
        """:meth:`save` with one panel per device of ``rows`` (CPUs first) side by side, sharing the
        y axis (labelled once): ``draw(ax, rows_of_the_device, device)`` fills each."""
        devices = sorted(rows["device"].unique(), key=lambda d: (str(d).startswith("cuda"), str(d)))

        def panels(axes):
            axes = axes if isinstance(axes, list) else [axes]
            for ax, device in zip(axes, devices):
                draw(ax, rows[rows["device"] == device], device)
            for ax in axes[1:]:
                ax.set_ylabel("")

        self.save(name, title, panels, ncols=len(devices), sharey=True, size=(3.4 * len(devices), height))

    def sweep(self, sweep: str) -> Optional[dict]:
        """The rows, title and host crossover of one sweep figure (computed once; None without rows)."""
        if ("sweep", sweep) not in self._cache:
            self._cache["sweep", sweep] = _sweep_data(self, sweep)
        return self._cache["sweep", sweep]


def _fit_host(task):
    """One of the host's series (``(label, rows)``) fitted as the figures' crossovers read it."""
    from .. import analysis as A
    from ..analysis import reference_study as study

    series, rows = task
    return A.fit_series(rows, None, n_boot=study.N_BOOT, seed=A.series_seed(series), label=series,
                        statistic=study.PAPER_STATISTIC)


def load_context(results_dir: Union[str, Path, Sequence], out_dir: Union[str, Path], *,
                 formats: Sequence[str] = FORMATS, log: Optional[Callable[[str], None]] = None,
                 diagram: bool = True) -> FigureContext:
    """Load the results, find the host and fit every series: the :class:`FigureContext` of
    :func:`make_figures` (same parameters; ``out_dir`` is created)."""
    from .. import analysis as A
    from ..analysis import reference_study as study
    from ..fit.all_series import default_jobs
    from ..results.store import load_results

    log = log or (lambda line: None)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    frame = load_results(results_dir, raw=True)
    if frame.empty:
        raise A.AnalysisError(f"no measured points in {results_dir}")
    frame = study.main_runs(frame)
    frame = frame.assign(series=frame["machine"] + "/" + frame["device"])
    base = study.baseline_rows(frame)
    host = study.host_machine(frame)

    # the host's CPU and GPU again, with bootstrap draws for the crossover intervals: the model grouped CV
    # chooses, as `crossover fit` and `crossover predict` use, seeded by the label (series_seed, as every
    # entry point seeds it), so the paper quotes these draws; started first, in processes of their own,
    # while the other series are fitted
    host_rows = [(f"{host}/{device}", base[base["series"] == f"{host}/{device}"]) for device in ("cpu", "cuda")
                 if host is not None]
    host_rows = [(series, rows) for series, rows in host_rows if len(rows) >= 8]
    jobs = min(default_jobs(), len(host_rows))
    with contextlib.ExitStack() as stack:
        pool = stack.enter_context(ProcessPoolExecutor(max_workers=jobs)) if jobs > 1 else None
        started = [pool.submit(_fit_host, task) for task in host_rows] if pool else []
        fits = {}
        try:
            all_fits = A.fit_results(base, [FIT_MODEL], n_boot=0, axes=(), statistic=study.PAPER_STATISTIC)
        except A.AnalysisError as exc:
            log(f"no fits: {exc}")
            all_fits = {}
        for fit in all_fits.values():
            fits[f"{fit.key['machine']}/{fit.key['device']}"] = fit
        pair = [future.result() for future in started] if pool else [_fit_host(task) for task in host_rows]
    fits.update({fit.label: fit for fit in pair})
    cpu, gpu = pair if len(pair) == 2 else (None, None)
    return FigureContext(frame=frame.drop(columns=["raw_times_s"], errors="ignore"),
                         base=base.drop(columns=["raw_times_s"], errors="ignore"), host=host, fits=fits,
                         cpu=cpu, gpu=gpu, results_dir=results_dir, out_dir=out_dir, formats=tuple(formats),
                         log=log, diagram=diagram)


# ------------------------------------------------------------------------------------- sweeps
def _sweep_data(ctx: FigureContext, sweep: str) -> Optional[dict]:
    """Rows at the sweep's fixed sizes, its title and the host's crossover along it (logged when
    there is none), or None when the results have no rows of that sweep."""
    import numpy as np

    from .. import analysis as A

    base, host, cpu, gpu, x = ctx.base, ctx.host, ctx.cpu, ctx.gpu, SWEEPS[sweep]
    swept = base[base["sweep"] == sweep]
    if swept.empty:
        return None
    if sweep == "fixed_params":
        fixed = dict(params=_mode(swept["params"]), batch_size=_mode(swept["batch_size"]))
        title = (f"Fixed parameter count n_layers·d_model² = {fixed['params']:.3g}, "
                 f"batch_size={fixed['batch_size']}")
    else:
        fixed = {a: _mode(swept[a]) for a in A.AXES if a != x}
        title = f"Latency vs {x.replace('_', ' ')} (" + ", ".join(f"{a}={v}" for a, v in fixed.items()) + ")"
    mask = np.ones(len(base), bool)
    for column, value in fixed.items():
        mask &= (base[column] == value).to_numpy()
    rows = base[mask]
    marker = None
    if cpu is not None and gpu is not None:
        try:
            mine = rows[rows["machine"] == host]
            span = (float(mine[x].min()), float(mine[x].max()))
            if sweep == "fixed_params":
                marker = A.fixed_params_crossover(cpu, gpu, float(fixed["params"]),
                                                  batch_size=float(fixed["batch_size"]), x_range=span)
                marker.empirical = A.empirical_crossover(mine[mine["device"] == "cpu"],
                                                         mine[mine["device"] == "cuda"], "d_model",
                                                         column=A.STATISTICS[cpu.statistic].column)
            else:
                marker = A.crossover(cpu, gpu, x, **{k: float(v) for k, v in fixed.items()}, x_range=span)
        except (A.AnalysisError, ValueError) as exc:
            ctx.log(f"no crossover on {sweep}: {exc}")
    return dict(rows=rows, x=x, title=title, marker=marker)
