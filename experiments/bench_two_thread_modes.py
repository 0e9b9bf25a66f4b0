"""What changes when this VM's 2-thread steps turn slow: the calibration's reference MLP training step
(batch 1) timed in windows, each beside a serial Python loop timed with the OpenMP worker spinning (just
after a parallel op) and asleep (after 20 ms idle).

    python experiments/bench_two_thread_modes.py [--windows 30] [--threads 2]

At 2 threads the step reads ~157 µs or ~265 µs, one or the other for seconds at a time. If the serial loop
slowed with it, the spinning worker would be taking the main thread's core (a hyperthread sibling); if
not, the slow mode lies in the threads' hand-offs (each parallel region's fork and join). Run it on a
quiet machine.
"""

from __future__ import annotations

import argparse
import sys
import time


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--windows", type=int, default=30)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args(argv)
    import numpy as np
    import torch

    from crossover.measurement.allocator import settle_allocator
    from crossover.measurement.module_rounds import example_input, make_module_step
    from crossover.opcost.calibration_plan import REFERENCE_MODELS, reference_model

    settle_allocator()
    torch.set_num_threads(args.threads)
    step = make_module_step(reference_model("mlp"), example_input(REFERENCE_MODELS["mlp"], 1), "train")
    big = torch.randn(1 << 18)
    out = torch.empty_like(big)

    def serial() -> float:
        start, x = time.perf_counter_ns(), 0
        for i in range(3000):
            x += i * i
        return (time.perf_counter_ns() - start) / 1e3

    for _ in range(args.windows):
        steps = []
        for _ in range(200):
            start = time.perf_counter()
            step()
            steps.append(time.perf_counter() - start)
        spinning, asleep = [], []
        for _ in range(15):
            torch.add(big, 1.0, out=out)  # a parallel region: the worker spins after it
            spinning.append(serial())
            time.sleep(0.02)  # past the spin window: the worker sleeps
            asleep.append(serial())
        print(f"{time.strftime('%H:%M:%S')} step {np.median(steps) * 1e6:5.0f} µs   serial loop: worker spinning "
              f"{np.median(spinning):6.1f} µs, asleep {np.median(asleep):6.1f} µs", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
