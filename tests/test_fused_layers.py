"""The fused inference layers (``nn.MultiheadAttention`` and ``nn.TransformerEncoderLayer`` in eval mode under
no_grad) are timed whole by the calibration; ``fixed + linear + scale × rest`` is fitted on them and a
traced fused op is costed with it."""

import dataclasses

import numpy as np
import pytest
import torch

from crossover.opcost.calibration_plan import PLANS, make_step, points
from crossover.opcost.fused_layers import (FUSED, FUSED_OPS, SCALE_BOUNDS, _fused_row, fit_fused, fused_points,
                                           fused_terms)
from crossover.opcost.op_costs import fused_kernels_s, op_cost
from crossover.opcost.profiles import synthetic_profile
from crossover.opcost.trace import op_name, trace_module


def _families(profile, fixed_s, scale, noise=()):
    """Primitive times made from known terms on ``profile`` (one module call on top, as a step pays)."""
    rows = []
    for i, (_, name, _, shape) in enumerate(fused_points()):
        linear, rest = fused_kernels_s(profile, _fused_row(name, shape))
        seconds = (fixed_s + linear + scale * rest + profile.overhead("module_call_s")) * (1 + (noise[i] if noise else 0))
        rows.append((seconds, 0.0, dict(name=name, shape="x".join(map(str, shape)))))
    return {FUSED: rows}


def _profile():
    return synthetic_profile("cpu", dispatch_s=2e-6, flop_rate=2e10)


def _fit(profile, families):
    return fit_fused(families, lambda row: fused_kernels_s(profile, row), profile.overhead("module_call_s"))


def test_the_fixed_cost_and_the_scale_are_recovered():
    profile = _profile()
    terms = _fit(profile, _families(profile, 3e-5, 1.4))
    for name in FUSED_OPS:
        assert terms[f"fused_{name}_s"] == pytest.approx(3e-5, rel=1e-6)
        assert terms[f"fused_{name}_scale"] == pytest.approx(1.4, rel=1e-6)
    assert _fit(profile, {}) == {}  # a calibration from before the primitives: nothing


def test_noisy_primitives_are_fitted_by_their_relative_residuals():
    """Each primitive's time off by a few percent: the fit is the weighted least-squares solution, each
    residual relative to the primitive's time (a small batch counts as much as a large one)."""
    profile = _profile()
    noise = [0.04, -0.03, 0.05, -0.02, 0.03, -0.05, 0.02, -0.04] * 4
    families = _families(profile, 3e-5, 1.4, noise)
    terms = _fit(profile, families)
    measured, target, rest = [], [], []
    for seconds, _, row in families[FUSED]:
        if row["name"] == "mha":
            linear, kernels = fused_kernels_s(profile, _fused_row("mha", tuple(int(v) for v in row["shape"].split("x"))))
            measured.append(seconds), target.append(seconds - profile.overhead("module_call_s") - linear)
            rest.append(kernels)
    w = 1 / np.array(measured)
    expected = np.linalg.lstsq(np.column_stack([w, np.array(rest) * w]), np.array(target) * w, rcond=None)[0]
    assert (terms["fused_mha_s"], terms["fused_mha_scale"]) == pytest.approx(tuple(expected), rel=1e-9)
    assert terms["fused_mha_scale"] == pytest.approx(1.4, rel=0.15)  # near the truth


def test_a_kernel_cost_it_cannot_read_leaves_the_op_out():
    profile = _profile()
    assert fit_fused(_families(profile, 3e-5, 1.4), lambda row: None) == {}  # this torch's shapes not understood


def test_the_scale_stays_within_its_bounds_and_the_fixed_cost_non_negative():
    profile = _profile()
    terms = _fit(profile, _families(profile, 0.0, 9.0))
    assert terms["fused_mha_scale"] == SCALE_BOUNDS[1] and terms["fused_mha_s"] > 0  # the rest, fixed
    shrunk = _fit(profile, _families(profile, 0.0, 0.8))
    assert shrunk["fused_mha_s"] == pytest.approx(0.0, abs=1e-12)
    assert shrunk["fused_mha_scale"] == pytest.approx(0.8, rel=1e-6)
    low = _fit(profile, _families(profile, 2e-5, 0.1))  # below the lower bound: held there, the rest fixed
    assert low["fused_mha_scale"] == SCALE_BOUNDS[0] and low["fused_mha_s"] >= 0


def test_the_plan_times_them_on_a_cpu_only_and_each_runs_its_fused_op():
    fused = [p for p in points(PLANS["quick"]) if p.family == FUSED]
    assert sorted((p.name, p.shape) for p in fused) == sorted((n, s) for _, n, _, s in fused_points())
    assert not [p for p in points(PLANS["quick"], "cuda") if p.family == FUSED]
    for point in fused[:: len(fused) // 2]:  # one of each op: its step runs, and its module traces to the fused op
        batch, tokens, width, _ = point.shape
        out = make_step(point, "cpu")()
        assert tuple(out.shape) == (batch, tokens, width)
        assert op_name(_fused_row(point.name, point.shape)["op"]) == FUSED_OPS[point.name]


def test_a_traced_fused_op_is_costed_with_the_terms_on_a_cpu():
    layer = torch.nn.TransformerEncoderLayer(64, 4, 128, batch_first=True).eval()
    table = trace_module(layer, torch.empty((2, 16, 64), device="meta"))
    row = next(r for r in table.to_dict("records") if op_name(r["op"]) == FUSED_OPS["encoder"])
    cpu = _profile()
    assert fused_terms(cpu, op_name(row["op"])) == (0.0, 1.0)  # not calibrated: the kernels as they are
    paying = dataclasses.replace(cpu, overheads={**cpu.overheads, "fused_encoder_s": 5e-5, "fused_encoder_scale": 2.0})
    linear, rest = fused_kernels_s(cpu, row)
    assert linear > 0 and rest > 0 and linear + rest == pytest.approx(op_cost(cpu, row).host_s)
    assert op_cost(paying, row).host_s == pytest.approx(5e-5 + linear + 2.0 * rest)  # the products as they are
    assert fused_kernels_s(cpu, dict(row, op="aten.addmm.default")) is None
    mha = dataclasses.replace(cpu, overheads={**cpu.overheads, "fused_mha_s": 5e-5, "fused_mha_scale": 2.0})
    assert op_cost(mha, row).host_s == pytest.approx(op_cost(cpu, row).host_s)  # another op's terms


def test_the_calibration_summary_names_the_terms_it_has():
    from crossover.opcost.fused_layers import fused_summary

    cpu = _profile()
    assert fused_summary(cpu) is None
    line = fused_summary(dataclasses.replace(cpu, overheads={**cpu.overheads, "fused_mha_s": 3e-5,
                                                             "fused_mha_scale": 1.4}))
    assert "attention 30" in line and "1.40 x its other kernels" in line and "encoder" not in line
