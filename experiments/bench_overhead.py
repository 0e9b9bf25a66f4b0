"""Eager vs torch.compile, and forward vs training step, at DESIGN's anchor sizes.

For d_model=128, n_layers in (16, 128), batch 1 (and the batch sizes given), measures eager and
compiled latency, compile time, forward and train latency, and prints the ratios. On CUDA it adds CUDA
graphs, kernels per step and the GPU busy fraction (summed kernel time / wall time).

    python experiments/bench_overhead.py [--device cpu] [--batch-sizes 1]
"""

from __future__ import annotations

import argparse
import math
import sys

import torch

from crossover.measurement.toy_step import Config, measure
from crossover.measurement.timer import TimerOptions


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    parser.add_argument("--d-model", type=int, default=128)
    parser.add_argument("--n-layers", type=int, nargs="+", default=[16, 128])
    parser.add_argument("--batch-sizes", type=int, nargs="+", default=[1])
    parser.add_argument("--run-time-s", type=float, default=1.0, help="time budget per point")
    args = parser.parse_args(argv)
    if args.device == "cuda" and not torch.cuda.is_available():
        print("bench_overhead: error: CUDA is not available", file=sys.stderr)
        return 2
    options = TimerOptions(warmup_s=0.2, min_run_time_s=args.run_time_s / 2, max_run_time_s=args.run_time_s)
    modes = ["eager", "compile"] + (["cudagraph"] if args.device == "cuda" else [])
    print(f"device={args.device} threads={torch.get_num_threads()} torch={torch.__version__}")
    header = (f"{'n_layers':>8} {'batch':>5} {'workload':>8} {'mode':>9} {'median_ms':>10} {'iqr_ms':>8} "
              f"{'us/layer':>8} {'compile_s':>9} {'ops/step':>8} {'kern/step':>9} {'busy':>5}")
    print(header)
    medians, compile_times = {}, {}
    for n_layers in args.n_layers:
        for batch_size in args.batch_sizes:
            for workload in ("forward", "train"):
                for mode in modes:
                    config = Config(d_model=args.d_model, n_layers=n_layers, batch_size=batch_size,
                                    device=args.device, workload=workload, mode=mode)
                    m = measure(config, options, profile=True)
                    t = m.timing
                    medians[(n_layers, batch_size, workload, mode)] = t.median_s
                    compile_times[(n_layers, batch_size, workload, mode)] = m.compile_s
                    busy = m.device_busy_s / t.median_s  # summed kernel time / wall time (NaN on CPU)
                    print(f"{n_layers:>8} {batch_size:>5} {workload:>8} {mode:>9} {t.median_s * 1e3:>10.4f} "
                          f"{t.iqr_s * 1e3:>8.4f} {t.median_s / n_layers * 1e6:>8.2f} {m.compile_s:>9.2f} "
                          f"{m.ops_per_step:>8.0f} {m.kernels_per_step:>9.0f} {busy:>5.0%}", flush=True)
    print("\nratios")
    for n_layers in args.n_layers:
        for batch_size in args.batch_sizes:
            key = (n_layers, batch_size)
            for mode in modes[1:]:
                print(f"n_layers={n_layers} batch={batch_size}: eager/{mode} forward "
                      f"{medians[key + ('forward', 'eager')] / medians[key + ('forward', mode)]:.2f}x, "
                      f"train {medians[key + ('train', 'eager')] / medians[key + ('train', mode)]:.2f}x")
                for workload in ("forward", "train"):
                    saved_s = medians[key + (workload, "eager")] - medians[key + (workload, mode)]
                    setup_s = compile_times[key + (workload, mode)]
                    calls = f"{setup_s / saved_s:,.0f} calls" if saved_s > 0 else "never (no faster)"
                    print(f"    {workload}: {mode} costs {setup_s:.2f} s once, repaid after {calls}")
            print(f"n_layers={n_layers} batch={batch_size}: train/forward (eager) "
                  f"{medians[key + ('train', 'eager')] / medians[key + ('forward', 'eager')]:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
