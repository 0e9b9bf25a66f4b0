"""oneDNN's channel block on this CPU: 1×1 convolutions of 8, 16 and 32 input channels into 32 over the same
pixels, timed in the same shuffled rounds, against what a grid of the 8- and 32-channel ones costs the 16-channel
one when channels are padded to blocks of 8 (AVX2) or of 16 (AVX-512).

The calibration indexes its oneDNN grids by ``C_in·k·C_out`` with the channels padded to whole blocks
(:func:`crossover.opcost.conv_primitives.onednn_kn`). Padded to 16, the 8-channel cell sits where the 16-channel
convolution does, and the grid costs that one at the 8-channel cell's time; padded to the CPU's own block it is
read between the two cells (log-linear, as the grids interpolate). The process first runs a 3×3 convolution
over 4 MiB of activations, as a model's step would: in a fresh process glibc maps each 1-2 MiB buffer of the
convolution afresh (its threshold rises once a larger block is freed) and the 1×1 convolutions take several
times as long (``--fresh`` leaves the first layer out to show it).

    python experiments/bench_onednn_block.py --threads 1 [--rounds 60] [--fresh]

Run it on a quiet machine.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

#: (batch, input channels, side): the depthwise CNN's pointwise convolution at batch 64, and the
#: calibration's pointwise cells' pixels (256 images of 8 × 8).
SHAPES = ((64, 16), (256, 8))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=60)
    parser.add_argument("--fresh", action="store_true", help="no 3x3 convolution first: the process's allocator as it starts")
    args = parser.parse_args(argv)
    import torch

    from crossover.opcost.conv_primitives import onednn_kn
    from crossover.opcost.short_rows import vector_floats

    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    cases = {}
    for batch, side in SHAPES:
        for c_in in (8, 16, 32):
            cases[(batch, side, c_in)] = (torch.nn.Conv2d(c_in, 32, 1).eval(), torch.randn(batch, c_in, side, side))
    times = {key: [] for key in cases}
    keys = list(cases)
    rng = np.random.default_rng(0)
    with torch.no_grad():
        if not args.fresh:
            torch.nn.Conv2d(3, 16, 3, 1, 1)(torch.randn(64, 3, 32, 32))  # a model's first layer: 4 MiB freed
        for conv, x in cases.values():
            for _ in range(5):
                conv(x)
        for _ in range(args.rounds):
            rng.shuffle(keys)
            for key in keys:
                conv, x = cases[key]
                start = time.perf_counter()
                for _ in range(3):
                    conv(x)
                times[key].append((time.perf_counter() - start) / 3)
    p10 = {key: float(np.quantile(t, 0.1)) * 1e6 for key, t in times.items()}
    print(f"{args.threads} thread(s), {args.rounds} rounds{', fresh' if args.fresh else ''}; this CPU's vectors: {vector_floats()} floats; "
          f"torch {torch.__version__}; 10th percentiles")
    for batch, side in SHAPES:
        row = {c: p10[(batch, side, c)] for c in (8, 16, 32)}
        print(f"{batch} images of {side}x{side}: 8 -> 32 {row[8]:.1f} µs, 16 -> 32 {row[16]:.1f} µs, 32 -> 32 {row[32]:.1f} µs")
        for block in (8, 16):
            kn = {c: onednn_kn(c, 32, 1, block) for c in (8, 16, 32)}
            if kn[8] == kn[16]:
                grid = row[8]
            else:
                grid = float(np.exp(np.interp(np.log(kn[16]), np.log([kn[8], kn[32]]), np.log([row[8], row[32]]))))
            print(f"  blocks of {block:2d}: the grid reads 16 -> 32 at {grid:.1f} µs, {grid / row[16]:.2f} times its time")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
