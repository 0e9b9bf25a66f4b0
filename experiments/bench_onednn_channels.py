"""How a CPU's oneDNN convolution's time moves with its channels: 1×1, 3×3 and 5×5 convolutions into 32
channels over 64 images of 32 × 32 for 1 to 32 input channels, then 3×3 ones from 16 channels into 1 to 32,
each alone (allocator settled, the second-quickest of 11 blocks of 20 calls: ``block_timing``).

    python experiments/bench_onednn_channels.py [--threads 1]

A time that stays flat over a range of input channels is oneDNN computing whole blocks of them
(:func:`crossover.opcost.conv_primitives.onednn_kn`); one that grows with each channel, a first layer's
kernel reading its few plain input channels as they are. Run it on a quiet machine (about 30 s).
"""

from __future__ import annotations

import argparse
import sys

from block_timing import block_mean_us

INPUT_CHANNELS = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32)


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
            cells.append(f"{c_in}:{block_mean_us(lambda: torch.conv2d(x, w, b, 1, k // 2), 20, 11, 5):.0f}")
        print(f"k={k}: " + " ".join(cells))
    print("Conv2d(16, C_out, 3) over 64 images of 32 x 32: µs alone per C_out")
    cells = []
    for c_out in (1, 2, 4, 8, 16, 32):
        x, w, b = torch.randn(64, 16, 32, 32), torch.randn(c_out, 16, 3, 3), torch.randn(c_out)
        cells.append(f"{c_out}:{block_mean_us(lambda: torch.conv2d(x, w, b, 1, 1), 20, 11, 5):.0f}")
    print("k=3: " + " ".join(cells))
    return 0


if __name__ == "__main__":
    sys.exit(main())
