"""A device's measured peaks, and fitted parameters checked against them.

A latency model's fitted bandwidth or FLOP rate is a finding only if the device can reach it. This
module measures what it can reach (:func:`measure_peaks`: streaming copies in and out of cache, the
best rate of large matrix products, the cost of a tiny op), stores it beside a results directory
(``peaks.json``, :func:`write_peaks` / :func:`read_peaks`), knows a few spec sheets
(:data:`SPEC_SHEETS`, for data measured without a peaks file, such as the shipped H100 run) and
checks fitted parameters against either (:func:`check_parameters`): a parameter above its peak is
flagged and not identified, never printed as a measurement.

Which peak bounds which parameter (:data:`crossover.fit.latency_models.PARAMETER_PEAKS`, the one home of
that mapping, which also bounds the fits: :func:`crossover.fit.latency_models.upper_bounds`): a compute rate by the best measured (or
specified) FLOP rate; an out-of-cache bandwidth by the streaming (DRAM/HBM) bandwidth; any other
bandwidth by the in-cache copy bandwidth (the fastest memory the weights can be in). A parameter is
also flagged when an out-of-cache bandwidth exceeds the same fit's in-cache one.

Measuring imports torch; checking is pure pandas.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Optional

import pandas as pd

from .latency_models import PARAMETER_PEAKS, PARAMS, peak_kind

__all__ = ["PEAKS_FILE", "SPEC_SHEETS", "PARAMETER_PEAKS", "measure_peaks", "write_peaks", "read_peaks",
           "find_peaks", "peaks_for", "peaks_of_rows", "spec_sheet_peaks", "check_parameters"]

PEAKS_FILE = "peaks.json"

#: Published peaks by device name (a substring of ``device_name``), SI units. Dense fp32 without
#: tensor cores; the TF32 tensor-core rate bounds a fit of ``--dtype float32`` with TF32 allowed.
SPEC_SHEETS = {
    "H100 80GB HBM3": dict(
        dram_bytes_per_s=3.35e12, flops_per_s=67e12, tf32_flops_per_s=494.7e12,
        source="NVIDIA H100 Tensor Core GPU datasheet (SXM5: HBM3 3.35 TB/s, FP32 67 TFLOPS, "
               "TF32 Tensor Core 494.7 TFLOPS dense), https://www.nvidia.com/en-us/data-center/h100/"),
}

# ---------------------------------------------------------------------------------------- measuring
def measure_peaks(device: str = "cpu", *, stream_bytes: int = 256 * 2**20, cache_bytes: int = 256 * 2**10,
                  gemm_sizes=(256, 512, 1024), max_run_time_s: float = 0.5) -> dict:
    """Measure ``device``'s peaks with crossover's timer (fastest repeat of each, so a slow spell of a
    shared machine lowers nothing).

    Parameters
    ----------
    device : str
        ``"cpu"`` or ``"cuda"``.
    stream_bytes : int
        Size of the tensor copied for the streaming (out-of-cache) bandwidth: well above the last-level
        cache (256 MiB by default).
    cache_bytes : int
        Size copied for the in-cache bandwidth (256 KiB: a core's L2 on most CPUs).
    gemm_sizes : sequence of int
        Square fp32 matrix products tried; the best rate is the compute peak (add 2048 and 4096 on a GPU).
    max_run_time_s : float
        Timing budget of each measurement.

    Returns
    -------
    dict
        ``dram_bytes_per_s`` and ``cache_bytes_per_s`` (bytes read plus written per second of a copy),
        ``flops_per_s`` (best of the products), ``dispatch_s`` (a 1-element add), and ``device``,
        ``threads``, ``sizes``.
    """
    import torch

    from ..measurement.timer import TimerOptions, time_step

    cuda = str(device).startswith("cuda")
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    options = TimerOptions(warmup_s=0.05, min_run_time_s=min(0.1, max_run_time_s), max_run_time_s=max_run_time_s)

    def fastest_s(step) -> float:
        return time_step(step, options, regime="throughput", sync=sync, synchronous=not cuda).min_s

    def copy_rate(n_bytes: int) -> float:
        src = torch.ones(n_bytes // 4, device=device)
        dst = torch.empty_like(src)
        return 2 * src.numel() * 4 / fastest_s(lambda: dst.copy_(src))

    rates = {}
    for n in gemm_sizes:
        a, b = torch.randn(n, n, device=device), torch.randn(n, n, device=device)
        rates[n] = 2 * n**3 / fastest_s(lambda: torch.mm(a, b))
    one = torch.ones(1, device=device)
    return dict(device=str(device), threads=torch.get_num_threads(),
                dram_bytes_per_s=copy_rate(stream_bytes), cache_bytes_per_s=copy_rate(cache_bytes),
                flops_per_s=max(rates.values()), dispatch_s=fastest_s(lambda: torch.add(one, one)),
                sizes=dict(stream_bytes=stream_bytes, cache_bytes=cache_bytes, gemm=list(gemm_sizes)),
                source="measured (crossover peaks)")


def write_peaks(directory, machine: str, peaks_by_device: dict) -> Path:
    """Store ``machine``'s ``{device: peaks}`` (from :func:`measure_peaks`) as ``directory/peaks.json``."""
    path = Path(directory) / PEAKS_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    data = dict(schema="crossover-peaks", machine=machine, devices=peaks_by_device)
    path.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return path


def read_peaks(directory) -> dict:
    """The ``peaks.json`` of ``directory`` as written (``machine``, ``devices``); empty if there is none."""
    path = Path(directory) / PEAKS_FILE
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return {}
    return data if data.get("schema") == "crossover-peaks" else {}


def find_peaks(directories) -> dict:
    """``{machine: {device: peaks}}`` from every ``peaks.json`` of the given results directories
    (:func:`crossover.results.side_files.side_files`: in, under or just above each)."""
    from ..results.side_files import side_files

    found = {}
    for path in reversed(side_files(directories, PEAKS_FILE)):  # the run's own file last: it wins
        data = read_peaks(path.parent)
        if data:
            found.setdefault(data["machine"], {}).update(data["devices"])
    return found


def peaks_for(found: dict, machine: str, device: str, device_name: Optional[str] = None) -> dict:
    """The peaks that bound a fit of ``machine``'s ``device``: measured (``found``, from
    :func:`find_peaks`) where there are some, else the spec sheet of ``device_name``, else none."""
    measured = found.get(machine, {}).get(device)
    return dict(measured) if measured else spec_sheet_peaks(device_name)


def peaks_of_rows(frame: pd.DataFrame) -> dict:
    """The peaks that bound a fit of these rows (one series): :func:`peaks_for` their machine and
    device, from the ``peaks.json`` beside or under their ``results_dir``, else the spec sheet of
    their ``device_name``, else none (an empty dict)."""
    if frame.empty or not {"machine", "device"} <= set(frame.columns):
        return {}
    directories = frame["results_dir"].dropna().unique() if "results_dir" in frame else []
    first = frame.iloc[0]
    name = first["device_name"] if "device_name" in frame else None
    return peaks_for(find_peaks(directories), first["machine"], first["device"], name)


def spec_sheet_peaks(device_name: Optional[str]) -> dict:
    """The :data:`SPEC_SHEETS` entry whose key is part of ``device_name``; empty if none."""
    for name, peaks in SPEC_SHEETS.items():
        if device_name and name in str(device_name):
            return dict(peaks)
    return {}


# ---------------------------------------------------------------------------------------- checking
def check_parameters(parameters: pd.DataFrame, peaks: dict, *, tolerance: float = 1.05) -> pd.DataFrame:
    """Fitted parameters with the peak that bounds each: columns ``peak`` (display units, NaN where
    none applies or none is known), ``peak_source``, ``above_peak`` and ``impossible`` (why, or "");
    ``identified`` becomes False where a parameter exceeds its peak by more than ``tolerance`` or an
    out-of-cache bandwidth exceeds the fit's in-cache one. A fit's single ``bytes_per_s`` (no cache
    term) serves its largest, out-of-cache sizes too: the streaming peak bounds it.

    Parameters
    ----------
    parameters : pandas.DataFrame
        :meth:`crossover.fit.series_fit.SeriesFit.parameters` of one fit (``param``, ``value`` in display
        units, ``unit``, ``identified``).
    peaks : dict
        SI peaks (:func:`measure_peaks`, :func:`read_peaks`' entry for the device, or
        :func:`spec_sheet_peaks`); may be empty.
    """
    out = parameters.copy()
    values = dict(zip(out["param"], out["value"]))
    names = tuple(values)
    has_cache = "cache_bytes_per_s" in values
    peak_col, source_col, above_col, why_col = [], [], [], []
    for row in out.itertuples():
        spec = PARAMS[row.param]
        kind = peak_kind(row.param, names)
        peak = peaks.get(kind) if kind else None  # a spec sheet gives no in-cache peak: None
        why = ""
        if peak is not None and row.value > tolerance * peak * spec.scale:
            why = f"above the device's peak ({peaks.get('source', 'peaks')})"
        elif has_cache and kind == "dram_bytes_per_s" and row.value > tolerance * values["cache_bytes_per_s"]:
            why = "out of cache faster than the same fit's in-cache bandwidth"
        peak_col.append(math.nan if peak is None else peak * spec.scale)
        source_col.append(peaks.get("source", "") if peak is not None else "")
        above_col.append(bool(why))
        why_col.append(why)
    out["peak"], out["peak_source"], out["above_peak"], out["impossible"] = peak_col, source_col, above_col, why_col
    out["identified"] = out["identified"] & ~out["above_peak"]
    return out
