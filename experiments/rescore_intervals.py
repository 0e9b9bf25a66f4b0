"""Earlier sittings' zoo measurements against intervals from their calibrations rebuilt with this code.

Each SPEC names one ``experiments/bench_zoo.py`` sitting as ``CSV:CALIBRATION_DIR:ZOO_DIR``: the table its
``--csv`` wrote (the measurements), the ``--out`` folder of its calibration (``calibration.csv.gz`` and
``profile.json``), and the model folder it measured. The profile is rebuilt from the calibration's visits
(:func:`crossover.opcost.calibrate.build_profile`, nothing written), every model of the table predicted again
at its batch sizes, and per sitting the noise floor, the measurements inside their interval and its median
half-width are printed, then the totals. Run with ``PYTHONPATH`` at another checkout, it scores that code's
intervals on the same measurements (how a change of the interval was weighed). Nothing is timed.

    python experiments/rescore_intervals.py logs/bench_zoo_1128w_t1.csv:/tmp/s30/w/z_t1:experiments/zoo ...
"""

from __future__ import annotations

import argparse
import json
import warnings
from pathlib import Path

import numpy as np

from crossover.analysis.zoo_check import TARGET_MEDIAN, TARGET_WORST


def rescored(csv: Path, calibration: Path, zoo: Path):
    """(the rebuilt profile, a DataFrame of the sitting's points with ``measured_s``, ``predicted_s``,
    ``low_s``, ``high_s``, ``inside`` and ``half_width``)."""
    import pandas as pd
    import torch

    from crossover.measurement.user_module import input_dtype, load_factory
    from crossover.opcost import calibrate
    from crossover.opcost.module_predict import predict_module

    meta = json.loads((calibration / "profile.json").read_text())
    profile = calibrate.build_profile(calibrate.read_calibration(calibration), device=meta["device"],
                                      machine=meta.get("machine", "m"), threads=meta.get("threads", 0),
                                      llc=meta.get("llc_bytes", 32 * 2**20), cache_bytes=meta.get("cache_bytes", 0))
    measured = pd.read_csv(csv)
    torch.set_num_threads(profile.threads or 1)  # the thread starts a step makes are counted at its count
    rows = []
    for (name, workload), points in measured.groupby(["model", "workload"], sort=False):
        factory = load_factory(f"{zoo / name}.py:model")
        shape = tuple(factory.__globals__["INPUT_SHAPE"])
        dtype = input_dtype(factory.__globals__.get("INPUT_DTYPE", "float32"))
        torch.manual_seed(0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            frame = predict_module(factory(), sample_shape=shape, batch_sizes=sorted(points["batch_size"]),
                                   profiles=[profile], workload=workload, input_dtype=dtype, warn=False)
        for row in frame.itertuples():
            seconds = float(points.loc[points["batch_size"] == row.batch_size, "measured_s"].iloc[0])
            rows.append(dict(model=name, workload=workload, batch_size=row.batch_size, measured_s=seconds,
                             predicted_s=row.latency_s, low_s=row.latency_low_s, high_s=row.latency_high_s))
    table = pd.DataFrame(rows)
    table["inside"] = (table["low_s"] <= table["measured_s"]) & (table["measured_s"] <= table["high_s"])
    table["half_width"] = (table["high_s"] - table["low_s"]) / 2 / table["predicted_s"]
    return profile, table


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("specs", nargs="+", help="CSV:CALIBRATION_DIR:ZOO_DIR of each sitting")
    args = parser.parse_args(argv)
    import pandas as pd

    tables = []
    print(f"{'sitting':<44s} {'noise floor':>11s} {'inside':>8s} {'half-width':>10s} {'median |error|':>14s} "
          f"{'models within target':>21s}")
    for spec in args.specs:
        try:
            csv, calibration, zoo = (Path(part) for part in spec.split(":"))
        except ValueError:
            parser.error(f"{spec!r}: expected CSV:CALIBRATION_DIR:ZOO_DIR")
        for path in (csv, calibration / "calibration.csv.gz", zoo):
            if not path.exists():
                parser.error(f"{path}: no such file or folder")
        profile, table = rescored(csv, calibration, zoo)
        tables.append(table.assign(sitting=csv.stem))
        errors = (table["predicted_s"] / table["measured_s"] - 1).abs()
        per_model = table.assign(error=errors).groupby(["model", "workload"])["error"].agg(["median", "max"])
        met = int(((per_model["median"] <= TARGET_MEDIAN) & (per_model["max"] <= TARGET_WORST)).sum())
        print(f"{csv.stem:<44s} {profile.noise_floor_rel:>11.1%} {int(table['inside'].sum()):>3d}/{len(table):<4d}"
              f" {float(table['half_width'].median()):>10.1%} {float(errors.median()):>14.1%} "
              f"{met:>14d} of {len(per_model):<4d}", flush=True)
    every = pd.concat(tables)
    print(f"\n{len(tables)} sittings: {int(every['inside'].sum())} of {len(every)} measurements inside "
          f"({every['inside'].mean():.1%}), median half-width {float(np.median(every['half_width'])):.1%}")
    for workload, part in every.groupby("workload"):
        print(f"  {workload:<8s} {int(part['inside'].sum())} of {len(part)} inside ({part['inside'].mean():.1%}), "
              f"median half-width {float(np.median(part['half_width'])):.1%}")
    every["error"] = every["predicted_s"] / every["measured_s"] - 1
    quantiles = every["error"].abs().quantile([0.5, 0.8, 0.9])
    print(f"  |error| of every measurement: median {quantiles[0.5]:.1%}, 80% {quantiles[0.8]:.1%}, "
          f"90% {quantiles[0.9]:.1%} (an interval of one width holding 80% is at least the 80% one wide)")
    print("\nper model, over the sittings that measured it: median of its sittings' median |error| "
          "(signed median error), sittings within target")
    for (model, workload), part in every.groupby(["model", "workload"]):
        sittings = part.groupby("sitting")["error"]
        medians = sittings.apply(lambda e: float(e.abs().median()))
        met = int(((medians <= TARGET_MEDIAN) & (sittings.apply(lambda e: float(e.abs().max())) <= TARGET_WORST)).sum())
        print(f"  {model:<24s} {workload:<8s} {float(medians.median()):6.1%} ({float(part['error'].median()):+6.1%}), "
              f"{met} of {len(medians)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
