"""Where two sampled curves cross: the one interpolation rule (log-log, between adjacent samples).

Pure numpy, at the bottom of the package: measured curves (:func:`crossover.analysis.crossovers.curve_crossings`),
paired rounds and predicted module latencies (:mod:`crossover.opcost.module_predict`) all find their
crossings here.
"""

from __future__ import annotations

import numpy as np

__all__ = ["log_crossings", "crossover_ends", "brent_root"]


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


def crossover_ends(batch, first_low, first_high, other_low, other_high, at: float = None) -> tuple:
    """The earliest and the latest batch size where the device that wins at the smallest batch (the first)
    may hand over to the other, given both devices' intervals (their low and high times at ``batch``).

    The earliest is where the first device's pessimistic end first reaches the other's optimistic end; the
    latest where its optimistic end last reaches the other's pessimistic end, after which the other wins
    even at the first's best. Returns ``(low, high, low_open, high_open)``: an end that does not cross in
    range is the range's edge, flagged open (the hand-over may lie beyond it: the intervals already overlap
    at the smallest batch, or the first may still win at the largest). A near-tie (the MNIST training step
    on the H200 host, whose devices' intervals overlap at every batch) gets the whole range, both open:
    the first crossing of either pair alone would be a point on one side of the estimate (it read batch
    1.3 for a crossover predicted at 450). With ``at`` (the estimate's crossing) the ends are widened to
    hold it, which log-log interpolation between samples may otherwise leave a hair outside.
    """
    if first_high[0] >= other_low[0]:
        low, low_open = float(batch[0]), True
    else:
        low, low_open = log_crossings(batch, first_high, other_low)[0], False
    if first_low[-1] < other_high[-1]:
        high, high_open = float(batch[-1]), True
    else:
        high, high_open = log_crossings(batch, first_low, other_high)[-1], False
    if at is not None:
        low, high = min(low, at), max(high, at)
    return low, high, low_open, high_open


def brent_root(f, xa: float, xb: float, args=(), xtol: float = 2e-12, rtol: float = 4 * 2.220446049250313e-16,
               maxiter: int = 100) -> float:
    """A root of ``f`` in ``[xa, xb]`` by Brent's method: scipy's ``brentq``, step for step (the same
    arithmetic, so the same root), in Python so that finding a crossover does not import
    ``scipy.optimize`` (~0.25 s of every ``crossover predict``).

    Raises
    ------
    ValueError
        ``f(xa)`` and ``f(xb)`` have the same sign, or no convergence in ``maxiter`` steps.

    Notes
    -----
    A port of SciPy's ``brentq`` (``scipy/optimize/Zeros/brentq.c``), under SciPy's BSD 3-Clause license
    (Copyright (c) 2001-2002 Enthought, Inc. 2003, SciPy Developers; the full text is SciPy's ``LICENSE.txt``).
    """
    import math

    xpre, xcur = float(xa), float(xb)
    xblk = fblk = spre = scur = 0.0
    fpre, fcur = float(f(xpre, *args)), float(f(xcur, *args))
    if fpre == 0:
        return xpre
    if fcur == 0:
        return xcur
    if math.copysign(1.0, fpre) == math.copysign(1.0, fcur):
        raise ValueError("f(a) and f(b) must have different signs")
    for _ in range(maxiter):
        if fpre != 0 and fcur != 0 and math.copysign(1.0, fpre) != math.copysign(1.0, fcur):
            xblk, fblk = xpre, fpre
            spre = scur = xcur - xpre
        if abs(fblk) < abs(fcur):
            xpre, xcur, xblk = xcur, xblk, xcur
            fpre, fcur, fblk = fcur, fblk, fcur
        delta = (xtol + rtol * abs(xcur)) / 2
        sbis = (xblk - xcur) / 2
        if fcur == 0 or abs(sbis) < delta:
            return xcur
        if abs(spre) > delta and abs(fcur) < abs(fpre):
            if xpre == xblk:  # interpolate
                stry = -fcur * (xcur - xpre) / (fcur - fpre)
            else:  # extrapolate
                dpre = (fpre - fcur) / (xpre - xcur)
                dblk = (fblk - fcur) / (xblk - xcur)
                stry = -fcur * (fblk * dblk - fpre * dpre) / (dblk * dpre * (fblk - fpre))
            if 2 * abs(stry) < min(abs(spre), 3 * abs(sbis) - delta):  # a good short step
                spre, scur = scur, stry
            else:  # bisect
                spre = scur = sbis
        else:  # bisect
            spre = scur = sbis
        xpre, fpre = xcur, fcur
        xcur += scur if abs(scur) > delta else (delta if sbis > 0 else -delta)
        fcur = float(f(xcur, *args))
    raise ValueError(f"no convergence in {maxiter} steps")
