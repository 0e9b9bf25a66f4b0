"""Does CPU work in the same process slow a CUDA step's launches? Prints CUDA medians per condition.

A sweep that measures a GPU and its host CPU in one process alternates between them. This times one
launch-bound CUDA step (eager, d_model=128, 128 layers, batch 1: 384 kernels of a few µs) under
conditions interleaved in rounds, so drift hits all alike:

- ``alone``: nothing else ran in this round;
- ``after_cpu``: straight after ``--burst-s`` of a multi-threaded CPU step (all threads);
- ``after_cpu_idle``: the same, then ``--idle-s`` of sleep before timing (OpenMP workers that spin
  after a parallel region have gone to sleep by then);
- ``after_cpu_1thread``: straight after the same CPU work on one thread.

    python experiments/bench_interference.py [--rounds 5] [--burst-s 1.0]
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np
import torch

from crossover.measurement.toy_step import Config, make_step
from crossover.measurement.timer import TimerOptions, time_step


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--burst-s", type=float, default=1.0, help="CPU work before a condition (default 1.0)")
    parser.add_argument("--idle-s", type=float, default=1.0, help="sleep for after_cpu_idle (default 1.0)")
    parser.add_argument("--run-time-s", type=float, default=0.3, help="CUDA timing per condition (default 0.3)")
    args = parser.parse_args(argv)
    if not torch.cuda.is_available():
        print("bench_interference: error: CUDA is not available", file=sys.stderr)
        return 2

    threads = torch.get_num_threads()
    cuda_step = make_step(Config(d_model=128, n_layers=128, batch_size=1, device="cuda"))
    cpu_step = make_step(Config(d_model=1024, n_layers=8, batch_size=256, device="cpu"))
    options = TimerOptions(min_run_time_s=args.run_time_s, max_run_time_s=args.run_time_s)

    def cuda_ms() -> float:
        return time_step(cuda_step, options, sync=torch.cuda.synchronize).median_s * 1e3

    def burst(n_threads: int) -> None:
        torch.set_num_threads(n_threads)
        end = time.perf_counter() + args.burst_s
        while time.perf_counter() < end:
            cpu_step()
        torch.set_num_threads(threads)

    conditions = {
        "alone": lambda: None,
        "after_cpu": lambda: burst(threads),
        "after_cpu_idle": lambda: (burst(threads), time.sleep(args.idle_s)),
        "after_cpu_1thread": lambda: burst(1),
    }
    results = {name: [] for name in conditions}
    names = list(conditions)
    for round_index in range(args.rounds):
        order = names if round_index % 2 == 0 else names[::-1]
        for name in order:
            conditions[name]()
            results[name].append(cuda_ms())

    print(f"cuda={torch.cuda.get_device_name(0)} host_threads={threads} torch={torch.__version__} rounds={args.rounds}")
    print(f"{'condition':>18} {'median_ms':>9} {'min_ms':>7} {'max_ms':>7} {'vs_alone':>8}")
    alone = float(np.median(results["alone"]))
    for name in names:
        values = np.array(results[name])
        print(f"{name:>18} {np.median(values):9.3f} {values.min():7.3f} {values.max():7.3f} {np.median(values) / alone:7.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
