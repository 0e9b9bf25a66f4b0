"""What every ``crossover`` subcommand shares: argument types, one-line errors, JSON output, and the
shipped results path.

Each argument type is defined once here and used by every parser of the package (the ``crossover``
subcommands and ``python -m crossover.paper.numbers``' options), so a bad value reads the same
everywhere: ``crossover: error: argument --d-model: must be a positive integer, got '0'``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import sys
from typing import Optional

from ..results.statistics import DEFAULT_STATISTIC, STATISTICS
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
    "STATISTIC_HELP",
    "BOOTSTRAP_STATISTIC_NOTE",
    "add_statistic",
    "add_device",
    "add_only_machine",
    "add_verbosity",
    "finish_parser",
    "warn",
]

#: The exit status of a user error (argparse's own).
EXIT_USAGE = 2
#: The exit statuses of every command (``crossover --help`` lists them): 0 fine; 1 a regression found
#: (``compare --fail-above``); 2 bad input (one line on stderr); 3 an internal error (a bug, or torch
#: failing: one line, rerun with ``-v`` (or ``CROSSOVER_DEBUG=1``) for the traceback).
EXIT_OK, EXIT_REGRESSION, EXIT_INTERNAL = 0, 1, 3
EXIT_CODES_TEXT = ("exit status: 0 fine; 1 a regression found (compare --fail-above); 2 bad input (one line "
                   "on stderr); 3 an internal error (one line; rerun with -v for the traceback); 130 stopped by "
                   "Ctrl-C or SIGTERM (what was measured is written: a sweep's rows, a calibration's whole rounds)")

#: ``--statistic``'s help, the same in every command that takes it: one definition of a point's latency
#: (:data:`crossover.results.statistics.STATISTICS`).
STATISTIC_HELP = (f"a point's latency: p10, the 10th percentile of its repeats pooled over its rounds (the step "
                  f"on a quiet machine, which reproduced best between runs on a shared VM); median, the median "
                  f"of its rounds' medians (the typical step); min, its fastest repeat (default "
                  f"{DEFAULT_STATISTIC})")
#: What ``compare`` and ``fleet compare`` add to it: how their bootstrap interval resamples.
BOOTSTRAP_STATISTIC_NOTE = ("; the ratio's interval is scipy.stats.bootstrap's, resampling each run's pooled repeats "
                         "(p10, min) or rounds' medians (median)")

#: The reference measurements shipped with crossover: ``experiments/results`` in a checkout, the
#: package's copy after a wheel install (:func:`crossover.shipped_data.shipped_results_dir`).
DEFAULT_RESULTS = shipped_results_dir()


class UsageError(Exception):
    """A user error reported as one line and exit status 2."""


class ParagraphFormatter(argparse.HelpFormatter):
    """argparse's formatter, but a blank line in a description or epilog starts a new paragraph."""

    def _fill_text(self, text, width, indent):
        return "\n\n".join(super(ParagraphFormatter, self)._fill_text(part, width, indent)
                            for part in text.split("\n\n"))


class Parser(argparse.ArgumentParser):
    """argparse that reports errors as one line (plus a hint) instead of usage and message, and keeps
    the paragraphs of a description or epilog (:class:`ParagraphFormatter`)."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("formatter_class", ParagraphFormatter)
        super().__init__(*args, **kwargs)

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
    given = [name for name in names if getattr(args, name, None) != _default(parser, name)]
    if given:
        flags = ", ".join("--" + name.replace("_", "-") for name in given)
        raise UsageError(f"{flags} {'does' if len(given) == 1 else 'do'} not apply {why}")


def _default(parser, dest: str):
    """``dest``'s default (argparse's ``get_default`` would answer a hidden alias' SUPPRESS)."""
    for action in parser._actions:
        if action.dest == dest and action.default is not argparse.SUPPRESS:
            return action.default
    return parser._defaults.get(dest)


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


# ------------------------------------------------------------------------------ shared options
def add_statistic(parser, help: str = STATISTIC_HELP) -> None:
    """``--statistic`` (:data:`STATISTIC_HELP`): a point's latency, default p10, in every command."""
    parser.add_argument("--statistic", choices=tuple(STATISTICS), default=DEFAULT_STATISTIC, help=help)


def add_device(parser, *, default: Optional[str] = "cpu", several: bool = False, choices=None,
               help: Optional[str] = None) -> None:
    """``--device`` (a comma list where ``several``), with ``--devices`` as a hidden alias (the old
    spelling of sweep, peaks and fleet run), both into ``args.device``."""
    if help is None:
        help = ("comma-separated devices, e.g. cpu,cuda" if several else "the device") + \
            (f" (default {default})" if default else "")
    parser.add_argument("--device", default=default, choices=choices, metavar="DEVICE[,DEVICE...]" if several
                        else None, help=help)
    parser.add_argument("--devices", dest="device", default=argparse.SUPPRESS, choices=choices,
                        help=argparse.SUPPRESS)


class _Deprecated(argparse.Action):
    """An old spelling, hidden from ``--help``: stores its value and says on stderr what replaces it."""

    def __init__(self, option_strings, dest, new: str = "", **kwargs):
        self.new = new
        super().__init__(option_strings, dest, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        print(f"crossover: warning: {option_string} is deprecated: use {self.new}", file=sys.stderr)
        setattr(namespace, self.dest, values)


def add_only_machine(parser, help: str) -> None:
    """``--only-machine NAME``: keep one machine's devices. ``--machine`` labels what is measured
    elsewhere, so here it is only a hidden, deprecated alias."""
    parser.add_argument("--only-machine", metavar="MACHINE", help=help)
    parser.add_argument("--machine", dest="only_machine", action=_Deprecated, new="--only-machine",
                        default=argparse.SUPPRESS, help=argparse.SUPPRESS)


QUIET_HELP = "print only the answer and errors: no progress, no notes or warnings on stderr"
VERBOSE_HELP = ("progress and extra detail on stderr (progress even when stderr is not a terminal), and the "
                "traceback of an internal error")


def add_verbosity(parser) -> None:
    """``-q/--quiet`` and ``-v/--verbose`` (:data:`QUIET_HELP`, :data:`VERBOSE_HELP`), once per command."""
    group = parser.add_mutually_exclusive_group()
    group.add_argument("-q", "--quiet", action="store_true", help=QUIET_HELP)
    group.add_argument("-v", "--verbose", action="count", default=0, help=VERBOSE_HELP)


def finish_parser(parser) -> None:
    """What every command's parser has, added after it is built: ``-q/-v`` (unless it has them) and
    the exit statuses at the end of its epilog; a command group's commands too."""
    subparsers = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    for action in subparsers:
        for child in dict.fromkeys(action.choices.values()):
            finish_parser(child)
    if not subparsers and "--quiet" not in parser._option_string_actions:
        add_verbosity(parser)
    parser.epilog = (parser.epilog + "\n\n" if parser.epilog else "") + EXIT_CODES_TEXT


def warn(args, line: str) -> None:
    """``crossover: warning: LINE`` on stderr, unless ``-q``."""
    if not getattr(args, "quiet", False):
        print(f"crossover: warning: {line}", file=sys.stderr)


def handle_stop_signals() -> None:
    """Make SIGTERM raise ``KeyboardInterrupt`` in this process (as SIGINT does, where it is not ignored).

    A time limit (``timeout``'s default signal, a scheduler's SIGTERM) then stops a command between rows or
    rounds with what it measured written, as Ctrl-C does. A SIGINT the parent set to ignored stays ignored
    (a background job of a non-interactive shell inherits it so): the GPU run script's stage limits send
    SIGTERM for that reason (with SIGINT a calibration ran on through ``timeout -s INT`` until ``-k``
    killed it with nothing written). Off the main thread (a library call from a worker) nothing changes.
    """
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        return

    def stop(signum, frame):
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)


@contextlib.contextmanager
def signals_deferred():
    """Hold SIGINT and SIGTERM while the block runs (a profile being fitted and written), deliver them after.

    Their Python handlers are swapped for one that notes the signal, and the first noted is raised again
    once the block ends and the handlers are back. Blocking the signals in the main thread is not enough:
    the kernel hands a process's signal to any thread that does not block it (torch's OpenMP workers),
    and Python then runs the handler in the main thread all the same (a GPU run's CPU calibration lost its
    profile so, its time limit's SIGTERM arriving while the profile was fitted).

    Yields
    ------
    None
    """
    import signal
    import threading

    held = (signal.SIGINT, signal.SIGTERM)
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    noted = []
    before = {signum: signal.signal(signum, lambda signum, frame: noted.append(signum)) for signum in held}
    try:
        yield
    finally:
        for signum, handler in before.items():
            signal.signal(signum, handler)
        if noted:
            signal.raise_signal(noted[0])  # to the handler the process had: KeyboardInterrupt, or ignored
