"""How much a zoo step's measurement moves between sittings on one machine, and whether the same sitting's
calibration moves with it (#27).

    python experiments/sitting_spread.py experiments/results/intel-xeon-2c/logs [--pattern 'bench_zoo_112*']

Reads the folder's ``bench_zoo.py --csv`` tables at one and two threads
(:func:`crossover.analysis.visit_spread.read_sittings`: one a sitting; other zoo sets and rescorings left
out) and prints, for each point measured in at least ``--min-sittings`` sittings, the spread over the
sittings of the log of its measurement, of its prediction and of their ratio, and their correlation
(:func:`crossover.analysis.visit_spread.sitting_spread`), with the medians over the points first. With
``--levels``, one line per sitting instead: how slow the machine ran in it against the typical sitting, how
unsteady its rounds were, and its median error (:func:`crossover.analysis.visit_spread.sitting_levels`).
Pure arithmetic on the tables (no timing).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from crossover.analysis.visit_spread import SITTINGS_PATTERN, read_sittings, sitting_levels, sitting_spread


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("logs", type=Path, help="folder of bench_zoo.py --csv tables")
    parser.add_argument("--pattern", default=SITTINGS_PATTERN, help="file names to read, before _t1.csv / _t2.csv")
    parser.add_argument("--min-sittings", type=int, default=5)
    parser.add_argument("--levels", action="store_true",
                        help="instead, one line per sitting: its speed against the typical sitting on the points it "
                             "shares, its points' median round-to-round spread and its median |error|")
    args = parser.parse_args(argv)
    if not args.logs.is_dir():
        parser.error(f"{args.logs} is not a folder")
    for threads in (1, 2):
        sittings = read_sittings(args.logs, threads, args.pattern)
        if args.levels:
            levels = sitting_levels(sittings, args.min_sittings)
            print(f"{threads} thread(s): {len(levels)} sittings; level = median of measured / the point's median "
                  f"over the sittings (above 1: slower)")
            print(f"  {'sitting':36s} {'level':>6s} {'spread':>7s} {'median |error|':>15s} {'points':>6s}")
            for row in levels.itertuples():
                print(f"  {row.sitting:36s} {row.level:6.2f} {row.spread:7.3f} {row.median_error:15.1%} {row.points:6d}")
            continue
        points = sitting_spread(sittings, args.min_sittings)
        if points.empty:
            print(f"{threads} thread(s): no point in {args.min_sittings} sittings")
            continue
        med = points[["measured_sd", "predicted_sd", "error_sd", "correlation"]].median()
        print(f"{threads} thread(s): {sittings.sitting.nunique()} sittings, {len(points)} zoo points; medians over the "
              f"points: sd of log measured {med.measured_sd:.3f}, of log predicted {med.predicted_sd:.3f}, of log "
              f"error {med.error_sd:.3f}; correlation {med.correlation:.2f}")
        print(f"  {'model':18s} {'workload':8s} {'batch':>5s} {'sittings':>8s} {'measured':>9s} {'error':>7s} "
              f"{'corr':>5s} {'median error':>13s}")
        for row in points.itertuples():
            print(f"  {row.model:18s} {row.workload:8s} {row.batch_size:5d} {row.sittings:8d} {row.measured_sd:9.3f} "
                  f"{row.error_sd:7.3f} {row.correlation:5.2f} {row.median_error:+13.1%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
