"""Shipped zoo measurements against predictions from shipped profiles: the own-model check away from
this machine (no measuring; seconds on any laptop).

    python experiments/zoo_check.py ZOO_DIR --profiles CPU_PROFILE GPU_PROFILE
    python experiments/zoo_check.py --set h100-run2     # a set of experiments/results/zoo_checks.toml

``ZOO_DIR`` holds ``measure-<model>-<workload>-<device>.json`` files (``crossover measure --model
--json``, as ``experiments/gpu_zoo.py`` writes them); every model is traced and predicted with
``crossover.decide`` on the profiles (:mod:`crossover.analysis.zoo_runs`) at the measured batch sizes. Prints, per model and device, the
median and worst |error| (latency = the 10th percentile of the pooled repeats on both sides) against the
GPU issue's target (median ≤ 10%, worst ≤ 25%) and per device how many measurements fall inside their
predicted intervals, then per model with both devices measured the measured
and predicted crossover batch (log-interpolated between batch sizes; within ×1.5 holds) and the winner
at every point whose devices differ by more than 10%. Where the zoo was measured with the calibration's
reference models beside it (``gpu_zoo.py --references``), also how much slower the sitting ran them than
the calibration did, and the errors with that share taken out. Example, the H200's second run:

    python experiments/zoo_check.py experiments/results/nvidia-h200-16c/run2/zoo \\
        --profiles experiments/profiles/nvidia-h200-16c/cpu experiments/profiles/nvidia-h200-16c/cuda
"""

from __future__ import annotations

import argparse
from pathlib import Path

from crossover.analysis.zoo_check import TARGET_MEDIAN, TARGET_WORST


def main(argv=None) -> int:
    from crossover.analysis.zoo_check import crossover_table, error_table, interval_table, sitting_ratios, without_sitting
    from crossover.analysis.zoo_runs import (predict_measurements, read_measurements, read_reference_remeasures,
                                             read_zoo_sets)

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("zoo", type=Path, nargs="?", help="folder of measure-*.json files")
    parser.add_argument("--profiles", nargs="+", help="profile folders (one per device)")
    parser.add_argument("--set", dest="zoo_set", help="a shipped zoo set of experiments/results/zoo_checks.toml "
                        "(its folder and the profiles of its visit), instead of ZOO and --profiles")
    args = parser.parse_args(argv)
    if args.zoo_set:
        sets = {s.name: s for s in read_zoo_sets()}
        if args.zoo_set not in sets:
            parser.error(f"no zoo set {args.zoo_set!r}; the shipped ones: {', '.join(sets)}")
        args.zoo, args.profiles = sets[args.zoo_set].zoo, list(sets[args.zoo_set].profiles)
        if sets[args.zoo_set].tuned:
            print(f"(modelling choices made looking at this set: {sets[args.zoo_set].tuned})")
    elif args.zoo is None or not args.profiles:
        parser.error("give ZOO and --profiles, or --set NAME")
    measured = read_measurements(args.zoo)
    if measured.empty:
        parser.error(f"no measure-*.json in {args.zoo}")
    frame = predict_measurements(measured, args.profiles)
    errors = error_table(frame)
    errors["met"] = (errors["median_error"] <= TARGET_MEDIAN) & (errors["worst_error"] <= TARGET_WORST)
    print(f"{args.zoo}: predicted from {', '.join(map(str, args.profiles))}\n")
    print("| model | workload | device | points | median error | worst error | bias | target |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for row in errors.itertuples():
        print(f"| {row.model} | {row.workload} | {row.device} | {row.points} | {100 * row.median_error:.1f}% | "
              f"{100 * row.worst_error:.1f}% | {100 * row.bias:+.1f}% | {'met' if row.met else 'missed'} |")
    for device, rows in errors.groupby("device"):
        print(f"{device}: median of the models' median errors {100 * rows['median_error'].median():.1f}%, "
              f"{int(rows['met'].sum())} of {len(rows)} within target")
    for row in interval_table(frame).itertuples():
        print(f"{row.device}: {row.inside} of {row.points} measurements inside the predicted interval "
              f"(median half-width {100 * row.median_half_width:.1f}%)")
    ratios = sitting_ratios(read_reference_remeasures(args.zoo, args.profiles))
    if ratios:
        shifted = error_table(without_sitting(frame, ratios))
        print("\nThe calibration's reference steps measured again in this sitting ran "
              + ", ".join(f"x{r:.3f} on {d}" for d, r in ratios.items())
              + " (median of measured / what the given profiles' calibration measured of them): the sitting's "
              "share of a miss. The errors with "
              "each device's predictions scaled by it (a diagnostic, not a prediction):\n")
        print("| model | workload | device | median error | worst error | bias |")
        print("| --- | --- | --- | --- | --- | --- |")
        for row in shifted.itertuples():
            print(f"| {row.model} | {row.workload} | {row.device} | {100 * row.median_error:.1f}% | "
                  f"{100 * row.worst_error:.1f}% | {100 * row.bias:+.1f}% |")
    crossings = crossover_table(frame)
    if not crossings.empty:
        print("\n| model | workload | measured crossover | predicted [interval] | holds (x1.5) | in interval | winner right |")
        print("| --- | --- | --- | --- | --- | --- | --- |")
        text = lambda x, first: f"{x:.0f}" if x is not None and x == x else f"none ({first} faster)"  # noqa: E731
        span = lambda r: (f" [{r.predicted_low:.0f}, {r.predicted_high:.0f}]"  # noqa: E731
                          if r.predicted_low is not None and r.predicted_low == r.predicted_low else "")
        yes = lambda v: "-" if v is None or v != v else ("yes" if v else "no")  # noqa: E731
        for row in crossings.itertuples():
            print(f"| {row.model} | {row.workload} | {text(row.measured_crossover, row.measured_first)} | "
                  f"{text(row.predicted_crossover, row.predicted_first)}{span(row)} | {yes(row.holds)} | "
                  f"{yes(row.in_interval)} | {row.winner_right} of {row.decided_points} |")
    detail = frame.assign(error_pct=100 * (frame["predicted_s"] / frame["measured_s"] - 1))
    print("\n" + detail[["model", "workload", "device", "batch_size", "measured_s", "predicted_s", "error_pct"]]
          .to_string(index=False, float_format=lambda v: f"{v:.3g}"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
