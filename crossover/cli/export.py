"""The ``crossover export`` subcommand: a results directory's raw repeats as pyperf JSON, Parquet or
torch Measurements (the conversions are :mod:`crossover.results.export`)."""

from __future__ import annotations

import argparse
from pathlib import Path

__all__ = ["add_export"]

FORMAT_HELP = """\
formats:
  pyperf   pyperf BenchmarkSuite JSON (gzipped if FILE ends in .gz): one benchmark per point, one
           pyperf run per round, the raw repeats (seconds per call) as values, calls per repeat as
           loops, the configuration and environment as metadata. Read it with
           'python -m pyperf stats FILE' or 'python -m pyperf compare_to A.json B.json'.
  parquet  long form, one row per raw repeat: configuration, round details, environment, 'round',
           'repeat' and 'time_s' (seconds per call). pandas.read_parquet, polars, DuckDB...
  torch    a pickled list of torch.utils.benchmark.Measurement, one per point (rounds pooled):
           Compare(pickle.load(open(FILE, 'rb'))).print() shows a table per configuration, rows by
           batch size, columns by device. Unpickle only files you trust.

pyperf and parquet need the optional extra: pip install 'crossover[export]'."""


def add_export(sub) -> None:
    """Register ``crossover export``."""
    from ..results.export import FORMATS

    p = sub.add_parser(
        "export",
        help="write a results directory's raw repeats as pyperf JSON, Parquet or torch Measurements",
        description=(
            "Convert the measured points of a results directory (or a directory holding several) to "
            "another tool's format, keeping every raw repeat of every round."
        ),
        epilog=FORMAT_HELP + "\n\nexample: crossover export experiments/results/amd-epyc-2c/quick "
                             "--format pyperf --out quick.json",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("results", type=Path, metavar="DIR", help="the results directory to export")
    p.add_argument("--format", required=True, choices=FORMATS, dest="fmt", help="the output format (see below)")
    p.add_argument("--out", required=True, type=Path, metavar="FILE", help="the file written (replaced if present)")
    p.set_defaults(func=_cmd_export)


def _cmd_export(args) -> int:
    from ..results.export import load_for_export, write_export

    frame = load_for_export(args.results)
    path = write_export(frame, args.fmt, args.out)
    print(f"wrote {path} ({args.fmt})")
    return 0
