"""The analysis subcommands: ``crossover fit`` and ``crossover predict``.

Both read a results directory (by default the reference data shipped in ``experiments/results``),
fit a latency model per series (see :mod:`crossover.analysis`) and print a report, or JSON with
``--json``: one object whose ``schema`` (:data:`FIT_SCHEMA`, :data:`PREDICT_SCHEMA`) names its layout
and version (docs/cli.md, "JSON output"). Progress goes to stderr (a bar on a
terminal, or anywhere with ``--progress``), never into the JSON. Errors are
:class:`crossover.errors.CrossoverError` subclasses: one line, exit status 2.
"""

from __future__ import annotations

import math
from pathlib import Path

from .args import (DEFAULT_RESULTS, UsageError, add_only_machine, add_statistic, comma_list, non_negative_int,
                   positive_int, positive_int_list, print_json, refuse_unused, remember_parser, warn)
from .output import add_format, print_tables, wants_table
from .user_model import add_model_options, add_predict_model_options, batch_sizes, cmd_predict_model
from ..fit.bootstrap import BOOTSTRAPS, DEFAULT_BOOTSTRAP
from ..results.statistics import STATISTICS
from ..units import format_range, format_seconds
from ..analysis.reference_study import N_BOOT
from ..analysis.decision import PREDICT_SCHEMA
from ..jsonable import schema_tag

__all__ = ["add_fit", "add_predict", "FIT_SCHEMA", "PREDICT_SCHEMA"]

#: The layout of ``crossover fit --json``; the version goes up when a key changes meaning or goes away.
FIT_SCHEMA = schema_tag("fit", 1)

def _common(p) -> None:
    p.add_argument("--results", type=Path, nargs="+", default=[DEFAULT_RESULTS], metavar="DIR",
                   help="results directories (merged), each holding one run or several machines' runs "
                        "(default: the shipped reference data); e.g. your own quick CPU run next to a "
                        "shipped GPU to compare them")
    p.add_argument("--models", help="comma-separated candidate models, replacing the defaults (grouped CV picks "
                                    "one); e.g. roofline,roofline+hockney,roofline+gemm")
    p.add_argument("--n-boot", type=non_negative_int, default=N_BOOT,
                   help=f"bootstrap resamples for intervals (default {N_BOOT}, as the figures and the paper)")
    p.add_argument("--seed", type=non_negative_int, default=0, help="bootstrap seed (default 0)")
    p.add_argument("--bootstrap", choices=BOOTSTRAPS, default=DEFAULT_BOOTSTRAP,
                   help="what the bootstrap resamples: whole rounds (a slow spell moves every point of "
                        "a round together), the fit's residuals across points (covers model misfit, treats "
                        "each point's drift as independent), or each point's raw repeats (only the noise "
                        "within one measurement, much narrower); default auto: rounds where a series was "
                        "measured in 6 rounds or more, else the residuals")
    add_statistic(p)
    p.add_argument("--drop-drifted", action="store_true",
                   help="leave out the rounds measured while the run's drift reference sat more than "
                        "25%% above its quiet level (results measured with drift references only)")
    p.add_argument("--progress", action="store_true",
                   help="progress on stderr even when it is not a terminal (redrawn at most every 2 s; as -v)")
    add_format(p, json_help="print one JSON object (the short form of --format json; progress stays on stderr)")


def _noise_floors(args) -> list:
    from ..analysis.decision import noise_floors

    return noise_floors(args.results, args.statistic)


def _print_noise_floors(floors) -> None:
    machines = [f["machine"] for f in floors]
    for f in floors:
        # several floors of one machine: the nodes of a fleet, each named by its directory
        node = f" node {Path(f['path']).parent.name}" if machines.count(f["machine"]) > 1 and f.get("path") else ""
        print(f"noise floor of {f['machine']}{node} (crossover noise, {f['date_utc'][:10]}): one run's {f['statistic']} "
              f"lies {f['compute_bound_pct']:.1f}% from another's on compute-bound sizes, "
              f"{f['memory_or_launch_bound_pct']:.1f}% on memory- or launch-bound ones (worst {f['worst_pct']:.0f}%): "
              "a prediction for a later run on that machine cannot be checked more closely")


def _progress(args):
    """The fits' progress bar, when one is wanted (a terminal, or --progress), else None."""
    from ..progress import progress_bar, wants_progress

    if not wants_progress(quiet=args.quiet, asked=args.progress or args.verbose > 0):
        return None
    return lambda costs: progress_bar(costs, desc="fitting")


def _parameters(fit):
    """``fit``'s parameters checked against its device's peaks (``peak``, ``above_peak``)."""
    from ..fit.peaks import check_parameters

    return check_parameters(fit.parameters(), fit.peaks)


def _warn(args, lines) -> None:
    for line in lines:
        warn(args, line)


# ------------------------------------------------------------------------------------------- fit
def add_fit(sub) -> None:
    """Register ``crossover fit``."""
    p = sub.add_parser(
        "fit",
        help="fit latency models to results; parameters with intervals and held-out accuracy",
        description=(
            "Fit a latency model to every series (machine, device, workload, mode, dtype, regime) of a "
            "results directory. Prints each series' parameters with bootstrap confidence intervals, and "
            "the grouped cross-validation accuracy of every candidate model (MAPE and % of held-out "
            "predictions within ±10%, holding out each value of d_model, n_layers, batch_size)."
        ),
        epilog="example: crossover fit --results experiments/results --json",
    )
    _common(p)
    p.set_defaults(func=_cmd_fit)


def _cmd_fit(args) -> int:
    from ..analysis.decision import fit_for_decision, load_points
    from ..results.drift import mixed_speed_warnings

    frame = load_points(args.results, drop_drifted=args.drop_drifted)
    _warn(args, mixed_speed_warnings(frame))
    fits = fit_for_decision(frame, comma_list(args.models) if args.models else None, n_boot=args.n_boot,
                            seed=args.seed, bootstrap=args.bootstrap, statistic=args.statistic,
                            progress=_progress(args))
    floors = _noise_floors(args)
    if args.json:
        skipped = [dict(series=label, id=fits.skipped_ids[label], reason=reason) for label, reason in fits.skipped.items()]
        print_json({"schema": FIT_SCHEMA, "results": [str(p) for p in args.results],
                    "series": [_series_json(fits, f) for f in fits.values()], "skipped": fits.skipped,
                    "skipped_series": skipped, "noise_floors": floors})
        return 0
    if wants_table(args):
        print_tables(_fit_tables(fits, floors), args.format)
        return 0
    from ..results.anchors import node_notes

    for line in node_notes(frame):
        print(line)
    for fit in fits.values():
        _print_series(fits, fit)
    for label, reason in fits.skipped.items():
        print(f"skipped {label}: {reason}")
    _print_noise_floors(floors)
    return 0


def _fit_tables(fits, floors) -> dict:
    """``fit --format md|csv``: one row per series, one per fitted parameter, one per noise floor."""
    series, parameters = [], []
    for fit in fits.values():
        held = fit.heldout_summary()
        series.append(dict(series=fit.label, **fit.id, model=fit.model, statistic=fit.statistic,
                           n_points=len(fit.points), cv_mape_pct=fit.cv_score(), heldout_n=held["n"],
                           heldout_median_abs_pct=held.get("median_abs_pct"),
                           heldout_worst_abs_pct=held.get("worst_abs_pct")))
        table = _parameters(fit).drop(columns=["series", "model"], errors="ignore")
        parameters += [dict(series=fit.label, **row) for row in table.to_dict("records")]
    return {"series": series, "parameters": parameters, "noise_floors": floors}


def _series_json(fits, fit) -> dict:
    return dict(series=fit.label, id=fit.id, **fit.id, model=fit.model,
                n_points=len(fit.points), n_boot=0 if fit.draws is None else len(fit.draws),
                noise_floor_pct=None if not math.isfinite(fit.noise_floor_pct) else fit.noise_floor_pct,
                noise_floor_points=fit.noise_floor_points, bootstrap=fit.bootstrap, statistic=fit.statistic,
                level=fit.level, cv_mape_pct=fit.cv_score(),
                parameters=_parameters(fit).drop(columns=["series", "model"]).to_dict("records"),
                heldout=dict(**fit.heldout_summary(), points=fit.heldout.to_dict("records")),
                accuracy=fit.cv.to_dict("records"))


def _print_table(rows: list) -> None:
    """Rows of text cells as a table: a header, columns as wide as their widest cell (text left,
    the latency right), two spaces between."""
    columns = [c for c in rows[0] if any(r[c] for r in rows)]
    width = {c: max(len(c), *(len(r[c]) for r in rows)) for c in columns}
    align = lambda c, text: text.rjust(width[c]) if c == "latency" else text.ljust(width[c])  # noqa: E731
    print("  " + "  ".join(align(c, c) for c in columns).rstrip())
    for r in rows:
        print("  " + "  ".join(align(c, r[c]) for c in columns).rstrip())


def _number(value) -> str:
    return "-" if value is None or not math.isfinite(value) else f"{value:.4g}"


def _print_series(fits, fit) -> None:
    k = fit.key
    n_boot = 0 if fit.draws is None else len(fit.draws)
    print(f"{fit.label}  ({k['workload']}, {k['mode']}, {k['dtype']}, {k['regime']}, {k['transfer']}, "
          f"{k['threads']} threads; {len(fit.points)} points; latency = "
          f"{STATISTICS[fit.statistic].label})")
    what = {"residuals": "the fit's residuals", "rounds": "whole rounds"}.get(fit.bootstrap, "the raw repeats")
    print(f"  model {fit.model}; parameters with {fit.level:.0%} bootstrap intervals ({n_boot} resamples "
          f"of {what})")
    table = _parameters(fit)
    if table["peak"].notna().any():
        print(f"    {'':<46s} {'value':>10s} {'unit':<8s} {'interval':<22s} {'peak':>8s}")
    for row in table.itertuples():
        flag = (f"  IMPOSSIBLE, {row.impossible.split(' (')[0]}: not a physical value" if row.above_peak else
                "  at its bound: not identified by these data" if row.at_bound else
                "  no resample moved it: not identified by these data" if row.flat else
                "  interval over two decades: not identified by these data" if not row.identified else "")
        peak = f" {_number(row.peak):>8s}" if math.isfinite(row.peak) else f" {'':>8s}"
        interval = f"[{_number(row.low)}, {_number(row.high)}]"
        print(f"    {row.label:<46s} {_number(row.value):>10s} {row.unit:<8s} {interval:<22s}{peak}{flag}")
    sources = sorted({s for s in table["peak_source"] if s})
    if sources:
        print("    peaks: " + "; ".join(sources))
    if fit.calibration is not None:
        where = fit.calibration.path or fit.calibration.label
        print(f"    the step's floor, elementwise ops and matrix products costed op by op on the calibration {where}")
    elif k["device"] == "cpu" and not fit.cv.empty and "calibrated" not in set(fit.cv["model"]):
        print("    'calibrated' was not a candidate: it needs a calibration of this machine beside the results "
              "('crossover calibrate --device cpu --quick --out RESULTS/calibration', about 2 minutes)")
    held = fit.heldout_summary()
    if held["n"]:
        print(f"  held-out sizes (never fitted, measured in the same run): {held['n']} sizes, median error "
              f"{held['median_abs_pct']:.1f}%, worst {held['worst_abs_pct']:.1f}%, "
              f"{held['within_10_pct']:.0f}% within ±10%")
    if fit.cv.empty:
        print("  (no cross-validation folds)\n")
        return
    from ..fit.validation import selection_score

    axes = list(dict.fromkeys(fit.cv["axis"]))
    width = max(28, *(len(m) for m in fit.cv["model"]))
    print("  grouped cross-validation, held-out MAPE / % within ±10% (folds); interior: mean MAPE of the folds"
          " whose held-out value lies inside the trained range (* = the lowest: the model used)")
    print("    " + f"{'model':<{width}s}" + "".join(f"{a:>22s}" for a in axes) + f"{'interior':>10s}")
    for model, rows in fit.cv.groupby("model", sort=False):
        cells = []
        for axis in axes:
            row = rows[rows["axis"] == axis]
            cells.append("-" if row.empty else
                         f"{row.mape_pct.iloc[0]:.1f}% / {row.within_10_pct.iloc[0]:.0f}% ({row.n_folds.iloc[0]})")
        mark = "*" if model == fit.model else " "
        score = selection_score(fit.cv, model)
        print(f"  {mark} {model:<{width}s}" + "".join(f"{c:>22s}" for c in cells)
              + (f"{score:>9.1f}%" if math.isfinite(score) else f"{'-':>10s}"))
    if fit.noise_floor_points:
        what, fitted = STATISTICS[fit.statistic].round_label, STATISTICS[fit.statistic].combined_label
        print(f"  noise floor: one round's {what} lies {fit.noise_floor_pct:.1f}% from {fitted} "
              f"(mean over {fit.noise_floor_points} points measured in 2+ rounds): drift no model of the sizes "
              "can explain, so a held-out MAPE near it is as good as these data allow")
    print()


# --------------------------------------------------------------------------------------- predict
def add_predict(sub) -> None:
    """Register ``crossover predict``."""
    from ..axes import DTYPES, MODES, REGIMES, TRANSFERS, WORKLOADS

    p = sub.add_parser(
        "predict",
        help="predict latency on every device, the winner, and the crossover batch size (toy or --model)",
        description=(
            "Predict the latency of one configuration on every device in the results (with an "
            "interval), which device wins and by how much, and where the winner and the fastest device "
            "of the other kind (CPU against GPU) cross along --along (default the batch size), with a "
            "bootstrap confidence interval; then every other CPU's crossover against the GPU."
        ),
        epilog="example: crossover predict --d-model 768 --n-layers 12 --batch-size 8 --json; your own model: "
               "crossover predict --model experiments/zoo/mnist_mlp.py:model --input-shape 1,28,28 "
               "--batch-size 1,8,64,512",
    )
    p.add_argument("--d-model", type=positive_int, help="layer width (the toy model; required without --model)")
    p.add_argument("--n-layers", type=positive_int, help="residual blocks (the toy model; required without --model)")
    p.add_argument("--batch-size", type=positive_int_list, required=True,
                   help="samples per step; with --model a list too, e.g. 1,8,64,512")
    p.add_argument("--workload", default="forward", choices=WORKLOADS, help="default forward")
    p.add_argument("--mode", default="eager", choices=MODES, help="default eager")
    p.add_argument("--dtype", default="float32", choices=DTYPES, help="default float32")
    p.add_argument("--regime", default="latency", choices=REGIMES, help="default latency")
    p.add_argument("--transfer", default="device", choices=TRANSFERS, help="default device")
    p.add_argument("--along", choices=("batch_size", "d_model", "n_layers"), default="batch_size",
                   help="the size along which to look for the crossover, the other two held at the given "
                        "values (default batch_size)")
    add_only_machine(p, help="only this machine's devices (e.g. a GPU against its own host CPU); default: every "
                             "machine in the results (--machine, its old spelling, still works)")
    _common(p)
    add_model_options(p)
    add_predict_model_options(p)
    p.set_defaults(func=_cmd_predict)
    remember_parser(p)


#: predict's options that shape the toy model's answer only (its series, fits and axis).
TOY_ONLY = ("d_model", "n_layers", "mode", "dtype", "regime", "transfer", "along", "only_machine", "models", "n_boot",
            "bootstrap", "statistic", "drop_drifted")


def _cmd_predict(args) -> int:
    if args.model:
        refuse_unused(args, TOY_ONLY, "with --model (they choose the toy model's series and fits)")
        return cmd_predict_model(args)
    if args.d_model is None or args.n_layers is None:
        raise UsageError("predict needs --d-model and --n-layers (the toy model), or --model FILE.py:FACTORY "
                         "with --input-shape (your own model)")
    args.batch_size = batch_sizes(args, single=True)[0]
    from ..analysis.decision import decide

    wanted = dict(workload=args.workload, mode=args.mode, dtype=args.dtype, regime=args.regime,
                  transfer=args.transfer)
    decision = decide(args.results, d_model=args.d_model, n_layers=args.n_layers, batch_size=args.batch_size,
                      along=args.along, machine=args.only_machine, models=comma_list(args.models) if args.models else None,
                      n_boot=args.n_boot, seed=args.seed, bootstrap=args.bootstrap, statistic=args.statistic,
                      drop_drifted=args.drop_drifted, progress=_progress(args), **wanted)
    _warn(args, decision.warnings)
    if args.json:
        print_json(decision.to_json())
        return 0
    result = decision.payload
    if wants_table(args):
        print_tables({"devices": result["devices"], "crossovers": result["crossovers"]}, args.format)
        return 0
    for item in result["decisions"]:
        print(item["text"])
    statistic = STATISTICS[args.statistic].label
    print(f"d_model={args.d_model} n_layers={args.n_layers} batch_size={args.batch_size} "
          f"({', '.join(wanted.values())}; latency = {statistic})")
    _print_table([dict(series=item["series"], latency=format_seconds(item["latency_s"]),
                       CI=format_range(item["latency_low_s"], item["latency_high_s"], "s"),
                       PI=format_range(item["prediction_low_s"], item["prediction_high_s"], "s"),
                       model=item["model"], cv_mape=f"{_number(item['cv_mape_pct'])}%",
                       note="outside the measured range" if item["extrapolated"] else "")
                  for item in result["devices"]])
    print("  (CI: bootstrap interval of the fitted curve; PI: where a new measurement in the fitted run's "
          "conditions may land, from the errors on each measured size, and each interior axis value, left out)")
    from ..fit.latency_models import PARAMS

    for item in result["devices"]:
        unknown = [PARAMS[p].label + (" (impossible)" if p in item["impossible_parameters"] else "")
                   for p in item["unidentified_parameters"]]
        if unknown:
            print(f"  {item['series']}: not identified by its data (see crossover fit): {', '.join(unknown)}")
    for row in result.get("fleet_costs") or []:
        mark = "  <- cheapest" if row["cheapest"] else ""
        print(f"  cost at the fleet's prices: {row['series']} {row['usd_per_million']:.4g} USD per million samples "
              f"({row['usd_per_hour']:g} USD/h){mark}")
    if result["speedup"] is None:
        print(f"only one device fitted ({result['winner']}): no winner or crossover to report")
        _print_noise_floors(result["noise_floors"])
        return 0
    print(f"winner: {result['winner']}, {result['speedup']:.3g}x faster than {result['rival']}")
    for c in [result["crossover"]] + [c for c in result["crossovers"] if c["between"] != result["crossover"]["between"]]:
        low, high = c["range"]
        axis = c["axis"].replace("_", " ")
        held = ", ".join(f"{k}={v:g}" for k, v in c["fixed"].items() if v is not None)
        if c.get("paired_rounds"):
            print(f"measured crossover, round by round ({c['between'][0]} against {c['between'][1]}): "
                  f"{c['paired_rounds']['text']}")
        if c["at"] is None:
            print(f"no crossover for {axis} {low:g}–{high:g} ({held}) between {c['between'][0]} and "
                  f"{c['between'][1]}: {c['winner_everywhere']} is faster throughout (the curves cross in "
                  f"{1 - c['never_fraction']:.0%} of bootstrap resamples)")
        else:
            print(f"{'fitted ' if c.get('paired_rounds') else ''}crossover at {axis} {c['at']:.4g} "
                  f"[{_number(c['low'])}, {_number(c['high'])}] ({held}): "
                  f"{c['winner_below']} below, {c['winner_above']} above "
                  f"(no crossing in {c['never_fraction']:.0%} of bootstrap resamples)")
        if c.get("paired_rounds") and c["at"] is not None:
            holds = c["low"] is not None and c["low"] <= c["paired_rounds"]["median"] <= c["high"]
            print(f"  the fitted interval {'holds' if holds else 'misses'} the paired rounds' median")
    _print_noise_floors(result["noise_floors"])
    return 0
