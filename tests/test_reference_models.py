"""The calibration's reference models: five generic kinds, each timed at one sample and at a batch."""

import pytest
import torch

from crossover.opcost.calibration_plan import PLANS, points
from crossover.opcost.reference_models import REFERENCE_MODELS, reference_model


@pytest.mark.parametrize("name", sorted(REFERENCE_MODELS))
def test_each_reference_model_runs_on_its_sample_shape_to_ten_classes(name):
    model = reference_model(name)
    assert tuple(model(torch.zeros(2, *REFERENCE_MODELS[name])).shape) == (2, 10)
    first = [p.detach().clone() for p in reference_model(name).parameters()]
    assert all(torch.equal(a, b) for a, b in zip(first, reference_model(name).parameters()))  # seeded


def test_the_plans_time_every_kind_at_one_sample_and_a_batch_forward_and_training():
    for plan in ("quick", "full"):
        steps = {(p.name, p.m) for p in points(PLANS[plan]) if p.family == "model"}
        for name in REFERENCE_MODELS:
            batches = {b for n, b in steps if n.split("/")[0] == name}
            assert 1 in batches and max(batches) > 1
            assert {n for n, _ in steps if n.startswith(f"{name}/")} == {f"{name}/forward", f"{name}/train"}
    with pytest.raises(ValueError, match="unknown reference model"):
        reference_model("resnet")
