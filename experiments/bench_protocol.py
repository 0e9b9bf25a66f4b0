"""Before/after: how well each measuring protocol reproduces a size's latency from run to run.

The same 8 sizes (launch-bound to compute-bound; see crossover.measurement.noise.DEFAULT_SIZES) are measured in
several independent windows with each protocol, the windows of the two protocols interleaved
(legacy, short, legacy, short, ...) and ``--pause-s`` apart, so both see the same machine:

- legacy: the suites' protocol before the paired one: 5 rounds of up to 0.15 s, round 0 in list
  order, the model rebuilt for every measurement;
- short-rounds: 20 shuffled rounds of a 30 ms block, the drift reference (the anchor) first in each.

For each statistic (median of rounds, 10th percentile of pooled repeats, fastest repeat, 10th
percentile of the rounds whose reference was quiet) it prints the run-to-run deviation
``mean |window / mean over windows - 1|`` per size and summarised. Run it alone on the machine.

    python experiments/bench_protocol.py [--windows 3] [--pause-s 20]
"""

from __future__ import annotations

import argparse
import time

import pandas as pd

from crossover.measurement.environment import environment
from crossover.measurement.noise import (DEFAULT_SIZES, LEGACY, SHORT_ROUNDS, spread, measure_window,
                                         noise_summary, run_to_run, window_estimates)

STATISTICS = ("median", "p10", "min", "p10_quiet")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--windows", type=int, default=3)
    parser.add_argument("--pause-s", type=float, default=20.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--span-s", type=float, default=0.0,
                        help="spread each window's rounds over about this long (idle pauses between rounds), "
                             "as a suite's run spreads a point's rounds; 0: back to back")
    args = parser.parse_args()
    env = environment()
    print(f"machine {env['machine']} ({env['cpu_model']}, {env['cpu_usable_cores']} cores), torch {env['torch']}, "
          f"{args.windows} windows per protocol, {args.pause_s:.0f} s apart")
    protocols = [LEGACY, SHORT_ROUNDS]
    if args.span_s:  # measuring takes ~8 s per window; the rest of the span is idle between rounds
        protocols = [spread(p, args.span_s) for p in protocols]
        print("rounds spread: " + ", ".join(f"{p.name} {p.round_pause_s:.1f} s between rounds" for p in protocols))
    frames = {p.name: [] for p in protocols}
    start = time.perf_counter()
    for window in range(args.windows):
        for protocol in protocols:
            if window or protocol is not protocols[0]:
                time.sleep(args.pause_s)
            t0 = time.perf_counter()
            frame = measure_window(DEFAULT_SIZES, protocol, seed=args.seed, window=window)
            frames[protocol.name].append(frame)
            anchor = frame[frame["size"] == 0]["median_s"]
            print(f"  window {window + 1} {protocol.name}: {time.perf_counter() - t0:.1f} s, anchor (reference) "
                  f"median {anchor.median() * 1e3:.2f} ms, range {anchor.min() * 1e3:.2f}-{anchor.max() * 1e3:.2f} ms",
                  flush=True)
    print(f"total {time.perf_counter() - start:.0f} s\n")
    summaries = {}
    for name, parts in frames.items():
        estimates = window_estimates(pd.concat(parts, ignore_index=True))
        deviations = run_to_run(estimates)
        relative = estimates.pivot(index="size", columns="window", values="p10")
        relative = relative.div(relative.mean(axis=1), axis=0)
        print(f"{name}: each window's p10 over the mean of windows, per size")
        print(relative.round(3).to_string())
        summaries[name] = noise_summary(deviations)
        table = deviations[["d_model", "n_layers", "batch_size"]].copy()
        table["p10 ms"] = (deviations["p10_s"] * 1e3).round(3)
        for statistic in STATISTICS:
            table[statistic] = [f"{v:.1%}" for v in deviations[f"{statistic}_deviation"]]
        print(f"{name}: run-to-run deviation per size")
        print(table.to_string(index=False))
        print()
    print("summary (mean run-to-run deviation; worst size in brackets)")
    rows = []
    for name, summary in summaries.items():
        for statistic in STATISTICS:
            s = summary[statistic]
            rows.append({"protocol": name, "statistic": statistic, "compute-bound": f"{s['compute_bound']:.1%}",
                         "memory/launch-bound": f"{s['memory_or_launch_bound']:.1%}", "all": f"{s['all']:.1%}",
                         "worst": f"[{s['worst']:.1%}]"})
    print(pd.DataFrame(rows).to_string(index=False))


if __name__ == "__main__":
    main()
