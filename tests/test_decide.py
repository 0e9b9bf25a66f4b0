"""The answer is the library's: ``crossover predict --json`` prints ``crossover.decide(...).to_json()``,
for the toy's sizes and for a user's module; the CLI only formats it."""

from __future__ import annotations

import dataclasses
import pytest

import crossover
from crossover.cli.args import DEFAULT_RESULTS
from conftest import ROOT
from test_json_schema import _json  # crossover ARGS in this process, its stdout as JSON

QUICK = DEFAULT_RESULTS / "amd-epyc-2c" / "quick"
H100 = DEFAULT_RESULTS / "nvidia-h100-80gb-hbm3-16c" / "gpu"
PROFILE = ROOT / "experiments" / "profiles" / "amd-epyc-2c"


def test_predict_json_is_decide_to_json_for_the_toy():
    printed = _json("predict", "--results", QUICK, H100, "--d-model", 128, "--n-layers", 128,
                        "--batch-size", 16, "--models", "roofline", "--n-boot", 5, "--quiet", "--json")
    decision = crossover.decide([QUICK, H100], d_model=128, n_layers=128, batch_size=16, models=["roofline"],
                                n_boot=5)
    assert printed == decision.to_json()
    assert decision.kind == "toy" and printed["schema"]["name"] == "crossover.predict"
    assert {d["machine"] for d in decision.devices} == {"amd-epyc-2c", "nvidia-h100-80gb-hbm3-16c"}
    assert decision.decisions and all("text" in d for d in decision.decisions)
    assert set(decision.fits) == {d["series"] for d in decision.devices}


def test_predict_model_json_is_decide_to_json():
    model = ROOT / "experiments" / "zoo" / "mnist_mlp.py"
    printed = _json("predict", "--model", f"{model}:model", "--input-shape", "1,28,28", "--batch-size", "1,64",
                        "--profiles", PROFILE, "--json")
    decision = crossover.decide(model=f"{model}:model", input_shape=(1, 28, 28), batch_size=[1, 64],
                                profiles=[PROFILE])
    assert printed == decision.to_json()
    assert decision.kind == "model" and [d["batch_size"] for d in decision.devices] == [1, 64]


def test_decide_refuses_a_toy_question_without_its_sizes():
    with pytest.raises(crossover.AnalysisError, match="d_model, n_layers and batch_size"):
        crossover.decide([QUICK], d_model=128, batch_size=1)


def test_a_profile_of_this_cpu_at_another_thread_count_is_named(monkeypatch):
    """A CPU profile predicts a step at the thread count it was calibrated at: predicting this machine
    at another count says so in the answer's warnings (and a profile at this count says nothing)."""
    import torch

    import crossover
    from crossover.analysis.decision import this_machine
    from crossover.opcost.profiles import synthetic_profile

    here = this_machine()
    now = torch.get_num_threads()
    other = dataclasses.replace(synthetic_profile("cpu", machine=here), threads=now + 3)
    same = dataclasses.replace(synthetic_profile("cpu", machine=here), threads=now)
    model = torch.nn.Linear(4, 2)
    answer = crossover.decide(model=model, input_shape=(4,), batch_size=[1, 2], profiles=[other])
    (note,) = [w for w in answer.warnings if "calibrated at" in w]
    assert f"at {now + 3} threads and this process runs {now}" in note and f"--threads {now}" in note
    answer = crossover.decide(model=model, input_shape=(4,), batch_size=[1, 2], profiles=[same])
    assert not [w for w in answer.warnings if "calibrated at" in w]
