"""The ``crossover`` command line: the top-level parser and :func:`main`.

The subcommands live beside this module, one module per group: :mod:`.measure` (``measure``,
``sweep``, ``noise``, ``env``), :mod:`.peaks`, :mod:`.user_model` (``calibrate`` and the ``--model``
modes), :mod:`.analysis` (``fit``, ``predict``), :mod:`.advise`, :mod:`.compare`, :mod:`.export`,
:mod:`.figures` (``figures``, ``diagram``), :mod:`.fleet` and :mod:`.inventory` (``list``); what they
share is :mod:`.args` (argument types, shared options, one-line errors, JSON output, the shipped
results path) and :mod:`.output` (``--format text|json|md|csv``). No library module of the package
builds a parser.

Every user error (bad sizes, unknown device, CUDA absent, malformed suite or results) ends with one
line on stderr, ``crossover: error: ...``, and exit status 2, without a traceback; anything else (torch
failing, a bug) with one line and status 3 (:data:`crossover.cli.args.EXIT_CODES_TEXT`), its traceback
with ``-v`` (or ``CROSSOVER_DEBUG=1``). Every command's ``--help`` ends with those exit statuses and has
``-q/--quiet`` and ``-v/--verbose`` (:func:`crossover.cli.args.finish_parser`).
"""

from __future__ import annotations

import argparse
import sys
from typing import Optional, Sequence

from ..errors import CrossoverError
from . import advise, analysis, compare, export, figures, fleet, inventory, measure, peaks, user_model
from .args import EXIT_CODES_TEXT, EXIT_INTERNAL, EXIT_USAGE, Parser, UsageError, finish_parser, handle_stop_signals

__all__ = ["main", "build_parser", "UsageError"]

#: Every subcommand, in the order ``crossover --help`` lists them.
COMMANDS = (measure.add_measure, measure.add_sweep, measure.add_env, measure.add_noise, peaks.add_peaks,
            user_model.add_calibrate, analysis.add_fit, analysis.add_predict, advise.add_advise, compare.add_compare,
            export.add_export, figures.add_figures, figures.add_diagram, fleet.add_fleet, inventory.add_list)


def build_parser() -> argparse.ArgumentParser:
    """The ``crossover`` parser with every subcommand registered."""
    from .. import __version__

    parser = Parser(
        prog="crossover",
        description=(
            "Measure, model and predict where the CPU stops beating the GPU for a residual-MLP toy "
            "model or your own nn.Module. Start with 'crossover measure --help' or 'crossover sweep "
            "--help'; for your model, 'crossover predict --model FILE.py:FACTORY --input-shape ...'."
        ),
        epilog=EXIT_CODES_TEXT,
    )
    parser.add_argument("--version", action="version", version=f"crossover {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    sub.required = True
    for add in COMMANDS:
        add(sub)
    for command in sub.choices.values():
        finish_parser(command)
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run the CLI; return the exit status (:data:`crossover.cli.args.EXIT_CODES_TEXT`)."""
    args = None
    try:
        args = build_parser().parse_args(argv)
        if argv is None:  # the process is the command (not a test's or a notebook's call): stop on SIGTERM
            handle_stop_signals()
        from .output import resolve_format

        resolve_format(args)
        return args.func(args)
    except UsageError as exc:
        message = str(exc)
        print(message if message.startswith("crossover") else f"crossover: error: {message}", file=sys.stderr)
        return EXIT_USAGE
    except CrossoverError as exc:
        print(f"crossover: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("crossover: interrupted; what was written so far is kept (a sweep: --resume)", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return EXIT_INTERNAL
    except Exception as exc:  # torch failures (out of memory, capture, compile) and bugs: one line, status 3
        import os
        import traceback

        if getattr(args, "verbose", 0) or os.environ.get("CROSSOVER_DEBUG", "") not in ("", "0"):
            traceback.print_exc()
        first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        print(f"crossover: internal error: {type(exc).__name__}: {first_line} (rerun with -v for the traceback)",
              file=sys.stderr)
        return EXIT_INTERNAL
