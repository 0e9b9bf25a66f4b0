"""``crossover advise``: the cheapest device, batch size and replica count that answer within a latency
target at a request rate, and what it costs.

The answer is computed by :func:`crossover.analysis.advice.advise` (the serving model:
:data:`crossover.analysis.advice.SERVING_MODEL`); this module parses the options, prints the one-line
answer and the table (or ``--json``: :meth:`crossover.analysis.advice.Advice.to_json`) and draws
``--plot FILE`` (:func:`crossover.plots.serving.serving_plot`). A target or rate that is not a
positive number, or a machine without a price, is one line and exit status 2; a target nothing
meets is an answer (exit 0, ``"choice": null``).
"""

from __future__ import annotations

import argparse
import os
import sys
import textwrap
from pathlib import Path

from ..analysis.advice import MAX_BUSY, SERVING_MODEL
from ..results.statistics import STATISTICS
from ..units import format_quantity, format_seconds
from .args import (DEFAULT_RESULTS, UsageError, add_only_machine, add_statistic, comma_list, non_negative_int,
                   positive_float, positive_int, print_json, warn)
from .output import add_format, print_tables, wants_table
from ..analysis.reference_study import N_BOOT

__all__ = ["add_advise"]


def _price(text: str) -> tuple:
    """``--price MACHINE=USD_PER_HOUR`` as ``(machine, usd_per_hour)``."""
    from ..errors import PriceError
    from ..results.prices import parse_price_override

    try:
        return parse_price_override(text)
    except PriceError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_advise(sub) -> None:
    """Register ``crossover advise``."""
    from ..axes import DTYPES, MODES, WORKLOADS

    p = sub.add_parser(
        "advise",
        help="the cheapest device, batch size and replicas meeting a latency target at a request rate (toy or --model)",
        description=(
            "From a latency target (--slo-ms), a request rate (--rate) and prices per hour of each machine, the "
            "device, batch size and replica count that meet the target for the least money, its cost an hour and "
            "per million requests; then, per device (and per CPU thread count), its cheapest choice. Latencies are "
            "measured where the data hold the point (the toy's measured batch sizes, with the spread of their "
            "rounds) and predicted elsewhere (the toy's fits; --model: the calibration profiles); the answer says "
            f"which. Serving model: {SERVING_MODEL} Where nothing meets the target, it says what would (the lowest "
            "latency bound at the rate, and from which rate one replica meets it) and exits 0."),
        epilog="examples: crossover advise --d-model 128 --n-layers 128 --slo-ms 10 --rate 10000; crossover advise "
               "--model experiments/zoo/mnist_mlp.py:model --input-shape 1,28,28 --slo-ms 10 --rate 10000 --plot "
               "advise.png; prices: crossover/prices.toml (--prices FILE replaces it, --price MACHINE=USD_PER_HOUR "
               "overrides one)",
    )
    p.add_argument("--slo-ms", type=positive_float, required=True, metavar="MS",
                   help="the latency target in milliseconds: every request answered within it (by the bound)")
    p.add_argument("--rate", type=positive_float, required=True, metavar="PER_S", help="requests per second")
    p.add_argument("--d-model", type=positive_int, help="layer width (the toy model; required without --model)")
    p.add_argument("--n-layers", type=positive_int, help="residual blocks (the toy model; required without --model)")
    p.add_argument("--model", metavar="FILE.py:FACTORY",
                   help="your own model: a callable in a Python file that returns an nn.Module (instead of the toy)")
    p.add_argument("--input-shape", metavar="DIMS", help="with --model: one sample's shape, e.g. 3,32,32 (the batch "
                                                         "dimension is added)")
    p.add_argument("--input-dtype", default="float32", metavar="DTYPE",
                   help="with --model: the input's dtype (default float32; long for token ids)")
    p.add_argument("--profiles", type=Path, nargs="+", metavar="DIR",
                   help="with --model: calibration profiles (default: the shipped ones in experiments/profiles)")
    p.add_argument("--prices", type=Path, metavar="FILE",
                   help="prices per hour of each machine label (a TOML; default crossover/prices.toml), replacing "
                        "the package's")
    p.add_argument("--price", type=_price, action="append", default=[], metavar="MACHINE=USD_PER_HOUR",
                   help="one machine's price an hour (the whole machine), overriding the prices file; repeatable")
    p.add_argument("--results", type=Path, nargs="+", default=[DEFAULT_RESULTS], metavar="DIR",
                   help="results directories for the toy (default: the shipped reference data)")
    add_only_machine(p, help="only this machine's devices (default: every machine in the data; --machine, its old "
                             "spelling, still works)")
    p.add_argument("--workload", default="forward", choices=WORKLOADS, help="default forward")
    p.add_argument("--mode", default="eager", choices=MODES, help="the toy's execution mode (default eager)")
    p.add_argument("--dtype", default="float32", choices=DTYPES, help="the toy's dtype (default float32)")
    p.add_argument("--max-batch-size", type=positive_int, metavar="N",
                   help="the largest batch size considered (default: the toy's largest measured batch of each "
                        "series, or 1024 with --model)")
    add_statistic(p)
    p.add_argument("--models", help="the toy's candidate models, comma-separated (default: each device's)")
    p.add_argument("--n-boot", type=non_negative_int, default=N_BOOT,
                   help=f"bootstrap resamples of the toy's fits (default {N_BOOT}, as predict)")
    p.add_argument("--seed", type=non_negative_int, default=0, help="bootstrap seed (default 0)")
    p.add_argument("--plot", type=Path, metavar="FILE",
                   help="draw each device's latency against throughput with the target, the rate and the choice "
                        "(PNG, PDF or SVG by the suffix)")
    add_format(p, json_help="print one JSON object, schema crossover.advise (the short form of --format json)")
    p.add_argument("--progress", action="store_true", help="progress on stderr even when it is not a terminal (as -v)")
    p.set_defaults(func=_cmd_advise)


def _cmd_advise(args) -> int:
    from ..analysis.advice import advise
    from ..measurement.user_module import parse_input_shape
    from ..progress import progress_bar, wants_progress

    if args.model is None and (args.d_model is None or args.n_layers is None):
        raise UsageError("advise needs --d-model and --n-layers (the toy model), or --model FILE.py:FACTORY with "
                         "--input-shape (your own model)")
    if args.model is not None and not args.input_shape:
        raise UsageError("--model needs --input-shape (one sample's shape, e.g. 3,32,32)")
    progress = (lambda costs: progress_bar(costs, desc="fitting")) \
        if wants_progress(quiet=args.quiet or args.json, asked=args.progress or args.verbose > 0) else None
    advice = advise(args.results, slo_s=args.slo_ms / 1e3, rate_per_s=args.rate, d_model=args.d_model,
                    n_layers=args.n_layers, model=args.model,
                    input_shape=parse_input_shape(args.input_shape) if args.model else None,
                    input_dtype=args.input_dtype, profiles=args.profiles, prices=args.prices,
                    price_overrides=dict(args.price), workload=args.workload, mode=args.mode, dtype=args.dtype,
                    machine=args.only_machine, max_batch_size=args.max_batch_size,
                    models=comma_list(args.models) if args.models else None, n_boot=args.n_boot, seed=args.seed,
                    statistic=args.statistic, progress=progress)
    for warning in advice.warnings:
        warn(args, warning)
    if args.plot:
        _plot(advice, args.plot)
        if not args.quiet:
            print(f"crossover: wrote {args.plot}", file=sys.stderr)
    if args.json:
        print_json(advice.to_json())
        return 0
    if wants_table(args):
        print_tables({"options": _option_rows(advice)}, args.format)
        return 0
    _print(advice)
    return 0


def question_text(advice) -> str:
    """What was asked, in a few words (the table's header, the plot's legend title)."""
    q = advice.question
    if q.get("kind") == "model":
        what = f"{q['model']}, input {'x'.join(map(str, q['input_shape']))}, {q['workload']}"
    else:
        what = (f"toy d_model={q['d_model']} n_layers={q['n_layers']} ({q['workload']}, {q['mode']}, {q['dtype']}; "
                f"latency = {STATISTICS[q['statistic']].label})")
    return f"{what}: target {format_seconds(advice.slo_s)} at {format_quantity(advice.rate_per_s, 'req/s')}"


def _option_rows(advice) -> list:
    """``advise --format md|csv``: per device, its cheapest choice (empty where none meets the target)."""
    rows = []
    for o in advice.options:
        best = o["best"] or {}
        rows.append(dict(device=o["label"], replica_usd_per_hour=o["replica_usd_per_hour"],
                         meets_target=o["best"] is not None,
                         **{k: best.get(k) for k in ("batch_size", "replicas", "latency_s", "latency_high_s",
                                                     "latency_bound_s", "usd_per_hour", "usd_per_million_requests",
                                                     "source")}))
    return rows


def _rows(advice) -> list:
    rows = []
    for o in advice.options:
        b = o["best"]
        low = o["lowest_latency"]
        row = dict(device=o["label"], replica=format_quantity(o["replica_usd_per_hour"], "USD/h"))
        if b is None:
            row.update(batch="-", replicas="-", step="-", bound="-", cost="-", per_M="-",
                       latency=f"none meets the target: lowest bound {format_seconds(low['latency_bound_s'])} "
                               f"(batch {low['batch_size']}, {low['replicas']} replica{'' if low['replicas'] == 1 else 's'})")
        else:
            row.update(batch=str(b["batch_size"]), replicas=str(b["replicas"]),
                       step=f"{format_seconds(b['latency_s'])} [{format_seconds(b['latency_high_s'])}]",
                       bound=format_seconds(b["latency_bound_s"]), cost=format_quantity(b["usd_per_hour"], "USD/h"),
                       per_M=format_quantity(b["usd_per_million_requests"], "USD"), latency=b["source"])
        rows.append(row)
    return rows


def _print_table(rows: list) -> None:
    heads = dict(device="device", replica="replica", batch="batch", replicas="replicas", step="step [high]",
                 bound="bound", cost="cost", per_M="per M requests", latency="latency")
    width = {c: max(len(heads[c]), *(len(r[c]) for r in rows)) for c in heads}
    right = {"batch", "replicas", "bound", "cost", "per_M"}
    cell = lambda c, t: t.rjust(width[c]) if c in right else t.ljust(width[c])  # noqa: E731
    print("  " + "  ".join(cell(c, heads[c]) for c in heads).rstrip())
    for r in rows:
        print("  " + "  ".join(cell(c, r[c]) for c in heads).rstrip())


def _print(advice) -> None:
    print(advice.text)
    print(question_text(advice))
    _print_table(_rows(advice))
    print(f"  (replica: one replica's price an hour; step: its latency at that batch [upper end]; bound: B·n/λ + "
          f"t_high; at most {MAX_BUSY:.0%} busy; cost: the replicas' price an hour; the serving model: crossover "
          "advise --help)")
    print("latencies:")
    for o in advice.options:
        print(f"  {o['label']}: {o['latencies']}")
    prices = advice.prices
    shown = os.path.relpath(prices["file"]) if not os.path.relpath(prices["file"]).startswith("..") else prices["file"]
    print(f"prices ({shown}" + (", --price" if prices["overrides"] else "") + "):")
    for machine, p in prices["machines"].items():
        print(f"  {machine}: {format_quantity(p['usd_per_hour'], 'USD/h')} the machine ({p['source']})")


def _plot(advice, path: Path) -> None:
    from matplotlib.figure import Figure

    from ..plots.serving import serving_plot
    from ..plots.theme import style

    with style():
        fig = Figure(figsize=(5.6, 4.2))
        ax = fig.add_subplot(1, 1, 1)
        serving_plot(advice.by_rate(), slo_s=advice.slo_s, rate_per_s=advice.rate_per_s, choice=advice.choice,
                     note=question_text(advice), ax=ax)
        ax.set_title(textwrap.fill(advice.text, 100), fontsize=7)
        try:
            fig.savefig(path)
        except (OSError, ValueError) as exc:
            raise UsageError(f"cannot write the plot {path}: {exc}") from None
