"""The paper's second-edition macros: public claims against the data, a rule of thumb and its score,
each device's best mode beside eager, cost per sample at stated prices, fitted parameters against
measured peaks and spec sheets, held-out accuracy, and crossovers from paired rounds.

:func:`crossover.paper.numbers.compute_macros` calls :func:`second_edition_macros`; the numbers
come from :mod:`crossover.analysis.claims` (claims, rules, best modes), :mod:`crossover.analysis.crossovers` (cost),
:mod:`crossover.fit.peaks` (peaks), :mod:`crossover.analysis.paired_rounds` (paired rounds) and the baseline fits.
Prices are inputs (:func:`read_prices`, ``crossover/prices.toml``, package data: a price per machine
label, the whole machine), never constants of the code; :func:`role_prices` says which prices which role.
Every role the results lack still gets its macros (``n/a``), so the paper always builds.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Optional

import numpy as np
import pandas as pd

from ..analysis import claims as C
from ..analysis.crossovers import cost_crossover, cost_per_million_samples, curve_crossings
from .latex import DASH, NA, Macro, _plain, _tt, format_interval, format_number, format_quantity, format_ratio
from ..shipped_data import shipped_prices_file
from .headline import paired_macros
from .fits import PARAM_LABELS, PARAM_NAMES, TOLERANCE_PCT, crossover_text
from ..results.statistics import STATISTICS
from ..analysis.reference_study import ANCHOR, PAPER_STATISTIC, usual_threads, baseline_rows

__all__ = ["PRICES_FILE", "PRICE_ROLES", "read_prices", "role_prices", "count_text", "evidence_latex", "claim_macros", "rule_macros", "best_mode_macros",
           "cost_macros", "peak_macros", "heldout_macros", "second_edition_macros", "peaks_table"]

#: The prices file ``make paper`` reads: the package's (:func:`crossover.shipped_data.shipped_prices_file`).
PRICES_FILE = shipped_prices_file()
#: Price macro entry (``Price<Entry>...``) -> the role whose latency it prices (:func:`role_prices`).
PRICE_ROLES = {"gpu": "Cuda", "cpu": "Host", "vm": "Vm"}
#: The latency column the claims read: the statistic of the paper's fits.
COLUMN = STATISTICS[PAPER_STATISTIC].column
_CLAIM_NAMES = {"batch": "Batch", "dmodel": "DModel", "depth": "Depth", "fixed": "Fixed", "mnist": "Mnist",
                "rule": "Rule"}
#: Rule-of-thumb macro prefix -> (CPU role, CPU mode, GPU mode).
_RULE_PAIRS = {"Host": ("Host", "eager", "eager"), "Vm": ("Vm", "eager", "eager"),
               "HostBest": ("Host", "compile", "cudagraph"), "VmBest": ("Vm", "compile", "cudagraph")}


def read_prices(path=PRICES_FILE) -> dict:
    """The prices file: machine label → :class:`crossover.results.prices.MachinePrice` (the whole
    machine's price an hour, its source, and where stated its CPU alone as a CPU-only instance).
    Raises :class:`crossover.errors.PriceError` (a :class:`crossover.errors.CrossoverError`) on an
    unreadable file, a price that is not positive, or an entry without a source."""
    from ..results.prices import read_prices as read_machine_prices

    return read_machine_prices(path)


def role_prices(frame: pd.DataFrame, roles: dict, prices: Optional[dict]) -> dict:
    """Prices file entry of :data:`PRICE_ROLES` → ``{name, usd_per_hour, source, url}`` of the role it
    prices, for the roles present in ``roles`` whose machine has a price.

    A GPU's latency is priced at its machine's price. A CPU's at its machine's CPU-only price where
    the file states one (``[<machine>.cpu_only]``: the host CPU as if bought without the GPU), else at
    ``threads / cores`` of its machine's price (as ``crossover advise`` prices a CPU replica; threads:
    the role's usual count, cores: as its results record them or the file states).
    """
    from ..results.prices import machine_cores

    out, cores, threads = {}, None, None
    for entry, role in PRICE_ROLES.items():
        if role not in roles or not prices or roles[role][0] not in prices:
            continue
        machine, device = roles[role]
        price = prices[machine]
        if device != "cpu":
            out[entry] = dict(name=price.name or machine, usd_per_hour=price.usd_per_hour, source=price.source,
                              url=price.url)
            continue
        if price.cpu_only is not None:
            p = price.cpu_only
            out[entry] = dict(name=p.name or f"{machine}'s CPU", usd_per_hour=p.usd_per_hour, source=p.source, url=p.url)
            continue
        if cores is None:
            cores = machine_cores(frame["results_dir"].unique()) if "results_dir" in frame else {}
            threads = usual_threads(frame)
        k = threads.get((machine, device), -1)
        c = price.cores or cores.get(machine)
        if k is None or k <= 0 or not c:
            continue
        share = f"{int(k)}/{int(c)} of " if int(k) < int(c) else ""
        out[entry] = dict(name=price.name or machine, usd_per_hour=price.replica_usd_per_hour("cpu", int(k), int(c)),
                          source=f"{share}{price.source}" if share else price.source, url=price.url)
    return out


# ------------------------------------------------------------------------------------- formatting
def _fmt(value, kind: str) -> str:
    """A number of a claim's evidence as LaTeX (see :class:`crossover.analysis.claims.ClaimResult`)."""
    if kind == "text":
        return _plain(value)
    if kind == "pow2":
        return f"$2^{{{int(np.log2(value))}}}$"
    if value is None or not np.isfinite(value):
        return NA
    if kind == "s":
        return format_quantity(value, "s")
    if kind == "x":
        return format_ratio(value, 2)
    if kind == "%":
        return format_quantity(value, "%", 2)
    return format_number(value, 3)


def evidence_latex(template: str, numbers: dict) -> str:
    """``template`` (plain text with ``{name}`` fields) as LaTeX: its text escaped, its numbers formatted."""
    parts = re.split(r"(\{\w+\})", template)
    text = "".join(p if re.fullmatch(r"\{\w+\}", p) else _plain(p).replace("~", "$\\sim$") for p in parts)
    return text.format(**{k: _fmt(*v) for k, v in numbers.items()})


def _money(usd: float, cents: bool = False) -> str:
    """US dollars: to the cent (a price) or to three significant figures (a cost)."""
    if usd is None or not np.isfinite(usd):
        return NA
    return "\\$" + (f"{usd:.2f}" if cents else format_number(usd, 3))


def count_text(k, n) -> str:
    """``k of n``; ``n/a`` without points."""
    if n is None or not np.isfinite(n) or not n:
        return NA
    return f"{int(k)} of {int(n)}"


def _sizes(rows: pd.DataFrame) -> str:
    if rows is None or not len(rows):
        return "none"
    return ", ".join(f"({int(r.d_model)}, {int(r.n_layers)}, {int(r.batch_size)})" for r in rows.itertuples())


# ------------------------------------------------------------------------------------------ claims
def _rounds_ranges(rounds: Optional[pd.DataFrame], roles: dict) -> dict:
    """Axis -> (smallest, largest) crossing of the host CPU against its GPU over their paired rounds at the
    claims' sizes (eager, the paper's baseline); {} without paired rounds."""
    from ..analysis.paired_rounds import crossover_distribution
    from ..analysis.reference_study import BASELINE

    if rounds is None or "sequence" not in rounds or "Host" not in roles or "Cuda" not in roles:
        return {}
    base = {k: v for k, v in BASELINE.items() if k != "regime"}
    pick = lambda r: {"machine": roles[r][0], "device": roles[r][1]}  # noqa: E731
    out = {}
    for axis, fixed in (("batch_size", dict(d_model=ANCHOR["d_model"], n_layers=ANCHOR["n_layers"])),
                        ("d_model", dict(batch_size=1, n_layers=ANCHOR["n_layers"]))):
        dist = crossover_distribution(rounds[rounds["sequence"].notna()], pick("Host"), pick("Cuda"), along=axis,
                                      fixed={**base, **fixed})
        if dist.n_crossing:
            out[axis] = (dist.low, dist.high)
    return out


def claim_macros(frame: pd.DataFrame, roles: dict, rounds: Optional[pd.DataFrame] = None) -> list:
    """Per claim ``Claim<K>Statement``, ``...Source`` (a citation), ``...Verdict`` and
    ``...Evidence`` (host CPU against its GPU, eager; a parity claim judged against the paired rounds'
    crossings where ``rounds`` has them), ``...BestVerdict``/``...BestEvidence`` (compiled CPU against
    CUDA graphs) and ``...VmVerdict`` (the VM's CPU against the GPU, eager); ``ClaimsSummary`` and
    ``ClaimsBestSummary`` count the verdicts."""
    def results(cpu_role, **modes):
        if cpu_role in roles and "Cuda" in roles:
            return C.evaluate_claims(frame, roles[cpu_role], roles["Cuda"], column=COLUMN, **modes)
        return [C.ClaimResult(k, C.NOT_MEASURED) for k in C.CLAIMS]

    eager = results("Host", rounds_ranges=_rounds_ranges(rounds, roles))
    best = results("Host", cpu_mode="compile", gpu_mode="cudagraph")
    vm = results("Vm")
    macros = []

    def cell(result):
        evidence = evidence_latex(result.evidence_template, result.numbers) if result.evidence_template else ""
        return f"\\textbf{{{result.verdict}}}" + (f": {evidence}" if evidence else "")

    for e, b, v in zip(eager, best, vm):
        name = "Claim" + _CLAIM_NAMES[e.key]
        source, template = C.CLAIMS[e.key]
        macros += [
            Macro(name + "Statement", evidence_latex(template, C._claim_numbers(e.key)), f"{e.key}: the claim as its source states it"),
            Macro(name + "Source", f"\\cite{{{source}}}", f"{e.key}: where the claim comes from"),
            Macro(name + "Verdict", e.verdict, f"{e.key}: host CPU vs GPU, eager"),
            Macro(name + "Evidence", evidence_latex(e.evidence_template, e.numbers) if e.evidence_template else DASH,
                  f"{e.key}: the numbers behind the verdict"),
            Macro(name + "BestVerdict", b.verdict, f"{e.key}: compiled host CPU vs GPU with CUDA graphs"),
            Macro(name + "BestEvidence", evidence_latex(b.evidence_template, b.numbers) if b.evidence_template else DASH,
                  f"{e.key}: best modes, the numbers"),
            Macro(name + "VmVerdict", v.verdict, f"{e.key}: the VM's CPU vs the GPU (paired by size), eager"),
            Macro(name + "Cell", cell(e), f"{e.key}: verdict and numbers, eager (a table cell)"),
            Macro(name + "BestCell", cell(b), f"{e.key}: verdict and numbers, best modes (a table cell)"),
        ]

    def summary(found):
        counts = [(sum(r.verdict == v for r in found), v) for v in C.VERDICTS]
        return ", ".join(f"{k} {v}" for k, v in counts if k) or NA

    macros += [Macro("ClaimsSummary", summary(eager), "verdicts, host CPU vs GPU, eager"),
               Macro("ClaimsBestSummary", summary(best), "verdicts, best modes"),
               Macro("ClaimsVmSummary", summary(vm), "verdicts, VM vs GPU, eager"),
               Macro("ClaimsCount", format_number(len(C.CLAIMS)), "claims tested"),
               Macro("RuleParamsLimit", format_number(C.RULE_PARAMS), "the articles' rule: parameters under this"),
               Macro("RuleBatchLimit", format_number(C.RULE_BATCH), "the articles' rule: batch under this")]
    return macros


# ------------------------------------------------------------------------------------ rule of thumb
def rule_macros(frame: pd.DataFrame, roles: dict) -> list:
    """The rule "the GPU wins iff the CPU spends more than X per layer" per pair of devices
    (``Rule<Pair>...``, pairs of :data:`_RULE_PAIRS`): threshold, the gap of equally good thresholds,
    score, leave-one-out score, the host-eager rule's score on this pair (``...Transfer``), the
    500K-parameter rule's score (``...Params``) and the misclassified points (``...Wrong``)."""
    macros, host_rule = [], None
    for prefix, (cpu_role, cpu_mode, gpu_mode) in _RULE_PAIRS.items():
        name = "Rule" + prefix
        pairs = (C.paired_points(frame, roles[cpu_role], roles["Cuda"], cpu_mode=cpu_mode, gpu_mode=gpu_mode)
                 if cpu_role in roles and "Cuda" in roles else pd.DataFrame())
        if pairs.empty:
            macros += [Macro(name + s, NA, f"{prefix}: no paired points") for s in
                       ("Points", "Threshold", "Gap", "Margin", "Score", "Loo", "Transfer", "Params", "Wrong", "Text")]
            continue
        rule = C.fit_threshold_rule(pairs)
        host_rule = rule if prefix == "Host" else host_rule
        wrong = C.score(pairs, rule.predict(pairs))["misclassified"]
        params = C.score(pairs, C.params_batch_rule(pairs))
        transfer = C.score(pairs, host_rule.predict(pairs)) if host_rule is not None else None
        interior = 0 < rule.threshold < np.inf
        if interior:
            text = (f"the GPU wins if and only if the CPU spends more than {format_quantity(rule.threshold, 's')} "
                    f"per layer")
        else:
            text = f"the {'GPU' if rule.threshold == 0 else 'CPU'} wins wherever it can: no threshold does better"
        macros += [
            Macro(name + "Points", format_number(len(pairs)), f"{prefix}: paired points"),
            Macro(name + "Threshold", format_quantity(rule.threshold, "s") if interior else DASH, f"{prefix}: fitted X"),
            Macro(name + "Gap", format_interval(rule.low, rule.high, "s") if interior else DASH,
                  f"{prefix}: every threshold in this gap scores the same"),
            Macro(name + "Margin", format_ratio(rule.high / rule.low, 2) if interior else DASH,
                  f"{prefix}: the gap's width (its two points' ratio)"),
            Macro(name + "Score", count_text(rule.correct, rule.n), f"{prefix}: points the fitted rule classifies right"),
            Macro(name + "Loo", count_text(rule.loo_correct, rule.n), f"{prefix}: right when each point is left out of the fit"),
            Macro(name + "Transfer", NA if transfer is None else count_text(transfer["correct"], transfer["n"]),
                  f"{prefix}: the host-eager threshold on this pair"),
            Macro(name + "Params", count_text(params["correct"], params["n"]), f"{prefix}: the 500K-parameter rule's score"),
            Macro(name + "Wrong", _sizes(wrong), f"{prefix}: (d_model, n_layers, batch) the fitted rule gets wrong"),
            Macro(name + "Text", text, f"{prefix}: the rule in words"),
        ]
    return macros


# ------------------------------------------------------------------------------------- best modes
def best_mode_macros(frame: pd.DataFrame, roles: dict) -> list:
    """Each device eager and in its fastest mode along the anchor's batch sweep (host CPU, GPU), on the
    first GPU machine whose CPU was compiled and GPU graphed (``BestGpuName``):
    ``BestOne{Cpu,Gpu,Ratio}`` at batch 1, ``BestLarge{Low,High}`` (GPU speed-up at batch >=
    ``BestLargeBatch``), ``EagerOneRatio``/``EagerLarge{Low,High}`` likewise eager, ``BestGpuWins``."""
    s, pair = None, None
    for host, cuda in (("Host", "Cuda"), ("HostB", "CudaB")):  # the first GPU machine with both fast modes
        if host in roles and cuda in roles:
            summary = C.best_mode_summary(frame, roles[host], roles[cuda])
            if summary.get("best", {}).get("n"):
                s, pair = summary, (host, cuda)
                break
    e, b = (s or {}).get("eager", {}), (s or {}).get("best", {})
    get = lambda d, k: d.get(k, np.nan)  # noqa: E731
    gpu_name = NA
    if pair is not None:
        names = frame.loc[(frame["machine"] == roles[pair[1]][0]) & (frame["device"] == roles[pair[1]][1]), "device_name"]
        gpu_name = _plain(names.iloc[0]) if len(names) else _tt(roles[pair[1]][0])
    return [
        Macro("BestGpuName", gpu_name, "the GPU machine whose CPU and GPU were both measured in their fastest modes"),
        Macro("BestLargeBatch", format_number(C.RULE_BATCH), "large batch: at least this"),
        Macro("BestOneCpu", format_quantity(get(b, "cpu_s"), "s"), "compiled host CPU, anchor, batch 1"),
        Macro("BestOneGpu", format_quantity(get(b, "gpu_s"), "s"), "GPU with CUDA graphs, anchor, batch 1"),
        Macro("BestOneRatio", format_ratio(get(b, "cpu_s") / get(b, "gpu_s"), 2), "compiled CPU / graphed GPU at batch 1"),
        Macro("BestLargeLow", format_ratio(get(b, "large_low"), 2), "best modes: smallest GPU speed-up at large batch"),
        Macro("BestLargeHigh", format_ratio(get(b, "large_high"), 2), "best modes: largest GPU speed-up at large batch"),
        Macro("BestGpuWins", count_text(get(b, "gpu_wins"), get(b, "n")), "best-mode paired points the GPU wins"),
        Macro("EagerOneRatio", format_ratio(get(e, "gpu_s") / get(e, "cpu_s"), 2), "eager GPU / eager CPU at batch 1"),
        Macro("EagerLargeLow", format_ratio(get(e, "large_low"), 2), "eager: smallest GPU speed-up at large batch"),
        Macro("EagerLargeHigh", format_ratio(get(e, "large_high"), 2), "eager: largest GPU speed-up at large batch"),
        Macro("EagerGpuWins", count_text(get(e, "gpu_wins"), get(e, "n")), "eager paired points the GPU wins"),
    ]


# ------------------------------------------------------------------------------------------- cost
def cost_macros(frame: pd.DataFrame, roles: dict, fits: dict, prices: Optional[dict]) -> list:
    """Prices (``Price<Entry>...``: ``prices`` is :func:`read_prices`' machine label → price, each role
    priced by :func:`role_prices`), cost per million samples at the anchor at batch 1 and at the
    largest batch of its sweep, eager and in the best modes (``Cost<Role><Mode><One|Large>``), and
    the cost crossover along batch size of each CPU against the GPU, fitted (``CostXover...``) and
    between measured points (``...Empirical``)."""
    macros = []
    priced = role_prices(frame, roles, prices)
    for entry in PRICE_ROLES:
        p = priced.get(entry)
        label = entry.capitalize()
        macros += [Macro(f"Price{label}", NA if p is None else _money(p["usd_per_hour"], cents=True) + "/h", f"{entry}: USD per hour"),
                   Macro(f"Price{label}Name", NA if p is None else _plain(p["name"]), f"{entry}: the instance priced"),
                   Macro(f"Price{label}Source", NA if p is None else _plain(p["source"]), f"{entry}: where the price comes from"),
                   Macro(f"Price{label}Url", NA if p is None or not p["url"] else f"\\url{{{p['url']}}}", f"{entry}: its address")]
    price = {PRICE_ROLES[k]: v["usd_per_hour"] for k, v in priced.items()}
    modes = {"Host": ("eager", "compile"), "Vm": ("eager", "compile"), "Cuda": ("eager", "cudagraph")}
    batches = {}
    for role, (eager, best) in modes.items():
        for mode_name, mode in (("Eager", eager), ("Best", best)):
            curve = pd.Series(dtype=float)
            if role in roles:
                rows = baseline_rows(frame, mode=mode)
                machine, device = roles[role]
                rows = rows[(rows["machine"] == machine) & (rows["device"] == device)
                            & (rows["d_model"] == ANCHOR["d_model"]) & (rows["n_layers"] == ANCHOR["n_layers"])]
                curve = rows.groupby("batch_size")[COLUMN].median()
            batches[(role, mode_name)] = curve
            large = max(curve.index) if len(curve) else None
            for where, b in (("One", 1), ("Large", large)):
                ok = role in price and b is not None and b in curve.index
                value = cost_per_million_samples(curve[b], b, price[role]) if ok else np.nan
                macros.append(Macro(f"Cost{role}{mode_name}{where}", _money(float(value)),
                                    f"{role} {mode}: USD per million samples at batch {b}, the anchor's size"))
                if where == "Large":
                    macros.append(Macro(f"Cost{role}{mode_name}LargeBatch", format_number(b if b else np.nan), "that batch"))
    for cpu_role, prefix in (("Host", "CostXover"), ("Vm", "CostXoverVm")):
        cpu, gpu = fits.get(cpu_role), fits.get("Cuda")
        c = None
        if cpu is not None and gpu is not None and cpu_role in price and "Cuda" in price:
            c = cost_crossover(cpu, gpu, price[cpu_role], price["Cuda"], "batch_size",
                               d_model=ANCHOR["d_model"], n_layers=ANCHOR["n_layers"])
        names = {} if c is None else {cpu.label: "CPU", gpu.label: "GPU"}
        text = crossover_text(c, "batch size", names)
        if c is not None and c.x is None:  # a cost crossover: the winner is the cheaper, not the faster
            text = text.replace("is faster throughout", "is cheaper throughout")
        macros.append(Macro(prefix + "BatchText", text, f"{cpu_role} vs Cuda: where the cost per sample is equal (fitted)"))
        for mode_name, suffix in (("Eager", ""), ("Best", "Best")):
            a, g = batches.get((cpu_role, mode_name)), batches.get(("Cuda", mode_name))
            found = None
            if a is not None and g is not None and len(a) and len(g) and cpu_role in price and "Cuda" in price:
                found = curve_crossings(a * price[cpu_role], g * price["Cuda"])
            macros.append(Macro(prefix + suffix + "Empirical", NA if found is None else
                                (", ".join(format_number(x) for x in found) or "none"),
                                f"{cpu_role} vs Cuda {mode_name}: equal cost between measured points"))
    return macros


# ------------------------------------------------------------------------------------ peaks
_PEAK_KINDS = {"Dram": ("dram_bytes_per_s", "GB/s", 1e-9), "Cache": ("cache_bytes_per_s", "GB/s", 1e-9),
               "Flops": ("flops_per_s", "GFLOP/s", 1e-9), "Tf": ("tf32_flops_per_s", "GFLOP/s", 1e-9),
               "Dispatch": ("dispatch_s", "s", 1.0)}


def _role_peaks(frame: pd.DataFrame, roles: dict) -> dict:
    """Role -> the peaks that bound its fits (:func:`crossover.fit.peaks.peaks_of_rows`, as the fits find them)."""
    from ..fit.peaks import peaks_of_rows

    return {role: peaks_of_rows(frame[(frame["machine"] == machine) & (frame["device"] == device)])
            for role, (machine, device) in roles.items()}


def peak_macros(frame: pd.DataFrame, roles: dict, fits: dict) -> list:
    """Each role's peaks (``<Role>Peak{Dram,Cache,Flops,Tf,Dispatch}``, ``<Role>PeakSource``) and
    each fitted rate or bandwidth against its peak (``<Role><Param>Peak``, ``<Role><Param>Check``;
    :func:`crossover.fit.peaks.check_parameters`); ``PeaksAbove``: fitted values above their peak."""
    from ..fit.latency_models import PARAMS
    from ..fit.peaks import PARAMETER_PEAKS, check_parameters

    peaks = _role_peaks(frame, roles)
    macros, above, checked_n = [], 0, 0
    for role in sorted(set(roles) | {"Vm", "Host", "Cuda"}):
        p = peaks.get(role, {})
        source = p.get("source", "")
        kind = "measured" if source.startswith("measured") else "spec sheet" if source else ""
        macros.append(Macro(role + "PeakSource", {"measured": "measured peaks", "spec sheet":
                                                  "spec-sheet peaks"}.get(kind, "no peaks known"), f"{role}: where its peaks come from"))
        for suffix, (key, unit, scale) in _PEAK_KINDS.items():
            value = p.get(key)
            macros.append(Macro(f"{role}Peak{suffix}", NA if value is None else format_quantity(value * scale, unit),
                                f"{role}: peak {key}"))
        fit = fits.get(role)
        table = check_parameters(fit.parameters(), p) if fit is not None else pd.DataFrame(columns=["param"])
        table = table.set_index("param")
        for param, suffix in PARAM_NAMES.items():
            if param not in PARAMETER_PEAKS:
                continue
            if param not in table.index:
                macros += [Macro(f"{role}{suffix}Peak", DASH, ""), Macro(f"{role}{suffix}Check", DASH, "")]
                continue
            row = table.loc[param]
            has_peak = bool(np.isfinite(row["peak"]))
            checked_n += 1
            above += bool(row["above_peak"])
            check = ("above peak" if has_peak else "above the fit's in-cache") if row["above_peak"] else \
                ("within peak" if has_peak else "no peak known")
            macros += [Macro(f"{role}{suffix}Peak", format_quantity(row["peak"], PARAMS[param].unit) if has_peak else DASH,
                             f"{role}: the peak bounding {param}"),
                       Macro(f"{role}{suffix}Check", check, f"{role}: {param} against it")]
    macros.append(Macro("PeaksAbove", count_text(above, checked_n), "fitted rates/bandwidths above their peak"))
    return macros


def peaks_table(macros: list) -> str:
    """``peaks.tex``: per role, each fitted rate or bandwidth, its peak and the check (cells are macros)."""
    from ..fit.peaks import PARAMETER_PEAKS

    text = {m.name: m.text for m in macros}
    rows = []
    for role in sorted({m.name[:-len("PeakSource")] for m in macros if m.name.endswith("PeakSource")}):
        shown = [(p, s) for p, s in PARAM_NAMES.items() if p in PARAMETER_PEAKS and text.get(f"{role}{s}Check", DASH) != DASH]
        for i, (param, suffix) in enumerate(shown):
            head = f"\\{role}Label" if i == 0 else (f"\\{role}PeakSource" if i == 1 else "")
            rows.append(f"{head} & {PARAM_LABELS[param]} & \\{role}{suffix} & \\{role}{suffix}Peak & \\{role}{suffix}Check \\\\")
        if shown:
            rows.append("\\addlinespace")
    while rows and rows[-1] == "\\addlinespace":
        rows.pop()
    return "\n".join(["% Generated by crossover.paper.numbers: a table whose cells are macros of numbers.tex.",
                      "\\begin{tabular}{lllll}", "\\toprule", "series & parameter & fitted & peak & check \\\\",
                      "\\midrule", *rows, "\\bottomrule", "\\end{tabular}"]) + "\n"


# ------------------------------------------------------------------------------------- held-out
def heldout_macros(everything: pd.DataFrame, models) -> list:
    """The latency model's accuracy on held-out sizes (the quick suite's ``heldout`` sweep, which fits
    never see): the first machine whose results hold some, fitted on the rest of its run, each point
    its 10th percentile (the tools' default, :data:`crossover.results.statistics.DEFAULT_STATISTIC`, which
    ``crossover fit`` and ``experiments/bench_heldout.py`` report: the quick run's 30 short rounds
    are made for it; the median of its rounds is the paper's statistic for runs of few long rounds)."""
    from ..results.columns import HELDOUT_SWEEP
    from ..results.statistics import DEFAULT_STATISTIC, STATISTICS
    from ..fit.series_fit import fit_series

    names = ("N", "Median", "Worst", "Within", "Machine", "Model")
    held = everything[everything["sweep"] == HELDOUT_SWEEP] if "sweep" in everything else everything.iloc[:0]
    for (directory, machine, device), _ in held.groupby(["results_dir", "machine", "device"], sort=True):
        run = everything[(everything["results_dir"] == directory) & (everything["machine"] == machine)
                         & (everything["device"] == device)]
        rows = baseline_rows(run)
        if not (rows["sweep"] == HELDOUT_SWEEP).any() or (rows["sweep"] != HELDOUT_SWEEP).sum() < 8:
            continue
        fit = fit_series(rows.reset_index(drop=True), tuple(models) if models else None, n_boot=0,
                         statistic=DEFAULT_STATISTIC, label=f"{machine}/{device}")
        s = fit.heldout_summary()
        text = (f"Fitted on the rest of its run ({_tt(f'{machine}/{Path(directory).name}')}; CV chose {_tt(fit.model)}; "
                f"each point's {STATISTICS[DEFAULT_STATISTIC].label}), "
                f"the baseline model misses its {format_number(s['n'])} held-out sizes by a median of "
                f"{format_quantity(s['median_abs_pct'], '%', 2)} (worst {format_quantity(s['worst_abs_pct'], '%', 2)}; "
                f"{format_quantity(s['within_10_pct'], '%', 2)} within {format_quantity(TOLERANCE_PCT, '%', 2)}).")
        return [Macro("HeldoutText", text, "the held-out accuracy as a sentence"),Macro("HeldoutN", format_number(s["n"]), "held-out sizes"),
                Macro("HeldoutMedian", format_quantity(s["median_abs_pct"], "%", 2), "median |error| on them"),
                Macro("HeldoutWorst", format_quantity(s["worst_abs_pct"], "%", 2), "worst |error|"),
                Macro("HeldoutWithin", format_quantity(s["within_10_pct"], "%", 2), "share within 10%"),
                Macro("HeldoutMachine", _tt(f"{machine}/{Path(directory).name}"), "the run"),
                Macro("HeldoutModel", _tt(fit.model), "the model CV chose on the rest of the run"),
                Macro("HeldoutAvailable", "1", "whether held-out sizes were measured")]
    return [Macro("Heldout" + n, NA, "no held-out sizes in the results") for n in names] + \
        [Macro("HeldoutAvailable", "0", "whether held-out sizes were measured"),
         Macro("HeldoutText", "The shipped results hold no held-out sizes yet.", "the held-out accuracy as a sentence")]


def _agreement_macros(fits: dict) -> list:
    """Whether each measured host-CPU/GPU crossing lies in the fitted crossover's interval."""
    from ..analysis.crossovers import crossover

    out = []
    for axis, name, fixed in (("batch_size", "Batch", dict(d_model=ANCHOR["d_model"], n_layers=ANCHOR["n_layers"])),
                              ("d_model", "DModel", dict(batch_size=ANCHOR["batch_size"], n_layers=ANCHOR["n_layers"]))):
        cpu, gpu = fits.get("Host"), fits.get("Cuda")
        text = NA
        if cpu is not None and gpu is not None:
            c = crossover(cpu, gpu, axis, **fixed)
            if c.x is not None and c.low is not None and c.empirical:
                inside = c.low <= c.empirical[0] <= c.high
                text = "inside" if inside else "outside"
        out.append(Macro(f"Xover{name}Agree", text, f"the measured crossing along {axis} against the fitted interval"))
    return out


def second_edition_macros(*, frame, everything, rounds, roles, fits, results, prices, models) -> list:
    """Every macro of this module (see the module docstring)."""
    return (claim_macros(frame, roles, rounds) + rule_macros(frame, roles) + best_mode_macros(frame, roles)
            + cost_macros(frame, roles, fits, prices) + peak_macros(frame, roles, fits)
            + heldout_macros(everything, models) + paired_macros(frame, rounds, roles) + _agreement_macros(fits))
