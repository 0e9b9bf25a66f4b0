"""OpenMP threads a CPU step starts anew: counted by running it, priced by a calibration primitive (or,
before it, fitted on the reference steps), and paid by a prediction at the profile's thread count."""

import dataclasses
import functools
import sys
import threading

import pytest
import torch
from torch import nn

from crossover.opcost.calibrate import build_profile
from crossover.opcost.calibration_plan import PLANS, make_step, points
from crossover.opcost.composition import COMPOSITION_TERMS, _fit_terms
from crossover.opcost.module_predict import step_prediction, trace_step
from crossover.opcost.profiles import synthetic_profile
from crossover.opcost.thread_starts import (NARROW, PAIR, THREAD_START, WIDE, count_thread_starts,
                                            counts_thread_starts, fit_thread_start, module_thread_starts,
                                            thread_start_step, unpriced_warning)
from calibration_rows import US, overhead_rows, row

linux = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="counts threads in /proc/self/task")


@functools.cache
def narrow_teams_here() -> bool:
    """Whether this machine's MKL runs the calibration's rank-1 product on a team narrower than 16 threads,
    so that the wide ReLU after it starts threads: MKL 2024.2 did on the Intel VM (4 of 16 threads), and
    ran none narrower on the AMD VM, where nothing starts. A library's choice, not this package's: the
    tests that need such starts check them where the machine makes them."""
    previous = torch.get_num_threads()
    torch.set_num_threads(16)
    try:
        return (count_thread_starts(thread_start_step(PAIR)) or 0.0) > 0
    finally:
        torch.set_num_threads(previous)


@linux
def test_a_call_that_starts_a_thread_counts_one_and_a_plain_call_none():
    """A thread that lives past the call, as a started OpenMP worker waits in its pool."""
    release, workers = threading.Event(), []

    def start_one():
        workers.append(threading.Thread(target=release.wait))
        workers[-1].start()

    try:
        assert count_thread_starts(start_one) == 1.0
    finally:
        release.set()
        for worker in workers:
            worker.join()
    assert count_thread_starts(lambda: sum(range(100))) == 0.0


def _families(alone_s, wide_s, start_s, starts):
    return {THREAD_START: [(alone_s, 0.0, dict(name=NARROW, x=0.0)), (wide_s, 0.0, dict(name=WIDE, x=0.0)),
                           (alone_s + wide_s + starts * start_s, 0.0, dict(name=PAIR, x=starts))]}


def test_the_price_of_a_start_is_recovered_from_the_pair():
    fitted = fit_thread_start(_families(12 * US, 6 * US, 45 * US, 12.0))
    assert fitted["thread_start_s"] == pytest.approx(45 * US) and fitted["thread_starts_pair"] == 12.0
    assert fit_thread_start(_families(12 * US, 6 * US, 45 * US, 0.0))["thread_start_s"] == 0.0  # nothing started
    assert fit_thread_start({}) == {}  # a calibration from before the primitive: the composition fits it


def test_a_profile_built_from_the_primitives_prices_a_start_and_keeps_it_out_of_the_curves():
    rows = overhead_rows() + [row(name, seconds, family=THREAD_START, m=128, n=784, x=x)
                              for name, seconds, x in ((NARROW, 12 * US, 0.0), (WIDE, 6 * US, 0.0),
                                                       (PAIR, 18 * US + 10 * 50 * US, 10.0))]
    profile = build_profile(rows, device="cpu", machine="test", threads=16)
    assert profile.overhead("thread_start_s") == pytest.approx(50 * US)
    assert THREAD_START not in profile.curves
    assert counts_thread_starts(profile, 1e-3) and not counts_thread_starts(profile, 1.0)  # a long step: not run
    assert not counts_thread_starts(dataclasses.replace(profile, threads=2), 1e-3)


def test_a_step_pays_its_starts_at_the_profiles_price_on_a_cpu_only():
    table, calls = trace_step(nn.Sequential(nn.Linear(64, 64), nn.ReLU()), (64,), 1, "forward")
    rows = table.to_dict("records")
    cpu = synthetic_profile(dispatch_s=2 * US, thread_start_s=50 * US)
    plain = step_prediction(cpu, rows, module_calls=calls, n_params=2, param_bytes=0)
    started = step_prediction(cpu, rows, module_calls=calls, n_params=2, param_bytes=0, thread_starts=10)
    assert started["latency_s"] - plain["latency_s"] == pytest.approx(500 * US)
    assert started["thread_starts_s"] == pytest.approx(500 * US) and started["thread_starts"] == 10
    gpu = synthetic_profile("cuda", dispatch_s=2 * US, thread_start_s=50 * US)
    on_gpu = [step_prediction(gpu, rows, module_calls=calls, n_params=2, param_bytes=0, thread_starts=n)
              for n in (0, 10)]
    assert on_gpu[0]["latency_s"] == on_gpu[1]["latency_s"]


def test_a_many_thread_profile_from_before_the_primitive_says_what_it_leaves_out():
    old = dataclasses.replace(synthetic_profile(), threads=16)
    old.overheads.pop("thread_start_s", None)
    assert "OpenMP threads" in unpriced_warning(old)
    assert unpriced_warning(dataclasses.replace(old, threads=2)) == ""
    assert unpriced_warning(dataclasses.replace(old, overheads=dict(old.overheads, thread_start_s=0.0))) == ""


def _train_step(measured_s, bare_s, autograd_s, starts):
    features = (autograd_s, 0.0, 0.0, 0.0, starts, 0)
    return (measured_s, bare_s, features, dict(model="mlp", workload="train", batch_size=1), None)


def test_the_composition_fits_the_price_where_the_calibration_has_no_primitive():
    """Training steps whose gaps are 0.5 × their autograd plus 40 µs a start: both recovered, the starts'
    gap not taken for autograd; with a measured price the term is not fitted."""
    cases = [(200 * US, 80 * US, 8.0), (300 * US, 100 * US, 0.0), (150 * US, 60 * US, 12.0), (400 * US, 90 * US, 4.0)]
    steps = [_train_step(bare + 0.5 * autograd + n * 40 * US, bare, autograd, n) for bare, autograd, n in cases]
    coef = dict(zip(COMPOSITION_TERMS, _fit_terms(steps, "cpu")))
    assert coef["thread_start_s"] == pytest.approx(40 * US, rel=1e-6)
    assert coef["train_host_extra"] == pytest.approx(0.5, rel=1e-6)
    assert dict(zip(COMPOSITION_TERMS, _fit_terms(steps, "cpu", measured_starts=True)))["thread_start_s"] == 0.0


def test_the_composition_tells_a_price_per_convolution_from_the_autograd_scale():
    """Training steps whose gaps are 0.5 × their autograd plus 70 µs per forward convolution (two in the CNN
    kinds, none in the MLP's): both recovered, the convolutions' gap not taken for autograd."""
    cases = [(80 * US, 90 * US, 0), (900 * US, 92 * US, 0), (340 * US, 95 * US, 2), (6000 * US, 97 * US, 2),
             (600 * US, 96 * US, 2)]
    steps = [(bare + 0.5 * autograd + n * 70 * US, bare, (autograd, 0.0, 0.0, 0.0, 0.0, n),
              dict(model="cnn" if n else "mlp", workload="train", batch_size=1), None) for bare, autograd, n in cases]
    coef = dict(zip(COMPOSITION_TERMS, _fit_terms(steps, "cpu", measured_starts=True)))
    assert coef["conv_train_s"] == pytest.approx(70 * US, rel=1e-6)
    assert coef["train_host_extra"] == pytest.approx(0.5, rel=1e-6)
    assert dict(zip(COMPOSITION_TERMS, _fit_terms(steps, "cuda")))["conv_train_s"] == 0.0  # a GPU: host terms only


def test_the_price_per_convolution_is_not_fitted_beside_a_fitted_start_price_in_any_refit():
    """Where no primitive prices a thread start and the training steps start threads, ``conv_train_s`` is left out
    of the whole fit and of every leave-one-out refit, even one that leaves out the only step starting threads;
    with a measured start price it is fitted."""
    from crossover.opcost.composition import conv_train_unfitted

    cases = [(80 * US, 90 * US, 8.0, 0), (900 * US, 92 * US, 0.0, 0), (340 * US, 95 * US, 0.0, 2),
             (6000 * US, 97 * US, 0.0, 2), (600 * US, 96 * US, 0.0, 2)]
    steps = [(bare + 0.5 * autograd + n * 40 * US + c * 70 * US, bare, (autograd, 0.0, 0.0, 0.0, n, c),
              dict(model="cnn" if c else "mlp", workload="train", batch_size=1), None) for bare, autograd, n, c in cases]
    assert conv_train_unfitted(steps, measured_starts=False) and not conv_train_unfitted(steps, measured_starts=True)
    assert dict(zip(COMPOSITION_TERMS, _fit_terms(steps, "cpu")))["conv_train_s"] == 0.0
    refit = dict(zip(COMPOSITION_TERMS, _fit_terms(steps[1:], "cpu", conv_unfitted=True)))  # no step starts threads
    assert refit["conv_train_s"] == 0.0
    assert dict(zip(COMPOSITION_TERMS, _fit_terms(steps[1:], "cpu")))["conv_train_s"] > 0.0  # left to itself


@linux
def test_a_batch_1_training_step_starts_threads_at_16_and_the_callers_model_is_untouched():
    """The MNIST MLP's shape: MKL runs its batch-1 weight gradient, a rank-1 product, on a few threads and
    the SGD update after it on all 16 (torch 2.13's CPU build); at batch 8 and at two threads nothing starts."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Flatten(), nn.Linear(784, 128), nn.ReLU(), nn.Linear(128, 10)).eval()
    before = [p.detach().clone() for p in model.parameters()]
    threads = torch.get_num_threads()
    assert module_thread_starts(model, (1, 28, 28), 8, "train", 16) == 0
    assert module_thread_starts(model, (1, 28, 28), 1, "train", 2) == 0
    assert torch.get_num_threads() == threads and not model.training
    if not narrow_teams_here():
        pytest.skip("this machine's MKL runs the rank-1 product on no narrower team: nothing starts to count")
    assert module_thread_starts(model, (1, 28, 28), 1, "train", 16) > 0
    assert torch.get_num_threads() == threads and not model.training
    assert all(torch.equal(a, b) for a, b in zip(before, model.parameters()))


@linux
def test_the_plan_times_the_pair_above_one_thread_and_each_step_runs():
    with torch.no_grad():
        previous = torch.get_num_threads()
        torch.set_num_threads(16)
        try:
            found = {p.name: p for p in points(PLANS["quick"], "cpu", 16) if p.family == THREAD_START}
        finally:
            torch.set_num_threads(previous)
    assert set(found) == {NARROW, WIDE, PAIR} and found[PAIR].x >= 0
    assert not [p for p in points(PLANS["quick"], "cpu", 1) if p.family == THREAD_START]
    for point in found.values():
        make_step(point, "cpu")()
    if not narrow_teams_here():
        pytest.skip("this machine's MKL runs the rank-1 product on no narrower team: the pair starts none")
    assert found[PAIR].x > 0  # MKL's narrow team, then all 16


@linux
def test_predict_counts_a_short_steps_starts_on_a_priced_profile_and_says_so(cli_in_process, tmp_path, monkeypatch):
    """``predict --model`` on a 16-thread profile that prices a start: the MNIST MLP's batch-1 training step
    is run at 16 threads to count its starts (here nine, as this machine's libraries may start none), which
    are costed and printed; its batch-8 step starts none."""
    from conftest import ROOT
    import crossover.opcost.thread_starts as thread_starts_module
    from crossover.opcost.profiles import write_profile

    counted = []

    def count(model, shape, batch, workload, threads, dtype=None):
        counted.append((batch, workload, threads))
        return 9.0 if batch == 1 else 0.0

    monkeypatch.setattr(thread_starts_module, "module_thread_starts", count)

    profile = dataclasses.replace(synthetic_profile(dispatch_s=3 * US, flop_rate=1e10, bandwidth=1e10, machine="many",
                                                    thread_start_s=50 * US), threads=16)
    write_profile(tmp_path, profile)
    model = ROOT / "experiments" / "zoo" / "mnist_mlp.py"
    result = cli_in_process("predict", "--model", f"{model}:model", "--input-shape", "1,28,28", "--batch-size", "1,8",
                            "--profiles", str(tmp_path), "--workload", "train", "--json")
    assert result.returncode == 0, result.stderr
    import json

    one, eight = json.loads(result.stdout)["devices"]
    assert one["thread_starts"] == 9 and one["thread_starts_s"] == pytest.approx(9 * 50 * US)
    assert eight["thread_starts_s"] == 0.0 and (1, "train", 16) in counted and (8, "train", 16) in counted
    human = cli_in_process("predict", "--model", f"{model}:model", "--input-shape", "1,28,28", "--batch-size", "1",
                           "--profiles", str(tmp_path), "--workload", "train")
    assert "OpenMP threads started a step" in human.stdout


def test_a_pair_that_started_nothing_leaves_the_price_to_the_reference_steps():
    """Where the calibration's own pair started no thread (an MKL that sizes that product's team otherwise),
    the composition still fits the price on the reference steps; where it started some, the price stands."""
    from crossover.opcost.composition import prices_thread_starts

    none = dataclasses.replace(synthetic_profile(thread_start_s=0.0, thread_starts_pair=0.0), threads=16)
    some = dataclasses.replace(synthetic_profile(thread_start_s=40 * US, thread_starts_pair=12.0), threads=16)
    assert not prices_thread_starts(none) and counts_thread_starts(none, 1e-3, fitting=True)
    assert not counts_thread_starts(none, 1e-3)  # priced at nothing: a prediction runs nothing
    assert prices_thread_starts(some) and counts_thread_starts(some, 1e-3)


def test_a_rebuilt_profile_takes_its_reference_steps_starts_from_the_build_before(monkeypatch):
    """Counts given for the reference steps (an earlier build's, :func:`reference_thread_starts` of its report)
    are used as they are, not counted again on this machine, whose libraries may size teams otherwise: the
    price of a start is fitted back from them, and the new report carries them for the next rebuild."""
    import crossover.opcost.thread_starts as thread_starts_module
    from crossover.opcost.composition import with_composition
    from crossover.opcost.thread_starts import reference_step_key, reference_thread_starts
    from test_composition import _reference_steps_of

    base = dataclasses.replace(synthetic_profile(dispatch_s=2 * US, flop_rate=5e10, bandwidth=2e10, module_call_s=1 * US,
                                                 grad_record_s=0.5 * US, backward_call_s=20 * US, backward_op_s=3 * US,
                                                 optimizer_step_s=15 * US, optimizer_param_s=1 * US), threads=16)
    steps = _reference_steps_of(base)
    key = lambda row: reference_step_key(*row["name"].split("/"), row["m"])  # noqa: E731
    counts = {key(row): (8.0 if row["name"].endswith("/train") and row["m"] == 1 else 0.0) for _, row in steps}
    models = [(step["latency_s"] + counts[key(row)] * 50 * US, row) for step, row in steps]

    def recount(*args, **kwargs):
        raise AssertionError("a reference step with a count given was run to count its starts again")

    monkeypatch.setattr(thread_starts_module, "module_thread_starts", recount)
    fitted = with_composition(base, models, thread_starts=counts)
    assert fitted.overheads["thread_start_s"] == pytest.approx(50 * US, rel=1e-6)
    assert reference_thread_starts(fitted.meta) == counts
    assert reference_thread_starts({}) == {}  # a profile without the report: every step counted here


def test_a_profile_whose_machine_started_more_threads_than_this_one_says_so(monkeypatch):
    """Where the reference step that started the most threads on the profile's machine starts fewer than half as
    many here (MKL on an AMD host narrows no team), a prediction that counts starts says its count may be short;
    where they agree, at one thread, or on a profile without the report, nothing is said."""
    import crossover.opcost.thread_starts as thread_starts_module
    from crossover.opcost.thread_starts import libraries_warning

    report = [dict(model="mlp", workload="train", batch_size=1, features=dict(thread_starts=8.0)),
              dict(model="cnn", workload="forward", batch_size=1, features=dict(thread_starts=0.0))]
    profile = dataclasses.replace(synthetic_profile(), threads=16, meta={"reference_models": report},
                                  overheads=dict(synthetic_profile().overheads, thread_start_s=50 * US))
    counted = []

    def here(model, shape, batch, workload, threads, dtype=None):
        counted.append((type(model).__name__, batch, workload, threads))
        return here.starts

    monkeypatch.setattr(thread_starts_module, "module_thread_starts", here)
    monkeypatch.setattr(thread_starts_module, "_HERE", {})
    here.starts = 0.0
    text = libraries_warning(profile)
    assert "started 8 a step there and 0 here" in text and "50 µs" in text
    assert counted == [(counted[0][0], 1, "train", 16)]  # the reference step that started the most, at 16 threads
    monkeypatch.setattr(thread_starts_module, "_HERE", {})
    here.starts = 8.0
    assert libraries_warning(profile) == ""
    assert libraries_warning(dataclasses.replace(profile, threads=1)) == ""
    assert libraries_warning(dataclasses.replace(profile, meta={})) == ""


def test_starts_recorded_where_the_model_ran_are_priced_instead_of_counting_here(monkeypatch):
    """A 16-thread host's counts (recorded by the GPU run's zoo stage) follow the zoo to a machine whose
    libraries start none: recorded pairs are priced as given, nothing is run for them and the libraries'
    warning is not raised; a pair not recorded (another thread count) is still counted here."""
    import crossover.opcost.thread_starts as thread_starts_module
    from crossover.opcost.module_predict import predict_module

    report = [dict(model="mlp", workload="train", batch_size=1, features=dict(thread_starts=8.0))]
    base = synthetic_profile(dispatch_s=3 * US, flop_rate=1e10, bandwidth=1e10, machine="host", thread_start_s=50 * US)
    profile = dataclasses.replace(base, threads=16, meta={"reference_models": report})
    counted = []

    def here(model, shape, batch, workload, threads, dtype=None):
        if tuple(shape) == (64,):  # the model's own steps (not the warning's reference step)
            counted.append((batch, threads))
        return 0.0  # this machine's MKL narrows no team

    monkeypatch.setattr(thread_starts_module, "module_thread_starts", here)
    monkeypatch.setattr(thread_starts_module, "_HERE", {})
    model = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 10))
    kwargs = dict(sample_shape=(64,), batch_sizes=[1, 8], profiles=[profile], workload="train", warn=False)
    told = predict_module(model, thread_starts={(16, 1): 7.0, (16, 8): 2.0}, **kwargs)
    assert list(told["thread_starts"]) == [7.0, 2.0]
    assert told["thread_starts_s"].tolist() == pytest.approx([7 * 50 * US, 2 * 50 * US])
    assert not any("fewer OpenMP threads" in w for ws in told["warnings"] for w in ws)
    assert (1, 16) not in counted and (8, 16) not in counted  # the recorded sizes are not run here (2 and 4 are)
    unknown = predict_module(model, thread_starts={(4, 1): 7.0}, **kwargs)  # recorded at another thread count
    assert list(unknown["thread_starts_s"]) == [0.0, 0.0] and (1, 16) in counted and (8, 16) in counted
    assert any("fewer OpenMP threads" in w for w in unknown["warnings"][0])
