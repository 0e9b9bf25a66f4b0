"""Every number the paper quotes, computed from results and written as LaTeX macros.

``python -m crossover.paper.numbers --results experiments/results --out paper/generated/numbers.tex``
(what ``make paper`` runs) loads the results with :func:`crossover.load_results`, fits the baseline
series (forward pass, eager, float32, latency regime, input on the device, each device's usual
thread count) with :func:`crossover.analysis.fit_series`, solves the crossovers with
:func:`crossover.analysis.crossover`, reads the mode, round and metadata facts straight from the
rows, and writes one ``\\newcommand`` per number, with its unit in the macro text and intervals as
``[lo, hi]``. It also writes ``parameters.tex``, ``accuracy.tex`` and ``peaks.tex`` (tables that only reference
those macros) next to it. The paper types no number by hand.

Series are named by role (:func:`crossover.analysis.reference_study.assign_roles`), so the paper's text does not
depend on machine names:

=====  =======================================================================================
Vm     the CPU of a machine without a GPU (the first by name; further ones: VmB, VmC, ...)
Host   the CPU of the host machine (:func:`crossover.analysis.reference_study.host_machine`: CPU and GPU measured)
Cuda   that machine's GPU (a further GPU machine: CudaB, with HostB if its CPU was measured)
=====  =======================================================================================

The modules: :mod:`crossover.analysis.reference_study` chooses the rows, roles and fits; :mod:`crossover.paper.fits`
and :mod:`crossover.paper.facts` turn fits and rows into :class:`crossover.paper.latex.Macro` objects,
:mod:`crossover.paper.claims` the second edition's (claims, rule of thumb, best modes, cost at the
prices of ``crossover/prices.toml``, parameters against peaks, held-out sizes, paired rounds);
:mod:`crossover.paper.latex` formats the numbers. This module puts them together (:func:`compute_macros`)
and writes the files (:func:`write`, :func:`main`).

A role the results lack still gets every macro, with the text ``n/a``, so the paper always builds.
Nothing here measures: the timer's agreement with ``torch.utils.benchmark`` is not in the results
and is not reported.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import Optional, Sequence

import pandas as pd

from .. import analysis as A
from .latex import DASH, NA, Macro, format_interval, format_number, format_quantity, render, write_files
from ..shipped_data import shipped_results_dir
from .headline import headline_fit_requests, headline_macros
from .claims import PRICES_FILE, peaks_table, read_prices, second_edition_macros
from .zoo import read_zoo, zoo_macros, zoo_table
from ..analysis.visit_spread import point_spread, reference_spread, zoo_visits
from .transfer import predicted_set_names, transfer_frames, transfer_macros, transfer_table
from .visits import interference_macros, paired_visit_macros, sitting_macros, visit_macros
from .coverage import coverage_table
from .launch_rule import launch_rule_macros, mnist_zoo_macros
from .facts import (_absent_role_macros, _graph_outlier_macros, design_macros, metadata_macros, mode_macros,
                    protocol_macros, round_macros)
from .fits import (BAR_MAPE_PCT, BAR_WITHIN_PCT, GEMM_MODELS, PARAM_LABELS, PARAM_NAMES, TOLERANCE_PCT,
                   accuracy_macros, crossover_macros, gemm_macros, parameter_macros, quiet_macros,
                   run_to_run_macros)
from ..results.store import load_results
# The study's choices, re-exported under their old home (public names of this module before
# crossover.analysis.reference_study; new code imports them from crossover.analysis.reference_study).
from ..analysis.reference_study import (ANCHOR, BASELINE, N_BOOT, PAPER_STATISTIC, ROLES, assign_roles,
                                        baseline_rows, fit_baseline, main_runs, prefetch_baselines, prefetching)

__all__ = [
    "Macro", "BASELINE", "ANCHOR", "ROLES", "PARAM_NAMES", "BAR_MAPE_PCT", "BAR_WITHIN_PCT", "TOLERANCE_PCT",
    "main_runs", "baseline_rows", "assign_roles", "fit_baseline", "format_number", "format_quantity",
    "format_interval", "parameter_macros", "accuracy_macros", "crossover_macros", "mode_macros",
    "metadata_macros", "round_macros", "design_macros", "compute_macros", "render", "write", "main",
    "N_BOOT", "PAPER_STATISTIC", "NA",
]


def compute_macros(results: Sequence, *, n_boot: int = N_BOOT, seed: int = 0, jobs: int = 1,
                   models: Optional[Sequence[str]] = None, level: float = 0.95, prices=None,
                   price_overrides: Optional[dict] = None) -> list:
    """Every macro the paper uses, from the results directories ``results`` (see module docstring);
    ``prices`` is a prices file (:func:`crossover.paper.claims.read_prices`: a price per machine label;
    default ``crossover/prices.toml`` where it exists, else the cost macros are ``n/a``) and
    ``price_overrides`` machine label → USD an hour, replacing the file's price of that machine."""
    if isinstance(results, (str, Path)):
        results = [results]
    everything = load_results(results, raw=True)
    frame = main_runs(everything)
    if frame.empty:
        raise A.AnalysisError(f"no measured points in {', '.join(map(str, results))}")
    dirs = set(frame["results_dir"])
    every_round = load_results(results, combine_rounds=False)
    rounds = every_round[every_round["results_dir"].isin(dirs)]
    superseded = None
    for directory in sorted(dirs):
        path = Path(directory) / "superseded_rows.csv"
        if path.exists():
            superseded = pd.read_csv(path, usecols=lambda c: c in ("median_s", "device"))
    roles = assign_roles(frame)
    with prefetching(jobs):
        return _macros(results, everything, frame, dirs, every_round, rounds, roles, superseded, n_boot=n_boot,
                       seed=seed, jobs=jobs, models=models, level=level, prices=prices, price_overrides=price_overrides)


def _macros(results, everything, frame, dirs, every_round, rounds, roles, superseded, *, n_boot, seed, jobs, models,
            level, prices, price_overrides) -> list:
    """:func:`compute_macros` once the results are loaded: every fit it reads is started at once
    (:func:`crossover.analysis.reference_study.prefetch_baselines`, in ``jobs`` processes), then the macros
    are computed in order, each waiting for the fits it reads."""
    fit_options = dict(models=models, n_boot=n_boot, seed=seed, jobs=jobs)
    # the headline's runs first: one of them fits far longer than its few points suggest (its rounds'
    # refits converge slowly), and a long fit started last keeps one process busy alone at the end
    prefetch_baselines([(rows, run_roles, fit_options)
                        for rows, run_roles in headline_fit_requests(everything, every_round, roles)]
                       + [(frame, roles, fit_options), (frame, roles, dict(fit_options, statistic="p10")),
                          (frame, roles, dict(fit_options, n_boot=0, extra_models=GEMM_MODELS))])
    zoo_sets = _zoo_sets(results)
    zoo_frames = transfer_frames([s for s in zoo_sets if s.name in predicted_set_names()])  # while the fits run
    fits = fit_baseline(frame, roles, models=models, n_boot=n_boot, seed=seed, jobs=jobs)
    for role in ROLES:  # the paper's roles always exist, as n/a if absent
        fits.setdefault(role, None)
    macros = [Macro("NBoot", format_number(n_boot), "bootstrap resamples per fit"),
              Macro("Level", format_quantity(100 * level, "%", 2), "confidence level of intervals")]
    macros += design_macros(frame)
    macros += metadata_macros(frame, rounds, roles)
    for role in ROLES + ("HostB", "CudaB"):  # the text names a second GPU machine too (n/a when there is none)
        if role not in roles:
            macros += _absent_role_macros(role)
    for role, fit in sorted(fits.items()):
        macros += parameter_macros(role, fit)
    macros += accuracy_macros(fits)
    macros += crossover_macros(fits, level)
    quiet = fit_baseline(frame, roles, models=models, n_boot=n_boot, seed=seed, jobs=jobs, statistic="p10")
    macros += quiet_macros(fits, {r: quiet.get(r) for r in fits})
    macros += run_to_run_macros(everything)
    with_gemm = fit_baseline(frame, roles, models=models, extra_models=GEMM_MODELS, n_boot=0, seed=seed, jobs=jobs)
    macros += gemm_macros(fits, {r: with_gemm.get(r) for r in fits})
    # the text names a second GPU machine's latencies and rounds too (n/a when there is none)
    every_role = {**{r: ("", "cuda" if r.startswith("Cuda") else "cpu") for r in ROLES + ("HostB", "CudaB")}, **roles}
    macros += mode_macros(frame, every_role)
    macros += round_macros(rounds, every_role, superseded)
    macros += protocol_macros(results, dirs, {**{r: ("", "cuda" if r.startswith("Cuda") else "cpu") for r in ROLES}, **roles})
    if prices is None and PRICES_FILE.exists():
        prices = PRICES_FILE
    machine_prices = read_prices(prices) if prices else None
    if price_overrides:
        from ..results.prices import with_overrides

        machine_prices = with_overrides(machine_prices or {}, price_overrides)
    macros += second_edition_macros(frame=frame, everything=everything, rounds=rounds, roles=roles, fits=fits,
                                    results=results, prices=machine_prices, models=models)
    macros += zoo_macros(read_zoo(list(results)))
    macros += transfer_macros(zoo_frames)
    macros += visit_macros(point_spread(zoo_visits(zoo_sets, "cuda")), reference_spread(zoo_sets, "cuda"))
    macros += paired_visit_macros(everything) + interference_macros(results) + sitting_macros(results)
    macros += launch_rule_macros(frame, roles, zoo_frames) + mnist_zoo_macros(zoo_frames)
    macros += headline_macros(everything, results, roles, fits, n_boot=n_boot, seed=seed, jobs=jobs, models=models,
                              rounds=every_round)
    return macros


def _zoo_sets(results) -> list:
    """The zoo sets listed beside the results directories (``zoo_checks.toml``)."""
    from ..analysis.zoo_runs import ZOO_CHECKS_FILE, read_zoo_sets

    return [s for r in results for s in read_zoo_sets(Path(r) / ZOO_CHECKS_FILE)]


def _table_rows(macros: list) -> tuple:
    params, accuracy = [], []
    roles = sorted({m.name[:-len("Model")] for m in macros
                    if re.fullmatch(r"(Vm|Host|Cuda)[B-Z]?Model", m.name) and m.text != NA})  # absent roles: no row
    text = {m.name: m.text for m in macros}
    for role in roles:
        shown = [s for s in PARAM_NAMES.values() if text.get(role + s) not in (DASH, NA, None)]
        for i, suffix in enumerate(shown):
            label = next(PARAM_LABELS[k] for k, v in PARAM_NAMES.items() if v == suffix)
            head = f"\\{role}Label" if i == 0 else (f"\\{role}Model" if i == 1 else "")
            params.append(f"{head} & {label} & \\{role}{suffix} & \\{role}{suffix}CI \\\\")
        if shown:
            params.append("\\addlinespace")
        accuracy.append(f"\\{role}Label & \\{role}Model & "
                        + " & ".join(f"\\{role}CvMape{a} / \\{role}CvWithin{a}" for a in ("DModel", "NLayers", "Batch", ""))
                        + f" & \\{role}AffineCvMape \\\\")
    while params and params[-1] == "\\addlinespace":
        params.pop()
    params = ["\\begin{tabular}{lllr}", "\\toprule", "series / model & parameter & value & interval \\\\",
              "\\midrule", *params, "\\bottomrule", "\\end{tabular}"]
    accuracy = ["\\begin{tabular}{llccccc}", "\\toprule",
                "series & model & \\texttt{d\\_model} & \\texttt{n\\_layers} & batch size & mean & affine \\\\",
                "\\midrule", *accuracy, "\\bottomrule", "\\end{tabular}"]
    return "\n".join(params) + "\n", "\n".join(accuracy) + "\n"


def write(macros: list, out: Path, source: str = "") -> list:
    """Write ``out`` (numbers.tex) and, beside it, ``parameters.tex``, ``accuracy.tex``, ``peaks.tex``
    ``zoo.tex``, ``transfer.tex`` and ``coverage.tex`` (tabulars whose cells reference the macros). Returns the paths written."""
    out = Path(out)
    params, accuracy = _table_rows(macros)
    header = "% Generated by crossover.paper.numbers: a table whose cells are macros of numbers.tex.\n"
    return write_files({out: render(macros, source), out.parent / "parameters.tex": header + params,
                        out.parent / "accuracy.tex": header + accuracy, out.parent / "peaks.tex": peaks_table(macros),
                        out.parent / "zoo.tex": header + zoo_table(),
                        out.parent / "transfer.tex": header + transfer_table(),
                        out.parent / "coverage.tex": header + coverage_table(macros)})


def _price_override(text: str) -> tuple:
    """``--price MACHINE=USD_PER_HOUR`` as ``(machine, usd_per_hour)`` (an argparse type)."""
    from ..errors import PriceError
    from ..results.prices import parse_price_override

    try:
        return parse_price_override(text)
    except PriceError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m crossover.paper.numbers",
        description="Compute every number the paper quotes from results and write them as LaTeX macros "
                    "(numbers.tex, plus parameters.tex, accuracy.tex and peaks.tex tables beside it).",
        epilog="example: python -m crossover.paper.numbers --results experiments/results "
               "--out paper/generated/numbers.tex")
    parser.add_argument("--results", type=Path, nargs="+", default=[shipped_results_dir()], metavar="DIR",
                        help="results directories (default experiments/results)")
    parser.add_argument("--out", type=Path, default=Path("paper/generated/numbers.tex"), help="macro file to write")
    parser.add_argument("--n-boot", type=int, default=N_BOOT,
                        help=f"bootstrap resamples per fit (default {N_BOOT}, as crossover figures uses: "
                             "another value makes the text's intervals differ from the figures')")
    parser.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")
    parser.add_argument("--jobs", type=int, default=2, help="series fitted in parallel (default 2)")
    parser.add_argument("--prices", type=Path, default=None, metavar="FILE",
                        help="prices per hour of each machine label for the cost section, replacing the package's "
                             "(default crossover/prices.toml)")
    parser.add_argument("--price", type=_price_override, action="append", default=[], metavar="MACHINE=USD_PER_HOUR",
                        help="one machine's price an hour (its whole machine), overriding the prices file; repeatable")
    args = parser.parse_args(argv)
    from ..errors import CrossoverError

    try:
        macros = compute_macros(args.results, n_boot=args.n_boot, seed=args.seed, jobs=args.jobs, prices=args.prices,
                                price_overrides=dict(args.price))
        paths = write(macros, args.out, ", ".join(map(str, args.results)))
    except (CrossoverError, ValueError) as exc:
        print(f"paper_numbers: {exc}", file=sys.stderr)
        return 2
    print(f"wrote {len(macros)} macros to {paths[0]} (and {', '.join(p.name for p in paths[1:])})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
