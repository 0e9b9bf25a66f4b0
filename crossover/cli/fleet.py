"""``crossover fleet``: measure many machines with submitit (SLURM, or this machine one job at a time),
list the jobs, start the failed ones again, compare the nodes of a kind and price each kind.

Parsing and formatting only: the work is :mod:`crossover.measurement.fleet` (jobs, status,
resubmission, node comparison) and :mod:`crossover.analysis.fleet_cost` (cost per batch size).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from .args import (BOOTSTRAP_STATISTIC_NOTE, STATISTIC_HELP, UsageError, add_device, add_statistic, comma_list,
                   non_negative_int, positive_int, positive_int_list, print_json)
from .output import add_format, print_tables, wants_table
from ..jsonable import schema_tag
from ..units import format_seconds

__all__ = ["add_fleet", "FLEET_STATUS_SCHEMA", "FLEET_COMPARE_SCHEMA", "FLEET_COST_SCHEMA"]

#: The layouts of ``crossover fleet status --json``, ``fleet compare --json`` and ``fleet cost --json``.
FLEET_STATUS_SCHEMA = schema_tag("fleet_status", 1)
FLEET_COMPARE_SCHEMA = schema_tag("fleet_compare", 1)
FLEET_COST_SCHEMA = schema_tag("fleet_cost", 1)


def add_fleet(sub) -> None:
    """Register ``crossover fleet`` and its commands."""
    p = sub.add_parser(
        "fleet",
        help="measure a suite on many nodes with submitit (SLURM job arrays, or locally), then merge them",
        description=(
            "One job per target (a SLURM partition or node kind, from a targets TOML) or per shard of the "
            "suite (--shards N identical nodes), each on a node of its own: environment with host name and "
            "hardware fingerprint, machine check, calibration of each device, noise floor, peaks, then the "
            "suite or its shard into DIR/<machine>/<job id>/. Every node measures the suite's default point "
            "(its drift reference) as the anchor the nodes are put on one scale by. 'fit', 'predict' and "
            "'figures' read DIR like any results. Needs submitit: pip install 'crossover[cluster]'."
        ),
        epilog="example: crossover fleet run experiments/suites/quick.toml --out results/fleet --executor slurm "
               "--targets targets.toml",
    )
    commands = p.add_subparsers(dest="fleet_command", metavar="COMMAND", parser_class=type(p))
    commands.required = True

    run = commands.add_parser("run", help="submit a new fleet's jobs",
                              description="Submit one job per target (or per shard): SLURM job arrays return at "
                                          "once; the local executor runs the jobs one after another (two timings "
                                          "at once on one machine spoil both), the debug executor in this process.")
    run.add_argument("suite", type=Path, help="suite file, e.g. experiments/suites/quick.toml")
    run.add_argument("--out", type=Path, required=True, help="the fleet's directory (on SLURM: shared with the nodes)")
    run.add_argument("--executor", choices=("slurm", "local", "debug"), default="slurm",
                     help="slurm (default), local (subprocesses of this machine, one at a time) or debug (in process)")
    run.add_argument("--targets", type=Path, help="targets TOML: [[target]] name, partition, gpus, cpus, "
                                                 "time_limit_min, mem_gb, usd_per_hour, source, slurm_* keys")
    run.add_argument("--shards", type=positive_int, default=1,
                     help="jobs per target, each measuring a shard of the suite's points (default 1: all of them)")
    run.add_argument("--plan", choices=("quick", "smoke"), default="quick",
                     help="each job's calibration, noise floor and peaks: quick (a few minutes) or smoke (seconds, "
                          "to check an installation)")
    add_device(run, default=None, several=True,
               help="comma-separated subset of the suite's devices (default: what each node has)")
    run.add_argument("--strict", action="store_true", help="a busy node fails its job, and stops its sweep")
    run.add_argument("--dry-run", action="store_true", help="list the jobs and their submitit parameters; submit nothing")
    run.set_defaults(func=_cmd_run)

    status = commands.add_parser("status", help="list the fleet's jobs: done, running, pending, failed, preempted, "
                                                "missing; rows written")
    status.add_argument("dir", type=Path, help="the fleet's directory")
    add_format(status)
    status.set_defaults(func=_cmd_status)

    again = commands.add_parser("resubmit", help="submit the failed, preempted and missing jobs again (they resume)")
    again.add_argument("dir", type=Path, help="the fleet's directory")
    again.set_defaults(func=_cmd_resubmit)

    compare = commands.add_parser("compare", help="compare the nodes of each machine kind, beyond their noise",
                                  description="Each node of a machine kind against the kind's first node, on the "
                                              "anchor and every point both measured (as crossover compare, unscaled), "
                                              "each pair judged against the larger of the two nodes' noise floors.")
    compare.add_argument("dir", type=Path, nargs="+", help="a fleet's directory, or several results directories")
    add_statistic(compare, help=STATISTIC_HELP + BOOTSTRAP_STATISTIC_NOTE)
    compare.add_argument("--n-boot", type=positive_int, default=1000, help="bootstrap resamples (default 1000)")
    add_format(compare)
    compare.set_defaults(func=_cmd_compare)

    cost = commands.add_parser("cost", help="each machine kind's latency and cost per million samples, the cheapest "
                                            "per batch size (prices from the targets)")
    cost.add_argument("dir", type=Path, help="the fleet's directory")
    cost.add_argument("--d-model", type=positive_int, required=True, help="layer width")
    cost.add_argument("--n-layers", type=positive_int, required=True, help="residual blocks")
    cost.add_argument("--batch-size", type=positive_int_list, required=True, help="batch sizes, e.g. 1,8,64,512")
    cost.add_argument("--price", action="append", default=[], metavar="MACHINE=USD_PER_HOUR",
                      help="a machine kind's price per hour, over its target's (repeat for several)")
    cost.add_argument("--n-boot", type=non_negative_int, default=100, help="bootstrap resamples (default 100)")
    add_format(cost)
    cost.set_defaults(func=_cmd_cost)


def _cmd_run(args) -> int:
    from ..measurement.fleet import plan_fleet, submit
    from ..measurement.fleet_targets import executor_parameters

    options = dict(executor=args.executor, targets_path=args.targets, shards=args.shards, plan=args.plan,
                   devices=comma_list(args.device), strict=args.strict)
    if args.dry_run:
        from ..measurement.fleet import fleet_targets

        fleet = plan_fleet(args.suite, args.out, dry_run=True, **options)
        targets = fleet_targets(fleet)
        for job in fleet["jobs"]:
            shard = f"shard {job['shard'][0] + 1}/{job['shard'][1]}" if job["shard"] else "the whole suite"
            parameters = executor_parameters(targets[job["target"]])
            print(f"{job['key']}: {shard} of {fleet['suite_name']}, plan {fleet['plan']}; submitit parameters "
                  f"{json.dumps(parameters, sort_keys=True)}")
        print(f"{len(fleet['jobs'])} jobs ({args.executor} executor); nothing submitted (--dry-run)")
        return 0
    plan_fleet(args.suite, args.out, **options)
    results = submit(args.out)
    _print_outcome(results, args.out, args.executor)
    return 0


def _print_outcome(results: list, fleet_dir: Path, executor: str) -> None:
    done = sum(r["state"] == "done" for r in results)
    if executor == "slurm":
        print(f"{len(results)} jobs submitted; follow them with: crossover fleet status {fleet_dir}")
        return
    print(f"{done} of {len(results)} jobs done -> {fleet_dir}")
    if done < len(results):
        print(f"see crossover fleet status {fleet_dir}; complete them with crossover fleet resubmit {fleet_dir}")


def _cmd_status(args) -> int:
    from ..measurement.fleet import fleet_status, read_fleet

    fleet = read_fleet(args.dir)
    rows = fleet_status(args.dir)
    if args.json:
        print_json({"fleet": str(args.dir), "executor": fleet["executor"], "suite": fleet["suite_name"], "jobs": rows},
                   FLEET_STATUS_SCHEMA)
        return 0
    if wants_table(args):
        print_tables({"jobs": rows}, args.format)
        return 0
    print(f"fleet {args.dir}: suite {fleet['suite_name']}, {fleet['executor']} executor, plan {fleet['plan']}, "
          f"{len(rows)} jobs")
    width = max(len(r["key"]) for r in rows)
    for r in rows:
        planned = f"/{r['planned']}" if r["planned"] else ""
        where = f"{r['machine']}/{Path(r['job_dir']).name} on {r['host']}" if r["job_dir"] else "-"
        line = (f"  {r['key']:<{width}}  {r['state']:<9} rows {r['rows']}{planned:<6} job {r['job_id'] or '-'} "
                f"(attempts {r['attempts']})  {where}")
        if r["state"] != "done" and r["step"]:
            line += f"  at step {r['step']}"
        if r["detail"] and r["state"] != "done":
            line += f"  [{r['detail'].splitlines()[0][:160]}]"
        print(line)
    counts = {}
    for r in rows:
        counts[r["state"]] = counts.get(r["state"], 0) + 1
    print(", ".join(f"{n} {state}" for state, n in counts.items()))
    return 0


def _cmd_resubmit(args) -> int:
    from ..measurement.fleet import read_fleet, resubmit

    fleet = read_fleet(args.dir)
    results = resubmit(args.dir)
    if not results:
        print(f"nothing to resubmit: every job of {args.dir} is done, running or pending")
        return 0
    _print_outcome(results, args.dir, fleet["executor"])
    return 0


def _cmd_compare(args) -> int:
    from ..measurement.fleet import compare_fleet_nodes

    table = compare_fleet_nodes(args.dir, statistic=args.statistic, n_boot=args.n_boot)
    if args.json:
        print_json({"dirs": [str(d) for d in args.dir], "statistic": args.statistic,
                    "points": table.to_dict("records")},
                   FLEET_COMPARE_SCHEMA)
        return 0
    if wants_table(args):
        print_tables({"points": table}, args.format)
        return 0
    if table.empty:
        print("no machine kind has two nodes with a point in common: nothing to compare")
        return 0
    for (machine, a, b), rows in table.groupby(["machine", "node_a", "node_b"], sort=False):
        differ = rows[rows["verdict"] != "same"]
        anchor = rows[rows["anchor"]]
        print(f"{machine}: {_short(b)} against {_short(a)} ({args.statistic}; their noise floor {rows['threshold'].iloc[0]:.1%})")
        for r in rows.itertuples():
            what = "anchor" if r.anchor else "point "
            print(f"  {what} {r.device} d={r.d_model} L={r.n_layers} B={r.batch_size}: {format_seconds(r.a_s)} -> "
                  f"{format_seconds(r.b_s)}, ratio {r.ratio:.3f} [{r.low:.3f}, {r.high:.3f}] {r.verdict}")
        verdict = f"differ beyond their noise on {len(differ)} of {len(rows)} points" if len(differ) else \
            f"are the same within their noise on {'the' if len(rows) == 1 else f'all {len(rows)}'} point{'s' if len(rows) > 1 else ''} compared"
        print(f"  -> the nodes {verdict}" + ("" if len(anchor) else " (no anchor in common)"))
    return 0


def _short(path: str) -> str:
    return "/".join(Path(path).parts[-2:])


def _prices(args) -> dict:
    from ..measurement.fleet import fleet_prices

    prices = fleet_prices(args.dir)
    for item in args.price:
        machine, _, value = item.partition("=")
        try:
            usd = float(value)
        except ValueError:
            usd = float("nan")
        if not machine or not usd > 0:
            raise UsageError(f"--price takes MACHINE=USD_PER_HOUR with a positive price, got {item!r}")
        prices[machine] = {"usd_per_hour": usd, "source": "--price on the command line", "target": None}
    return prices


def _cmd_cost(args) -> int:
    from ..analysis.decision import cheapest_per_batch

    prices = _prices(args)
    table, warnings = cheapest_per_batch([args.dir], prices, d_model=args.d_model, n_layers=args.n_layers,
                                         batch_sizes=args.batch_size, n_boot=args.n_boot)
    for warning in warnings:
        print(f"crossover: warning: {warning}", file=sys.stderr)
    if args.json:
        print_json({"fleet": str(args.dir), "d_model": args.d_model, "n_layers": args.n_layers, "prices": prices,
                    "rows": table.to_dict("records")}, FLEET_COST_SCHEMA)
        return 0
    if wants_table(args):
        print_tables({"rows": table}, args.format)
        return 0
    print(f"d_model={args.d_model} n_layers={args.n_layers}: latency per batch and USD per million samples")
    for batch, rows in table.groupby("batch_size", sort=True):
        for r in rows.itertuples():
            mark = "  <- cheapest" if r.cheapest else ""
            print(f"  batch {batch:<6} {r.series:<36} {format_seconds(r.latency_s):>9}  "
                  f"${r.usd_per_million:,.4g} per million [{r.usd_per_million_low:,.4g}, {r.usd_per_million_high:,.4g}]"
                  f" at ${r.usd_per_hour:g}/h" + (" (extrapolated)" if r.extrapolated else "") + mark)
    for machine, price in sorted(prices.items()):
        print(f"price of {machine}: ${price['usd_per_hour']:g}/h ({price['source']})")
    return 0
