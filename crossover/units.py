"""Quantities as text with an SI-prefixed unit chosen per value: ``1.23 ms``, ``44.1 TFLOP/s``.

The package's one plain-text formatter of a quantity (the CLI, the sweep's progress line); the
paper's LaTeX formatter (:mod:`crossover.paper.latex`) chooses its prefixes with :func:`prefix_scale` too.
No heavy imports: the CLI's ``--help`` stays fast.

>>> format_seconds(1.234e-3)
'1.23 ms'
>>> format_quantity(4.41e13, "FLOP/s")
'44.1 TFLOP/s'
>>> format_range(1.2e-3, 1.5e-3, "s", sig=4)
'1.2–1.5 ms'
"""

from __future__ import annotations

import math
from typing import Optional, Sequence

__all__ = ["PREFIXES", "prefixes_of", "prefix_scale", "format_quantity", "format_seconds", "format_range"]

#: SI prefix -> its power of ten.
PREFIXES = {"n": -9, "µ": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
#: Units that take prefixes below one (a time); others are counts and rates: ``"", k, M, G, ...``.
_SMALL_UNITS = {"s": ("n", "µ", "m", "")}
#: Units that never take a prefix.
_BARE_UNITS = {"", "%", "x", "×"}
#: Text for a missing value.
MISSING = "n/a"


def prefixes_of(unit: str) -> tuple:
    """The prefixes ``unit`` takes, smallest first: seconds down to ``ns``, other units from none up
    to ``E`` (no ``mFLOP/s``), and none for ``%``, ``x`` and the empty unit."""
    if unit in _BARE_UNITS:
        return ("",)
    return _SMALL_UNITS.get(unit, ("", "k", "M", "G", "T", "P", "E"))


def prefix_scale(value: float, unit: str, prefixes: Optional[Sequence[str]] = None, *, given: str = "") -> tuple:
    """``(factor, prefix + unit)`` that writes ``value`` (in ``given + unit``) readably.

    The largest of ``prefixes`` (default :func:`prefixes_of`) that keeps ``|value|`` at least 1 in its
    unit, else the smallest; ``value * factor`` is the number to print.

    >>> prefix_scale(2.5e-4, "s")
    (1000000.0, 'µs')
    >>> prefix_scale(66800, "FLOP/s", ("G", "T", "P"), given="G")
    (0.001, 'TFLOP/s')
    """
    prefixes = tuple(prefixes_of(unit) if prefixes is None else prefixes)
    chosen = prefixes[0]
    for prefix in prefixes:
        # compare in the given unit (no multiplication: a value on a threshold stays on it)
        threshold = 10.0 ** (PREFIXES[prefix] - PREFIXES[given]) if PREFIXES[prefix] >= PREFIXES[given] \
            else 1 / 10.0 ** (PREFIXES[given] - PREFIXES[prefix])
        if abs(value) >= threshold:
            chosen = prefix
    power = PREFIXES[given] - PREFIXES[chosen]
    factor = 10.0 ** power if power >= 0 else 1 / 10.0 ** -power
    return factor, chosen + unit


def _digits(value: float, sig: int) -> str:
    """``value`` to ``sig`` significant figures, without an exponent for large whole numbers."""
    if abs(value) >= 10 ** sig:
        return f"{value:.0f}"
    return f"{value:.{sig}g}"


def _rounded(value: float, sig: int) -> float:
    return float(f"{value:.{sig}g}") if value else 0.0


def _choose(value: float, unit: str, sig: int) -> tuple:
    """``(factor, prefixed unit)`` for ``value`` written to ``sig`` figures: a value that rounds up
    to 1000 of one prefix takes the next (``999.7e-6`` s is ``1 ms``, not ``1e+03 µs``)."""
    prefixes = prefixes_of(unit)
    if value == 0:
        return 1.0, unit
    factor, name = prefix_scale(value, unit, prefixes)
    at = prefixes.index(name[: len(name) - len(unit)] if unit else "")
    if abs(_rounded(value * factor, sig)) >= 1000 and at + 1 < len(prefixes):
        factor, name = prefix_scale(value, unit, prefixes[at + 1:])
    return factor, name


def format_quantity(value, unit: str = "", sig: int = 3) -> str:
    """``value`` (in ``unit``, unprefixed) with the prefix that suits it: ``"1.23 ms"``, ``"512 kB"``.

    ``sig`` significant figures; ``"n/a"`` for None, NaN or infinity.
    """
    if value is None or not math.isfinite(value):
        return MISSING
    factor, name = _choose(float(value), unit, sig)
    text = _digits(_rounded(float(value) * factor, sig), sig)
    return f"{text} {name}" if name else text


def format_seconds(seconds, sig: int = 3) -> str:
    """A duration in seconds as text: ``format_seconds(1.234e-3) == "1.23 ms"`` (``ns`` to ``s``)."""
    return format_quantity(seconds, "s", sig)


def format_range(low, high, unit: str = "", sig: int = 3) -> str:
    """``"low–high unit"``, both ends with the prefix that suits ``high``; ``"n/a"`` without both."""
    if low is None or high is None or not (math.isfinite(low) and math.isfinite(high)):
        return MISSING
    factor, name = _choose(float(high), unit, sig)
    low_text, high_text = (_digits(_rounded(float(v) * factor, sig), sig) for v in (low, high))
    return f"{low_text}–{high_text} {name}" if name else f"{low_text}–{high_text}"
