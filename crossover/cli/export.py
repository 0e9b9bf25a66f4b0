"""The ``crossover export`` subcommand: a results directory's raw repeats as pyperf JSON, Parquet or
torch Measurements (the conversions are :mod:`crossover.results.export`)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .args import UsageError

__all__ = ["add_export", "FILE_NAMES"]

#: The file ``export --out DIR`` writes into DIR, per format.
FILE_NAMES = {"pyperf": "pyperf.json", "parquet": "repeats.parquet", "torch": "measurements.pkl"}
#: Suffixes that make ``--out`` the file itself (the old spelling, kept: a deprecation line on stderr).
_FILE_SUFFIXES = (".json", ".gz", ".parquet", ".pkl", ".pickle")

FORMAT_HELP = """\
formats (the file written into --out DIR):
  pyperf   DIR/pyperf.json: a pyperf BenchmarkSuite JSON, one benchmark per point, one pyperf run
           per round, the raw repeats (seconds per call) as values, calls per repeat as loops, the
           configuration and environment as metadata. Read it with 'python -m pyperf stats FILE'
           or 'python -m pyperf compare_to A/pyperf.json B/pyperf.json'.
  parquet  DIR/repeats.parquet: long form, one row per raw repeat: configuration, round details,
           environment, 'round', 'repeat' and 'time_s' (seconds per call). pandas.read_parquet,
           polars, DuckDB...
  torch    DIR/measurements.pkl: a pickled list of torch.utils.benchmark.Measurement, one per point
           (rounds pooled): Compare(pickle.load(open(FILE, 'rb'))).print() shows a table per
           configuration, rows by batch size, columns by device. Unpickle only files you trust.

DIR is created if missing; the file in it is replaced. The old spelling, --out FILE with one of the
suffixes .json, .json.gz, .parquet, .pkl, still writes FILE (with a deprecation line on stderr).
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
                             "--format pyperf --out exports/quick",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("results", type=Path, metavar="DIR", help="the results directory to export")
    p.add_argument("--format", required=True, choices=FORMATS, dest="fmt", help="the output format (see below)")
    p.add_argument("--out", required=True, type=Path, metavar="DIR",
                   help="the directory to write into (created if missing); the file's name is the format's (below)")
    p.set_defaults(func=_cmd_export)


def _cmd_export(args) -> int:
    from ..results.export import load_for_export, write_export

    frame = load_for_export(args.results)
    target = _target(args.out, args.fmt, quiet=args.quiet)
    path = write_export(frame, args.fmt, target)
    print(f"wrote {path} ({args.fmt})")
    return 0


def _target(out: Path, fmt: str, *, quiet: bool) -> Path:
    """The file ``--out`` names: ``out/FILE_NAMES[fmt]`` (``out`` created), or ``out`` itself where it
    ends in a file suffix and is not a directory (the old spelling)."""
    if out.suffix in _FILE_SUFFIXES and not out.is_dir():
        if not quiet:
            print(f"crossover: warning: --out FILE is deprecated: --out names a directory now, and the file in "
                  f"it is {FILE_NAMES[fmt]}", file=sys.stderr)
        return out
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out {out} is a file, not a directory")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"cannot create --out {out}: {exc.strerror or exc}") from None
    return out / FILE_NAMES[fmt]
