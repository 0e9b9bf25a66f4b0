"""The measuring subcommands: ``crossover measure``, ``sweep``, ``noise`` and ``env``.

Each ``add_*`` registers one subcommand on the top-level parser (see :func:`crossover.cli.build_parser`);
the library modules (torch among them) are imported when a command runs, so ``--help`` stays fast.
"""

from __future__ import annotations

import dataclasses
import math
import sys
from pathlib import Path

from ..axes import DEFAULT_ROUNDS
from ..jsonable import schema_tag
from ..units import format_quantity, format_range, format_seconds
from .args import (UsageError, add_device, comma_list, non_negative_float, non_negative_int, positive_float,
                   positive_int, positive_int_list, print_json, warn)
from .output import add_format, print_tables, wants_table
from .user_model import add_model_options, batch_sizes, cmd_measure_model

__all__ = ["add_measure", "add_sweep", "add_noise", "add_env", "MEASURE_SCHEMA", "NOISE_SCHEMA", "ENV_SCHEMA"]

#: The layouts of ``crossover measure --json`` (the toy; ``--model``: :data:`MEASURE_MODEL_SCHEMA`),
#: ``noise --json`` and ``env --json``.
MEASURE_SCHEMA = schema_tag("measure", 1)
NOISE_SCHEMA = schema_tag("noise", 1)
ENV_SCHEMA = schema_tag("env", 1)


# --------------------------------------------------------------------------------------- measure
def add_measure(sub) -> None:
    """Register ``crossover measure``."""
    from ..axes import DEVICES, DTYPES, MODES, REGIMES, TRANSFERS, WORKLOADS

    p = sub.add_parser(
        "measure",
        help="time one configuration of the toy model, or your own model (--model FILE.py:FACTORY)",
        description="Time one configuration of the residual-MLP toy model and print its statistics.",
        epilog="example: crossover measure --d-model 128 --n-layers 128 --batch-size 1 --device cpu --json",
    )
    p.add_argument("--d-model", type=positive_int, default=128, help="layer width (default 128)")
    p.add_argument("--n-layers", type=positive_int, default=128, help="residual blocks (default 128)")
    p.add_argument("--batch-size", type=positive_int_list, default=(1,),
                   help="samples per step (default 1); with --model a list too, e.g. 1,8,64,512")
    add_device(p, choices=DEVICES, help="where to run (default cpu)")
    p.add_argument("--workload", default="forward", choices=WORKLOADS,
                   help="forward (inference) or train (forward + loss + backward + SGD step)")
    p.add_argument("--mode", default="eager", choices=MODES,
                   help="eager, compile (torch.compile) or cudagraph (CUDA only)")
    p.add_argument("--dtype", default="float32", choices=DTYPES,
                   help="float32, tf32 (CUDA matmuls), bfloat16 or float16 (native)")
    p.add_argument("--transfer", default="device", choices=TRANSFERS,
                   help="input already on the device, or copied from pageable/pinned host memory each step")
    p.add_argument("--regime", default="latency", choices=REGIMES,
                   help="latency: sync after every call; throughput: sync once per block")
    p.add_argument("--threads", type=non_negative_int, default=0,
                   help="CPU intra-op threads (default 0: torch's default, all usable cores)")
    p.add_argument("--min-run-time-s", type=positive_float, default=0.2, help="time at least this long")
    p.add_argument("--max-run-time-s", type=positive_float, default=2.0, help="time budget per point")
    p.add_argument("--target-rel-ci", type=positive_float, default=0.01,
                   help="stop when the median's 95%% CI is within ± this fraction (default 0.01)")
    p.add_argument("--profile", action="store_true", help="also count operators/kernels per step")
    p.add_argument("--strict", action="store_true",
                   help="refuse to measure (exit 2) when other processes compete for the cores, "
                        "before or while timing; without it the result carries a warning")
    p.add_argument("--raw", action="store_true", help="include the raw per-repeat times in --json")
    add_format(p)
    add_model_options(p)
    p.add_argument("--rounds", type=positive_int, default=DEFAULT_ROUNDS,
                   help=f"with --model: interleaved rounds of 8 ms visits over the batch sizes "
                        f"(default {DEFAULT_ROUNDS})")
    p.set_defaults(func=_cmd_measure)


def _cmd_measure(args) -> int:
    from ..measurement.toy_step import Config, measure
    from ..measurement.timer import TimerOptions

    if args.model:
        return cmd_measure_model(args)
    config = Config(
        d_model=args.d_model,
        n_layers=args.n_layers,
        batch_size=batch_sizes(args, single=True)[0],
        device=args.device,
        workload=args.workload,
        mode=args.mode,
        dtype=args.dtype,
        transfer=args.transfer,
        regime=args.regime,
        threads=args.threads,
    )
    try:
        options = TimerOptions(
            min_run_time_s=min(args.min_run_time_s, args.max_run_time_s),
            max_run_time_s=args.max_run_time_s,
            target_rel_ci=args.target_rel_ci,
        )
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    from ..measurement.machine_load import check_machine
    from ..errors import BusyMachineError

    threads = config.threads or _usable_cores()
    before = check_machine(threads if config.device == "cpu" else 1)
    if args.strict and before.busy:
        raise BusyMachineError(f"refusing to measure (--strict): {before.warnings[0]}")
    result = measure(config, options, profile=args.profile)
    if args.strict and result.load is not None and result.load.busy:
        raise BusyMachineError(f"measured on a busy machine (--strict): {result.load.warnings[0]}")
    summary = result.summary()
    summary["warnings"] = list(before.warnings) + [w for w in summary["warnings"] if w not in before.warnings]
    if args.raw:
        summary["raw_times_s"] = list(result.timing.raw_times_s)
    if args.json:
        print_json(summary, MEASURE_SCHEMA)
        return 0
    if wants_table(args):
        print_tables({"measure": [{k: v for k, v in summary.items() if k not in ("warnings", "raw_times_s")}]},
                     args.format)
        for warning in summary["warnings"]:
            warn(args, warning)
        return 0
    low, high = result.timing.median_ci_s
    print(f"{config.device} ({summary['device_name']}), {summary['threads']} threads")
    print(
        f"d_model={config.d_model} n_layers={config.n_layers} batch_size={config.batch_size} "
        f"{config.workload} {config.mode} {config.dtype} {config.regime}"
    )
    print(f"params {summary['params']:,}  FLOPs/step {summary['flops']:,}  bytes/step {summary['bytes']:,}")
    print(
        f"median {format_seconds(summary['median_s'], 4)}  (95% CI {format_range(low, high, 's', 4)})  "
        f"IQR {format_seconds(summary['iqr_s'])}  n={summary['n_repeats']} ({summary['stop_reason']})"
    )
    print(f"achieved {format_quantity(summary['flops'] / summary['median_s'], 'FLOP/s')}")
    if not math.isnan(summary["device_median_s"]):
        print(f"CUDA-event span {format_seconds(summary['device_median_s'], 4)}")
    if not math.isnan(summary["device_busy_s"]):
        print(f"kernel time {format_seconds(summary['device_busy_s'], 4)} per step: GPU busy "
              f"{summary['device_busy_s'] / summary['median_s']:.0%} of the wall time")
    if not math.isnan(summary["compile_s"]):
        print(f"compile/capture {format_seconds(summary['compile_s'])} (not in the latency)")
    if not math.isnan(summary["ops_per_step"]):
        print(f"operators per step {summary['ops_per_step']:.0f}", end="")
        if not math.isnan(summary["kernels_per_step"]):
            print(f", kernels per step {summary['kernels_per_step']:.0f}", end="")
        print()
    for warning in summary["warnings"]:
        warn(args, warning)
    return 0


def _usable_cores() -> int:
    from ..measurement.procfs import usable_cores

    return usable_cores()


# ----------------------------------------------------------------------------------------- sweep
def add_sweep(sub) -> None:
    """Register ``crossover sweep``."""
    p = sub.add_parser(
        "sweep",
        help="run a suite of measurements (TOML) into a results directory",
        description=(
            "Measure every point of a suite and append one row per point to DIR/results.csv "
            "(flushed as each point finishes). Points that cannot run are recorded as skipped, with "
            "the reason, and the sweep goes on."
        ),
        epilog="example: crossover sweep experiments/suites/quick.toml --out results/mine --resume",
    )
    p.add_argument("suite", type=Path, help="suite file, e.g. experiments/suites/quick.toml")
    p.add_argument("--out", type=Path, required=True, help="results directory")
    p.add_argument("--resume", action="store_true",
                   help="continue a run in --out, measuring only the points not yet there")
    p.add_argument("--machine", help="machine label for the rows (default: from the CPU/GPU name)")
    add_device(p, default=None, several=True,
               help="comma-separated subset of the suite's devices, e.g. cpu (default: all of them)")
    p.add_argument("--only", help="comma-separated sweep names of the suite to run (default: all)")
    p.add_argument("--dry-run", action="store_true",
                   help="list the planned measurements in the order they would run, and exit")
    p.add_argument("--strict", action="store_true",
                   help="refuse to start on a busy machine, and stop (results kept) when a measurement "
                        "finds other processes competing for its cores; without it such rows are flagged")
    p.add_argument("--allow-mixed", action="store_true",
                   help="resume into results recorded with another torch, CPU, thread count, GPU or driver")
    p.add_argument("--seed", type=non_negative_int, default=None,
                   help="seed of the shuffled rounds instead of the suite's [options] seed (recorded with the run)")
    p.add_argument("--calibration-plan", choices=("quick", "smoke"), default="quick",
                   help="the plan of that calibration (default quick; smoke only checks the installation)")
    p.add_argument("--no-calibrate", action="store_true",
                   help="do not record this CPU's quick calibration beside the results (by default the first "
                        "sweep with CPU points into a directory calibrates after measuring, about 2 minutes, so that "
                        "'fit' and 'predict' have the calibrated candidate; never again on --resume or when "
                        "DIR/calibration holds one)")
    p.add_argument("--shard", metavar="I/N",
                   help="measure only shard I of N (whole pairing groups with all their rounds, dealt out by "
                        "expected time; every shard also measures the drift reference, the anchor the shards "
                        "are put on one scale by): one node's part of a suite split over N identical nodes")
    p.set_defaults(func=_cmd_sweep)


def _cmd_sweep(args) -> int:
    from ..measurement.suites import load_suite
    from ..measurement.sweep import parse_shard, resolve_devices, run_suite, select_sweeps, shard_points

    suite = select_sweeps(load_suite(args.suite), comma_list(args.only))
    shard = parse_shard(args.shard) if args.shard else None
    if args.seed is not None:
        suite = dataclasses.replace(suite, seed=args.seed)
    devices = resolve_devices(suite, comma_list(args.device))
    if args.dry_run:
        from ..measurement.sweep import plan_rounds

        points = shard_points(suite.points(devices), suite, shard)
        plan = plan_rounds(points, seed=suite.seed, pair_by=suite.pair_by,
                           references=tuple(suite.reference_configs(devices)), reference_every=suite.reference_every)
        for item in plan:
            c = item.point.config
            cap = suite.cap_reason(c)
            print(f"{item.sequence:5d} round {item.round:<3d} {item.point.sweep:14s} {c.device:4s} d={c.d_model:<5d} "
                  f"L={c.n_layers:<5d} B={c.batch_size:<5d} {c.workload} {c.mode} {c.dtype} {c.transfer} {c.regime} "
                  f"threads={c.threads}" + (f"  [skip: {cap}]" if cap else ""))
        n_refs = sum(item.is_reference for item in plan)
        print(f"{len(points)} points, {len(plan)} measurements in all ({n_refs} drift references; "
              f"seed {suite.seed}, paired by {', '.join(suite.pair_by) or 'nothing'})")
        return 0
    summary = run_suite(
        suite, args.out, resume=args.resume, machine=args.machine, devices=devices, progress=not args.quiet,
        strict=args.strict, allow_mixed=args.allow_mixed, shard=shard,
    )
    print(
        f"suite {suite.name}: {summary.measured} measured, {summary.skipped} skipped, "
        f"{summary.already_done} already done, in {format_seconds(summary.elapsed_s)} -> {args.out}"
    )
    if "cpu" in devices and not args.resume and not args.no_calibrate:
        _calibrate_beside(args.out, quiet=args.quiet, plan_name=args.calibration_plan)
    return 0


def _calibrate_beside(out: Path, *, quiet: bool, plan_name: str = "quick") -> None:
    """Record this CPU's quick calibration in ``out/calibration`` unless one is there: what makes the
    ``calibrated`` model a candidate for the results' CPU series."""
    from ..fit.calibrated_model import RUN_CALIBRATION_DIR
    from ..opcost.calibrate import run_calibration
    from ..opcost.calibration_plan import PLANS, points
    from ..progress import Progress, wants_progress

    target = Path(out) / RUN_CALIBRATION_DIR
    if (target / "profile.json").exists():
        return
    plan = PLANS[plan_name]
    if not quiet:
        print(f"calibrating this CPU ({plan.name} plan, about 2 minutes on 2 cores; --no-calibrate skips it) -> {target}",
              file=sys.stderr)
    bar = Progress(plan.rounds * (len(points(plan, "cpu")) + 1), enabled=wants_progress(quiet=quiet))
    profile = run_calibration("cpu", target, plan=plan, on_progress=bar.update)
    bar.close()
    print(f"calibration: {profile.label}, {profile.threads} threads -> {target / 'profile.json'}")


# ----------------------------------------------------------------------------------------- noise
def add_noise(sub) -> None:
    """Register ``crossover noise``."""
    p = sub.add_parser(
        "noise",
        help="measure this machine's noise floor (run-to-run deviation of each statistic)",
        description=(
            "Measure 8 sizes of the toy model in several independent windows, each in many short "
            "interleaved rounds, and print how far one window's estimate of a size lies from the mean "
            "over windows, for each statistic (median of rounds, 10th percentile, fastest repeat, 10th "
            "percentile of the rounds whose drift reference was quiet). That is the floor any latency "
            "prediction on this machine is judged against; with --out it is stored as DIR/noise.json, "
            "which 'fit' and 'predict' quote. Each window spreads its rounds over --span-s, as a suite's "
            "run spreads a point's rounds: about 2 minutes with the defaults."
        ),
        epilog="example: crossover noise --out results/local",
    )
    p.add_argument("--windows", type=positive_int, default=3, help="independent windows (default 3)")
    p.add_argument("--rounds", type=positive_int, default=None,
                   help="rounds per window (default: the protocol's, 20 for short-rounds)")
    p.add_argument("--pause-s", type=non_negative_float, default=10.0, help="pause between windows (default 10 s)")
    p.add_argument("--span-s", type=non_negative_float, default=None,
                   help="spread each window's rounds over about this long (default 30 s; 0: back to back, "
                        "which sees one state of the machine per window)")
    p.add_argument("--protocol", choices=("short-rounds", "legacy"), default="short-rounds",
                   help="short-rounds (the suites' protocol) or legacy (5 rounds of up to 0.15 s, round 0 in order)")
    p.add_argument("--seed", type=non_negative_int, default=0, help="seeds the shuffled orders")
    p.add_argument("--out", type=Path, metavar="DIR", help="results directory to store noise.json in")
    add_format(p)
    p.set_defaults(func=_cmd_noise)


def _cmd_noise(args) -> int:
    from dataclasses import replace

    from ..measurement.environment import machine_label
    from ..measurement.noise import (DEFAULT_SPAN_S, LEGACY, SHORT_ROUNDS, measure_noise, noise_summary,
                                     run_to_run, spread, window_estimates, write_noise)
    from ..progress import Progress, wants_progress

    protocol = SHORT_ROUNDS if args.protocol == "short-rounds" else LEGACY
    if args.rounds:
        protocol = replace(protocol, rounds=args.rounds)
    span_s = DEFAULT_SPAN_S if args.span_s is None else args.span_s
    if span_s:
        protocol = spread(protocol, span_s)
    bar = Progress(args.windows * protocol.rounds, enabled=wants_progress(quiet=args.quiet, asked=args.verbose > 0),
                   desc="noise")
    frame = measure_noise(protocol=protocol, windows=args.windows, pause_s=args.pause_s, seed=args.seed,
                          on_progress=bar.update)
    deviations = run_to_run(window_estimates(frame))
    summary = noise_summary(deviations)
    if args.out:
        path = write_noise(args.out, deviations, protocol=protocol, windows=args.windows, machine=machine_label())
    if args.json:
        print_json({"protocol": protocol.name, "windows": args.windows, "rounds": protocol.rounds,
                    "summary": summary, "sizes": deviations.to_dict("records"),
                    "out": str(path) if args.out else None}, NOISE_SCHEMA)
        return 0
    if wants_table(args):
        print_tables({"noise": deviations}, args.format)
        return 0
    print(f"run-to-run deviation over {args.windows} windows of {protocol.rounds} rounds ({protocol.name}, "
          f"each window over about {span_s:.0f} s):" if span_s else
          f"run-to-run deviation over {args.windows} windows of {protocol.rounds} rounds ({protocol.name}, back to back):")
    table = deviations[["d_model", "n_layers", "batch_size"]].copy()
    for name in ("median", "p10", "min", "p10_quiet"):
        table[name] = [f"{v:.1%}" for v in deviations[f"{name}_deviation"]]
    print(table.to_string(index=False))
    for scope in ("compute_bound", "memory_or_launch_bound", "all"):
        cells = "  ".join(f"{name} {summary[name][scope]:.1%}" for name in summary)
        print(f"mean, {scope.replace('_', ' ')}: {cells}")
    if args.out:
        print(f"wrote {path}")
    return 0


# ------------------------------------------------------------------------------------------- env
def add_env(sub) -> None:
    """Register ``crossover env``."""
    p = sub.add_parser("env", help="show the environment recorded with every result",
                       description="Show the machine, CPU (clock, governor, cgroup quota), thread settings, GPU "
                                   "and library versions recorded with results.")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--full", action="store_true",
                   help="add torch's build (torch.utils.collect_env: compilers, CUDA, pip packages; ~1 s more), "
                        "as every sweep records it")
    p.set_defaults(func=_cmd_env)


def _env_lines(env: dict, indent: int = 0) -> list:
    """``key  value`` lines, aligned; a dict's items indented under its key, None as "-"."""
    width = max(map(len, env), default=0)
    lines = []
    for key, value in env.items():
        if isinstance(value, dict) and value:
            lines.append(" " * indent + key)
            lines += _env_lines(value, indent + 2)
            continue
        if isinstance(value, dict):
            value = "(none set)"
        if isinstance(value, list):
            value = "\n".join(map(str, value))
        value = "-" if value is None else str(value)
        value = value.replace("\n", "\n" + " " * (indent + width + 2))
        lines.append(f"{' ' * indent}{key:<{width}}  {value}")
    return lines


def _cmd_env(args) -> int:
    from ..measurement.environment import environment

    env = environment(full=args.full)
    if args.json:
        print_json(env, ENV_SCHEMA)
    else:
        print("\n".join(_env_lines(env)))
    return 0
