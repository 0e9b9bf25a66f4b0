"""How a CPU's oneDNN convolution's time moves with its channels: 1×1, 3×3 and 5×5 convolutions into 32
channels over 64 images of 32 × 32 for 1 to 32 input channels, then 3×3 ones from 16 channels into 1 to 32,
each alone (allocator settled, the 10th percentile over blocks of calls).

    python experiments/bench_onednn_channels.py [--threads 1]

A time that stays flat over a range of input channels is oneDNN computing whole blocks of them
(:func:`crossover.opcost.conv_primitives.onednn_kn`); one that grows with each channel, a first layer's
kernel reading its few plain input channels as they are. Run it on a quiet machine (about 30 s).
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

INPUT_CHANNELS = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32)


def p10_us(call, per_block: int = 20, blocks: int = 11) -> float:
    """10th percentile over ``blocks`` of the µs per call of ``call`` repeated ``per_block`` times."""
    for _ in range(5):
        call()
    times = []
    for _ in range(blocks):
        start = time.perf_counter()
        for _ in range(per_block):
            call()
        times.append((time.perf_counter() - start) / per_block)
    return float(np.quantile(times, 0.1)) * 1e6


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)
    import torch

    from crossover.measurement.allocator import settle_allocator

    settle_allocator()
    torch.set_num_threads(args.threads)
    print(f"Conv2d(C_in, 32, k) over 64 images of 32 x 32, {torch.get_num_threads()} threads: µs alone per C_in")
    for k in (1, 3, 5):
        cells = []
        for c_in in INPUT_CHANNELS:
            x, w, b = torch.randn(64, c_in, 32, 32), torch.randn(32, c_in, k, k), torch.randn(32)
            cells.append(f"{c_in}:{p10_us(lambda: torch.conv2d(x, w, b, 1, k // 2)):.0f}")
        print(f"k={k}: " + " ".join(cells))
    print("Conv2d(16, C_out, 3) over 64 images of 32 x 32: µs alone per C_out")
    cells = []
    for c_out in (1, 2, 4, 8, 16, 32):
        x, w, b = torch.randn(64, 16, 32, 32), torch.randn(c_out, 16, 3, 3), torch.randn(c_out)
        cells.append(f"{c_out}:{p10_us(lambda: torch.conv2d(x, w, b, 1, 1)):.0f}")
    print("k=3: " + " ".join(cells))
    return 0


if __name__ == "__main__":
    sys.exit(main())
