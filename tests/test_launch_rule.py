"""The rule of thumb per kernel launch: launch counts from traces, and the rule on points it was not fitted to."""

import pandas as pd
import pytest
from torch import nn

from crossover.analysis.launch_rule import (LAUNCH_COLUMN, fit_launch_rule, model_launches, score_launch_rule,
                                            toy_launches, with_launches, zoo_points)
from crossover.measurement.toy_model import ResidualMLP


def test_the_toy_launches_three_kernels_a_layer_whatever_its_width():
    from crossover.opcost.module_predict import trace_step

    table, _ = trace_step(ResidualMLP(64, 5, device="meta"), (64,), 3, "forward")
    assert toy_launches(64, 5) == int(table["launches"].sum()) == 15
    assert toy_launches(512, 5) == 15 and toy_launches(64, 128) == 384


def test_a_recurrent_layer_counts_as_cudnn_runs_it():
    model = nn.Sequential(nn.GRU(8, 16, batch_first=True))
    fused = model_launches(model, (12, 8), 4)
    assert fused <= 3  # one fused call (a GPU profile may count its launches as a few)
    assert model_launches(nn.Linear(8, 4), (8,), 2) == 1


def _points(cpu_per_launch_us, gpu_wins):
    return pd.DataFrame({LAUNCH_COLUMN: [u * 1e-6 for u in cpu_per_launch_us], "gpu_wins": gpu_wins})


def test_the_rule_is_fitted_where_the_winner_flips_and_scores_new_points():
    rule = fit_launch_rule(_points([2, 4, 8, 16, 32, 64], [False, False, False, True, True, True]))
    assert rule.threshold == pytest.approx((8e-6 * 16e-6) ** 0.5) and rule.correct == 6
    new = _points([1, 10, 12, 40], [False, False, False, True])
    s = score_launch_rule(rule, new)
    assert (s["correct"], s["n"]) == (3, 4) and s["misclassified"][LAUNCH_COLUMN].iloc[0] == pytest.approx(12e-6)


def test_zoo_points_pair_each_batch_across_devices():
    frame = pd.DataFrame(dict(model="m", workload="forward", device=["cpu", "cuda", "cpu", "cuda", "cpu"],
                              batch_size=[1, 1, 8, 8, 64], measured_s=[10e-6, 40e-6, 80e-6, 40e-6, 1e-3],
                              launches=[None, 4, None, 4, None]))
    points = zoo_points(frame)
    assert list(points["batch_size"]) == [1, 8] and list(points["gpu_wins"]) == [False, True]
    assert points[LAUNCH_COLUMN].tolist() == pytest.approx([2.5e-6, 20e-6])
    toy = with_launches(pd.DataFrame(dict(d_model=[64], n_layers=[2], cpu_s=[60e-6])))
    assert toy["launches"].iloc[0] == 6 and toy[LAUNCH_COLUMN].iloc[0] == pytest.approx(10e-6)


def test_on_the_shipped_data_the_rule_fitted_on_one_gpu_machine_holds_on_the_other():
    """Fitted on the H200 machine's eager toy points, scored on the H100 machine's (which it never saw)."""
    from crossover.analysis.claims import paired_points
    from crossover.analysis.reference_study import assign_roles, main_runs
    from crossover.results.store import load_results
    from crossover.shipped_data import shipped_results_dir

    frame = main_runs(load_results([shipped_results_dir()]))  # the runs the paper reads, as it assigns roles
    roles = assign_roles(frame)
    fitted_on = with_launches(paired_points(frame, roles["Host"], roles["Cuda"]))
    held_out = with_launches(paired_points(frame, roles["HostB"], roles["CudaB"]))
    assert "h200" in roles["Host"][0] and "h100" in roles["HostB"][0] and len(held_out) > 50
    rule = fit_launch_rule(fitted_on)
    assert 5e-6 < rule.threshold < 30e-6  # a GPU launch's host cost in a synchronised step, not a fit artefact
    s = score_launch_rule(rule, held_out)
    assert s["correct"] >= 0.9 * s["n"]
