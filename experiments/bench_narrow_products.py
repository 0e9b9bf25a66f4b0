"""Matrix products with a narrow output (a classifier's head) timed on this CPU beside their predictions.

    python experiments/bench_narrow_products.py --profile DIR [--threads 2]

Each product ``addmm(bias, x, w.t())`` (``x``: M × K, ``w``: N × K, as ``nn.Linear``) is timed in blocks of
back-to-back calls (the second-quickest block's mean) and costed from the calibration profile in ``DIR``
twice: on its square matrix grid at the same ``K·N`` (every profile before the narrow grid) and as a
forward product is costed now (:func:`crossover.opcost.op_costs.op_cost`: the ``matmul_narrow`` grid for
at most 16 outputs where the profile has it). The shapes are the zoo's heads at batch 512 and 8 (MNIST
MLP 128 → 10, LeNet-5 84 → 10, the embedding bag 64 → 4) and a square product for comparison. Run it
on a quiet machine, with the profile calibrated at the same thread count.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

from block_timing import block_mean_us

SHAPES = ((512, 128, 10), (512, 84, 10), (512, 64, 4), (512, 256, 4), (8, 128, 10), (8, 64, 4), (64, 64, 4),
          (512, 64, 64))


def _row(m: int, k: int, n: int) -> dict:
    return dict(op="aten.addmm.default", kind="matmul", phase="forward", input_shapes=[(n,), (m, k), (k, n)],
                output_shapes=[(m, n)], flops=2 * m * k * n, bytes_read=4 * (m * k + k * n + n),
                bytes_written=4 * m * n, launches=1)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--profile", type=Path, required=True, help="a CPU calibration profile directory")
    parser.add_argument("--threads", type=int, default=0, help="intra-op threads (default: torch's default)")
    args = parser.parse_args(argv)

    import torch

    from crossover.opcost.op_costs import op_cost
    from crossover.opcost.profiles import load_profile

    if args.threads:
        torch.set_num_threads(args.threads)
    torch.set_grad_enabled(False)
    profile = load_profile(args.profile)
    square = dataclasses.replace(profile, grids={k: v for k, v in profile.grids.items() if k != "matmul_narrow"})
    print(f"# {torch.get_num_threads()} threads; profile {args.profile} ({profile.threads} threads, "
          f"narrow grid: {'yes' if 'matmul_narrow' in profile.grids else 'no'})")
    print(f"{'M x K -> N':>16} {'measured_us':>12} {'square_us':>10} {'error':>7} {'now_us':>8} {'error':>7}")
    for m, k, n in SHAPES:
        x, w, b = torch.randn(m, k), torch.randn(n, k), torch.randn(n)
        wt = w.t()
        measured = block_mean_us(lambda: torch.addmm(b, x, wt), calls=2000, blocks=7, warmup=100)
        old = op_cost(square, _row(m, k, n)).host_s * 1e6
        new = op_cost(profile, _row(m, k, n)).host_s * 1e6
        print(f"{f'{m} x {k} -> {n}':>16} {measured:>12.1f} {old:>10.1f} {old / measured - 1:>+7.0%} "
              f"{new:>8.1f} {new / measured - 1:>+7.0%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
