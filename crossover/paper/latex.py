"""Numbers as LaTeX text, and ``\\newcommand`` macro files: the paper's formatting, apart from the
numbers it formats (:mod:`crossover.paper.numbers` computes them).

Values get ``sig`` significant figures, thin-space thousands groups, a power of ten beyond 10^7,
and a unit with a readable SI prefix (chosen by :func:`crossover.units.prefix_scale`, the package's
one prefix rule); a missing value is ``n/a``.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

import numpy as np

from ..units import prefix_scale

__all__ = ["Macro", "NA", "DASH", "MU", "PCT", "and_list", "format_number", "format_quantity", "format_ratio", "format_interval",
           "render", "write_files", "text_to_latex"]

NA = "\\textit{n/a}"
DASH = "---"
MU = "\\ensuremath{\\mu}"
PCT = "\\,\\%"


@dataclass(frozen=True)
class Macro:
    """One ``\\newcommand{\\name}{text}`` with a comment saying where it comes from."""

    name: str
    text: str
    comment: str = ""

    def __post_init__(self):
        if not re.fullmatch(r"[A-Za-z]+", self.name):
            raise ValueError(f"LaTeX macro names are letters only, got {self.name!r}")


def and_list(parts) -> str:
    """``["118", "99", "129"]`` -> ``118, 99 and 129`` (one part: itself)."""
    parts = list(parts)
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


def format_number(x, sig: int = 3) -> str:
    """``x`` rounded to ``sig`` significant figures, as LaTeX text (thin-space thousands groups,
    a power of ten beyond 10^7, integers without a decimal point); ``n/a`` for None or NaN."""
    if x is None or not np.isfinite(x):
        return NA
    x = float(x)
    if x == 0:
        return "0"
    exponent = math.floor(math.log10(abs(x)))
    if x == round(x) and abs(x) < 1e7 and exponent < sig + 4:  # counts and sizes: all their digits
        return f"{int(round(x)):,d}".replace(",", "\\,") if abs(x) >= 1e4 else str(int(round(x)))
    if abs(x) >= 1e7 or abs(x) < 1e-4:
        mantissa = round(x / 10**exponent, sig - 1)
        if abs(mantissa) >= 10:
            mantissa, exponent = mantissa / 10, exponent + 1
        return f"\\ensuremath{{{mantissa:.{sig - 1}f}\\times10^{{{exponent}}}}}"
    decimals = max(sig - 1 - exponent, 0)
    text = f"{round(x, decimals):,.{decimals}f}" if abs(x) >= 1e4 else f"{round(x, decimals):.{decimals}f}"
    return text.replace(",", "\\,")


#: unit the value is given in -> (unprefixed unit, prefix it is given in, prefixes the text may use).
_PREFIXED = {
    "s": ("s", "", ("µ", "m", "")),
    "GFLOP/s": ("FLOP/s", "G", ("G", "T", "P")),
    "GB/s": ("B/s", "G", ("G", "T", "P")),
    "MB": ("B", "M", ("M", "G")),
}


def _scale(value: float, unit: str) -> tuple:
    """``(factor, unit text)``: ``value * factor`` in the returned unit reads well (seconds as
    ``µs``/``ms``/``s``; GFLOP/s, GB/s and MB moved up to T/P or G; other units as given)."""
    if unit not in _PREFIXED or not math.isfinite(value):
        return 1.0, unit
    base, given, prefixes = _PREFIXED[unit]
    factor, name = prefix_scale(value, base, prefixes, given=given)
    return factor, (MU + name[1:] if name.startswith("µ") else name)


def _unit_text(unit: str) -> str:
    if not unit:
        return ""
    if unit in ("%",):
        return PCT
    if unit == "\u00b5s":
        unit = MU + "s"
    if unit == "\u00d7":  # a ratio: 0.98x
        return "\\ensuremath{\\times}"
    return "\\," + unit


def format_quantity(value, unit: str = "", sig: int = 3) -> str:
    """A value with its unit (seconds, GFLOP/s, GB/s and MB get a readable prefix)."""
    if value is None or not np.isfinite(value):
        return NA
    factor, unit = _scale(float(value), unit)
    return format_number(value * factor, sig) + _unit_text(unit)


def format_ratio(value, sig: int = 2) -> str:
    """A ratio as ``2.5\\ensuremath{\\times}`` (no space before the sign); ``n/a`` for None or NaN."""
    if value is None or not np.isfinite(value):
        return NA
    return format_number(value, sig) + "\\ensuremath{\\times}"


def format_interval(low, high, unit: str = "", sig: int = 3, like=None) -> str:
    """``[lo, hi] unit``, scaled like ``like`` (default: like ``high``); ``n/a`` without both ends."""
    if low is None or high is None or not (np.isfinite(low) and np.isfinite(high)):
        return NA
    factor, unit = _scale(float(like if like is not None else high), unit)
    return f"[{format_number(low * factor, sig)}, {format_number(high * factor, sig)}]" + _unit_text(unit)


def _tt(text: str) -> str:
    """Text for \\texttt{} (escape the few characters LaTeX treats specially); a line may break after
    a ``+`` or ``/`` (long model names and paths)."""
    escaped = re.sub(r"([_#%&$])", r"\\\1", str(text))
    return "\\texttt{" + re.sub(r"([+/])", r"\1\\allowbreak{}", escaped) + "}"


#: Characters of the package's plain-text labels and their LaTeX.
_LATEX_SYMBOLS = {"×": "$\\times$", "½": "$_{1/2}$", "∞": "$\\infty$", "µ": "\\textmu{}", ">": "$>$", "<": "$<$"}


def text_to_latex(text: str) -> str:
    """A plain-text label (``crossover.fit.latency_models.PARAMS``) as LaTeX text: special characters
    escaped, ``×``, ``½``, ``∞``, ``µ`` and comparisons set as LaTeX symbols."""
    out = _plain(text)
    for symbol, latex in _LATEX_SYMBOLS.items():
        out = out.replace(symbol, latex)
    return out


def _plain(text: str) -> str:
    return re.sub(r"([_#%&$])", r"\\\1", str(text))


def render(macros: Iterable[Macro], source: str = "") -> str:
    """The text of ``numbers.tex``; raises ValueError on a duplicate name or a NaN in a value."""
    lines = ["% Generated by crossover.paper.numbers" + (f" from {source}" if source else "") + ": do not edit.",
             "% Every number the paper's text quotes; regenerate with `make paper`."]
    seen = set()
    for m in macros:
        if m.name in seen:
            raise ValueError(f"macro \\{m.name} defined twice")
        if re.search(r"\bnan\b|\binf\b", m.text, re.IGNORECASE):
            raise ValueError(f"macro \\{m.name} has no number: {m.text!r}")
        seen.add(m.name)
        comment = f"  % {m.comment}" if m.comment else ""
        lines.append(f"\\newcommand{{\\{m.name}}}{{{m.text}}}{comment}")
    return "\n".join(lines) + "\n"


def write_files(texts: dict) -> list:
    """Write each path's text (a temporary file renamed over it: never a half-written file); the
    directories are created. Returns the paths, in order."""
    paths = []
    for path, text in texts.items():
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(path.suffix + ".tmp")
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(path)
        paths.append(path)
    return paths
