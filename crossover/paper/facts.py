"""The paper's macros read straight from the measured rows: execution modes, rounds, the measuring
protocol, metadata and the design (no fits).

:func:`crossover.paper.numbers.compute_macros` calls them; each returns
:class:`crossover.paper.latex.Macro` objects.
"""

from __future__ import annotations

import math
import re
from typing import Optional, Sequence

import numpy as np
import pandas as pd

from .latex import NA, Macro, _plain, _tt, format_number, format_quantity, format_ratio
from .fits import AXIS_NAMES, BAR_MAPE_PCT, BAR_WITHIN_PCT, TOLERANCE_PCT
from ..results.store import REFERENCE_SWEEP, load_metadata, load_results
from ..analysis.reference_study import ANCHOR, BASELINE, usual_threads, baseline_rows

__all__ = ["WIDE_BATCH", "QUOTED", "mode_macros", "thread_sweep_macros", "round_macros", "protocol_macros", "metadata_macros",
           "design_macros"]

#: The second batch size of the mode comparison (the mode sweep measures batch 1 and this).
WIDE_BATCH = 64
#: Figures the text cites from REFERENCES.md (numbers of other people's work, kept here so that the
#: paper's text still types none).
QUOTED = {
    "HabitatErrPct": (11.8, "\\,\\%", "Habitat (USENIX ATC 2021): mean error on training iterations"),
    "NnMeterWithinPct": (99.0, "\\,\\%", "nn-Meter (MobiSys 2021): share of predictions within 10%"),
    "EagerOpOverheadLowUs": (5, "", "pytorch/pytorch#41383: eager per-op overhead, low end (us)"),
    "EagerOpOverheadHighUs": (7, "\\,\\ensuremath{\\mu}s", "pytorch/pytorch#41383: high end"),
    "LeeSpeedup": (2.5, "\\ensuremath{\\times}", "Lee et al. ISCA 2010: GTX 280 vs Core i7-960"),
    "ChngParityDModel": (512, "", "Chng 2024: CPU about equal to the GPU up to this d_model"),
    "ChngParityBatch": (64, "", "Chng 2024: CPU comparable up to this batch"),
    "IndepthCpuFasterLow": (2, "", "indepth.dev: CPU VM 2-3x faster than an L4 (low)"),
    "IndepthCpuFasterHigh": (3, "\\ensuremath{\\times}", "indepth.dev: (high)"),
}


def _rows(frame, machine, device, *, mode="eager", **config) -> pd.DataFrame:
    """The rows of ``machine``'s ``device`` in ``mode``, the baseline setting otherwise and ``config``
    (a column the frame lacks is not filtered on)."""
    rows = frame[(frame["machine"] == machine) & (frame["device"] == device) & (frame["mode"] == mode)]
    for column, value in {**{k: v for k, v in BASELINE.items() if k != "mode"}, **config}.items():
        if column in rows:
            rows = rows[rows[column] == value]
    return rows


def _point(frame, machine, device, *, mode="eager", **config):
    """The measured point at ``config``; a size measured by several sweeps (the anchor in the batch
    and threads sweeps) gets their median, as the fits and figures take it."""
    rows = _rows(frame, machine, device, mode=mode, **config)
    if "threads" in rows and len(rows) > 1:  # the device's usual thread count, as baseline_rows keeps
        usual = rows["threads"].astype("float").fillna(-1).value_counts().idxmax()
        rows = rows[rows["threads"].astype("float").fillna(-1) == usual]
    if not len(rows):
        return None
    point = rows.iloc[0].copy()
    for column in ("median_s", "compile_s", "device_busy_s"):
        if column in rows:
            point[column] = rows[column].median()
    return point


def mode_macros(frame: pd.DataFrame, roles: dict) -> list:
    """Execution modes at the anchor (and at batch 64) from the measured rows: time per layer, eager
    vs CUDA graphs on the GPU, eager vs ``torch.compile`` on each CPU, compile time, best modes."""
    macros = []
    L = ANCHOR["n_layers"]
    anchor = dict(ANCHOR)
    wide = dict(ANCHOR, batch_size=WIDE_BATCH)

    def ratio(a, b):
        return float(a["median_s"] / b["median_s"]) if a is not None and b is not None else np.nan

    for role in sorted(roles):
        machine, device = roles[role]
        eager, eager64 = _point(frame, machine, device, **anchor), _point(frame, machine, device, **wide)
        macros += [Macro(role + "AnchorLatency", format_quantity(None if eager is None else eager["median_s"], "s"),
                         f"{role}: measured latency at {anchor}"),
                   Macro(role + "EagerPerLayer", format_quantity(None if eager is None else eager["median_s"] / L, "s"),
                         f"{role}: measured latency / n_layers at the anchor, eager")]
        other = "cudagraph" if device.startswith("cuda") else "compile"
        name = "Graph" if other == "cudagraph" else "Compile"
        fast, fast64 = (_point(frame, machine, device, mode=other, **c) for c in (anchor, wide))
        macros += [
            Macro(role + name + "Latency", format_quantity(None if fast is None else fast["median_s"], "s"), f"{role}: {other} at the anchor"),
            Macro(role + name + "PerLayer", format_quantity(None if fast is None else fast["median_s"] / L, "s"),
                  f"{role}: {other} latency / n_layers at the anchor"),
            Macro(role + name + "Speedup", format_ratio(ratio(eager, fast), 2),
                  f"{role}: eager / {other} at the anchor"),
            Macro(role + name + "SpeedupWide", format_ratio(ratio(eager64, fast64), 2),
                  f"{role}: eager / {other} at batch 64"),
        ]
        if other == "compile":
            macros.append(Macro(role + "CompileTime", format_quantity(None if fast is None else fast["compile_s"], "s", 2),
                                f"{role}: torch.compile time at the anchor (not in the latency)"))
    if "Host" in roles and "Cuda" in roles:
        cpu = _point(frame, *roles["Host"], mode="compile", **anchor)
        gpu = _point(frame, *roles["Cuda"], mode="cudagraph", **anchor)
        macros.append(Macro("BestModeRatio", format_ratio(ratio(cpu, gpu), 2),
                            "host CPU compiled / GPU with CUDA graphs at the anchor (>1: the GPU wins)"))
    else:
        macros.append(Macro("BestModeRatio", NA, "host CPU compiled / GPU with CUDA graphs at the anchor"))
    macros += _graph_outlier_macros(frame, roles)
    macros += thread_sweep_macros(frame, roles)
    return macros


def thread_sweep_macros(frame: pd.DataFrame, roles: dict) -> list:
    """The eager host CPU's step at the anchor at each thread count measured, on the first GPU machine's
    host with a thread sweep there (roles ``Host``, ``HostB``): ``ThreadsMachine``, ``ThreadsCounts``, and
    at batch 1 (``One``) and :data:`WIDE_BATCH` (``Wide``) the fastest count (``ThreadsBest<b>Count``), its
    latency (``...Latency``), the usual count's (``ThreadsUsual<b>Latency``) and their ratio
    (``ThreadsGain<b>``, >1: fewer threads are faster)."""
    names = [f"Threads{kind}{b}{what}" for b in ("One", "Wide")
             for kind, what in (("Best", "Count"), ("Best", "Latency"), ("Usual", "Latency"), ("Gain", ""))]
    for role in ("Host", "HostB"):
        if role not in roles:
            continue
        machine, device = roles[role]
        rows = _rows(frame, machine, device, d_model=ANCHOR["d_model"], n_layers=ANCHOR["n_layers"])
        if "threads" not in rows or rows["threads"].nunique() < 2:
            continue
        usual = int(rows["threads"].value_counts().idxmax())
        gpu = frame.loc[(frame["machine"] == machine) & (frame["device"] != device), "device_name"].dropna()
        macros = [Macro("ThreadsMachine", _plain(str(gpu.iloc[0])) if len(gpu) else _tt(machine),
                        "the GPU machine whose host's eager thread sweep the text quotes"),
                  Macro("ThreadsCounts", ", ".join(str(int(n)) for n in sorted(rows["threads"].unique())),
                        "its thread counts measured at the anchor"),
                  Macro("ThreadsUsual", str(usual), "its usual thread count")]
        for tag, batch in (("One", 1), ("Wide", WIDE_BATCH)):
            per = rows[rows["batch_size"] == batch].groupby("threads")["median_s"].median()
            best = int(per.idxmin()) if len(per) else None
            at_usual = per.get(usual, np.nan)
            macros += [Macro(f"ThreadsBest{tag}Count", NA if best is None else str(best), f"fastest thread count at batch {batch}"),
                       Macro(f"ThreadsBest{tag}Latency", format_quantity(per.min() if len(per) else None, "s"),
                             f"its latency at batch {batch}"),
                       Macro(f"ThreadsUsual{tag}Latency", format_quantity(at_usual, "s"), f"the usual count's, batch {batch}"),
                       Macro(f"ThreadsGain{tag}", format_ratio(at_usual / per.min(), 2) if len(per) else NA,
                             f"usual count / fastest count at batch {batch}")]
        return macros
    return [Macro(n, NA, "no host thread sweep at the anchor") for n in ["ThreadsMachine", "ThreadsCounts", "ThreadsUsual"] + names]


def _graph_outlier_macros(frame: pd.DataFrame, roles: dict) -> list:
    """The slowest CUDA-graph point of the GPU's batch sweep at the anchor's size, against the median
    of the others: with launches gone, a slow kernel choice shows (``GraphOutlier...``)."""
    names = ("Batch", "Latency", "Busy", "Others", "Ratio")
    rows = None
    if "Cuda" in roles:
        machine, device = roles["Cuda"]
        rows = _rows(frame, machine, device, mode="cudagraph", d_model=ANCHOR["d_model"], n_layers=ANCHOR["n_layers"])
    if rows is None or len(rows) < 3:
        return [Macro("GraphOutlier" + n, NA, "slowest CUDA-graph point of the batch sweep") for n in names]
    rows = rows.sort_values("batch_size")
    worst = rows.loc[rows["median_s"].idxmax()]
    others = float(rows.loc[rows.index != worst.name, "median_s"].median())
    busy = worst.get("device_busy_s", np.nan)
    return [
        Macro("GraphOutlierBatch", format_number(worst["batch_size"]), "batch size of the slowest CUDA-graph point"),
        Macro("GraphOutlierLatency", format_quantity(worst["median_s"], "s"), "its latency"),
        Macro("GraphOutlierBusy", format_quantity(busy if pd.notna(busy) else None, "s"), "its summed kernel time per step"),
        Macro("GraphOutlierOthers", format_quantity(others, "s"), "median latency of the other batch sizes"),
        Macro("GraphOutlierRatio", format_ratio(worst["median_s"] / others, 2), "slowest / median of the others"),
    ]


def round_macros(frame_rounds: pd.DataFrame, roles: dict, superseded: Optional[pd.DataFrame] = None) -> list:
    """Run-to-run variation from the rows of each round (``load_results(combine_rounds=False)``):
    per role, the mean deviation of one round's median from the median of its rounds, and the largest
    max/min ratio over a point's rounds; the GPU's batch-sweep range over all rounds and the range
    of the superseded rows (``superseded_rows.csv``), if shipped."""
    macros = []
    for role in sorted(roles):
        machine, device = roles[role]
        rows = baseline_rows(frame_rounds[(frame_rounds["machine"] == machine) & (frame_rounds["device"] == device)])
        rows = rows[rows["status"] == "ok"]
        # one point = one row of a sweep (the anchor measured by two sweeps is two points)
        key = [c for c in ("sweep", "threads_requested", "d_model", "n_layers", "batch_size") if c in rows]
        grouped = rows.groupby(key)["median_s"]
        multi = grouped.transform("size") > 1
        deviation = (rows["median_s"] / grouped.transform("median") - 1).abs()[multi]
        spread = (grouped.max() / grouped.min())[grouped.size() > 1]
        macros += [
            Macro(role + "RoundDeviation", format_quantity(100 * deviation.mean() if len(deviation) else np.nan, "%", 2),
                  f"{role}: mean |round median / median of rounds - 1|"),
            Macro(role + "RoundSpreadMax", format_ratio(spread.max() if len(spread) else np.nan, 2),
                  f"{role}: largest max/min over a point's rounds"),
            Macro(role + "MaxRounds", format_number(rows["round"].nunique() if len(rows) else np.nan), f"{role}: rounds"),
        ]
        if device.startswith("cuda"):
            sweep = rows[(rows["sweep"] == "batch_size")]
            macros += [Macro(role + "BatchSweepLow", format_quantity(sweep["median_s"].min() if len(sweep) else np.nan, "s", 2), "min over rounds and batches"),
                       Macro(role + "BatchSweepHigh", format_quantity(sweep["median_s"].max() if len(sweep) else np.nan, "s", 2), "max over rounds and batches")]
    have = superseded is not None and len(superseded) > 0
    macros += [
        Macro("SupersededRows", format_number(len(superseded) if have else np.nan), "CUDA rows re-measured (superseded_rows.csv)"),
        Macro("SupersededLow", format_quantity(superseded["median_s"].min() if have else np.nan, "s", 2), "their fastest median"),
        Macro("SupersededHigh", format_quantity(superseded["median_s"].max() if have else np.nan, "s", 2), "their slowest median"),
    ]
    return macros


def protocol_macros(results: Sequence, dirs: set, roles: dict) -> list:
    """The measuring protocol per role: drift references measured, the share of rows measured above
    the drift limit, rows measured on a busy machine; and the machine's noise floor (``noise.json``,
    written by ``crossover noise``): one window's estimate against the mean over windows, per
    statistic."""
    from ..measurement.noise_file import read_noise
    from ..results.statistics import DRIFT_LIMIT

    rounds = load_results(results, combine_rounds=False, include_reference=True)
    rounds = rounds[rounds["results_dir"].isin(dirs)]
    floors = {data.get("machine"): data["summary"] for data in read_noise(results)}
    macros = [Macro("DriftLimit", format_ratio(DRIFT_LIMIT, 3),
                    "a row is drifted above this reference reading over the run's quiet level")]
    for role in sorted(roles):
        machine, device = roles[role]
        rows = rounds[(rounds["machine"] == machine) & (rounds["device"] == device)]
        refs = rows[rows["sweep"] == REFERENCE_SWEEP]
        measured = rows[rows["sweep"] != REFERENCE_SWEEP]
        paired = len(refs) > 0
        macros += [
            Macro(role + "References", format_number(len(refs) if paired else np.nan, 6), f"{role}: drift-reference readings"),
            Macro(role + "DriftedShare", format_quantity(100 * measured["drifted"].mean() if paired else np.nan, "%", 2),
                  f"{role}: share of rows measured above the drift limit"),
            Macro(role + "BusyRows", format_number(int(measured["busy"].fillna(0).sum()) if paired else np.nan, 6),
                  f"{role}: rows measured on a busy machine"),
        ]
        floor = floors.get(machine) if device == "cpu" else None
        for name, statistic in (("NoiseMedian", "median"), ("NoiseQuiet", "p10"), ("NoiseMin", "min")):
            value = floor[statistic]["all"] if floor else np.nan
            macros.append(Macro(role + name, format_quantity(100 * value, "%", 2),
                                f"{role}: run-to-run deviation of the {statistic} (crossover noise)"))
        value = floor["p10"]["compute_bound"] if floor else np.nan
        macros.append(Macro(role + "NoiseQuietCompute", format_quantity(100 * value, "%", 2),
                            f"{role}: run-to-run deviation of the p10, compute-bound sizes"))
    return macros


def metadata_macros(frame: pd.DataFrame, frame_rounds: pd.DataFrame, roles: dict) -> list:
    """Counts (points, measurements, rounds, machines, runs), dates, versions and hardware per role."""
    macros = [
        Macro("NumMachines", format_number(frame["machine"].nunique()), "machines in the main runs"),
        Macro("NumPoints", format_number(len(frame), 6), "measured points (rounds combined)"),
        Macro("NumMeasurements", format_number(int((frame_rounds["status"] == "ok").sum()), 6), "measured points counting every round"),
        Macro("NumBaselinePoints", format_number(len(baseline_rows(frame)), 6), "points in the baseline setting"),
    ]
    for role in sorted(roles):
        machine, device = roles[role]
        rows = frame[(frame["machine"] == machine) & (frame["device"] == device)]
        runs = {}
        every = frame_rounds[(frame_rounds["machine"] == machine) & (frame_rounds["device"] == device)]
        for directory in rows["results_dir"].unique():
            metadata = load_metadata(directory)
            used = set(every["run_id"]) if "run_id" in every else set(metadata["runs"])
            matched = {k: v for k, v in metadata["runs"].items() if k in used}
            runs.update(matched or metadata["runs"])  # rows without a run_id: every run of the directory
        env = next(iter(runs.values()), {}) if runs else {}
        dates = sorted(str(r.get("date_utc", ""))[:10] for r in runs.values() if r.get("date_utc"))
        date = NA if not dates else dates[0] if dates[0] == dates[-1] else f"{dates[0]} to {dates[-1]}"
        torch_versions = sorted({str(r.get("torch")) for r in runs.values() if r.get("torch")})
        threads = usual_threads(rows).get((machine, device), np.nan) if len(rows) else np.nan
        macros += [
            Macro(role + "Machine", _tt(machine), f"{role}: machine label"),
            Macro(role + "Label", _role_label(role), f"{role}: short name in tables"),
            Macro(role + "FigureTag", f"{machine}_{device}", f"{role}: file-name tag of its figures (not for typesetting)"),
            Macro(role + "Points", format_number(len(rows), 6), f"{role}: measured points"),
            Macro(role + "Runs", format_number(len(runs)), f"{role}: runs (metadata.json)"),
            Macro(role + "Date", date, f"{role}: measurement dates (UTC)"),
            Macro(role + "Torch", _plain(", ".join(torch_versions)) or NA, f"{role}: torch version"),
            Macro(role + "CpuModel", _plain(env.get("cpu_model", "")) or NA, f"{role}: CPU model"),
            Macro(role + "Cores", format_number(env.get("cpu_usable_cores", np.nan)), f"{role}: usable CPU cores"),
            Macro(role + "Threads", format_number(threads if threads != -1 else np.nan), f"{role}: usual thread count"),
        ]
        if device.startswith("cuda"):
            macros += [Macro(role + "GpuName", _plain(env.get("gpu_name", "")) or NA, "GPU name"),
                       Macro(role + "Driver", _plain(env.get("gpu_driver", "")) or NA, "GPU driver"),
                       Macro(role + "Runtime", _plain(env.get("cuda_runtime", "")) or NA, "CUDA runtime")]
    return macros


def design_macros(frame: pd.DataFrame) -> list:
    """Anchor, sweep ranges (from the rows of each sweep), the bar and the quoted figures."""
    macros = [Macro("Anchor" + AXIS_NAMES[k], format_number(v), f"anchor {k}") for k, v in ANCHOR.items()]
    macros.append(Macro("WideBatch", format_number(WIDE_BATCH), "second batch size of the mode comparison"))
    macros.append(Macro("AnchorParams", format_number(ANCHOR["n_layers"] * ANCHOR["d_model"] ** 2, 7), "parameters at the anchor"))
    for sweep, axis in (("batch_size", "batch_size"), ("d_model", "d_model"), ("n_layers", "n_layers")):
        values = frame.loc[frame.get("sweep", pd.Series(dtype=str)) == sweep, axis] if "sweep" in frame else pd.Series(dtype=float)
        name = "Sweep" + AXIS_NAMES[axis]
        macros += [Macro(name + "Min", format_number(values.min() if len(values) else np.nan, 6), f"{sweep} sweep: smallest"),
                   Macro(name + "Max", format_number(values.max() if len(values) else np.nan, 6), f"{sweep} sweep: largest")]
    fixed = frame[frame["sweep"] == "fixed_params"]["params"] if "sweep" in frame else pd.Series(dtype=float)
    total = fixed.median() if len(fixed) else np.nan
    exponent = math.log2(total) if np.isfinite(total) and total > 0 else np.nan
    text = f"$2^{{{round(exponent)}}}$" if np.isfinite(exponent) and abs(exponent - round(exponent)) < 0.01 else format_number(total)
    macros += [
        Macro("FixedParams", text, "parameter count of the fixed-parameter sweep"),
        Macro("BarMape", format_quantity(BAR_MAPE_PCT, "%", 2), "DESIGN.md bar: MAPE at most"),
        Macro("BarWithin", format_quantity(BAR_WITHIN_PCT, "%", 2), "DESIGN.md bar: share within tolerance at least"),
        Macro("Tolerance", format_quantity(TOLERANCE_PCT, "%", 2), "tolerance of 'within'"),
        Macro("TrainFlopFactor", "3", "training step ~ 3x forward FLOPs (2 B d^2 (3L - 1))"),
        Macro("ActAccesses", "7", "activation accesses per layer in the byte count"),
    ]
    for name, (value, unit, comment) in QUOTED.items():
        macros.append(Macro(name, format_number(value) + unit, comment + " (REFERENCES.md)"))
    return macros


def _role_label(role: str) -> str:
    base = {"Vm": "CPU VM", "Host": "host CPU", "Cuda": "GPU"}[re.match(r"Vm|Host|Cuda", role).group(0)]
    return base + (f" {role[-1]}" if role[-1] in "BCDEFGHIJ" and len(role) > 2 and role[-2].islower() else "")


def _absent_role_macros(role: str) -> list:
    macros = [Macro(role + "Label", _role_label(role), f"{role}: short name in tables")]
    names = ["Machine", "FigureTag", "Points", "Runs", "Date", "Torch", "CpuModel", "Cores", "Threads"]
    if role.startswith("Cuda"):
        names += ["GpuName", "Driver", "Runtime"]
    if role == "CudaB":  # what the text quotes of the second GPU machine's fit and peaks
        names += ["Model", "HostScale", "DeviceScale", "PeakTf", "PeakFlops", "PeakDram"]
    return macros + [Macro(role + n, NA, f"{role}: absent from the results") for n in names]
