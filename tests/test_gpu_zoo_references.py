"""The GPU run's zoo: every model of a device measured in one pool of shuffled rounds, with the calibration's
reference models among them beside the calibration's own measurement of them (whether a zoo model's miss
is the model's or the process's), each model's file rewritten after every round."""

import json

import pytest
from conftest import load_experiment

from crossover.opcost.profiles import synthetic_profile, write_profile


def _gpu_zoo():
    return load_experiment("gpu_zoo")


def _profiles(tmp_path):
    """A synthetic CPU profile whose calibration measured the reference MLP's forward pass at batch 1."""
    folder = tmp_path / "profiles" / "cpu"
    folder.mkdir(parents=True)
    write_profile(folder, synthetic_profile("cpu"))
    saved = json.loads((folder / "profile.json").read_text())
    saved["reference_models"] = [dict(model="mlp", workload="forward", batch_size=1, measured_s=1e-3)]
    (folder / "profile.json").write_text(json.dumps(saved))
    return tmp_path / "profiles"


def test_the_zoo_and_the_reference_models_share_the_rounds(tmp_path):
    gpu_zoo = _gpu_zoo()
    out = tmp_path / "out"
    rows = gpu_zoo.measure_zoo(out, ["cpu"], _profiles(tmp_path), 2, [], names={"mnist_mlp"}, references=True)
    kinds = {(r["model"], r["workload"], r["batch_size"]) for r in rows}
    assert ("reference_mlp", "forward", 1) in kinds and ("reference_cnn", "train", 32) in kinds
    assert {("mnist_mlp", w, b) for w in ("forward", "train") for b in gpu_zoo.BATCH_SIZES} <= kinds
    assert not any(r["model"] == "toy" for r in rows)  # only the models asked for
    mine = next(r for r in rows if (r["model"], r["workload"], r["batch_size"]) == ("reference_mlp", "forward", 1))
    assert mine["predicted_s"] == pytest.approx(1e-3) and mine["measured_s"] > 0
    references = [r for r in rows if r["model"].startswith("reference_") and r is not mine]
    assert references and all(r["predicted_s"] is None for r in references)  # not in the profile: nothing beside it
    zoo = [r for r in rows if r["model"] == "mnist_mlp"]
    assert all(r["predicted_s"] and r["predicted_s"] > 0 and r["measured_s"] > 0 for r in zoo)  # predicted beside
    saved = json.loads((out / "measure-reference_mlp-forward-cpu.json").read_text())
    assert saved["calibration_measured_s"]["1"] == pytest.approx(1e-3) and saved["model"] == "reference:mlp"
    # the row's measurement is the zoo's own rounds, not the calibration's number copied beside it
    assert mine["measured_s"] == next(p["latency_s"] for p in saved["points"] if p["batch_size"] == 1)
    measured = json.loads((out / "measure-mnist_mlp-train-cpu.json").read_text())
    assert measured["rounds"] == 2 and measured["protocol"] == gpu_zoo.POOLED
    assert [p["batch_size"] for p in measured["points"]] == list(gpu_zoo.BATCH_SIZES)
    assert all(p["rounds"] == 2 and p["n_repeats"] >= 4 for p in measured["points"])
    assert (out / "predict-mnist_mlp-forward.json").is_file()
    assert "reference_mlp | forward | cpu" in gpu_zoo.summary(rows)
    from crossover.opcost.calibration_plan import PLANS

    names = dict.fromkeys(n for n, _ in PLANS["quick"].reference_models)
    planned = [name for name in names if name in gpu_zoo.ZOO_REFERENCES]  # the calibration's order
    per_model = 2 * sum(n == planned[0] for n, _ in PLANS["quick"].reference_models)  # batches x workloads
    expected = [f"reference_{name}" for name in planned for _ in range(per_model)]
    assert [r["model"] for r in rows[:len(expected)]] == expected  # as planned, not shuffled
    assert not list(out.glob("*.partial"))
    from crossover.analysis.zoo_runs import read_measurements

    zoo = read_measurements(out)  # the zoo sets' reader: the zoo's models, not the reference ones
    assert set(zoo["model"]) == {"mnist_mlp"} and len(zoo) == 2 * len(gpu_zoo.BATCH_SIZES)


def test_a_run_stopped_part_way_keeps_its_whole_rounds(tmp_path, monkeypatch):
    gpu_zoo = _gpu_zoo()
    import crossover.measurement.module_rounds as module_rounds

    real, calls = module_rounds.measure_rounds, []

    def stopped_in_round_two(points, **kwargs):  # the stage's time limit (SIGINT) in the second round
        calls.append(kwargs["seed"])
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(points, **kwargs)

    monkeypatch.setattr(module_rounds, "measure_rounds", stopped_in_round_two)
    rows = []
    with pytest.raises(KeyboardInterrupt):
        gpu_zoo.measure_zoo(tmp_path, ["cpu"], tmp_path / "none", 3, rows, names={"mnist_mlp"})
    measured = json.loads((tmp_path / "measure-mnist_mlp-forward-cpu.json").read_text())
    assert measured["rounds"] == 1 and measured["rounds_planned"] == 3
    assert len(rows) == 2 * len(gpu_zoo.BATCH_SIZES) and all(r["predicted_s"] is None for r in rows)  # no profiles


def test_the_hosts_thread_starts_go_with_the_zoo_to_the_machine_that_predicts_it(tmp_path, monkeypatch):
    """At 3 threads or more the zoo stage counts each short CPU step's thread starts on the host and writes
    them into the measurement files; ``zoo_check`` prices them as recorded, not as this machine counts them."""
    import dataclasses

    import torch

    import crossover.opcost.thread_starts as thread_starts_module
    from crossover.analysis.zoo_runs import predict_measurements, read_measurements, recorded_starts

    gpu_zoo = _gpu_zoo()
    folder = tmp_path / "profiles" / "cpu"
    folder.mkdir(parents=True)
    profile = dataclasses.replace(synthetic_profile("cpu", thread_start_s=50e-6), threads=4)
    write_profile(folder, profile)
    monkeypatch.setattr(thread_starts_module, "count_thread_starts", lambda step, **kw: 5.0)  # the host's MKL
    monkeypatch.setattr(thread_starts_module, "module_thread_starts", lambda *a, **kw: 0.0)  # this machine's
    before = torch.get_num_threads()
    torch.set_num_threads(4)
    try:
        gpu_zoo.measure_zoo(tmp_path / "out", ["cpu"], tmp_path / "profiles", 1, [], names={"mnist_mlp"})
    finally:
        torch.set_num_threads(before)
    saved = json.loads((tmp_path / "out" / "measure-mnist_mlp-forward-cpu.json").read_text())
    assert [p["thread_starts"] for p in saved["points"]] == [5.0] * len(gpu_zoo.BATCH_SIZES)
    measured = read_measurements(tmp_path / "out")
    assert recorded_starts(measured[measured["workload"] == "forward"]) == {(4, b): 5.0 for b in gpu_zoo.BATCH_SIZES}
    told = predict_measurements(measured, [folder])
    counted_here = predict_measurements(measured.drop(columns="thread_starts"), [folder])
    gap = (told["predicted_s"] - counted_here["predicted_s"]).tolist()
    assert gap == pytest.approx([5 * 50e-6] * len(gap))
