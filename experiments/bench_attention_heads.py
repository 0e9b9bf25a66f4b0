"""Scaled-dot-product attention on a CPU: is a call's time its (batch, head) pairs times one pair's, and how
far does a curve over the call's total FLOPs read it?

    python experiments/bench_attention_heads.py [--profile experiments/profiles/amd-epyc-2c] [--threads N]

Times ``F.scaled_dot_product_attention`` forward (no grad) and forward + backward (``autograd.grad``) over
self-attention shapes ``(batch, heads, length, head size)``: short and long sequences, heads of 16 to 64
features, 4 to 2048 pairs. Prints each call's time, its time per pair against the pair's FLOPs, the
profile's FLOP curve's reading of the forward call (``attention``) and the backward's ratio to the forward.
What ``crossover/opcost/attention_heads.py`` models. Each time is the second-quickest of ``--repeats``
blocks of back-to-back calls (``block_timing.block_mean_us``). Run it on a quiet machine.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from block_timing import block_mean_us

SHAPES = ((1, 4, 16, 64), (8, 4, 16, 64), (64, 4, 16, 64), (512, 4, 16, 64), (1, 4, 64, 64), (8, 4, 64, 64),
          (64, 4, 256, 64), (1, 4, 16, 16), (8, 4, 16, 16), (64, 4, 16, 16), (512, 4, 16, 16), (64, 4, 64, 16),
          (64, 8, 16, 32))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=0, help="intra-op threads (default: the profile's)")
    parser.add_argument("--repeats", type=int, default=5, help="blocks timed per call (default 5)")
    parser.add_argument("--profile", default=str(Path(__file__).resolve().parent / "profiles" / "amd-epyc-2c"),
                        help="the profile whose FLOP curve reads the forward calls")
    args = parser.parse_args(argv)
    import torch
    import torch.nn.functional as F

    from crossover.opcost.op_costs import attention_flops
    from crossover.opcost.profiles import load_profile

    profile = load_profile(args.profile)
    torch.set_num_threads(args.threads or profile.threads or 1)
    curve = profile.curves["attention"]
    print(f"{torch.get_num_threads()} threads; µs (second-quickest of {args.repeats} blocks); FLOP curve of "
          f"{Path(args.profile).name}")
    print("shape (B, H, L, E)     pairs  FLOPs/pair   forward  per pair  FLOP curve  curve/measured  fwd+bwd  bwd/fwd")
    for b, h, length, size in SHAPES:
        q, k, v = (torch.randn(b, h, length, size) for _ in range(3))
        calls = max(3, 4000 // (b * h))
        with torch.no_grad():
            forward = block_mean_us(lambda: F.scaled_dot_product_attention(q, k, v), calls, blocks=args.repeats, warmup=2)
        qg, kg, vg = (t.clone().requires_grad_() for t in (q, k, v))
        grad = torch.randn_like(q)
        both = block_mean_us(lambda: torch.autograd.grad(F.scaled_dot_product_attention(qg, kg, vg), (qg, kg, vg), grad),
                             max(3, calls // 2), blocks=args.repeats, warmup=2)
        flops = attention_flops("sdpa", (q.shape, k.shape, v.shape))
        pairs = b * h
        read = curve(flops) * 1e6
        print(f"{str((b, h, length, size)):20s} {pairs:6d} {flops / pairs:11.3g} {forward:9.1f} {forward / pairs:9.3f}"
              f" {read:11.1f} {read / forward:15.2f} {both:8.1f} {(both - forward) / forward:8.2f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
