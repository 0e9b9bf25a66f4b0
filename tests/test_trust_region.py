"""crossover.fit.trust_region: scipy's bounded least squares, step for step (the same optimum bit for bit)."""

import numpy as np
import pandas as pd
import pytest
from scipy import optimize

from crossover.fit import latency_models as LM
from crossover.fit import trust_region as TR
from crossover.fit import validation
from crossover.fit.validation import check_frame, frame_features

#: Every field of scipy's result the port returns.
FIELDS = ("x", "cost", "fun", "jac", "grad", "optimality", "nfev", "njev", "status")


def series_rows():
    """A CPU-like series: launch-bound at small sizes, a cache step in the weights, compute-bound at large."""
    out = []
    for d in (32, 64, 128, 256, 512, 1024):
        for n in (2, 8, 32, 128):
            for b in (1, 4, 16, 64, 256):
                weights = 4 * n * d * d
                bandwidth = 60e9 if weights < 8e6 else 12e9
                t = 15e-6 + n * (2e-6 + max(2 * b * d * d / 40e9, weights / n / bandwidth))
                t *= 1 + 0.03 * np.sin(d * 0.7 + n * 1.3 + b * 0.9)  # some misfit for the robust loss
                out.append(dict(machine="m", device="cpu", workload="forward", mode="eager", dtype="float32",
                                regime="latency", transfer="device", threads=2, d_model=d, n_layers=n, batch_size=b,
                                median_s=t, p10_s=t, raw_times_s=(t, t)))
    return check_frame(pd.DataFrame(out), "median")


def problem(model, frame, peaks=None):
    """The residuals, Jacobian and bounds :func:`crossover.fit.latency_models.fit_parameters` hands the solver."""
    X, t = frame_features(frame), frame["latency_s"].to_numpy()
    names = LM.model_parameters(model)
    upper = LM.upper_bounds(model, peaks)
    lo = np.log([min(LM.PARAMS[n].lo, upper.get(n, np.inf) / 10) for n in names])
    hi = np.log([upper.get(n, LM.PARAMS[n].hi) for n in names])
    log_t = np.log(t)

    def residuals(phi):
        return np.log(LM.evaluate(model, np.exp(phi), X)) - log_t

    def jacobian(phi):
        return TR.forward_differences(lambda rows: np.log(LM.evaluate(model, np.exp(rows), X)), phi, hi)

    starts = [np.clip(np.log(s), lo + 1e-6, hi - 1e-6) for s in LM.initial_guesses(model, X, t)]
    return residuals, jacobian, (lo, hi), starts


def assert_same(ours, theirs):
    for name in FIELDS:
        a, b = np.asarray(getattr(ours, name)), np.asarray(getattr(theirs, name))
        assert a.shape == b.shape and a.tobytes() == b.tobytes(), name  # bit for bit, NaN and -0.0 included


@pytest.mark.parametrize("loss", ["soft_l1", "linear"])
@pytest.mark.parametrize("model", ["affine", "roofline", "roofline+cache+hockney", "roofline+cache+ramp+hockney+pack"])
def test_the_port_takes_scipys_steps(model, loss):
    residuals, jacobian, bounds, starts = problem(model, series_rows())
    for x0 in starts:
        options = dict(bounds=bounds, loss=loss, f_scale=0.1, ftol=1e-6, xtol=1e-6, max_nfev=100 * len(x0))
        assert_same(TR.least_squares(residuals, x0, jacobian, **options),
                    optimize.least_squares(residuals, x0, jac=jacobian, **options))


def test_bounds_that_bind_reflect_the_same_steps():
    # peaks below what the data need hold the rates against their bounds: reflective steps, strict feasibility
    residuals, jacobian, bounds, starts = problem("roofline+cache", series_rows(),
                                                  peaks={"flops_per_s": 5e9, "dram_bytes_per_s": 3e9,
                                                         "cache_bytes_per_s": 8e9})
    for x0 in starts:
        for max_nfev in (3, 700):  # out of evaluations, and converged
            options = dict(bounds=bounds, loss="soft_l1", f_scale=0.1, ftol=1e-6, xtol=1e-6, max_nfev=max_nfev)
            ours = TR.least_squares(residuals, x0, jacobian, **options)
            assert_same(ours, optimize.least_squares(residuals, x0, jac=jacobian, **options))
    assert ours.status > 0 and np.any(np.isclose(ours.x, bounds[1], rtol=0, atol=1e-3))


def test_another_loss_is_scipys_own():
    residuals, jacobian, bounds, starts = problem("roofline", series_rows())
    options = dict(bounds=bounds, loss="cauchy", f_scale=0.1, ftol=1e-6, xtol=1e-6)
    assert_same(TR.least_squares(residuals, starts[0], jacobian, **options),
                optimize.least_squares(residuals, starts[0], jac=jacobian, **options))


def test_a_start_outside_the_bounds_is_refused_as_scipy_refuses_it():
    residuals, jacobian, (lo, hi), starts = problem("roofline", series_rows())
    with pytest.raises(ValueError, match="outside of provided bounds"):
        TR.least_squares(residuals, hi + 1, jacobian, (lo, hi))


def test_a_series_fit_is_the_same_with_scipys_solver(monkeypatch):
    from crossover.fit import series_fit

    frame = series_rows()
    ours = series_fit.fit_series(frame, ["roofline", "roofline+cache"], n_boot=8, cache=False, bootstrap="residuals")
    monkeypatch.setattr(LM, "least_squares", optimize.least_squares)
    monkeypatch.setattr(validation, "_HELD_OUT", {})  # cross-validated again, not taken from the first fit
    theirs = series_fit.fit_series(frame, ["roofline", "roofline+cache"], n_boot=8, cache=False, bootstrap="residuals")
    assert ours.model == theirs.model
    assert ours.params.tobytes() == theirs.params.tobytes() and ours.draws.tobytes() == theirs.draws.tobytes()
    pd.testing.assert_frame_equal(ours.cv, theirs.cv, check_exact=True)
