"""What the data hold: the machines, series, runs, profiles, peaks and noise floors found (``crossover list``).

A new user's first question of the data is what is in them, and whether this machine is: one table
of the series (machine, device, setting, threads, points, runs), the calibration profiles (shipped and
beside the results), and each machine's noise floor and peaks, as one dict (:func:`inventory`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional, Sequence

from ..jsonable import schema_tag

__all__ = ["inventory", "INVENTORY_SCHEMA"]

#: The layout of ``crossover list --json``.
INVENTORY_SCHEMA = schema_tag("list", 1)


def inventory(results: Optional[Sequence] = None, profiles: Optional[Sequence] = None) -> dict:
    """The machines, series, profiles, noise floors and peaks of ``results`` (default: the shipped data).

    Parameters
    ----------
    results : sequence of path, optional
        Results directories (default :func:`crossover.shipped_data.shipped_results_dir`).
    profiles : sequence of path, optional
        Profile directories (default: the shipped ones and those beside the results).

    Returns
    -------
    dict
        ``this_machine`` (its label), ``machines`` (label → devices, runs, whether this machine),
        ``series`` (one dict per series: its keys, ``points``, ``runs``), ``profiles`` (machine, device,
        threads, plan, path), ``noise_floors`` and ``peaks`` (per machine), and ``schema``.
    """
    from ..fit.peaks import find_peaks
    from ..measurement.noise_file import read_noise
    from ..opcost.profiles import PROFILE_NAME, load_profile, shipped_profile_files
    from ..results.columns import SERIES_KEYS
    from ..results.side_files import side_files
    from ..results.store import load_results
    from ..shipped_data import shipped_results_dir
    from .decision import this_machine

    results = [str(r) for r in (results or [shipped_results_dir()])]
    frame = load_results(results)
    here = this_machine()
    series = []
    if not frame.empty:
        for key, rows in frame.groupby(list(SERIES_KEYS), sort=True, dropna=False):
            series.append(dict(zip(SERIES_KEYS, key), points=int(len(rows.drop_duplicates(
                ["d_model", "n_layers", "batch_size"]))), runs=sorted(rows["results_dir"].astype(str).unique())))
    machines = {}
    for item in series:
        entry = machines.setdefault(item["machine"], dict(devices=set(), runs=set(), this_machine=item["machine"] == here))
        entry["devices"].add(str(item["device"]))
        entry["runs"].update(item["runs"])
    machines = {m: dict(devices=sorted(e["devices"]), runs=sorted(e["runs"]), this_machine=e["this_machine"])
                for m, e in sorted(machines.items())}
    if profiles:
        files = [Path(p) if Path(p).name == PROFILE_NAME else Path(p) / PROFILE_NAME for p in profiles]
    else:
        files = list(dict.fromkeys(side_files(results, PROFILE_NAME) + shipped_profile_files()))
    found = []
    for file in files:
        try:
            profile = load_profile(file)
        except Exception:  # an unreadable profile is listed as such, not fatal
            found.append(dict(path=str(file), error="unreadable"))
            continue
        found.append(dict(machine=profile.machine, device=profile.device, threads=profile.threads,
                          plan=profile.meta.get("plan"), path=str(file), this_machine=profile.machine == here))
    floors = [dict(machine=d.get("machine"), date_utc=d.get("date_utc"), path=d.get("path"),
                   p10_compute_bound_pct=100 * (d.get("summary", {}).get("p10", {}).get("compute_bound") or float("nan")))
              for d in read_noise(results)]
    return dict(schema=INVENTORY_SCHEMA, results=results, this_machine=here, machines=machines, series=series,
                profiles=found, noise_floors=floors, peaks=find_peaks(results))
