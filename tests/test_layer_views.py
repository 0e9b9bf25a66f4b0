"""The views the trace records around a 1-D pooling's 2-D lowering are inside its whole-call primitive's time."""

import dataclasses

import pytest
from torch import nn

from crossover.opcost.module_predict import costed_rows, predict_module, trace_step
from crossover.opcost.profiles import Curve, synthetic_profile

US = 1e-6


def _profile(with_layers=True):
    base = synthetic_profile(dispatch_s=2 * US, view_s=1 * US, event_s=0.5 * US)
    layers = {"pool1d": Curve((1.0,), (5 * US,), rate=float("inf")),
              "adaptive_pool": Curve((1.0,), (7 * US,), rate=float("inf"))} if with_layers else {}
    return dataclasses.replace(base, curves={**base.curves, **layers})


def _model():
    return nn.Sequential(nn.Conv1d(4, 8, 3, padding=1), nn.MaxPool1d(2), nn.AdaptiveMaxPool1d(1), nn.Flatten())


def test_a_1d_poolings_views_are_not_costed_again():
    table, calls = trace_step(_model(), (4, 32), 1, "forward")
    rows = table.to_dict("records")
    views = [r for r in rows if r["kind"] == "view" and r["module"] in ("1", "2")]
    assert len(views) == 6  # an unsqueeze and two squeezes around each pooling
    kept = costed_rows(_profile(), rows)
    assert len(kept) == len(rows) - 6
    assert [r for r in kept if r["kind"] == "view"] == [r for r in rows if r["kind"] == "view" and r["module"] not in ("1", "2")]
    assert costed_rows(_profile(with_layers=False), rows) == rows  # no layer primitives: costed as before


def test_the_step_is_cheaper_by_the_views_and_their_host_events(monkeypatch):
    import crossover.opcost.module_predict as module_predict

    def latency():
        frame = predict_module(_model(), sample_shape=(4, 32), batch_sizes=(1,), profiles=[_profile()])
        return frame["latency_s"].iloc[0]

    now = latency()
    monkeypatch.setattr(module_predict, "costed_rows", lambda profile, rows: list(rows))
    assert latency() - now == pytest.approx(6 * (1 * US + 0.5 * US))  # six views, each a view and a host event
