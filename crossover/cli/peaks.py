"""The ``crossover peaks`` subcommand: a device's measured peaks, stored beside its results."""

from __future__ import annotations

from pathlib import Path

from .args import UsageError, add_device, comma_list, print_json
from .output import add_format, print_tables, wants_table
from ..jsonable import schema_tag
from ..units import format_quantity, format_seconds

__all__ = ["add_peaks", "PEAKS_SCHEMA"]

#: The layout of ``crossover peaks --json``.
PEAKS_SCHEMA = schema_tag("peaks", 1)


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
    add_device(p, several=True, help="comma-separated devices, e.g. cpu,cuda (default cpu)")
    p.add_argument("--out", type=Path, metavar="DIR",
                   help="results directory to store peaks.json in (merged with what is there)")
    p.add_argument("--smoke", action="store_true",
                   help="a few seconds, to check an installation (a 64 MiB copy, products of 128 and 512, "
                        "0.05 s each): lower than the full measurement")
    add_format(p)
    p.set_defaults(func=_cmd_peaks)


def _cmd_peaks(args) -> int:
    from ..measurement.environment import machine_label
    from ..fit.peaks import measure_peaks, read_peaks, write_peaks

    devices = comma_list(args.device)
    from ..measurement.environment import require_device

    for device in devices:
        require_device(device)
    if args.out is not None and args.out.exists() and not args.out.is_dir():
        raise UsageError(f"--out {args.out} is not a directory")
    gpu_sizes, cpu_sizes = (256, 512, 1024, 2048, 4096), (256, 512, 1024)
    options = {}
    if args.smoke:
        gpu_sizes = cpu_sizes = (128, 512)
        options = dict(stream_bytes=64 * 2**20, max_run_time_s=0.05)
    peaks = {d: measure_peaks(d, gemm_sizes=gpu_sizes if d.startswith("cuda") else cpu_sizes, **options)
             for d in devices}
    machine = args.machine or machine_label()
    if args.out is not None:
        before = read_peaks(args.out)
        stored = before.get("devices", {}) if before.get("machine") == machine else {}
        write_peaks(args.out, machine, {**stored, **peaks})
    if args.json:
        print_json({"machine": machine, "peaks": peaks,
                    "out": None if args.out is None else str(args.out)}, PEAKS_SCHEMA)
        return 0
    if wants_table(args):
        print_tables({"peaks": [dict(machine=machine, device=device, **p) for device, p in peaks.items()]},
                     args.format)
        return 0
    for device, p in peaks.items():
        print(f"{device} ({p['threads']} threads): streaming {format_quantity(p['dram_bytes_per_s'], 'B/s')}, "
              f"in cache {format_quantity(p['cache_bytes_per_s'], 'B/s')} (bytes read + written per second of a "
              f"copy), matrix products {format_quantity(p['flops_per_s'], 'FLOP/s')}, a tiny op "
              f"{format_seconds(p['dispatch_s'])}")
    if args.out is not None:
        print(f"stored in {args.out / 'peaks.json'}")
    return 0
