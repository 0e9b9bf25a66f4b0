"""A calibration's primitives round by round: how far one primitive's time moves between the rounds of one
calibration, by the host's clock and (on a GPU) by its CUDA events.

    python experiments/calibration_rounds.py experiments/results/nvidia-h100-80gb-hbm3-16c/run5/gpu-paired/calibration/cuda --family rnn

For each primitive of the family (by its shape), the median of each round's repeats in µs, rounds in order,
from ``calibration.csv.gz``; the profile keeps the 10th percentile of the repeats pooled over the quiet
rounds (:func:`crossover.opcost.calibrate.build_profile`), so a primitive with fast and slow rounds is
costed at its fast ones.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def _times(text) -> list:
    return [float(v) for v in str(text).split(";")] if isinstance(text, str) and text else []


def main(argv=None) -> int:
    import numpy as np
    import pandas as pd

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("calibrations", nargs="+", type=Path, help="calibration folders (holding calibration.csv.gz)")
    parser.add_argument("--family", required=True, help="a primitive family (e.g. rnn, matmul_host)")
    args = parser.parse_args(argv)
    for folder in args.calibrations:
        table = pd.read_csv(folder / "calibration.csv.gz")
        rows = table[(table.family == args.family) & ~table.reference.astype(bool)]
        if rows.empty:
            print(f"{folder}: no {args.family} primitives")
            continue
        print(f"{folder} ({args.family}; median of each round's repeats, µs, rounds in order)")
        for shape, group in rows.groupby("shape"):
            group = group.sort_values("round")
            wall = [np.median(_times(t)) * 1e6 for t in group.raw_times_s]
            events = [np.median(_times(t)) * 1e6 if _times(t) else float("nan") for t in group.get(
                "device_times_s", [None] * len(group))]
            line = f"  {shape:12s} host clock {' '.join(f'{w:7.1f}' for w in wall)}"
            if not all(np.isnan(events)):
                line += f"\n  {'':12s} events     {' '.join(f'{e:7.1f}' for e in events)}"
            print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
