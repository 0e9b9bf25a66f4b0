"""The ``crossover peaks`` subcommand: a device's measured peaks, stored beside its results."""

from __future__ import annotations

from pathlib import Path

from .args import UsageError, comma_list, print_json

__all__ = ["add_peaks"]


def add_peaks(sub) -> None:
    """Register ``crossover peaks``."""
    p = sub.add_parser(
        "peaks",
        help="measure a device's peak bandwidth and FLOP rate; fits are checked against them",
        description=(
            "Measure what each device can reach: the streaming bandwidth of a 256 MiB copy (out of "
            "cache), the bandwidth of a 256 KiB copy (in cache), the best FLOP rate of square fp32 "
            "matrix products and the cost of a 1-element add (fastest repeat of each, ~10 s on a "
            "2-core CPU). With --out DIR they are stored as DIR/peaks.json, and `crossover fit` and "
            "`predict` flag any fitted bandwidth or compute rate of DIR's results above them (a GPU "
            "measured without peaks.json is checked against its spec sheet where crossover knows it)."
        ),
        epilog="example: crossover peaks --out results/local",
    )
    p.add_argument("--machine", help="machine label (default: from the CPU/GPU name, as sweep labels rows)")
    p.add_argument("--devices", default="cpu", help="comma-separated devices (default cpu), e.g. cpu,cuda")
    p.add_argument("--out", type=Path, help="results directory to store peaks.json in (merged with what is there)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=_cmd_peaks)


def _cmd_peaks(args) -> int:
    from ..env import machine_label
    from ..peaks import measure_peaks, read_peaks, write_peaks

    devices = comma_list(args.devices)
    if any(d.startswith("cuda") for d in devices):
        import torch

        if not torch.cuda.is_available():
            raise UsageError("--devices cuda: CUDA is not available on this machine")
    if args.out is not None and args.out.exists() and not args.out.is_dir():
        raise UsageError(f"--out {args.out} is not a directory")
    gpu_sizes, cpu_sizes = (256, 512, 1024, 2048, 4096), (256, 512, 1024)
    peaks = {d: measure_peaks(d, gemm_sizes=gpu_sizes if d.startswith("cuda") else cpu_sizes) for d in devices}
    machine = args.machine or machine_label()
    if args.out is not None:
        before = read_peaks(args.out)
        stored = before.get("devices", {}) if before.get("machine") == machine else {}
        write_peaks(args.out, machine, {**stored, **peaks})
    if args.json:
        print_json({"machine": machine, "peaks": peaks,
                    "out": None if args.out is None else str(args.out)})
        return 0
    for device, p in peaks.items():
        print(f"{device} ({p['threads']} threads): streaming {p['dram_bytes_per_s'] / 1e9:.1f} GB/s, in cache "
              f"{p['cache_bytes_per_s'] / 1e9:.1f} GB/s (bytes read + written per second of a copy), "
              f"matrix products {p['flops_per_s'] / 1e9:.1f} GFLOP/s, a tiny op {p['dispatch_s'] * 1e6:.2f} µs")
    if args.out is not None:
        print(f"stored in {args.out / 'peaks.json'}")
    return 0
