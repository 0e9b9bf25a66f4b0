"""An earlier sitting scored again: its calibration rebuilt, its measurements against the intervals now."""

import dataclasses

import pandas as pd
import pytest

from conftest import load_experiment
from crossover.opcost.calibrate import run_calibration
from crossover.opcost.calibration_plan import PLANS

TINY = dataclasses.replace(PLANS["smoke"], rounds=2, conv_batches=(1,), sizes=(2**10,), elementwise_ops=("add",))
MODEL = '''from torch import nn
INPUT_SHAPE = (8,)
def model():
    return nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))
'''


@pytest.fixture(scope="module")
def sitting(tmp_path_factory):
    """A calibration, a zoo of one model and a sitting's table: batch 1 measured as the rebuilt profile
    predicts it, batch 8 at a thousand times that (outside however noisy the two-round calibration)."""
    import torch

    from crossover.opcost.module_predict import predict_module

    folder = tmp_path_factory.mktemp("sitting")
    profile = run_calibration("cpu", folder / "calibration", plan=TINY, machine="tiny")
    (folder / "zoo").mkdir()
    (folder / "zoo" / "tiny_mlp.py").write_text(MODEL)
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))
    frame = predict_module(model, sample_shape=(8,), batch_sizes=[1, 8], profiles=[profile], warn=False)
    measured = frame["latency_s"].to_numpy() * [1.0, 1000.0]
    pd.DataFrame(dict(model="tiny_mlp", workload="forward", batch_size=[1, 8], measured_s=measured)).to_csv(
        folder / "bench_zoo_tiny_t1.csv", index=False)
    return folder


def test_a_sitting_is_scored_against_its_rebuilt_calibration(sitting, capsys):
    rescore = load_experiment("rescore_intervals")
    profile, table = rescore.rescored(sitting / "bench_zoo_tiny_t1.csv", sitting / "calibration", sitting / "zoo")
    assert profile.machine == "tiny" and list(table["batch_size"]) == [1, 8]
    assert table["predicted_s"].to_numpy() == pytest.approx(table["measured_s"].to_numpy() * [1.0, 0.001], rel=1e-6)
    assert list(table["inside"]) == [True, False]  # a thousand times the prediction is outside
    half = (table["high_s"] - table["low_s"]) / 2 / table["predicted_s"]
    assert table["half_width"].to_numpy() == pytest.approx(half.to_numpy()) and (half > 0).all()
    spec = f"{sitting / 'bench_zoo_tiny_t1.csv'}:{sitting / 'calibration'}:{sitting / 'zoo'}"
    assert rescore.main([spec]) == 0
    out = capsys.readouterr().out
    assert "bench_zoo_tiny_t1" in out and "1 sittings: 1 of 2 measurements inside (50.0%)" in out
    assert "0 of 1" in out  # the model misses its target: one point 99.9% off
    assert "|error| of every measurement: median 50.0%, 80% 79.9%" in out  # of 0 and 0.999


def test_a_spec_that_names_nothing_is_refused(sitting, capsys):
    rescore = load_experiment("rescore_intervals")
    with pytest.raises(SystemExit) as stopped:
        rescore.main([f"{sitting / 'bench_zoo_tiny_t1.csv'}:{sitting / 'calibration'}"])
    assert stopped.value.code == 2 and "expected CSV:CALIBRATION_DIR:ZOO_DIR" in capsys.readouterr().err
    with pytest.raises(SystemExit) as stopped:
        rescore.main([f"{sitting / 'missing.csv'}:{sitting / 'calibration'}:{sitting / 'zoo'}"])
    assert stopped.value.code == 2 and "missing.csv: no such file" in capsys.readouterr().err
