"""What a fleet job costs in node-hours, for the quick and GPU suites: computed, not timed.

A job's time is its fixed steps (calibrations, noise floor, peaks, five process starts) plus its sweep.
The sweep's time is the suite's planned measurements (``plan_rounds``: every point in every round plus
the anchor's readings, on the node's devices) times the seconds a measurement took in a shipped run
of a similar protocol on that kind of machine (the run's span, first to last timestamp, over its rows;
a run measured in parts: the sum of the parts' spans over the sum of their rows). The fixed steps'
seconds are the measured ones quoted in docs/fleet.md and ``experiments/results/nvidia-h200-16c/README.md``.
With ``--shards N`` a suite's sweep is split N ways but every node pays the fixed steps and the
anchor: node-hours = N x fixed + sweep (+ the anchor's extra readings).

Run: ``python experiments/fleet_node_hours.py`` (reads ``experiments/``; no measurement).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from crossover.measurement.suites import load_suite
from crossover.measurement.sweep import plan_rounds, shard_points
from crossover.results.store import load_results

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "experiments" / "results"
#: Seconds of a job's fixed steps, measured: calibration --quick 91.1 s on the 2-core VM (docs/fleet.md), 77.6 s
#: (CPU) and 45.7 s (CUDA) on the H200's node (its README); the noise floor's default protocol, 3
#: windows of about 30 s with 10 s pauses (``crossover noise --help``); peaks about 10 s (docs/fleet.md); five
#: ``python -m crossover`` starts of about 2.3 s each (the VM).
FIXED_S = {
    "2-core CPU VM": {"calibrate": 91.1, "noise": 110.0, "peaks": 10.0, "starts": 5 * 2.3},
    "GPU node": {"calibrate": 77.6 + 45.7, "noise": 110.0, "peaks": 10.0, "starts": 5 * 2.3},
}
#: (suite, devices, machine kind, the shipped runs whose seconds per measurement stand for it)
CASES = (
    ("quick", ("cpu",), "2-core CPU VM", ["amd-epyc-2c/quick"]),
    ("quick", ("cpu", "cuda"), "GPU node", ["nvidia-h200-16c/gpu-paired", "nvidia-h200-16c/gpu-paired-seed1"]),
    ("gpu", ("cpu", "cuda"), "GPU node", ["nvidia-h100-80gb-hbm3-16c/gpu"]),
)


def seconds_per_measurement(runs: list) -> tuple:
    """(seconds per row, rows, seconds) of the shipped runs: the sum of each run's span over its rows."""
    frame = load_results([RESULTS / r for r in runs], combine_rounds=False, include_reference=True,
                         include_skipped=True)
    frame["t"] = pd.to_datetime(frame["timestamp_utc"])
    spans = frame.groupby("run_id")["t"].agg(lambda t: (t.max() - t.min()).total_seconds())
    rows = frame.groupby("run_id").size()
    return float(spans.sum() / rows.sum()), int(rows.sum()), float(spans.sum())


def planned(suite_name: str, devices: tuple, shards: int = 1) -> int:
    suite = load_suite(ROOT / "experiments" / "suites" / f"{suite_name}.toml")
    total = 0
    for index in range(shards):
        points = shard_points(suite.points(devices), suite, (index, shards) if shards > 1 else None)
        total += len(plan_rounds(points, seed=suite.seed, pair_by=suite.pair_by,
                                 references=tuple(suite.reference_configs(devices)),
                                 reference_every=suite.reference_every))
    return total


def main() -> None:
    print(f"{'suite':<6} {'node':<14} {'measured as':<58} {'s/meas':>6} {'shards':>6} {'meas':>6} "
          f"{'sweep h':>8} {'fixed h':>8} {'node-h':>7} {'wall h':>7}")
    for suite, devices, kind, runs in CASES:
        per_s, rows, span_s = seconds_per_measurement(runs)
        fixed_h = sum(FIXED_S[kind].values()) / 3600
        for shards in (1, 4):
            n = planned(suite, devices, shards)
            sweep_h = n * per_s / 3600
            node_h = shards * fixed_h + sweep_h
            print(f"{suite:<6} {kind:<14} {' + '.join(runs):<58} {per_s:>6.3f} {shards:>6d} {n:>6d} {sweep_h:>8.3f} "
                  f"{shards * fixed_h:>8.3f} {node_h:>7.2f} {fixed_h + sweep_h / shards:>7.2f}")
        print(f"{'':<6} {'':<14} ({rows} rows in {span_s:.0f} s of measuring)")


if __name__ == "__main__":
    main()
