"""Which products a GPU runs on cuBLAS's one-row host path: the bias-free product primitives of CUDA
calibrations, each cell's host seconds beside the same weight's one-row cell.

    python experiments/gemm_one_row_path.py [CALIBRATION_DIR ...]

The ``matmul_host`` family (CUDA calibration plans since the H100's fourth visit) times an ``(m × k) ·
(k × n)`` product with no bias, synchronised, at a few row counts ``m`` of two square weights. A cell
that costs about what one row costs runs on the one-row path; the toy's ``calibrated-gpu`` model charges
its matrix-matrix term (``gemm_layer_s``) only beyond that path
(:func:`crossover.fit.calibrated_model.gemm_layers`). Nothing is timed: the shipped calibrations are read.
"""

from __future__ import annotations

import argparse
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"
DEFAULT = [RESULTS / "nvidia-h100-80gb-hbm3-16c" / run / "gpu-paired" / "calibration" / "cuda" for run in ("run4", "run5")]


def main() -> None:
    import pandas as pd

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("calibrations", nargs="*", type=Path, default=DEFAULT,
                        help="CUDA calibration folders (default: the H100's fourth and fifth visits)")
    args = parser.parse_args()
    for folder in args.calibrations:
        rows = pd.read_csv(folder / "calibration.csv.gz")
        cells = rows[rows.family == "matmul_host"].groupby(["k", "n", "m"]).median_s.median() * 1e6
        if cells.empty:
            print(f"{folder}: no matmul_host primitives (a plan from before the H100's fourth visit)")
            continue
        try:
            folder = folder.resolve().relative_to(Path.cwd())
        except ValueError:  # outside the working folder: as given
            pass
        print(f"{folder} (median of the visits' median seconds, µs)")
        for (k, n), by_rows in cells.groupby(level=[0, 1]):
            one = by_rows.loc[(k, n, 1)]
            line = "  ".join(f"{m} rows {t:6.2f} ({t - one:+.1f})" for (_, _, m), t in by_rows.items())
            print(f"  weight {k} x {n}: {line}")


if __name__ == "__main__":
    main()
