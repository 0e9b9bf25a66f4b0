"""scipy's bounded least squares (``scipy.optimize.least_squares``, method ``trf``), step for step.

Every fit of a latency model is a small robust least-squares problem (a handful of parameters, a few
dozen to a couple of hundred points), and a cold ``crossover predict`` solves about 2,600 of them. For
problems that small the solver's own work dwarfs the model's: of the 10.5 s those fits spent in
``least_squares`` (one process, the shipped data), 7.5 s were scipy's iteration around the model's
evaluations, much of it bookkeeping (argument checks, memoising wrappers that copy every residual vector
and Jacobian, ``numpy.linalg.norm``'s and ``scipy.linalg.svd``'s argument handling, terms recomputed
for every step an iteration tries). :func:`least_squares` runs the same trust-region reflective
iteration (scipy's ``trf_bounds`` with ``tr_solver="exact"``, unit ``x_scale``, the ``soft_l1`` or
``linear`` loss) without it: the same numpy and LAPACK operations on the same values in the same order,
so the same optimum bit for bit (``tests/test_trust_region.py`` checks every field of the result
against scipy's), in 4.5 s of those 7.5.

It covers what :func:`crossover.fit.latency_models.fit_parameters` asks of scipy and nothing more: a
callable Jacobian, bounds, and no options beyond the tolerances and the evaluation budget; another loss
than :data:`LOSSES`, or no finite bound, is handed to scipy itself. The copy of record is scipy's
``optimize/_lsq/trf.py`` and ``common.py`` (SciPy 1.17), under SciPy's BSD 3-Clause license
(Copyright (c) 2001-2002 Enthought, Inc. 2003, SciPy Developers; the full text: SciPy's ``LICENSE.txt``)."""

from __future__ import annotations

from math import copysign, sqrt
from types import SimpleNamespace

import numpy as np

__all__ = ["least_squares", "forward_differences", "LOSSES"]

#: The losses ported here (scipy's ``loss`` names); :func:`least_squares` hands any other to scipy.
LOSSES = ("linear", "soft_l1")

EPS = np.finfo(float).eps
_sum = np.add.reduce  # ``ndarray.sum`` of a vector without its method's wrapping
#: The relative step of a forward-difference Jacobian (scipy's default for '2-point': sqrt of eps).
_JAC_REL_STEP = float(EPS) ** 0.5
#: LAPACK's SVD and its workspace size per matrix shape, as ``scipy.linalg.svd`` picks them.
_GESDD: dict = {}


def _norm(x):
    """``numpy.linalg.norm(x)`` of a real vector: the same ravel, dot and square root."""
    x = x.ravel(order="K")
    return np.sqrt(x.dot(x))


def _svd(a):
    """``scipy.linalg.svd(a, full_matrices=False)`` (its default driver, gesdd, with the same
    workspace), without its per-call argument handling."""
    if not np.isfinite(a).all():
        raise ValueError("array must not contain infs or NaNs")
    key = a.shape
    if key not in _GESDD:
        from scipy.linalg.lapack import _compute_lwork, get_lapack_funcs

        gesdd, gesdd_lwork = get_lapack_funcs(("gesdd", "gesdd_lwork"), (a,), ilp64="preferred")
        _GESDD[key] = gesdd, _compute_lwork(gesdd_lwork, a.shape[0], a.shape[1], compute_uv=True,
                                            full_matrices=False)
    gesdd, lwork = _GESDD[key]
    u, s, v, info = gesdd(a, compute_uv=True, lwork=lwork, full_matrices=False, overwrite_a=False)
    if info > 0:
        from scipy.linalg import LinAlgError

        raise LinAlgError("SVD did not converge")
    if info < 0:
        raise ValueError("A has a NaN entry" if info == -4
                         else f"illegal value in {-info}th argument of internal gesdd")
    return u, s, v


def _loss_function(m: int, loss: str, f_scale: float):
    """scipy's ``construct_loss_function`` for ``loss`` (None for ``linear``)."""
    if loss == "linear":
        return None
    rho = np.empty((3, m))

    def loss_function(f, cost_only=False):
        z = (f / f_scale) ** 2
        t = 1 + z  # soft_l1
        rho[0] = 2 * (t**0.5 - 1)
        if cost_only:
            return 0.5 * f_scale ** 2 * _sum(rho[0])
        rho[1] = t**-0.5
        rho[2] = -0.5 * t**-1.5
        rho[0] *= f_scale ** 2
        rho[2] /= f_scale ** 2
        return rho

    return loss_function


def _strictly_feasible(x, lb, ub, rstep=1e-10):
    """scipy's ``make_strictly_feasible`` (its ``find_active_constraints`` inlined; with ``rstep`` 0, the
    masks' assignments skipped where no component is on or past a bound: they would change nothing)."""
    x_new = x.copy()
    if rstep == 0:
        lower, upper = x <= lb, x >= ub
        if lower.any() or upper.any():
            lower_mask = lower & ~upper
            x_new[lower_mask] = np.nextafter(lb[lower_mask], ub[lower_mask])
            x_new[upper] = np.nextafter(ub[upper], lb[upper])
    else:
        active = np.zeros_like(x, dtype=int)
        lower_dist = x - lb
        upper_dist = ub - x
        lower_threshold = rstep * np.maximum(1, np.abs(lb))
        upper_threshold = rstep * np.maximum(1, np.abs(ub))
        active[np.isfinite(lb) & (lower_dist <= np.minimum(upper_dist, lower_threshold))] = -1
        active[np.isfinite(ub) & (upper_dist <= np.minimum(lower_dist, upper_threshold))] = 1
        lower_mask = np.equal(active, -1)
        upper_mask = np.equal(active, 1)
        x_new[lower_mask] = lb[lower_mask] + rstep * np.maximum(1, np.abs(lb[lower_mask]))
        x_new[upper_mask] = ub[upper_mask] - rstep * np.maximum(1, np.abs(ub[upper_mask]))
    tight_bounds = (x_new < lb) | (x_new > ub)
    if tight_bounds.any():
        x_new[tight_bounds] = 0.5 * (lb[tight_bounds] + ub[tight_bounds])
    return x_new


def _scaling_vector(x, g, lb, ub, lb_finite, ub_finite):
    """scipy's ``CL_scaling_vector``: the Coleman-Li scaling ``v`` and its derivatives ``dv`` (``ub - x``
    and -1 where ``g < 0`` below a finite upper bound, ``x - lb`` and 1 where ``g > 0`` above a finite
    lower bound, else 1 and 0), from the bounds' finiteness (``np.isfinite(lb)``, ``np.isfinite(ub)``, or
    True where every bound is finite)."""
    below = g < 0 if ub_finite is True else (g < 0) & ub_finite
    above = g > 0 if lb_finite is True else (g > 0) & lb_finite
    v = np.where(below, ub - x, np.where(above, x - lb, 1.0))
    dv = np.where(below, -1.0, np.where(above, 1.0, 0.0))
    return v, dv


def _step_size_to_bound(x, s, lb, ub, hits=True):
    """scipy's ``step_size_to_bound``: the step along ``s`` to the first bound, and (``hits``) which
    bound each component hits."""
    if s.all():  # every component moves: no subset to take
        with np.errstate(over="ignore"):
            steps = np.maximum((lb - x) / s, (ub - x) / s)
    else:
        non_zero = np.nonzero(s)
        s_non_zero = s[non_zero]
        steps = np.empty_like(x)
        steps.fill(np.inf)
        with np.errstate(over="ignore"):
            steps[non_zero] = np.maximum((lb - x)[non_zero] / s_non_zero, (ub - x)[non_zero] / s_non_zero)
    min_step = steps.min()
    return min_step, (np.equal(steps, min_step) * np.sign(s).astype(int) if hits else None)


def _quadratic(J, g, s, diag):
    """scipy's ``evaluate_quadratic`` of one step ``s``."""
    Js = J.dot(s)
    q = np.dot(Js, Js)
    q += np.dot(s * diag, s)
    return 0.5 * q + np.dot(s, g)


def _minimize_quadratic_1d(a, b, lb, ub, c=0):
    """scipy's ``minimize_quadratic_1d``, on its two or three candidates one by one: the same products
    and sums as on their array, and ``np.argmin``'s choice (the first least value, or the first NaN)."""
    t = [np.float64(lb), np.float64(ub)]
    if a != 0:
        extremum = -0.5 * b / a
        if lb < extremum < ub:
            t.append(extremum)
    y = [ti * (a * ti + b) + c for ti in t]
    best = 0
    for i in range(1, len(y)):
        if y[best] != y[best]:  # NaN: argmin stops at the first
            break
        if y[i] != y[i] or y[i] < y[best]:
            best = i
    return t[best], y[best]


def _gradient_terms(x, J_h, diag_h, g_h, d, lb, ub) -> tuple:
    """What :func:`_select_step`'s anti-gradient step takes of one iteration's Jacobian and gradient alone
    (the same in every step the inner loop tries): the norm of ``-g_h``, its step to the bounds, and the
    coefficients of the quadratic along it."""
    ag_h = -g_h
    to_bound, _ = _step_size_to_bound(x, d * ag_h, lb, ub, hits=False)
    # build_quadratic_1d(J_h, g_h, ag_h, diag=diag_h)
    v = J_h.dot(ag_h)
    a = np.dot(v, v)
    a += np.dot(ag_h * diag_h, ag_h)
    a *= 0.5
    return _norm(ag_h), to_bound, a, np.dot(g_h, ag_h)


def _select_step(x, J_h, diag_h, g_h, p, p_h, d, Delta, lb, ub, theta, gradient):
    """scipy's ``select_step`` of the trust-region reflective method (``gradient``: a list holding
    :func:`_gradient_terms` of this iteration once a step needed them)."""
    x_p = x + p
    if np.all((x_p >= lb) & (x_p <= ub)):
        return p, p_h, -_quadratic(J_h, g_h, p_h, diag_h)
    p_stride, hits = _step_size_to_bound(x, p, lb, ub)
    r_h = np.copy(p_h)
    r_h[hits.astype(bool)] *= -1
    r = d * r_h
    p *= p_stride
    p_h *= p_stride
    x_on_bound = x + p
    # intersect_trust_region(p_h, r_h, Delta): the positive root
    a = np.dot(r_h, r_h)
    if a == 0:
        raise ValueError("`s` is zero.")
    b = np.dot(p_h, r_h)
    c = np.dot(p_h, p_h) - Delta**2
    if c > 0:
        raise ValueError("`x` is not within the trust region.")
    q = -(b + copysign(np.sqrt(b * b - a * c), b))
    t1, t2 = q / a, c / q
    to_tr = t2 if t1 < t2 else t1
    to_bound, _ = _step_size_to_bound(x_on_bound, r, lb, ub, hits=False)
    r_stride = min(to_bound, to_tr)
    if r_stride > 0:
        r_stride_l = (1 - theta) * p_stride / r_stride
        r_stride_u = theta * to_bound if r_stride == to_bound else to_tr
    else:
        r_stride_l = 0
        r_stride_u = -1
    if r_stride_l <= r_stride_u:
        # build_quadratic_1d(J_h, g_h, r_h, s0=p_h, diag=diag_h)
        v = J_h.dot(r_h)
        a = np.dot(v, v)
        a += np.dot(r_h * diag_h, r_h)
        a *= 0.5
        b = np.dot(g_h, r_h)
        u = J_h.dot(p_h)
        b += np.dot(u, v)
        c = 0.5 * np.dot(u, u) + np.dot(g_h, p_h)
        p_diag = p_h * diag_h  # scipy computes it twice
        b += np.dot(p_diag, r_h)
        c += 0.5 * np.dot(p_diag, p_h)
        r_stride, r_value = _minimize_quadratic_1d(a, b, r_stride_l, r_stride_u, c=c)
        r_h *= r_stride
        r_h += p_h
        r = r_h * d
    else:
        r_value = np.inf
    p *= theta
    p_h *= theta
    p_value = _quadratic(J_h, g_h, p_h, diag_h)
    if not gradient:
        gradient.append(_gradient_terms(x, J_h, diag_h, g_h, d, lb, ub))
    ag_norm, to_bound, a, b = gradient[0]
    to_tr = Delta / ag_norm
    ag_stride = theta * to_bound if to_bound < to_tr else to_tr
    ag_stride, ag_value = _minimize_quadratic_1d(a, b, 0, ag_stride)
    if p_value < r_value and p_value < ag_value:
        return p, p_h, -p_value
    if r_value < p_value and r_value < ag_value:
        return r, r_h, -r_value
    ag_h = -g_h
    ag = d * ag_h
    ag_h *= ag_stride
    ag *= ag_stride
    return ag, ag_h, -ag_value


def _solve_trust_region(n, m, uf, s, V, Delta, initial_alpha, rtol=0.01, max_iter=10):
    """scipy's ``solve_lsq_trust_region``: the step of norm at most ``Delta`` from one SVD.

    Its root finder's ``phi_and_derivative`` is inlined (half the calls of a fit are to it), with
    ``s**2`` and ``suf**2`` computed once and the norm's square root taken by :func:`math.sqrt` (the same
    correctly rounded root as numpy's; every division keeps a numpy operand, so numpy's semantics)."""
    suf = s * uf
    s2, suf2 = s**2, suf ** 2

    def phi_and_derivative(alpha):
        denom = s2 + alpha
        q = suf / denom
        p_norm = sqrt(q.dot(q))
        return p_norm - Delta, -_sum(suf2 / denom**3) / p_norm

    full_rank = s[-1] > EPS * m * s[0] if m >= n else False
    if full_rank:
        p = -V.dot(uf / s)
        if _norm(p) <= Delta:
            return p, 0.0
    alpha_upper = _norm(suf) / Delta
    if full_rank:
        phi, phi_prime = phi_and_derivative(0.0)
        alpha_lower = -phi / phi_prime
    else:
        alpha_lower = 0.0
    if initial_alpha is None or not full_rank and initial_alpha == 0:
        alpha = max(0.001 * alpha_upper, (alpha_lower * alpha_upper)**0.5)
    else:
        alpha = initial_alpha
    for _ in range(max_iter):
        if alpha < alpha_lower or alpha > alpha_upper:
            alpha = max(0.001 * alpha_upper, (alpha_lower * alpha_upper)**0.5)
        denom = s2 + alpha
        q = suf / denom
        p_norm = sqrt(q.dot(q))
        phi = p_norm - Delta
        phi_prime = -_sum(suf2 / denom**3) / p_norm
        if phi < 0:
            alpha_upper = alpha
        ratio = phi / phi_prime
        alpha_lower = max(alpha_lower, alpha - ratio)
        alpha -= (phi + Delta) * ratio / Delta
        if np.abs(phi) < rtol * Delta:
            break
    p = -V.dot(suf / (s2 + alpha))
    p *= Delta / _norm(p)
    return p, alpha


def _scale_for_loss(J, f, rho):
    """scipy's ``scale_for_robust_loss_function``, in place."""
    J_scale = rho[1] + 2 * rho[2] * f**2
    J_scale[J_scale < EPS] = EPS
    J_scale **= 0.5
    f *= rho[1] / J_scale
    J *= J_scale[:, np.newaxis]
    return J, f


def forward_differences(rows_fun, x, ub):
    """The forward-difference Jacobian of a vectorised function at ``x``, with scipy's default step
    (``2-point``), turned back where it would pass the upper bound ``ub``, as scipy turns it.

    Parameters
    ----------
    rows_fun : callable
        ``rows_fun(rows)``: the function at each row of ``rows`` (shape ``(n + 1, n)``: ``x``, then ``x``
        with one coordinate stepped per row), one row of values per row, in one call.
    x, ub : numpy.ndarray
        The point and the upper bounds, shape ``(n,)``.

    Returns
    -------
    numpy.ndarray
        Shape ``(m, n)``: the change of each value per unit step of each coordinate.
    """
    step = _JAC_REL_STEP * np.maximum(1.0, np.abs(x))
    step = np.where(x + step > ub, -step, step)  # stay inside the bounds, as scipy does
    rows = np.empty((len(x) + 1, len(x)))
    rows[0], rows[1:] = x, x + np.diag(step)
    values = rows_fun(rows)
    return ((values[1:] - values[0]) / step[:, None]).T


def least_squares(fun, x0, jac, bounds, *, loss: str = "linear", f_scale: float = 1.0, ftol: float = 1e-8,
                  xtol: float = 1e-8, gtol: float = 1e-8, max_nfev=None) -> SimpleNamespace:
    """``scipy.optimize.least_squares(fun, x0, jac=jac, bounds=bounds, loss=loss, f_scale=f_scale,
    ftol=ftol, xtol=xtol, gtol=gtol, max_nfev=max_nfev)``, step for step (see the module docstring).

    Parameters
    ----------
    fun, jac : callable
        The residuals ``fun(x)`` (shape ``(m,)``) and their Jacobian ``jac(x)`` (shape ``(m, n)``); each
        returns a new array (this solver scales them in place, as scipy scales its copies).
    x0 : array_like
        The start, inside the bounds.
    bounds : (array_like, array_like)
        Lower and upper bounds (with none finite, scipy solves the problem: another method).
    loss : str
        ``"linear"`` or ``"soft_l1"`` (:data:`LOSSES`); another of scipy's losses is solved by
        ``scipy.optimize.least_squares`` itself.
    f_scale, ftol, xtol, gtol, max_nfev
        As scipy takes them.

    Returns
    -------
    types.SimpleNamespace
        ``x``, ``cost``, ``fun``, ``jac``, ``grad``, ``optimality``, ``nfev``, ``njev`` and ``status``,
        the values scipy's result holds.

    Raises
    ------
    ValueError
        A lower bound not below its upper bound, a start outside the bounds, or residuals that are not
        finite at the start (scipy's messages).
    """
    x0 = np.atleast_1d(x0).astype(float)
    lb, ub = (np.resize(np.asarray(b, dtype=float), x0.shape) for b in bounds)
    if loss not in LOSSES or (np.all(lb == -np.inf) and np.all(ub == np.inf)):  # scipy's unbounded method
        from scipy import optimize  # on use (~0.25 s to import)

        return optimize.least_squares(fun, x0, jac=jac, bounds=bounds, loss=loss, f_scale=f_scale, ftol=ftol,
                                      xtol=xtol, gtol=gtol, max_nfev=max_nfev)
    if np.any(lb >= ub):
        raise ValueError("Each lower bound must be strictly less than each upper bound.")
    if not np.all((x0 >= lb) & (x0 <= ub)):
        raise ValueError("Initial guess is outside of provided bounds")
    x = _strictly_feasible(x0, lb, ub)
    f = np.atleast_1d(fun(x.copy()))
    if not np.all(np.isfinite(f)):
        raise ValueError("Residuals are not finite in the initial point.")
    J = np.atleast_2d(jac(x.copy()))
    m, n = J.shape
    loss_function = _loss_function(m, loss, f_scale)
    max_nfev = x.size * 100 if max_nfev is None else max_nfev
    return _trf_bounds(fun, jac, x, f, J, lb, ub, ftol, xtol, gtol, max_nfev, loss_function)


def _trf_bounds(fun, jac, x0, f, J, lb, ub, ftol, xtol, gtol, max_nfev, loss_function) -> SimpleNamespace:
    """scipy's ``trf_bounds`` with ``x_scale`` 1 (its products with the unit scale left out: exact)
    and ``tr_solver="exact"``."""
    x = x0.copy()
    f_true = f.copy()
    nfev = njev = 1
    m, n = J.shape
    if loss_function is not None:
        rho = loss_function(f)
        cost = 0.5 * _sum(rho[0])
        J, f = _scale_for_loss(J, f, rho)
    else:
        cost = 0.5 * np.dot(f, f)
    g = J.T.dot(f)
    lb_finite, ub_finite = (np.isfinite(b) for b in (lb, ub))
    lb_finite, ub_finite = (True if finite.all() else finite for finite in (lb_finite, ub_finite))
    v, dv = _scaling_vector(x, g, lb, ub, lb_finite, ub_finite)
    Delta = _norm(x0 / v**0.5)
    if Delta == 0:
        Delta = 1.0
    f_augmented = np.zeros(m + n)
    J_augmented = np.zeros((m + n, n))
    diagonal = J_augmented[m:].reshape(-1)[::n + 1]  # a view: the lower block is diag(diag_h**0.5)
    alpha = 0.0  # the Levenberg-Marquardt parameter
    termination_status = None
    while True:
        v, dv = _scaling_vector(x, g, lb, ub, lb_finite, ub_finite)
        g_norm = np.abs(g * v).max()  # numpy.linalg.norm(g * v, ord=np.inf)
        if g_norm < gtol:
            termination_status = 1
        if termination_status is not None or nfev == max_nfev:
            break
        d = v**0.5
        diag_h = g * dv
        g_h = d * g
        f_augmented[:m] = f
        J_augmented[:m] = J * d
        J_h = J_augmented[:m]  # a view
        diagonal[:] = diag_h**0.5
        U, s, V = _svd(J_augmented)
        V = V.T
        uf = U.T.dot(f_augmented)
        theta = max(0.995, 1 - g_norm)  # how far steps stay back from the bounds
        x_norm = _norm(x)  # for the step tolerance: x moves only after the inner loop
        actual_reduction = -1
        gradient = []  # the anti-gradient step's terms, once a step needs them (see _select_step)
        while actual_reduction <= 0 and nfev < max_nfev:
            p_h, alpha = _solve_trust_region(n, m, uf, s, V, Delta, alpha)
            p = d * p_h
            step, step_h, predicted_reduction = _select_step(x, J_h, diag_h, g_h, p, p_h, d, Delta, lb, ub, theta,
                                                             gradient)
            x_new = _strictly_feasible(x + step, lb, ub, rstep=0)
            f_new = fun(x_new)
            nfev += 1
            step_h_norm = _norm(step_h)
            if not np.isfinite(f_new).all():
                Delta = 0.25 * step_h_norm
                continue
            if loss_function is not None:
                cost_new = loss_function(f_new, cost_only=True)
            else:
                cost_new = 0.5 * np.dot(f_new, f_new)
            actual_reduction = cost - cost_new
            # update_tr_radius
            if predicted_reduction > 0:
                ratio = actual_reduction / predicted_reduction
            elif predicted_reduction == actual_reduction == 0:
                ratio = 1
            else:
                ratio = 0
            if ratio < 0.25:
                Delta_new = 0.25 * step_h_norm
            elif ratio > 0.75 and step_h_norm > 0.95 * Delta:
                Delta_new = Delta * 2.0
            else:
                Delta_new = Delta
            # check_termination
            dx_norm = _norm(step)
            ftol_satisfied = actual_reduction < ftol * cost and ratio > 0.25
            xtol_satisfied = dx_norm < xtol * (xtol + x_norm)
            if ftol_satisfied or xtol_satisfied:
                termination_status = 4 if ftol_satisfied and xtol_satisfied else 2 if ftol_satisfied else 3
                break
            alpha *= Delta / Delta_new
            Delta = Delta_new
        if actual_reduction > 0:
            x = x_new
            f = f_new
            f_true = f.copy()
            cost = cost_new
            J = jac(x)
            njev += 1
            if loss_function is not None:
                rho = loss_function(f)
                J, f = _scale_for_loss(J, f, rho)
            g = J.T.dot(f)
    if termination_status is None:
        termination_status = 0
    return SimpleNamespace(x=x, cost=cost, fun=f_true, jac=J, grad=g, optimality=g_norm, nfev=nfev, njev=njev,
                           status=termination_status)
