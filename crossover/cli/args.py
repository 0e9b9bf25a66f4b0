"""What every ``crossover`` subcommand shares: argument types, one-line errors, JSON output, and the
shipped results path.

Each argument type is defined once here and used by every parser of the package (the ``crossover``
subcommands and ``python -m crossover.paper.numbers``' options), so a bad value reads the same
everywhere: ``crossover: error: argument --d-model: must be a positive integer, got '0'``.
"""

from __future__ import annotations

import argparse
import json
import math
from typing import Optional

from ..shipped_data import shipped_results_dir

__all__ = [
    "DEFAULT_RESULTS",
    "EXIT_USAGE",
    "EXIT_OK",
    "EXIT_REGRESSION",
    "EXIT_INTERNAL",
    "EXIT_CODES_TEXT",
    "Parser",
    "UsageError",
    "refuse_unused",
    "remember_parser",
    "comma_list",
    "non_negative_float",
    "non_negative_int",
    "positive_float",
    "positive_int",
    "positive_int_list",
    "print_json",
]

#: The exit status of a user error (argparse's own).
EXIT_USAGE = 2
#: The exit statuses of every command (``crossover --help`` lists them): 0 fine; 1 a regression found
#: (``compare --fail-above``); 2 bad input (one line on stderr); 3 an internal error (a bug, or torch
#: failing: one line, the traceback with ``CROSSOVER_DEBUG=1``).
EXIT_OK, EXIT_REGRESSION, EXIT_INTERNAL = 0, 1, 3
EXIT_CODES_TEXT = ("exit status: 0 fine; 1 a regression found (compare --fail-above); 2 bad input (one line "
                   "on stderr); 3 an internal error (one line; the traceback with CROSSOVER_DEBUG=1)")

#: The reference measurements shipped with crossover: ``experiments/results`` in a checkout, the
#: package's copy after a wheel install (:func:`crossover.shipped_data.shipped_results_dir`).
DEFAULT_RESULTS = shipped_results_dir()


class UsageError(Exception):
    """A user error reported as one line and exit status 2."""


class Parser(argparse.ArgumentParser):
    """argparse that reports errors as one line (plus a hint) instead of usage and message."""

    def error(self, message: str):  # noqa: D401 - argparse API
        raise UsageError(f"{self.prog}: error: {message} (see '{self.prog} --help')")


# ------------------------------------------------------------------------------ argument types
def _number(text: str, convert, accept, what: str):
    try:
        value = convert(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be {what}, got {text!r}") from None
    if not accept(value):
        raise argparse.ArgumentTypeError(f"must be {what}, got {text!r}")
    return value


def positive_int(text: str) -> int:
    """An integer above 0 (a size, a count)."""
    return _number(text, int, lambda v: v > 0, "a positive integer")


def positive_int_list(text: str) -> tuple:
    """One positive integer or several separated by commas (``"1,8,64"``), as a tuple."""
    parts = [part.strip() for part in str(text).split(",")]
    try:
        values = tuple(int(part) for part in parts)
    except ValueError:
        values = ()
    if not values or any(v <= 0 for v in values):
        raise argparse.ArgumentTypeError(f"must be a positive integer or positive integers separated by commas, "
                                         f"got {text!r}")
    return values


def non_negative_int(text: str) -> int:
    """An integer of 0 or more (a seed, a thread count where 0 means the default)."""
    return _number(text, int, lambda v: v >= 0, "a non-negative integer")


def positive_float(text: str) -> float:
    """A finite number above 0 (a time, a fraction)."""
    return _number(text, float, lambda v: v > 0 and math.isfinite(v), "a positive number")


def non_negative_float(text: str) -> float:
    """A finite number of 0 or more (a pause, a span)."""
    return _number(text, float, lambda v: v >= 0 and math.isfinite(v), "a non-negative number")


def refuse_unused(args, names, why: str) -> None:
    """Exit 2 with one line naming the options of ``names`` (argparse dests) given a value other than
    their default, which do not apply here (``why``: e.g. "with --model"). The defaults are the parser's
    (``args._parser``, set by :func:`remember_parser`)."""
    parser = getattr(args, "_parser", None)
    if parser is None:
        return
    given = [name for name in names if getattr(args, name, None) != parser.get_default(name)]
    if given:
        flags = ", ".join("--" + name.replace("_", "-") for name in given)
        raise UsageError(f"{flags} {'does' if len(given) == 1 else 'do'} not apply {why}")


def remember_parser(parser) -> None:
    """Let a command's handler read its parser's defaults (:func:`refuse_unused`)."""
    parser.set_defaults(_parser=parser)


def comma_list(text: Optional[str]) -> Optional[tuple]:
    """``"a, b,c"`` → ``("a", "b", "c")``; None (the option not given) stays None; an empty list is a
    :class:`UsageError`."""
    if text is None:
        return None
    items = tuple(item.strip() for item in text.split(",") if item.strip())
    if not items:
        raise UsageError(f"expected a comma-separated list, got {text!r}")
    return items


# ------------------------------------------------------------------------------------ JSON output
def print_json(data, schema: Optional[dict] = None) -> None:
    """Print ``data`` as indented JSON (:func:`crossover.jsonable.to_jsonable`: NaN and infinities
    become null, numpy scalars numbers, anything else its ``str``): every ``--json`` output goes through
    here, so every one carries its ``schema`` (:func:`crossover.jsonable.schema_tag`), ``schema`` stamped
    first where given, else already in ``data`` (an output without it is an internal error)."""
    from ..jsonable import check_stamp, stamped, to_jsonable

    if schema is not None:
        data = stamped(schema, data)
    check_stamp(data)
    print(json.dumps(to_jsonable(data), indent=2))
