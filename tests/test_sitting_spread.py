"""Sittings' spread: how far a zoo point's measurement moves between sittings, and its prediction with it."""

import numpy as np
import pandas as pd
import pytest

from crossover.analysis.visit_spread import read_sittings, sitting_levels, sitting_spread


def _sitting(name, factor, predicted_factor, bias=-0.1):
    rows = []
    for model, base in (("toy", 100e-6), ("lenet5", 300e-6)):
        measured = base * factor
        rows.append(dict(model=model, workload="forward", batch_size=8, measured_s=measured,
                         predicted_s=base * predicted_factor * (1 + bias)))
    return pd.DataFrame(rows).assign(sitting=name)


def test_a_prediction_that_follows_the_machine_has_no_spread_of_its_own():
    factors = [1.0, 1.3, 0.8, 1.1, 0.9, 1.25]
    sittings = pd.concat([_sitting(f"s{i}", f, f) for i, f in enumerate(factors)])
    points = sitting_spread(sittings)
    assert len(points) == 2 and (points.sittings == 6).all()
    assert points.measured_sd.to_numpy() == pytest.approx(np.std(np.log(factors), ddof=1))
    assert points.error_sd.to_numpy() == pytest.approx(0.0, abs=1e-12)
    assert points.correlation.to_numpy() == pytest.approx(1.0)
    assert points.median_error.to_numpy() == pytest.approx(-0.1)


def test_a_prediction_that_stands_still_carries_the_measurements_spread_as_its_error():
    factors = [1.0, 1.3, 0.8, 1.1, 0.9, 1.25]
    predicted = [1.0, 1.0, 1.0, 1.0, 1.0, 1.0001]  # all but constant: the correlation is defined
    sittings = pd.concat([_sitting(f"s{i}", f, p, bias=0.0) for i, (f, p) in enumerate(zip(factors, predicted))])
    points = sitting_spread(sittings)
    assert points.error_sd.to_numpy() == pytest.approx(points.measured_sd.to_numpy(), rel=1e-3)
    assert (points.predicted_sd < 1e-3).all()


def test_points_in_too_few_sittings_are_left_out():
    sittings = pd.concat([_sitting(f"s{i}", 1.0 + i / 10, 1.0) for i in range(4)])
    assert sitting_spread(sittings, min_sittings=5).empty
    assert len(sitting_spread(sittings, min_sittings=4)) == 2
    assert sitting_spread(pd.DataFrame()).empty


def test_read_sittings_takes_one_table_a_sitting_at_the_thread_count(tmp_path):
    for i, name in enumerate(("bench_zoo_a_t1", "bench_zoo_b_t1", "bench_zoo_b_t2", "bench_zoo_a_noreuse_t1",
                              "bench_zoo_unseen_a_t1", "bench_zoo_a_alone_t1", "bench_zoo_fourth_a_t1", "other_a_t1")):
        _sitting(name, 1.0 + i / 10, 1.0).drop(columns="sitting").to_csv(tmp_path / f"{name}.csv", index=False)
    frame = read_sittings(tmp_path, 1)
    assert sorted(frame.sitting.unique()) == ["bench_zoo_a_t1.csv", "bench_zoo_b_t1.csv"]
    assert read_sittings(tmp_path, 4).empty


def test_the_papers_sitting_macros_read_each_machines_logs(tmp_path):
    from crossover.paper.latex import DASH
    from crossover.paper.visits import sitting_macros

    factors = [1.0, 1.3, 0.8, 1.1, 0.9, 1.25]
    logs = tmp_path / "vm-2c" / "logs"
    logs.mkdir(parents=True)
    for i, f in enumerate(factors):
        for threads in (1, 2):
            _sitting("", f, f).drop(columns="sitting").to_csv(logs / f"bench_zoo_s{i}_t{threads}.csv", index=False)
    macros = {m.name: m.text for m in sitting_macros([tmp_path], {"Vm": "vm-2c", "Gone": "no-such-2c"})}
    assert macros["SittingsVmOneCount"] == "6" and macros["SittingsVmTwoPoints"] == "2"
    assert macros["SittingsVmOneErrorSd"] == "0.0" and macros["SittingsVmOneCorrelation"] == "1.00"
    assert float(macros["SittingsVmOneMeasuredSd"]) == pytest.approx(100 * np.std(np.log(factors), ddof=1), rel=0.01)
    assert macros["SittingsGoneOneCount"] == DASH and macros["SittingsGoneTwoErrorSd"] == DASH


def test_a_rescoring_under_another_name_is_not_a_second_sitting(tmp_path):
    _sitting("", 1.0, 1.0).drop(columns="sitting").to_csv(tmp_path / "bench_zoo_a_t1.csv", index=False)
    _sitting("", 1.0, 1.2).drop(columns="sitting").to_csv(tmp_path / "bench_zoo_a_newcode_t1.csv", index=False)
    _sitting("", 1.0, 1.3).drop(columns="sitting").to_csv(tmp_path / "bench_zoo_a_aaa_t1.csv", index=False)  # sorts first
    _sitting("", 1.1, 1.0).drop(columns="sitting").to_csv(tmp_path / "bench_zoo_b_t1.csv", index=False)
    assert sorted(read_sittings(tmp_path, 1).sitting.unique()) == ["bench_zoo_a_t1.csv", "bench_zoo_b_t1.csv"]


def test_the_papers_sitting_macros_take_a_results_folder_that_is_the_machines(tmp_path):
    from crossover.paper.visits import sitting_macros

    logs = tmp_path / "vm-2c" / "logs"
    logs.mkdir(parents=True)
    for i, f in enumerate([1.0, 1.3, 0.8, 1.1, 0.9]):
        _sitting("", f, f).drop(columns="sitting").to_csv(logs / f"bench_zoo_s{i}_t1.csv", index=False)
    macros = {m.name: m.text for m in sitting_macros([tmp_path / "vm-2c"], {"Vm": "vm-2c"})}
    assert macros["SittingsVmOneCount"] == "5"


def test_a_slow_sitting_reads_as_its_factor_over_the_typical_one():
    factors = [1.0, 1.0, 1.0, 1.0, 1.6]
    sittings = pd.concat([_sitting(f"s{i}", f, 1.0, bias=0.0).assign(spread_rel=0.02 if f == 1.0 else 0.3)
                          for i, f in enumerate(factors)])
    levels = sitting_levels(sittings).set_index("sitting")
    assert list(levels.index) == [f"s{i}" for i in range(5)]
    assert levels.level["s4"] == pytest.approx(1.6) and levels.level["s0"] == pytest.approx(1.0)
    assert levels.spread["s4"] == pytest.approx(0.3) and levels.spread["s1"] == pytest.approx(0.02)
    assert levels.median_error["s4"] == pytest.approx(1 - 1 / 1.6)  # predicted at the typical level
    assert (levels.points == 2).all()
    assert sitting_levels(sittings, min_sittings=6).level.isna().all()  # no point shared that widely
