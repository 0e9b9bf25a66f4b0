"""The GPU run's zoo measures the calibration's reference models again in its own process, beside the
calibration's measurement of them: whether a zoo model's miss is the model's or the process's."""

import importlib.util
import json
from pathlib import Path

import pytest

_PATH = Path(__file__).resolve().parents[1] / "experiments" / "gpu_zoo.py"


def _gpu_zoo():
    spec = importlib.util.spec_from_file_location("gpu_zoo", _PATH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_reference_models_are_measured_beside_the_calibrations_own_measurement(tmp_path):
    gpu_zoo = _gpu_zoo()
    (tmp_path / "profiles" / "cpu").mkdir(parents=True)
    calibrated = [dict(model="mlp", workload="forward", batch_size=1, measured_s=1e-3)]
    (tmp_path / "profiles" / "cpu" / "profile.json").write_text(json.dumps({"reference_models": calibrated}))
    (tmp_path / "out").mkdir()
    rows = gpu_zoo.measure_references(tmp_path / "out", ["cpu"], tmp_path / "profiles", 1, [])
    kinds = {(r["model"], r["workload"], r["batch_size"]) for r in rows}
    assert ("reference_mlp", "forward", 1) in kinds and ("reference_cnn", "train", 32) in kinds
    mine = next(r for r in rows if (r["model"], r["workload"], r["batch_size"]) == ("reference_mlp", "forward", 1))
    assert mine["predicted_s"] == pytest.approx(1e-3) and 0 < mine["measured_s"] < 1e-3
    assert all(r["predicted_s"] is None for r in rows if r is not mine)  # not in the profile: nothing beside it
    saved = json.loads((tmp_path / "out" / "measure-reference_mlp-forward-cpu.json").read_text())
    assert saved["calibration_measured_s"]["1"] == pytest.approx(1e-3) and saved["model"] == "reference:mlp"
    assert "reference_mlp | forward | cpu" in gpu_zoo.summary(rows)
