"""How ops compose into a step, fitted on a calibration's reference models (pure).

The calibration times five generic reference models whole (:data:`REFERENCE_MODELS
<crossover.opcost.reference_models.REFERENCE_MODELS>`, none of the zoo's), fits the
:data:`COMPOSITION_TERMS` to what the primitives leave unexplained on three of them
(:data:`FIT_REFERENCES`: the plain MLP and the two CNNs) and predicts the others with them, unseen: a prediction's interval is the
error of both kinds (see :mod:`crossover.opcost.calibrate` for what each term stands for, and on a GPU
the synchronised steps).

The fit runs in two stages: the :data:`FORWARD_TERMS` on the forward steps alone, then the
:data:`TRAIN_TERMS` on what the training steps leave beyond them. Fitted together, the training steps'
unexplained autograd pulled the host-event cost and the convolutions' share that a forward pass is
costed with. On the Intel VM's 27 quick calibrations of 1128a-l (their ``calibration.csv.gz`` rebuilt:
``experiments/results/intel-xeon-2c/logs/composition_intervals_1128_{before,after}.log``),
the forward steps' 80% leave-one-out error went from a median 15.6% to 12.7%. The interval is split the
same way: a forward pass's half-width comes from the forward reference steps' errors, a training
step's from the training steps' (``interval_rel``, ``train_interval_rel``). Over those calibrations the
training steps' errors ran about 2.5 times the forward ones' (80%: a median 32.7% against 12.7%; 26.3%
once the trace stopped costing gradient copies eager autograd does not make, ``_gradcopies.log``), and
one width for both put every forward pass in an interval as wide as a training step's.
"""

from __future__ import annotations

from typing import Optional

import numpy as np

from .profiles import Profile

__all__ = ["COMPOSITION_TERMS", "FORWARD_TERMS", "TRAIN_TERMS", "INTERVAL_COVERAGE", "FIT_REFERENCES",
           "with_composition"]


def _reference_steps(profile: Profile, models, thread_starts: Optional[dict] = None) -> list:
    """Per reference-model visit: (measured s, predicted s without the composition terms, its
    :data:`FEATURES` (autograd and optimizer host seconds, host events, forward convolution seconds, backward
    kernel seconds, threads started, forward convolutions of a training step), label, a function of a profile
    giving its predicted s). ``thread_starts`` (:func:`.thread_starts.reference_step_key` → count) are the threads each step
    starts as counted where the profile was first built; a step not in it is run here to count them."""
    from .calibration_plan import REFERENCE_MODELS, reference_model
    from .module_predict import costed_rows, host_events, step_prediction, trace_step
    from .thread_starts import counts_thread_starts, module_thread_starts, reference_step_key

    bare = _with_terms(profile, (0.0,) * len(COMPOSITION_TERMS))
    out = []
    for seconds, row in models:
        name, workload = row["name"].split("/")
        model = reference_model(name)
        table, calls = trace_step(model, REFERENCE_MODELS[name], int(row["m"]), workload)
        records = table.to_dict("records")
        params = list(model.parameters())
        sizes = dict(module_calls=calls, n_params=len(params),
                     param_bytes=sum(p.numel() * p.element_size() for p in params))
        step = step_prediction(bare, records, **sizes)
        known = (thread_starts or {}).get(reference_step_key(name, workload, row["m"]))
        if known is not None or counts_thread_starts(bare, step["latency_s"], fitting=True):  # threads it starts
            sizes["thread_starts"] = float(known) if known is not None else (
                module_thread_starts(model, REFERENCE_MODELS[name], int(row["m"]), workload, bare.threads) or 0.0)
            step = step_prediction(bare, records, **sizes)
        features = (step["autograd_s"], host_events(costed_rows(bare, records), calls), step["conv_forward_s"],
                    step["backward_kernels_s"], sizes.get("thread_starts", 0.0), step["conv_trains"])
        out.append((seconds, step["latency_s"], features, dict(model=name, workload=workload, batch_size=int(row["m"])),
                    lambda p, records=records, sizes=sizes: step_prediction(p, records, **sizes)["latency_s"]))
    return out


#: The composition terms, in the order of :func:`_reference_steps`' features: the extra share of a
#: training step's autograd and optimizer host work, seconds per host event, the extra share of forward
#: convolutions and of backward kernels other than convolutions, and seconds per OpenMP thread a step starts
#: (:mod:`.thread_starts`) where the calibration predates the primitive that prices a start. Fitted on the
#: training steps of the six 16-thread calibrations of the GPU machines' hosts (their plain MLP and CNN start
#: 8 threads a step at batch 1, the CNN at 32 too) it read 42-57 µs, and ``train_host_extra``, which had
#: made up for the starts at 3.9-5.5, went to 0 (``experiments/results/intel-xeon-2c/logs/thread_start_fit.log``).
#: Last, seconds per forward convolution of a training step (``conv_train_s``): in a training step at batch 1
#: the reference CNNs' convolutions (PyTorch's native path there, ``_slow_conv2d_forward`` and ``_backward``)
#: took 1.5-2 times what their primitives cost them, forward and backward, under the profiler
#: (``bench_op_breakdown_reference_train_b1_1129_t1.log``), a gap of 324 µs in the small CNN's batch-1 step
#: against 146 µs in the plain MLP's, whose autograd work is as large: one scale of autograd could not fit
#: both (it fitted 0.85-2.23 on the VM at one thread, and read the MNIST MLP's batch-1 training step 21-41% high
#: in every sitting). Chosen on the reference steps: over the VM's 47 quick calibrations of 1128t-1129e the
#: training steps' 80% leave-one-out error went from a median 30.8% to 24.9% (better in 37, worse in 9), the
#: held-out kinds' median 10.8% to 11.3% (the deep MLP better, the normalised one worse:
#: ``composition_conv_train_1129_{before,after}.log``); it read 37-145 µs a convolution.
COMPOSITION_TERMS = ("train_host_extra", "event_s", "conv_forward_extra", "backward_extra", "thread_start_s",
                     "conv_train_s")
#: The share of new models' measurements a prediction interval is meant to hold: its half-width is the
#: reference models' |error| at this quantile (the #27 target: 80% inside). Their median
#: (``model_error_rel``, the width before) held 56-83% of the VM's zoo in four sittings.
INTERVAL_COVERAGE = 0.8
#: The reference models the terms are fitted on; the others (:data:`REFERENCE_MODELS
#: <crossover.opcost.reference_models.REFERENCE_MODELS>`) are predicted with them, unseen, and only their
#: errors join the interval. Fitted on all four kinds, the terms explained none well: on the Intel VM at
#: one thread the MNIST MLP's training step read 25.9% (3.2% fitted on these two) and the deep MLP's
#: training steps 16-33% high while the normalised MLP's read 16-28% low (``experiments/results/intel-xeon-2c/logs/bench_zoo_1127z_t1.log``).
#: The batch-norm CNN joined the plain one in the fit once it was timed (1128r-s): fitted on the small CNN's
#: two batch sizes alone, the forward convolutions' share swung between 0 and 1.07 over six quick
#: calibrations of the Intel VM, and 0.02-0.25 fitted on both CNNs (the reference models' leave-one-out
#: errors no worse at the median: better in three of six, worse in three); chosen on the calibrations alone
#: (``composition_fit_cnn_kinds_1128.log``).
FIT_REFERENCES = ("mlp", "cnn", "bn_cnn")  # on a GPU alike: the unseen kinds' synchronised steps widen its interval


#: Why ``conv_train_s`` is not fitted where the calibration's training steps start threads and no primitive
#: prices a start (the 16-thread hosts' calibrations from before it): there four training terms would share
#: six steps, and the price of a start and of a convolution both land on the CNNs' batch-1 steps (each starts 8
#: threads); fitted together they moved the start's price (the H200 host's 56 to 47 µs) and with it every
#: forward pass that starts threads (that host's LeNet-5 15.5% to 20.9%: ``zoo_sets_conv_train_1129_joint.log``).
CONV_TRAIN_UNFITTED = "a training step starts threads and no primitive prices a start"

#: What each composition term scales, as a report line's ``features`` names them (seconds, or a count).
FEATURES = ("autograd_s", "host_events", "conv_forward_s", "backward_kernels_s", "thread_starts", "conv_trains")


def _feature_values(features) -> dict:
    return {name: float(value) for name, value in zip(FEATURES, features)}


def _with_terms(profile: Profile, values) -> Profile:
    terms = dict(zip(COMPOSITION_TERMS, (float(v) for v in values)))
    overheads = dict(profile.overheads, event_s=terms.pop("event_s"), conv_train_s=terms.pop("conv_train_s"))
    start_s = terms.pop("thread_start_s")
    if not prices_thread_starts(profile):  # a measured price stays; otherwise the fitted one
        overheads["thread_start_s"] = start_s
    return Profile(**{**profile.__dict__, "overheads": overheads, **terms})


def prices_thread_starts(profile: Profile) -> bool:
    """Whether the profile's calibration priced a start with its primitive (measured, not fitted): the pair
    started threads there. Where it started none (another MKL's team sizes) the reference steps fit it."""
    return profile.overhead("thread_starts_pair") > 0


#: The terms a forward step's residual fits (host events, forward convolutions) and those a training
#: step's residual fits beside them (its autograd and optimizer host work, its backward kernels, the threads
#: it starts where no primitive prices a start, its forward convolutions).
FORWARD_TERMS = ("event_s", "conv_forward_extra")
TRAIN_TERMS = ("train_host_extra", "backward_extra", "thread_start_s", "conv_train_s")
#: On a GPU only the host terms: its step is ``max(host, device)``, and the additive form holds for
#: host-bound steps only.
GPU_TERMS = ("train_host_extra", "event_s")


def _nnls_terms(steps, names, fixed) -> dict:
    """Non-negative least squares of the relative residuals of ``steps`` left after the ``fixed`` terms,
    on the terms ``names``."""
    from scipy.optimize import nnls

    index = [COMPOSITION_TERMS.index(name) for name in names]
    fixed_idx = [(COMPOSITION_TERMS.index(name), value) for name, value in fixed.items()]
    if not steps or not index:
        return dict.fromkeys(names, 0.0)
    design = np.array([[step[2][i] / step[0] for i in index] for step in steps])
    target = np.array([(step[0] - step[1] - sum(v * step[2][i] for i, v in fixed_idx)) / step[0] for step in steps])
    return dict(zip(names, map(float, nnls(design, target)[0])))


def conv_train_unfitted(steps, measured_starts: bool) -> bool:
    """Whether ``conv_train_s`` is left out of the fit (:data:`CONV_TRAIN_UNFITTED`): no primitive prices a
    thread start and a training step of ``steps`` starts threads."""
    starts = FEATURES.index("thread_starts")
    return not measured_starts and any(step[2][starts] for step in steps if step[3]["workload"] != "forward")


def _fit_terms(steps, device: str, measured_starts: bool = False, conv_unfitted: Optional[bool] = None) -> np.ndarray:
    """The composition terms in two stages: the forward terms on the forward steps alone, then the
    training terms on the training steps' residual that the forward terms leave (a training step runs a
    forward pass; the forward terms are not refitted to make up for its autograd). On a GPU only
    :data:`GPU_TERMS`. ``conv_unfitted`` (default: :func:`conv_train_unfitted` of ``steps``) is decided
    once on the whole fit, so that a leave-one-out refit fits the same terms."""
    allowed = set(GPU_TERMS) if device == "cuda" else set(COMPOSITION_TERMS) - ({"thread_start_s"} if measured_starts else set())
    forward = [step for step in steps if step[3]["workload"] == "forward"]
    train = [step for step in steps if step[3]["workload"] != "forward"]
    if conv_unfitted is None:
        conv_unfitted = conv_train_unfitted(steps, measured_starts)
    if conv_unfitted:
        allowed.discard("conv_train_s")
    coef = _nnls_terms(forward, [n for n in FORWARD_TERMS if n in allowed], {})
    coef.update(_nnls_terms(train, [n for n in TRAIN_TERMS if n in allowed], coef))
    return np.array([coef.get(name, 0.0) for name in COMPOSITION_TERMS])


def with_composition(profile: Profile, models, thread_starts: Optional[dict] = None) -> Profile:
    """``profile`` with the :data:`COMPOSITION_TERMS` fitted to the measured steps of the
    :data:`FIT_REFERENCES` (:func:`_fit_terms`), the fit's report in ``meta["reference_models"]`` (each
    step predicted with the fitted profile, beside ``uncorrected_s``, its cost without the terms, and the
    :data:`FEATURES` they scale; the other reference models' marked ``held_out``), as
    ``model_error_rel`` the median error over every reference step (a fitted one's leave-one-out error:
    predicted by the terms fitted on the others, not on itself; the in-sample error where there are too
    few to leave one out, the smoke plan's; a held-out kind's error as it is), and that error at
    :data:`INTERVAL_COVERAGE` over the forward steps as ``interval_rel`` and over the training steps as
    ``train_interval_rel``. ``thread_starts``: the reference steps' counts of an earlier build
    (:func:`crossover.opcost.thread_starts.reference_thread_starts`), so that a profile rebuilt elsewhere fits the
    same terms."""
    every = _reference_steps(profile, models, thread_starts)
    steps = [step for step in every if step[3]["model"] in FIT_REFERENCES]
    priced = prices_thread_starts(profile)
    unfitted = profile.device == "cpu" and conv_train_unfitted(steps, priced)
    coef = _fit_terms(steps, profile.device, priced, unfitted)
    fitted = _with_terms(profile, coef)
    loo = len(steps) > len(COMPOSITION_TERMS) + 1
    report, errors = [], []
    for i, (measured, base, features, label, predict) in enumerate(steps):
        predicted = predict(fitted)
        line = dict(**label, measured_s=measured, predicted_s=predicted, error=predicted / measured - 1,
                    uncorrected_s=base, features=_feature_values(features))
        if loo:  # the same terms as the whole fit (a step's own seconds are not the thread-start flag)
            others = _with_terms(profile, _fit_terms(steps[:i] + steps[i + 1:], profile.device, priced, unfitted))
            line["leave_one_out_error"] = predict(others) / measured - 1
        errors.append(line["leave_one_out_error"] if loo else line["error"])
        report.append(line)
    for measured, base, features, label, predict in (step for step in every if step[3]["model"] not in FIT_REFERENCES):
        predicted = predict(fitted)  # a kind the terms never saw: its error as a new model's
        report.append(dict(**label, measured_s=measured, predicted_s=predicted, error=predicted / measured - 1,
                           uncorrected_s=base, features=_feature_values(features), held_out=True))
        errors.append(report[-1]["error"])
    meta = dict(profile.meta, reference_models=report, composition_fit=dict(zip(COMPOSITION_TERMS, map(float, coef))),
                **({"composition_unfitted": {"conv_train_s": CONV_TRAIN_UNFITTED}} if unfitted else {}))
    error = float(np.median(np.abs(errors))) if errors else 0.0
    intervals = {workload: _quantile([e for e, line in zip(errors, report) if (line["workload"] == "forward") == forward])
                 for workload, forward in (("forward", True), ("train", False))}
    return Profile(**{**fitted.__dict__, "meta": meta, "model_error_rel": error,
                      "interval_rel": intervals["forward"] or _quantile(errors),
                      "train_interval_rel": intervals["train"] or _quantile(errors)})


def _quantile(errors) -> float:
    """|errors| at :data:`INTERVAL_COVERAGE` (0 for none)."""
    return float(np.quantile(np.abs(errors), INTERVAL_COVERAGE)) if len(errors) else 0.0
