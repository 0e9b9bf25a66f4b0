"""Plot functions for results (seaborn style): tidy DataFrame in, ``ax`` out.

Every function takes the DataFrame of :func:`crossover.load_results` (or a slice of it) first,
column names as keyword-only arguments, draws on ``ax or plt.gca()`` and returns the axes. Units
are on every axis; latency, FLOPs and sizes that span decades are on log axes. Use :func:`style`
around the calls for the package's one look (colour-blind-safe palette, sizes readable at column
width); :func:`crossover.figures.make_figures` draws every paper figure with it.

Figures that need GPU rows (the speed-up map, the CPU-vs-GPU sweeps) draw what the data holds and
say "no GPU data yet" in the axes when there is none; they never invent points.

This module is the one place to import them from; each family lives in its own module:

========================  ==================================================================
module                    functions
========================  ==================================================================
crossover.plot_style      :func:`style`, :data:`RC`, :data:`PALETTE`, :data:`NO_GPU_NOTE`
                          (and the helpers the families share)
crossover.plots_sweeps    :func:`sweep_plot`, :func:`crossover_label`, :func:`throughput_plot`
crossover.plots_maps      :func:`speedup_map`, :func:`speedup_scatter`
crossover.plots_modes     :func:`overhead_plot`, :func:`mode_crossover_plot`,
                          :func:`comparison_plot`
crossover.plots_checks    :func:`accuracy_plot`, :func:`drift_plot`
========================  ==================================================================
"""

from __future__ import annotations

from .plot_style import NO_GPU_NOTE, PALETTE, RC, style
from .plots_checks import accuracy_plot, drift_plot
from .plots_maps import speedup_map, speedup_scatter
from .plots_modes import comparison_plot, mode_crossover_plot, overhead_plot
from .plots_sweeps import crossover_label, sweep_plot, throughput_plot

__all__ = [
    "RC", "PALETTE", "NO_GPU_NOTE", "style", "sweep_plot", "throughput_plot", "speedup_map",
    "overhead_plot", "accuracy_plot", "comparison_plot", "speedup_scatter", "mode_crossover_plot",
    "crossover_label", "drift_plot",
]
