"""Shipped zoo measurements predicted from the profiles of their own visit (I/O; the scoring is
:mod:`crossover.analysis.zoo_check`).

A zoo set is a folder of ``measure-<model>-<workload>-<device>.json`` files (``crossover measure --model
--json``, as ``experiments/gpu_zoo.py`` writes them) and the calibration profiles measured in the same
visit. The shipped sets are listed in ``zoo_checks.toml`` beside the shipped results, each with what
modelling choices were made looking at it (``tuned``: its numbers are then not out of sample). The
models are the repository's ``experiments/zoo/<model>.py`` (not in a wheel: there the sets cannot be
predicted and :func:`zoo_set_predictions` says so).

Example::

    from crossover.analysis.zoo_runs import read_zoo_sets, zoo_set_predictions
    from crossover.analysis.zoo_check import error_table
    for zoo_set in read_zoo_sets():
        print(zoo_set.label, error_table(zoo_set_predictions(zoo_set)))
"""

from __future__ import annotations

import json
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Sequence

import pandas as pd

from ..errors import AnalysisError
from ..shipped_data import shipped_results_dir

__all__ = ["ZooSet", "ZOO_CHECKS_FILE", "REFERENCE_PREFIX", "zoo_models_dir", "read_zoo_sets", "read_measurements",
           "read_reference_remeasures",
           "predict_measurements", "zoo_set_predictions"]

#: The list of shipped zoo sets, beside the shipped results.
ZOO_CHECKS_FILE = "zoo_checks.toml"


@dataclass(frozen=True)
class ZooSet:
    """One zoo measurement and the profiles of its visit (paths absolute)."""

    name: str
    label: str
    zoo: Path
    profiles: tuple
    tuned: str = ""
    machine: str = ""  # the machine folder the zoo lies in (its first folder below the shipped results)


def zoo_models_dir() -> Path:
    """The repository's zoo of modules (``experiments/zoo``)."""
    return Path(__file__).resolve().parents[2] / "experiments" / "zoo"


def read_zoo_sets(path: Optional[Path] = None) -> list:
    """The zoo sets listed in ``path`` (default: the shipped ``zoo_checks.toml``), in file order; [] when
    there is no such file."""
    import tomllib

    path = Path(path) if path is not None else shipped_results_dir() / ZOO_CHECKS_FILE
    if not path.is_file():
        return []
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    root = path.parent
    return [ZooSet(name=str(z["name"]), label=str(z.get("label", z["name"])), zoo=root / z["zoo"],
                   profiles=tuple(root / p for p in z["profiles"]), tuned=str(z.get("tuned", "")),
                   machine=Path(z["zoo"]).parts[0])
            for z in data.get("zoo", [])]


#: How a measurement file names a calibration reference model (``reference:mlp``), not a zoo module.
REFERENCE_PREFIX = "reference:"


def read_measurements(folder: Path) -> pd.DataFrame:
    """One row per measured point of the ``measure-*.json`` files in ``folder``: ``model`` (the module
    file's stem), ``workload``, ``device``, ``batch_size``, ``measured_s`` (``latency_s``: the 10th
    percentile of the pooled repeats), ``input_shape``, ``threads`` (the CPU threads it ran with; None
    where the file does not say) and ``thread_starts`` (the OpenMP threads a CPU step started per step
    where it was measured, as ``experiments/gpu_zoo.py`` records them; None where not recorded). The calibration's reference models measured again beside the zoo
    (``model`` ``reference:<name>``: no zoo module predicts them) are left out."""
    rows = []
    for path in sorted(Path(folder).glob("measure-*.json")):
        data = json.loads(path.read_text())
        if str(data["model"]).startswith(REFERENCE_PREFIX):
            continue
        name = Path(str(data["model"]).split(":")[0]).stem
        for point in data["points"]:
            rows.append(dict(model=name, workload=data["workload"], device=data["device"],
                             batch_size=int(point["batch_size"]), measured_s=float(point["latency_s"]),
                             input_shape=tuple(data["input_shape"]), threads=data.get("threads"),
                             thread_starts=point.get("thread_starts")))
    return pd.DataFrame(rows)


def read_reference_remeasures(folder: Path, profiles: Optional[Sequence] = None) -> pd.DataFrame:
    """The calibration's reference models measured again beside the zoo (``gpu_zoo.py --references``), one
    row per point: ``model`` (``reference_<name>``), ``workload``, ``device``, ``batch_size``, ``measured_s``
    (this sitting's 10th percentile) and ``calibration_s``: what the calibration in ``profiles`` (profile
    folders; their ``reference_models``) measured of the same step, or, without ``profiles``, what the file
    records of the calibration the zoo was measured beside. Points without a finite, positive calibration
    time are left out. Empty where the folder has no reference models."""
    import math

    known_by_device = None
    if profiles is not None:
        known_by_device = {}
        for profile_dir in profiles:
            saved = json.loads((Path(profile_dir) / "profile.json").read_text())
            known_by_device.setdefault(saved["device"], {}).update(
                {(f"reference_{r['model']}", r["workload"], int(r["batch_size"])): r["measured_s"]
                 for r in saved.get("reference_models", [])})
    rows = []
    for path in sorted(Path(folder).glob("measure-*.json")):
        data = json.loads(path.read_text())
        if not str(data["model"]).startswith(REFERENCE_PREFIX):
            continue
        name = "reference_" + str(data["model"])[len(REFERENCE_PREFIX):]
        recorded = data.get("calibration_measured_s") or {}
        for point in data["points"]:
            batch = int(point["batch_size"])
            if known_by_device is None:
                calibration_s = recorded.get(str(batch))
            else:
                calibration_s = known_by_device.get(data["device"], {}).get((name, data["workload"], batch))
            if calibration_s is None or not math.isfinite(float(calibration_s)) or float(calibration_s) <= 0:
                continue
            rows.append(dict(model=name, workload=data["workload"], device=data["device"], batch_size=batch,
                             measured_s=float(point["latency_s"]), calibration_s=float(calibration_s)))
    return pd.DataFrame(rows, columns=["model", "workload", "device", "batch_size", "measured_s", "calibration_s"])


def _input_dtype(model_file: Path) -> str:
    """The module file's ``INPUT_DTYPE`` (default float32), read without importing torch models twice."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(f"_zoo_{model_file.stem}", model_file)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return str(getattr(module, "INPUT_DTYPE", "float32"))


def predict_measurements(measured: pd.DataFrame, profiles: Sequence, models_dir: Optional[Path] = None) -> pd.DataFrame:
    """``measured`` (:func:`read_measurements`) with ``predicted_s``, its interval ``predicted_low_s`` and
    ``predicted_high_s``, and ``launches`` (the kernels the step launches on that device, from its trace) from the profile of each point's device
    (``crossover.decide`` on ``models_dir/<model>.py:model``; None where no profile has that device). A CPU
    step's thread starts recorded where it was measured (``thread_starts``) are priced instead of those counted
    on this machine, whose libraries may start fewer.

    Raises
    ------
    AnalysisError
        A measured model's module file is missing (an installed wheel has no zoo).
    """
    from ..opcost.profiles import load_profile
    from .decision import decide

    models_dir = Path(models_dir) if models_dir is not None else zoo_models_dir()
    by_device = {}
    for p in profiles:
        by_device.setdefault(load_profile(p).device, str(p))
    out = []
    for (name, workload), group in measured.groupby(["model", "workload"], sort=False):
        model_file = models_dir / f"{name}.py"
        if not model_file.is_file():
            raise AnalysisError(f"the zoo model {name} is not at {model_file} (the zoo ships with the repository)")
        batches = sorted(set(group["batch_size"]))
        wanted = [by_device[d] for d in sorted(set(group["device"])) if d in by_device]
        guess = {}
        if wanted:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                decision = decide(model=f"{model_file}:model", input_shape=group["input_shape"].iloc[0],
                                  batch_size=batches, workload=workload, profiles=wanted,
                                  input_dtype=_input_dtype(model_file), thread_starts=recorded_starts(group))
            guess = {(d["device"], d["batch_size"]): (d["latency_s"], d.get("launches"), d.get("latency_low_s"),
                                                      d.get("latency_high_s")) for d in decision.devices}
        found = [guess.get((d, b), (None,) * 4) for d, b in zip(group["device"], group["batch_size"])]
        out.append(group.assign(predicted_s=[f[0] for f in found], launches=[f[1] for f in found],
                                predicted_low_s=[f[2] for f in found], predicted_high_s=[f[3] for f in found]))
    if not out:
        return measured.assign(predicted_s=[], launches=[], predicted_low_s=[], predicted_high_s=[])
    return pd.concat(out, ignore_index=True)


def recorded_starts(measured: pd.DataFrame) -> dict:
    """``{(threads, batch_size): starts}`` of the CPU points of ``measured`` (:func:`read_measurements`) whose
    thread starts were recorded where they ran."""
    if "thread_starts" not in measured:
        return {}
    cpu = measured[(measured["device"] == "cpu") & measured["thread_starts"].notna() & measured["threads"].notna()]
    return {(int(t), int(b)): float(n) for t, b, n in zip(cpu["threads"], cpu["batch_size"], cpu["thread_starts"])}


def zoo_set_predictions(zoo_set: ZooSet, models_dir: Optional[Path] = None) -> pd.DataFrame:
    """A zoo set's measurements with their predictions (:func:`predict_measurements`); ``attrs["label"]``
    is the set's label, ``attrs["sitting_ratios"]`` the sitting's share of a miss per device
    (:func:`crossover.analysis.zoo_check.sitting_ratios`; empty where the zoo was measured without the
    calibration's reference models beside it)."""
    from .zoo_check import sitting_ratios

    frame = predict_measurements(read_measurements(zoo_set.zoo), zoo_set.profiles, models_dir)
    frame.attrs["label"] = zoo_set.label
    frame.attrs["sitting_ratios"] = sitting_ratios(read_reference_remeasures(zoo_set.zoo, zoo_set.profiles))
    return frame
