"""The ``crossover list`` subcommand: what the data hold (:func:`crossover.analysis.inventory.inventory`)."""

from __future__ import annotations

from pathlib import Path

from .args import DEFAULT_RESULTS, print_json
from .output import add_format, print_tables, wants_table

__all__ = ["add_list"]


def add_list(sub) -> None:
    """Register ``crossover list``."""
    p = sub.add_parser(
        "list",
        help="the machines, series, profiles, noise floors and peaks the data hold",
        description="List what the results and profiles hold: each machine (and whether it is this one), its "
                    "series with their points and runs, the calibration profiles found (shipped and beside the "
                    "results), the noise floors and the measured peaks. --format md or csv prints them as tables "
                    "(machines, series, profiles, noise_floors, peaks); --json as one object (schema "
                    "crossover.list).",
        epilog="example: crossover list --results experiments/results results/local",
    )
    p.add_argument("--results", type=Path, nargs="+", default=[DEFAULT_RESULTS], metavar="DIR",
                   help="results directories (default: the shipped reference data)")
    p.add_argument("--profiles", type=Path, nargs="+", metavar="DIR",
                   help="profile directories (default: the shipped ones and those beside the results)")
    add_format(p)
    p.set_defaults(func=_cmd_list)


def _cmd_list(args) -> int:
    from ..analysis.inventory import inventory

    data = inventory(args.results, args.profiles)
    if args.json:
        print_json(data)
        return 0
    if wants_table(args):
        print_tables(_tables(data), args.format)
        return 0
    here = data["this_machine"]
    print(f"this machine: {here}" + ("" if here in data["machines"] else " (not in these results: 'make demo' "
                                                                         "measures it into results/local)"))
    print("machines:")
    for machine, entry in data["machines"].items():
        mark = "  <- this machine" if entry["this_machine"] else ""
        print(f"  {machine}: {', '.join(entry['devices'])}; {len(entry['runs'])} run(s){mark}")
    print("series (machine/device, workload, mode, dtype, threads: points):")
    for s in data["series"]:
        print(f"  {s['machine']}/{s['device']}  {s['workload']} {s['mode']} {s['dtype']} {s['regime']} {s['transfer']} "
              f"threads={s['threads']}: {s['points']} sizes in {len(s['runs'])} run(s)")
    print("profiles:")
    for prof in data["profiles"]:
        if "error" in prof:
            print(f"  {prof['path']}: unreadable")
            continue
        mark = "  <- this machine" if prof["this_machine"] else ""
        print(f"  {prof['machine']}/{prof['device']}  {prof['threads']} threads, {prof['plan']} plan: {prof['path']}{mark}")
    for floor in data["noise_floors"]:
        print(f"noise floor of {floor['machine']} ({(floor['date_utc'] or '')[:10]}): p10 within "
              f"{floor['p10_compute_bound_pct']:.1f}% run to run on compute-bound sizes")
    for machine, devices in data["peaks"].items():
        print(f"peaks of {machine}: {', '.join(sorted(devices))}")
    return 0


def _tables(data: dict) -> dict:
    """``list --format md|csv``: the inventory as five tables."""
    machines = [dict(machine=machine, this_machine=entry["this_machine"], devices=",".join(entry["devices"]),
                     runs=len(entry["runs"])) for machine, entry in data["machines"].items()]
    series = [{**{k: v for k, v in s.items() if k != "runs"}, "runs": len(s["runs"])} for s in data["series"]]
    peaks = [dict(machine=machine, device=device) for machine, devices in data["peaks"].items()
             for device in sorted(devices)]
    return {"machines": machines, "series": series, "profiles": data["profiles"],
            "noise_floors": data["noise_floors"], "peaks": peaks}
