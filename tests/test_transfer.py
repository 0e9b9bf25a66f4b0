"""The shipped zoo sets (zoo_checks.toml) and the paper's transfer table computed from them."""

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from crossover.analysis.zoo_runs import read_measurements, read_zoo_sets
from crossover.paper.latex import DASH, format_number
from crossover.paper.transfer import TRANSFER_COLUMNS, TRANSFER_MODELS, transfer_macros, transfer_table

ROOT = Path(__file__).resolve().parents[1]


def test_every_shipped_zoo_set_has_its_measurements_and_the_profiles_of_its_visit():
    sets = read_zoo_sets()
    assert {s.name for s in sets} >= {c[0] for c in TRANSFER_COLUMNS}
    for s in sets:
        measured = read_measurements(s.zoo)
        assert not measured.empty, s.zoo
        devices = {json.loads((Path(p) / "profile.json").read_text())["device"] for p in s.profiles}
        assert set(measured["device"]) <= devices, s.name  # every measured device has its profile
        assert all(m in {k[0] for k in TRANSFER_MODELS} for m in measured["model"]), s.name


def _frame(model, workload, device, measured, predicted):
    return pd.DataFrame(dict(model=model, workload=workload, device=device, batch_size=[1, 8][:len(measured)],
                             measured_s=measured, predicted_s=predicted))


def test_the_transfer_macros_score_each_column_and_the_crossovers():
    frame = pd.concat([
        _frame("mnist_mlp", "forward", "cuda", [1.0, 1.0], [1.05, 1.2]),  # 12.5% median, 20% worst: missed
        _frame("toy", "forward", "cuda", [1.0, 1.0], [1.02, 0.95]),  # within target
        _frame("toy", "forward", "cpu", [0.5, 2.0], [0.5, 2.0]),  # cpu faster at 1, gpu at 8: crosses
    ], ignore_index=True)
    macros = {m.name: m.text for m in transfer_macros({"h100-run3": frame})}
    assert macros["TransferHundredGpuMnist"] == "12 / 20" and macros["TransferHundredGpuToy"] == "4 / 5"
    assert macros["TransferHundredGpuWithin"] == "1" and macros["TransferHundredGpuEntries"] == "2"
    assert macros["TransferHundredGpuWorst"] == "20"
    assert macros["TransferHundredCpuToy"] == "0 / 0" and macros["TransferHundredCpuMnist"] == DASH
    assert macros["TransferHundredPairs"] == "1" and macros["TransferHundredHolds"] == "1"
    assert macros["TransferTwoHundredGpuWithin"] == DASH  # a set that is not there: dashes
    whole = transfer_table(breaks=())
    assert whole.count("\\\\") == len(TRANSFER_MODELS) + 1 and whole.count("\\begin{tabular}") == 1
    table = transfer_table(breaks=(6,))  # two tabulars stacked: each model's row in each, every cell once
    assert table.count("\\begin{tabular}") == 3 and table.count("model &") == 2
    assert table.count("\\\\") == 2 * (len(TRANSFER_MODELS) + 1) + 1
    for _, _, _, letters in TRANSFER_COLUMNS:
        for model_letters, _ in TRANSFER_MODELS.values():
            assert table.count(f"\\Transfer{letters}{model_letters} ") == 1, (letters, model_letters)


def test_zoo_check_takes_a_shipped_set_by_name_and_refuses_an_unknown_one():
    run = subprocess.run([sys.executable, "experiments/zoo_check.py", "--set", "nope"], cwd=ROOT,
                         capture_output=True, text=True, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert run.returncode == 2 and "no zoo set 'nope'" in run.stderr and "h100-run2" in run.stderr


@pytest.mark.parametrize("name", ["h200-run1"])
def test_a_shipped_set_is_predicted_for_every_measured_point(name):
    from crossover.analysis.zoo_runs import zoo_set_predictions

    (zoo_set,) = [s for s in read_zoo_sets() if s.name == name]
    frame = zoo_set_predictions(zoo_set)
    assert frame["predicted_s"].notna().all() and (frame["predicted_s"] > 0).all()


def test_the_intervals_coverage_and_width_are_scored_per_column():
    frame = _frame("toy", "forward", "cuda", [1.0, 1.0], [1.1, 1.3]).assign(
        predicted_low_s=[0.9, 1.2], predicted_high_s=[1.3, 1.4])  # the first holds 1.0, the second does not
    macros = {m.name: m.text for m in transfer_macros({"h100-run3": frame})}
    assert macros["TransferHundredGpuInside"] == "50"
    assert macros["TransferHundredGpuHalfWidth"] == format_number(100 * (0.2 / 1.1 + 0.1 / 1.3) / 2, 2)
    assert macros["TransferHundredCpuInside"] == DASH
