"""Does crossover's timer agree with torch.utils.benchmark? Prints the ratio of medians per config.

Both time the same step function (built once by crossover.measurement.toy_step.make_step) in the same process,
with the same thread count, in interleaved rounds (A B, B A, ...) so that drift of a noisy machine
hits both alike. The ratio is crossover's median over torch.utils.benchmark's median, each taken as
the median of the per-round medians. The bar (DESIGN, "Measuring"): within 0.95–1.05.

    python experiments/bench_timer_agreement.py [--device cpu] [--rounds 5]
"""

from __future__ import annotations

import argparse
import sys

import numpy as np
import torch
import torch.utils.benchmark as benchmark

from crossover.measurement.toy_step import Config, make_step
from crossover.measurement.timer import TimerOptions, time_step

CONFIGS = [  # (d_model, n_layers, batch_size): µs-scale to tens-of-ms-scale steps
    (64, 8, 1),
    (128, 32, 1),
    (128, 128, 1),
    (128, 128, 64),
    (512, 16, 16),
    (1024, 8, 256),
]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    parser.add_argument("--rounds", type=int, default=100, help="interleaved rounds per config (default 100)")
    parser.add_argument("--run-time-s", type=float, default=0.05, help="time budget per tool per round (default 0.05)")
    args = parser.parse_args(argv)
    if args.device == "cuda" and not torch.cuda.is_available():
        print("bench_timer_agreement: error: CUDA is not available", file=sys.stderr)
        return 2

    threads = torch.get_num_threads()
    sync = torch.cuda.synchronize if args.device == "cuda" else (lambda: None)
    options = TimerOptions(min_run_time_s=args.run_time_s, max_run_time_s=args.run_time_s)
    print(f"device={args.device} threads={threads} torch={torch.__version__} rounds={args.rounds}")
    print(f"{'d_model':>7} {'n_layers':>8} {'batch':>5} {'crossover_ms':>12} {'torch_ms':>9} {'ratio':>6}")
    ratios = []
    for d_model, n_layers, batch_size in CONFIGS:
        step = make_step(Config(d_model=d_model, n_layers=n_layers, batch_size=batch_size, device=args.device))

        def ours():
            return time_step(step, options, sync=sync, synchronous=args.device == "cpu").median_s

        def theirs():
            timer = benchmark.Timer(
                stmt="step(); sync()", globals={"step": step, "sync": sync}, num_threads=threads
            )
            return timer.blocked_autorange(min_run_time=args.run_time_s).median

        ours_s, theirs_s = [], []
        for round_index in range(args.rounds):
            order = (ours, theirs) if round_index % 2 == 0 else (theirs, ours)
            for tool in order:
                (ours_s if tool is ours else theirs_s).append(tool())
        ratio = float(np.median(ours_s) / np.median(theirs_s))
        ratios.append(ratio)
        print(f"{d_model:>7} {n_layers:>8} {batch_size:>5} {np.median(ours_s) * 1e3:>12.4f} "
              f"{np.median(theirs_s) * 1e3:>9.4f} {ratio:>6.3f}")
    inside = all(0.95 <= r <= 1.05 for r in ratios)
    print(f"ratio range {min(ratios):.3f}–{max(ratios):.3f}: {'PASS' if inside else 'FAIL'} (bar 0.95–1.05)")
    return 0 if inside else 1


if __name__ == "__main__":
    sys.exit(main())
