"""Which pooling kernel a model's forward pass pays for, per byte: the numbers behind
``crossover/opcost/layer_primitives.py``.

    python experiments/bench_pool_kernels.py

Times, at 1 and 2 threads and three sizes (the 10th percentile of 30 calls each): the 2×2 max-pooling
with indices the calibration's ``pool`` curve measures, ``F.max_pool1d`` without indices (what
``nn.MaxPool1d`` runs on a CPU without autograd), adaptive max-pooling to one output (``nn.AdaptiveMaxPool1d(1)``),
``amax`` and ``relu`` over the same bytes. Run it on a quiet machine.
"""

import time

import torch
import torch.nn.functional as F


def p10_s(step, calls: int = 30) -> float:
    for _ in range(5):
        step()
    times = []
    for _ in range(calls):
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
    return sorted(times)[calls // 10]


def main() -> None:
    for threads in (1, 2):
        torch.set_num_threads(threads)
        for elements in (2**16, 2**19, 2**21):
            images = torch.randn(1, elements // 1024, 32, 32)
            rows = torch.randn(elements // (32 * 256), 32, 256)  # batch, channels, length
            steps = {"max_pool2d 2x2 (indices)": lambda: F.max_pool2d(images, 2),
                     "max_pool1d k2": lambda: F.max_pool1d(rows, 2),
                     "adaptive_max_pool1d ->1": lambda: F.adaptive_max_pool1d(rows, 1),
                     "amax": lambda: rows.amax(-1), "relu": lambda: torch.relu(rows)}
            with torch.no_grad():
                timed = {name: p10_s(step) for name, step in steps.items()}
            print(f"{threads} thread(s), {elements * 4 / 2**20:.2f} MiB in: "
                  + ", ".join(f"{name} {seconds * 1e6:.0f} µs" for name, seconds in timed.items()))


if __name__ == "__main__":
    main()
