"""Where two sampled curves cross: the one interpolation rule (log-log, between adjacent samples).

Pure numpy, at the bottom of the package: measured curves (:func:`crossover.analysis.crossovers.curve_crossings`),
paired rounds and predicted module latencies (:mod:`crossover.opcost.module_predict`) all find their
crossings here.
"""

from __future__ import annotations

import numpy as np

__all__ = ["log_crossings"]


def log_crossings(x, a, b) -> list:
    """The values of ``x`` where ``a`` and ``b`` cross, interpolated linearly in log-log.

    Parameters
    ----------
    x : array-like
        Increasing positive sizes (e.g. batch sizes).
    a, b : array-like
        Positive values of the two curves at ``x`` (e.g. latencies).

    Returns
    -------
    list of float
        Every ``x`` where ``log(a / b)`` changes sign between adjacent samples, interpolated in
        ``log x``; an exact tie at a sample counts as a crossing there. Empty when they never cross.
    """
    u = np.log(np.asarray(x, dtype=float))
    r = np.log(np.asarray(a, dtype=float) / np.asarray(b, dtype=float))
    roots = []
    for i in range(len(r) - 1):
        if r[i] == 0:
            roots.append(float(np.exp(u[i])))
        elif r[i] * r[i + 1] < 0:
            roots.append(float(np.exp(u[i] - r[i] * (u[i + 1] - u[i]) / (r[i + 1] - r[i]))))
    if len(r) and r[-1] == 0:
        roots.append(float(np.exp(u[-1])))
    return roots
