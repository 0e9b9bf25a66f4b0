"""Plot functions for results (seaborn style): tidy DataFrame in, ``ax`` out.

Every function takes the DataFrame of :func:`crossover.load_results` (or a slice of it) first,
column names as keyword-only arguments, draws on ``ax or plt.gca()`` and returns the axes. Units
are on every axis; latency, FLOPs and sizes that span decades are on log axes. Use :func:`style`
around the calls for the package's one look (colour-blind-safe palette, sizes readable at column
width); :func:`crossover.plots.figures.make_figures` draws every paper figure with it.

Figures that need GPU rows (the speed-up map, the CPU-vs-GPU sweeps) draw what the data holds and
say "no GPU data yet" in the axes when there is none; they never invent points.

This module is the one place to import them from; each family lives in its own module:

========================  ==================================================================
module                    functions
========================  ==================================================================
crossover.plots.theme      :func:`style`, :data:`RC`, :data:`PALETTE`, :data:`NO_GPU_NOTE`
                          (and the helpers the families share)
crossover.plots.sweeps    :func:`sweep_plot`, :func:`crossover_label`, :func:`throughput_plot`
crossover.plots.maps      :func:`speedup_map`, :func:`speedup_scatter`
crossover.plots.modes     :func:`overhead_plot`, :func:`mode_crossover_plot`,
                          :func:`comparison_plot`
crossover.plots.checks    :func:`accuracy_plot`, :func:`drift_plot`
crossover.plots.serving   :func:`serving_plot` (``crossover advise --plot``)
========================  ==================================================================
"""

from ..lazy_exports import lazy_exports

#: Public name → the module that defines it (imported on first use: importing one module of this
#: package does not import the rest).
_EXPORTS = {
    "RC": "crossover.plots.theme",
    "PALETTE": "crossover.plots.theme",
    "NO_GPU_NOTE": "crossover.plots.theme",
    "style": "crossover.plots.theme",
    "sweep_plot": "crossover.plots.sweeps",
    "throughput_plot": "crossover.plots.sweeps",
    "speedup_map": "crossover.plots.maps",
    "overhead_plot": "crossover.plots.modes",
    "accuracy_plot": "crossover.plots.checks",
    "comparison_plot": "crossover.plots.modes",
    "speedup_scatter": "crossover.plots.maps",
    "mode_crossover_plot": "crossover.plots.modes",
    "crossover_label": "crossover.plots.sweeps",
    "drift_plot": "crossover.plots.checks",
    "serving_plot": "crossover.plots.serving",
}
__all__ = list(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
