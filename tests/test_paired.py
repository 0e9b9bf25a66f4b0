"""Per-round paired crossovers on synthetic series with known crossings."""

import numpy as np
import pandas as pd
import pytest

from crossover.measurement.noise import run_to_run, window_estimates
from crossover.analysis.paired_rounds import crossover_distribution, round_crossings, switch_point

BATCHES = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512]


def synthetic_rounds(slowdowns, *, cpu_ms_per_sample=0.02, gpu_ms=2.0, paired=True, seed=0):
    """CPU: 0.02 ms per sample (plus 0.02 ms), GPU: flat 2 ms: they cross at batch 99.

    Each round has a machine slowdown; paired rounds slow both series alike, unpaired ones slow the
    GPU by another round's factor."""
    rng = np.random.default_rng(seed)
    rows = []
    for round_index, slow in enumerate(slowdowns):
        gpu_slow = slow if paired else rng.choice(slowdowns)
        for b in BATCHES:
            common = dict(results_dir="d", machine="m", round=round_index, d_model=128, n_layers=128, batch_size=b,
                          mode="eager")
            rows.append({**common, "device": "cpu", "median_s": slow * cpu_ms_per_sample * (b + 1) * 1e-3})
            rows.append({**common, "device": "cuda", "median_s": gpu_slow * gpu_ms * 1e-3})
    return pd.DataFrame(rows)


def test_paired_rounds_cross_where_the_curves_do_whatever_the_drift():
    rounds = synthetic_rounds([1.0, 1.3, 0.9, 2.0, 1.1])
    per_round = round_crossings(rounds, {"device": "cpu"}, {"device": "cuda"}, fixed={"d_model": 128})
    assert len(per_round) == 5 and (per_round["n_points"] == len(BATCHES)).all()
    # Linear interpolation in log-log between batch 64 and 128 of t = 0.02 (b + 1) against 2 ms.
    u64, u128 = np.log(64), np.log(128)
    r64, r128 = np.log(0.02 * 65 / 2), np.log(0.02 * 129 / 2)
    expected = np.exp(u64 - r64 * (u128 - u64) / (r128 - r64))
    assert per_round["crossing"].to_numpy() == pytest.approx(np.full(5, expected))
    assert per_round["a_wins_below"].all()
    dist = crossover_distribution(rounds, {"device": "cpu"}, {"device": "cuda"})
    assert dist.median == pytest.approx(expected) and dist.q75 - dist.q25 == pytest.approx(0, abs=1e-9)
    assert dist.n_crossing == dist.n_rounds == 5 and dist.never_fraction == 0
    assert "5 of 5 paired rounds" in dist.describe()


def test_one_slow_point_does_not_move_a_rounds_switch_point():
    # a slow CPU point at batch 1 (the round's first) makes the curves cross there too: the round's
    # crossing is still the one the other sizes agree on; three crossings close together keep the first
    rounds = synthetic_rounds([1.0, 1.0])
    glitch = (rounds["round"] == 0) & (rounds["device"] == "cpu") & (rounds["batch_size"] == 1)
    rounds.loc[glitch, "median_s"] = 5e-3  # slower than the GPU's 2 ms
    per_round = round_crossings(rounds, {"device": "cpu"}, {"device": "cuda"}, fixed={"d_model": 128})
    assert per_round["n_crossings"].tolist() == [2, 1]
    assert per_round["crossing"][0] == pytest.approx(per_round["crossing"][1])
    assert per_round["a_wins_below"].all()
    assert switch_point([90.0, 100.0, 110.0], np.array([1, 64, 95, 105, 128, 512]),
                        np.array([True, True, False, True, False, False])) == (90.0, True)


def test_unpaired_rounds_spread_the_crossing():
    slowdowns = [1.0, 1.3, 0.9, 2.0, 1.1, 1.5, 0.95, 1.7]
    paired = crossover_distribution(synthetic_rounds(slowdowns), {"device": "cpu"}, {"device": "cuda"})
    unpaired = crossover_distribution(synthetic_rounds(slowdowns, paired=False), {"device": "cpu"}, {"device": "cuda"})
    assert paired.high - paired.low == pytest.approx(0, abs=1e-9)
    assert unpaired.high / unpaired.low > 1.5


def test_rounds_without_a_crossing_count_as_never():
    rounds = synthetic_rounds([1.0, 1.0, 1.0])
    rounds.loc[(rounds["round"] == 2) & (rounds["device"] == "cuda"), "median_s"] = 1.0  # GPU never wins
    dist = crossover_distribution(rounds, {"device": "cpu"}, {"device": "cuda"})
    assert dist.n_rounds == 3 and dist.n_crossing == 2 and dist.never_fraction == pytest.approx(1 / 3)
    assert np.isnan(dist.crossings[2])


def test_a_round_with_one_series_only_is_not_paired():
    rounds = synthetic_rounds([1.0, 1.0])
    rounds = rounds[~((rounds["round"] == 1) & (rounds["device"] == "cuda"))]
    assert len(round_crossings(rounds, {"device": "cpu"}, {"device": "cuda"})) == 1


def test_noise_statistics_and_run_to_run_deviation():
    rows = []
    for window, slow in enumerate([1.0, 1.1, 1.0]):
        for round_index in range(4):
            hiccup = 1.5 if round_index == 3 else 1.0  # one slow round per window
            for size, base in enumerate([1e-3, 4e-3]):
                times = tuple(base * slow * hiccup * np.array([1.0, 1.02, 1.04, 1.2]))
                rows.append(dict(window=window, round=round_index, size=size, d_model=64, n_layers=2,
                                 batch_size=[1, 64][size], median_s=float(np.median(times)), raw_times_s=times))
    estimates = window_estimates(pd.DataFrame(rows))
    first = estimates[(estimates["window"] == 0) & (estimates["size"] == 1)].iloc[0]
    assert first["min"] == pytest.approx(4e-3) and first["quiet_rounds"] == 3
    assert first["p10_quiet"] <= first["p10"]
    deviations = run_to_run(estimates)
    # Windows at 1.0, 1.1, 1.0 of each other: mean |x / mean - 1| = (2 * 0.1/3.1 + 0.2/3.1) / 3.
    assert deviations["min_deviation"].to_numpy() == pytest.approx([0.4 / 3.1 / 3] * 2)
    assert list(deviations["compute_bound"]) == [False, True]
