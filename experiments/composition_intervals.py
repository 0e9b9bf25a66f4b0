"""How well a calibration's composition explains its reference models, forward and training steps apart.

Rebuilds each given calibration's profile from its ``calibration.csv.gz`` with this checkout's code
(nothing is timed; the folders are left as they are) and prints, per calibration, the composition terms,
the reference steps' |error| (a fitted model's leave-one-out error, a held-out kind's error as it is) at
the interval's coverage over the forward steps and over the training steps, the held-out kinds' median,
and the intervals the profile gives a forward pass and a training step; then the median of each column.
Run it at two revisions (e.g. with ``PYTHONPATH`` pointing at another checkout) to compare compositions
on the same measurements::

    python experiments/composition_intervals.py /tmp/s28l/z_t1 /tmp/s28l/z_t2
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np

from crossover.opcost.calibrate import rebuild_profile
from crossover.opcost.composition import INTERVAL_COVERAGE

COLUMNS = ("forward q", "train q", "held-out median", "forward interval", "train interval")


def summary(profile) -> dict:
    """The columns of one calibration's line (pure)."""
    refs = profile.meta["reference_models"]

    def error(r):
        return abs(r["error"] if r.get("held_out") else r.get("leave_one_out_error", r["error"]))

    forward = [error(r) for r in refs if r["workload"] == "forward"]
    train = [error(r) for r in refs if r["workload"] != "forward"]
    held = [abs(r["error"]) for r in refs if r.get("held_out")]
    interval_for = getattr(profile, "interval_for", lambda train: profile.interval_rel or profile.model_error_rel)
    return {"forward q": float(np.quantile(forward, INTERVAL_COVERAGE)),
            "train q": float(np.quantile(train, INTERVAL_COVERAGE)),
            "held-out median": float(np.median(held)) if held else float("nan"),
            "forward interval": interval_for(False), "train interval": interval_for(True)}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("calibrations", nargs="+", type=Path, help="folders holding a calibration.csv.gz")
    args = parser.parse_args(argv)
    print(f"quantile {INTERVAL_COVERAGE:.0%}; " + ", ".join(COLUMNS) + "; terms")
    rows = []
    for folder in args.calibrations:
        with tempfile.TemporaryDirectory() as scratch:
            for name in ("calibration.csv.gz", "profile.json"):
                shutil.copy(folder / name, scratch)
            profile = rebuild_profile(scratch)
        line = summary(profile)
        rows.append([line[c] for c in COLUMNS])
        terms = ", ".join(f"{k} {v:.3g}" for k, v in profile.meta["composition_fit"].items())
        print(f"{str(folder):28s} " + "  ".join(f"{line[c]:6.1%}" for c in COLUMNS) + f"   {terms}", flush=True)
    print(f"{'median of ' + str(len(rows)):28s} " + "  ".join(f"{v:6.1%}" for v in np.median(rows, axis=0)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
