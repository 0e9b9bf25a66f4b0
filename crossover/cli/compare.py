"""The ``crossover compare`` subcommand: two results directories, point by point."""

from __future__ import annotations

import sys
from pathlib import Path

from .args import BOOTSTRAP_STATISTIC_NOTE, STATISTIC_HELP, add_statistic, positive_float, positive_int, print_json
from .output import add_format, print_tables, wants_table
from ..jsonable import schema_tag

__all__ = ["add_compare", "COMPARE_SCHEMA"]

#: The layout of ``crossover compare --json``.
COMPARE_SCHEMA = schema_tag("compare", 1)

from .args import EXIT_REGRESSION as EXIT_SLOWER  # noqa: E402 - exit status of --fail-above on a slowdown


def add_compare(sub) -> None:
    """Register ``crossover compare``."""
    p = sub.add_parser(
        "compare",
        help="compare two results directories point by point, with intervals and a verdict",
        description=(
            "For every point both results directories measured (same device, sizes, workload, mode, "
            "dtype, transfer, regime, threads), the ratio B/A of a latency statistic of the pooled "
            "repeats, a bootstrap interval of it, a Mann-Whitney U test on the repeats and a verdict "
            "(slower, faster or the same), then a summary. Repeats within a run do not see the drift "
            "between runs: judge small changes against the machine's noise floor (crossover noise)."
        ),
        epilog="example: crossover compare results/before results/after --fail-above 10",
    )
    p.add_argument("a", type=Path, help="the baseline results directory")
    p.add_argument("b", type=Path, help="the results directory compared with it")
    add_statistic(p, help=STATISTIC_HELP + BOOTSTRAP_STATISTIC_NOTE)
    p.add_argument("--threshold-pct", type=positive_float, default=2.0,
                   help="smallest change in %% called a change (default 2)")
    p.add_argument("--alpha", type=positive_float, default=0.01, help="significance level (default 0.01)")
    p.add_argument("--n-boot", type=positive_int, default=1000, help="bootstrap resamples (default 1000)")
    p.add_argument("--fail-above", type=positive_float, metavar="PCT",
                   help="exit with status 1 when a point is significantly slower by more than PCT %%")
    add_format(p)
    p.set_defaults(func=_cmd_compare)


def _cmd_compare(args) -> int:
    from ..results.compare import compare_results, summarise
    from ..results.store import load_results
    from ..units import format_seconds

    a, b = load_results(args.a, raw=True), load_results(args.b, raw=True)
    table = compare_results(a, b, statistic=args.statistic, threshold=args.threshold_pct / 100,
                            alpha=args.alpha, n_boot=args.n_boot)
    summary = summarise(table)
    failed = args.fail_above is not None and summary.worst_slowdown * 100 > args.fail_above
    if args.json:
        print_json({"a": str(args.a), "b": str(args.b),
                    "statistic": args.statistic, "summary": summary.to_dict(), "points": table.to_dict("records"),
                    "failed": failed}, COMPARE_SCHEMA)
    elif wants_table(args):
        print_tables({"points": table}, args.format)
    else:
        shown = table.assign(
            A=[format_seconds(v) for v in table["a_s"]], B=[format_seconds(v) for v in table["b_s"]],
            **{"B/A": [f"{r:.3f} [{lo:.3f}, {hi:.3f}]" for r, lo, hi in zip(table["ratio"], table["low"], table["high"])]})
        sizes = [c for c in ("device", "d_model", "n_layers", "batch_size", "mode", "workload", "dtype") if c in shown]
        varying = [c for c in sizes if shown[c].nunique() > 1] or sizes[:4]
        from ..results.statistics import statistic_named

        print(f"A = {args.a}, B = {args.b}; latency = {statistic_named(args.statistic).label}")
        print(shown[varying + ["A", "B", "B/A", "verdict"]].to_string(index=False))
        print(summary.describe())
    if failed:  # on stderr: with --json, stdout holds the JSON object alone
        print(f"crossover: a point is {summary.worst_slowdown:.1%} slower, above --fail-above {args.fail_above:g}%",
              file=sys.stderr)
        return EXIT_SLOWER
    return 0
