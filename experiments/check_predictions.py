"""Predict configurations the quick suite did not measure, then measure them, and compare.

    python experiments/check_predictions.py --results DIR [--rounds 3] [--statistic median|p10|min]

Fits DIR (e.g. a fresh quick-suite run on this machine), predicts each odd-sized configuration below
with `crossover.analysis.predict`, measures it afresh in interleaved rounds, and prints predicted vs
measured with the relative error and whether it is within ±10%. The fit and the fresh measurement
use the same statistic: the median of the round medians (default), the 10th percentile of the
repeats pooled over rounds (`--statistic p10`) or the fastest repeat (`--statistic min`).
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

from crossover.analysis import MODELS, STATISTICS, fit_results, predict
from crossover.measurement import Config, measure
from crossover.results import load_results
from crossover.timing import TimerOptions

ODD_CONFIGS = [  # (d_model, n_layers, batch_size), none of them in the quick suite
    (320, 24, 12),
    (192, 48, 3),
    (96, 200, 1),
    (640, 10, 40),
    (448, 64, 6),
    (160, 12, 300),
]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--results", required=True, help="results directory to fit (CPU of this machine)")
    parser.add_argument("--rounds", type=int, default=3, help="measurement rounds per config (default 3)")
    parser.add_argument("--n-boot", type=int, default=50)
    parser.add_argument("--models", help="comma-separated candidate models (default: crossover's MODELS)")
    parser.add_argument("--statistic", choices=tuple(STATISTICS), default="median",
                        help="each point's latency, in the fit and in the fresh measurement")
    args = parser.parse_args(argv)
    frame = load_results(args.results, raw=True)
    frame = frame[(frame.device == "cpu") & (frame.workload == "forward") & (frame["mode"] == "eager")
                  & (frame.dtype == "float32") & (frame.threads_requested == 0)]
    models = tuple(args.models.split(",")) if args.models else tuple(MODELS)
    fits = fit_results(frame, models, n_boot=args.n_boot, statistic=args.statistic)
    predicted = {c: predict(fits, *c)["devices"][0] for c in ODD_CONFIGS}
    options = TimerOptions(warmup_s=0.05, min_run_time_s=0.1, max_run_time_s=0.5)
    rounds = {c: [] for c in ODD_CONFIGS}
    for _ in range(args.rounds):
        for c in ODD_CONFIGS:
            rounds[c].append(measure(Config(*c), options).timing.raw_times_s)
    if args.statistic != "median":  # a quantile of the repeats pooled over rounds, as load_results computes it
        quantile = STATISTICS[args.statistic].quantile
        measured = {c: np.quantile(np.concatenate(r), quantile) for c, r in rounds.items()}
    else:
        measured = {c: np.median([np.median(times) for times in r]) for c, r in rounds.items()}
    print(f"fitted {len(frame)} points of {args.results}; model {predicted[ODD_CONFIGS[0]]['model']}; "
          f"statistic {args.statistic}")
    print(f"{'d_model':>7} {'n_layers':>8} {'batch':>5} {'predicted_ms':>12} {'measured_ms':>11} {'error':>7}  within ±10%")
    errors = []
    for c in ODD_CONFIGS:
        p, m = predicted[c]["latency_s"], float(measured[c])
        errors.append(p / m - 1)
        print(f"{c[0]:>7} {c[1]:>8} {c[2]:>5} {p * 1e3:>12.4f} {m * 1e3:>11.4f} {errors[-1]:>+7.1%}  "
              f"{'yes' if abs(errors[-1]) <= 0.10 else 'NO'}")
    errors = np.abs(errors)
    print(f"MAPE {100 * errors.mean():.1f}%, within ±10%: {100 * (errors <= 0.10).mean():.0f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
