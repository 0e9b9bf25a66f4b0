"""The user's-model subcommands: ``crossover calibrate``, and the ``--model`` modes of ``measure`` and
``predict``.

``measure --model FILE.py:FACTORY`` and ``predict --model ...`` switch those subcommands from the toy
model to the user's own (:mod:`crossover.measurement.user_module`): :func:`add_model_options` adds the options to
their parsers, and their commands hand over to :func:`cmd_measure_model` and :func:`cmd_predict_model`
when ``--model`` is given. Errors are one line and exit status 2 (a missing file or factory, a
factory that returns no module, an input shape the model rejects, a missing profile).
"""

from __future__ import annotations

from pathlib import Path

from ..jsonable import schema_tag
from ..units import format_quantity, format_seconds
from .args import UsageError, add_device, non_negative_int, positive_int, print_json, warn
from .output import print_tables, wants_table

__all__ = ["add_model_options", "add_calibrate", "cmd_measure_model", "cmd_predict_model", "batch_sizes",
           "MEASURE_MODEL_SCHEMA"]

#: The layout of ``crossover measure --model --json``.
MEASURE_MODEL_SCHEMA = schema_tag("measure_model", 1)


def add_model_options(p) -> None:
    """``--model``, ``--input-shape`` and ``--input-dtype`` (for ``measure`` and ``predict``)."""
    p.add_argument("--model", metavar="FILE.py:FACTORY",
                   help="your own model: a callable in a Python file that returns an nn.Module (switches from "
                        "the toy model; --batch-size may then be a list, e.g. 1,8,64,512)")
    p.add_argument("--input-shape", metavar="DIMS", help="with --model: one sample's shape, e.g. 3,32,32 (the batch "
                                                         "dimension is added)")
    p.add_argument("--input-dtype", default="float32", metavar="DTYPE",
                   help="with --model: the input's dtype (default float32; long for token ids, which measure "
                        "draws over the model's smallest embedding table, 0/1 without one)")


def batch_sizes(args, *, single: bool) -> tuple:
    """``--batch-size`` as a tuple; with ``single`` (the toy model) exactly one value."""
    sizes = tuple(args.batch_size)
    if single and len(sizes) != 1:
        raise UsageError(f"--batch-size takes one value without --model, got {','.join(map(str, sizes))}")
    return sizes


def _model_and_shape(args):
    from ..measurement.user_module import build_model, input_dtype, parse_input_shape

    if not args.input_shape:
        raise UsageError("--model needs --input-shape (one sample's shape, e.g. 3,32,32)")
    shape = parse_input_shape(args.input_shape)
    dtype = input_dtype(args.input_dtype)
    return build_model(args.model), shape, dtype


def _check_traces(model, shape, dtype, batch_size: int, workload: str) -> None:
    """Raise the trace's one-line error (naming the layer) when the model rejects the input."""
    import torch

    from ..errors import TraceError
    from ..opcost.module_predict import model_mode
    from ..opcost.trace import trace_module

    example = torch.empty((batch_size, *shape), dtype=dtype, device="meta")
    try:
        with model_mode(model, workload == "train"):
            trace_module(model, example, workload)
    except TraceError as error:
        from ..measurement.module_rounds import example_input

        try:  # the model may run where tracing cannot (a data-dependent op): then measure it anyway
            with torch.no_grad():
                model(example_input(shape, batch_size, dtype=dtype, model=model))
        except Exception:
            raise error from None


# ------------------------------------------------------------------------------------- measure
def cmd_measure_model(args) -> int:
    """``crossover measure --model``: time the user's model at each batch size, in interleaved rounds."""
    from ..measurement.machine_load import check_machine
    from ..measurement.environment import device_name, require_device
    from ..measurement.procfs import usable_cores
    from ..measurement.toy_step import num_threads
    from ..measurement.module_rounds import measure_module
    from ..progress import Progress, wants_progress

    for name, default in (("mode", "eager"), ("dtype", "float32"), ("transfer", "device"), ("regime", "latency")):
        if getattr(args, name) != default:
            raise UsageError(f"--{name} {getattr(args, name)} is not supported with --model")
    if args.profile or args.raw:
        raise UsageError("--profile and --raw are not supported with --model")
    require_device(args.device)
    model, shape, dtype = _model_and_shape(args)
    sizes = batch_sizes(args, single=False)
    _check_traces(model, shape, dtype, sizes[0], args.workload)
    before = check_machine((args.threads or usable_cores()) if args.device == "cpu" else 1)
    if args.strict and before.busy:
        from ..errors import BusyMachineError

        raise BusyMachineError(f"refusing to measure (--strict): {before.warnings[0]}")
    bar = Progress(args.rounds * len(sizes), enabled=wants_progress(quiet=args.quiet, asked=args.verbose > 0),
                   desc="measuring")
    with num_threads(args.threads) as threads:
        frame = measure_module(model, shape, sizes, device=args.device, workload=args.workload, dtype=dtype,
                               rounds=args.rounds, on_progress=bar.update)
    bar.close()
    name = device_name(args.device)
    points = frame.drop(columns=["elapsed_s"]).to_dict("records")
    if args.json:
        print_json({"schema": MEASURE_MODEL_SCHEMA, "model": args.model, "input_shape": list(shape),
                    "input_dtype": args.input_dtype, "workload": args.workload, "device": args.device,
                    "device_name": name, "threads": threads, "rounds": args.rounds, "statistic": "p10",
                    "points": points, "warnings": list(before.warnings)})
        return 0
    if wants_table(args):
        print_tables({"points": points}, args.format)
        for warning in before.warnings:
            warn(args, warning)
        return 0
    print(f"{args.device} ({name}), {threads} threads: {args.model}, input {'x'.join(map(str, shape))}, "
          f"{args.workload}; {args.rounds} interleaved rounds, latency = 10th percentile of the repeats")
    for row in points:
        print(f"  batch_size={row['batch_size']:<6d} latency {format_seconds(row['latency_s'], 4):>10s}  "
              f"(median {format_seconds(row['median_s'], 4)}, {row['n_repeats']} repeats, "
              f"round-to-round {row['spread_rel']:.1%})")
    for warning in before.warnings:
        warn(args, warning)
    return 0


# ------------------------------------------------------------------------------------- predict
def cmd_predict_model(args) -> int:
    """``crossover predict --model``: predicted latency per calibrated device, the crossover, what dominates
    (computed by :func:`crossover.analysis.decision.decide`; this only formats it)."""
    from ..analysis.decision import decide
    from ..measurement.user_module import parse_input_shape

    if not args.input_shape:
        raise UsageError("--model needs --input-shape (one sample's shape, e.g. 3,32,32)")
    shape = parse_input_shape(args.input_shape)
    sizes = batch_sizes(args, single=False)
    decision = decide(model=args.model, input_shape=shape, batch_size=list(sizes), workload=args.workload,
                      input_dtype=args.input_dtype, profiles=args.profiles, transfer_input=args.transfer_input)
    if args.json:
        print_json(decision.to_json())
        return 0
    frame, notes = decision.frame, decision.warnings
    if wants_table(args):
        print_tables({"predictions": frame, "crossovers": frame.attrs["crossovers"]}, args.format)
        for note in notes:
            warn(args, note)
        return 0
    print(f"{args.model}, input {'x'.join(map(str, shape))}, {args.workload}: predicted from the calibration profiles")
    for row in frame.itertuples():
        top = ", ".join(f"{op['op'].replace('aten.', '').replace('.default', '')} {op['share']:.0%}"
                        for op in row.top_ops[:3])
        starts = (f"; {row.thread_starts:.0f} OpenMP threads started a step ({format_seconds(row.thread_starts_s)})"
                  if getattr(row, "thread_starts", 0) else "")
        print(f"  {row.profile:<28s} batch {row.batch_size:<6d} {format_seconds(row.latency_s, 3):>9s} "
              f"[{format_seconds(row.latency_low_s)}, {format_seconds(row.latency_high_s)}]  {row.bound}-bound "
              f"(launch {row.launch_share:.0%}, memory {row.memory_share:.0%}, compute {row.compute_share:.0%}); "
              f"top: {top}{starts}")
    for c in frame.attrs["crossovers"]:
        a, b = c["between"]
        if c["at"] is None:
            print(f"crossover {a} vs {b}: none from batch {c['range'][0]} to {c['range'][1]}; "
                  f"{c['winner_everywhere']} is faster throughout")
        else:
            span = (f" [{'≤' if c.get('low_open') else ''}{c['low']:.0f}, {'≥' if c.get('high_open') else ''}"
                    f"{c['high']:.0f}]" if c["low"] is not None and c["high"] is not None else "")
            print(f"crossover {a} vs {b}: batch ~{c['at']:.0f}{span}: {c['winner_below']} below, "
                  f"{c['winner_above']} above")
    for note in notes:
        warn(args, note)
    return 0


def add_predict_model_options(p) -> None:
    """Options ``predict --model`` adds beyond :func:`add_model_options`."""
    p.add_argument("--profiles", type=Path, nargs="+", metavar="DIR",
                   help="with --model: calibration profiles (directories written by 'crossover calibrate'); "
                        "default: the shipped ones in experiments/profiles")
    p.add_argument("--transfer-input", action="store_true",
                   help="with --model: add the input's host-to-device copy on GPU profiles")


# ----------------------------------------------------------------------------------- calibrate
def add_calibrate(sub) -> None:
    """Register ``crossover calibrate``."""
    p = sub.add_parser(
        "calibrate",
        help="measure a device's per-op costs into a profile (for predict --model)",
        description=(
            "Time the primitives a model's step is made of (dispatch, views, module calls, autograd and "
            "optimizer overheads, matrix products over a grid of sizes with weights in and out of the "
            "last-level cache, convolutions, elementwise ops and reductions from 1K to 16M elements, "
            "attention; on CUDA also synchronisation and host-to-device copies) and the whole steps of two "
            "small reference models (which calibrate what composing ops costs beyond their sum) in "
            "shuffled interleaved rounds with a drift reference, and write DIR/calibration.csv.gz and "
            "DIR/profile.json."
        ),
        epilog="example: crossover calibrate --device cpu --out experiments/profiles/amd-epyc-2c --quick",
    )
    add_device(p, choices=("cpu", "cuda"), help="the device to calibrate (default cpu)")
    p.add_argument("--out", type=Path, required=True, metavar="DIR",
                   help="directory for profile.json and calibration.csv.gz")
    p.add_argument("--rebuild", action="store_true",
                   help="measure nothing: rebuild --out's profile.json from its calibration.csv.gz with this "
                        "version's code (machine, threads and run metadata kept)")
    plan = p.add_mutually_exclusive_group()
    plan.add_argument("--quick", action="store_true", help="coarser grids and 8 rounds: about 2 minutes on 2 cores "
                                                           "(default: the full plan, 30 rounds, about 10 minutes)")
    plan.add_argument("--smoke", action="store_true", help="a few seconds, to check the installation (too coarse "
                                                           "to predict with)")
    p.add_argument("--rounds", type=positive_int, help="rounds instead of the plan's")
    p.add_argument("--threads", type=non_negative_int, default=0, help="CPU threads (default 0: torch's default)")
    p.add_argument("--seed", type=non_negative_int, default=0, help="seeds the rounds' orders (default 0)")
    p.add_argument("--machine", help="machine label (default: from the CPU/GPU name)")
    p.add_argument("--force", action="store_true", help="overwrite a profile already in --out")
    p.add_argument("--json", action="store_true", help="print the profile as JSON")
    p.set_defaults(func=_cmd_calibrate)


def _cmd_calibrate(args) -> int:
    import dataclasses
    import sys

    from ..opcost.calibrate import check_out_dir, measure_calibration, save_calibration
    from ..opcost.calibration_plan import PLANS, points
    from ..opcost.fused_layers import fused_summary
    from ..opcost.thread_wake import WAKE_GAPS_S, wake_summary
    from ..progress import Progress, wants_progress
    from .args import signals_deferred

    if args.rebuild:
        from ..opcost.calibrate import rebuild_profile

        profile = rebuild_profile(args.out)
        if args.json:
            print_json(profile.to_json())
        else:
            print(f"{profile.label}: rebuilt {args.out / 'profile.json'} from its calibration.csv.gz")
        return 0
    plan = PLANS["quick" if args.quick else "smoke" if args.smoke else "full"]
    if args.rounds:
        plan = dataclasses.replace(plan, rounds=args.rounds)
    total = plan.rounds * (len(points(plan, args.device, args.threads)) + 1)
    bar = Progress(total, enabled=wants_progress(quiet=args.quiet or args.json, asked=args.verbose > 0),
                   desc="calibrating")
    check_out_dir(args.out, args.force)
    run = measure_calibration(args.device, plan, seed=args.seed, threads=args.threads, on_progress=bar.update,
                              keep_on_interrupt=True)  # Ctrl-C, a time limit: the whole rounds are kept
    bar.close()
    with signals_deferred():  # a second signal waits for the profile to be fitted and written
        profile = save_calibration(args.out, run, machine=args.machine)
    done = int(profile.meta.get("rounds") or plan.rounds)
    if done < plan.rounds:
        warn(args, f"calibration stopped after {done} of {plan.rounds} rounds: the profile is built from those")
    if args.json:
        print_json(profile.to_json())
        return 130 if done < plan.rounds else 0
    o = profile.overheads
    print(f"{profile.label}: {plan.name} calibration, {done} rounds, {profile.threads} threads, "
          f"in {format_seconds(profile.meta['elapsed_s'])} -> {args.out / 'profile.json'}")
    print(f"  dispatch {format_seconds(o['dispatch_s'])}, view {format_seconds(o['view_s'])}, module call "
          f"{format_seconds(o['module_call_s'])}; peak {format_quantity(profile.peak_flop_rate, 'FLOP/s')}, "
          f"{format_quantity(profile.peak_bandwidth, 'B/s')}; noise floor {profile.noise_floor_rel:.1%}")
    if profile.meta.get("composition_fit") is not None:
        from ..opcost.composition import INTERVAL_COVERAGE

        references = profile.meta.get("reference_models") or [{}]
        how = "leave-one-out" if "leave_one_out_error" in references[0] else "in-sample: too few to leave one out"
        how += ", and unseen kinds" if any(r.get("held_out") for r in references) else ""
        unfitted = (profile.meta.get("composition_unfitted") or {}).get("conv_train_s")
        conv_train = (f"{format_seconds(o.get('conv_train_s', 0.0))} per convolution of a training step"
                      + (f" (not fitted: {unfitted})" if unfitted else ""))
        print(f"  inside a model (fitted on the reference models): training-step host work "
              f"x{1 + profile.train_host_extra:.2f}, forward convolutions x{1 + profile.conv_forward_extra:.2f}, "
              f"backward kernels x{1 + profile.backward_extra:.2f}, {format_seconds(o.get('event_s', 0.0))} per "
              f"host event, {conv_train}; page faults {format_seconds(o.get('fresh_byte_s', 0.0))}/B; reference steps predicted "
              f"within {profile.model_error_rel:.1%} (median, {how}); at {INTERVAL_COVERAGE:.0%} a new model's "
              f"interval, +/-{profile.interval_for(False):.1%} for a forward pass, "
              f"+/-{profile.interval_for(True):.1%} for a training step")
    if profile.device == "cpu" and profile.threads != 1:
        print("  " + (wake_summary(profile) or "threads: none slept over the serial gaps tried (up to "
                                               f"{format_seconds(max(WAKE_GAPS_S))})"))
    if fused_summary(profile):
        print("  " + fused_summary(profile))
    if profile.meta.get("drifted_rounds"):
        print(f"  rounds whose drift reference read > 25% above its quiet level: {profile.meta['drifted_rounds']} "
              "(pooled all the same: a 10th percentile takes no harm from a slow round)", file=sys.stderr)
    return 130 if done < plan.rounds else 0
