"""Thread wake-ups: the calibration times a parallel op after serial gaps and reads what a wake costs and
after how long the threads sleep; a step pays it at each parallel op whose serial gap reaches that; the
rule of which ops run in parallel; the interval and warning for the wake-ups the count leaves out."""

import dataclasses

import pytest
import torch
from torch import nn

from crossover.opcost.calibrate import build_profile
from crossover.opcost.calibration_plan import PLANS, make_step, points
from crossover.opcost.module_predict import step_prediction, trace_step
from crossover.opcost.profiles import synthetic_profile
from crossover.opcost.thread_wake import (GRAIN, WAKE, WAKE_GAPS_S, fit_wake, opens_parallel_region,
                                          step_wake_s)
from crossover.opcost.trace import trace_module
from calibration_rows import US, overhead_rows, row

ALONE_S = 5 * US


def _families(wake_s, sleeps_after_s):
    """Wake primitives of a machine whose threads sleep past ``sleeps_after_s`` of waiting."""
    return {WAKE: [(ALONE_S + gap + (wake_s if gap >= sleeps_after_s else 0.0), 0.0, dict(x=gap))
                   for gap in WAKE_GAPS_S]}


def test_the_wake_and_the_window_are_recovered():
    fitted = fit_wake(_families(40 * US, 20e-6))
    assert fitted["wake_s"] == pytest.approx(40 * US)
    assert 8e-6 < fitted["wake_after_s"] <= 30e-6  # between the last gap that stayed awake and the first that slept
    assert fit_wake(_families(40 * US, 1.0)) == {"wake_s": 0.0, "wake_after_s": 0.0}  # threads always spinning
    # the extras cross half the wake a fifth of the way (in log) from 8 to 30 µs; the dispatch counts in both
    rising = _families(40 * US, 20e-6)
    rising[WAKE] = [(t + (100 * US if r["x"] == 30e-6 else 0.0), a, r) for t, a, r in rising[WAKE]]
    fitted = fit_wake(rising, dispatch_s=1e-6)
    assert fitted["wake_s"] == pytest.approx(40 * US)  # the median of 140, 40, 40, 40 µs
    assert fitted["wake_after_s"] == pytest.approx(9e-6 * (31 / 9) ** (20 / 140))
    assert fit_wake(_families(1 * US, 20e-6))["wake_s"] == 0.0  # under the noise threshold: no wake
    assert fit_wake(_families(40 * US, 0.5e-3))["wake_s"] == 0.0  # the longest gap alone: not evidence
    assert fit_wake({}) == {"wake_s": 0.0, "wake_after_s": 0.0}  # a calibration from before the primitives
    # asleep from the shortest gap tried: the window lies below it
    assert fit_wake(_families(40 * US, 0.5e-6))["wake_after_s"] < WAKE_GAPS_S[1]


def test_a_profile_built_from_the_primitives_carries_the_wake():
    rows = overhead_rows() + [row("relu_after_gap", ALONE_S + gap + (30 * US if gap >= 50e-6 else 0.0),
                                  family=WAKE, m=round(gap * 1e9), n=2**16, x=gap) for gap in WAKE_GAPS_S]
    profile = build_profile(rows, device="cpu", machine="test", threads=2)
    assert profile.overhead("wake_s") == pytest.approx(30 * US)
    assert 30e-6 < profile.overhead("wake_after_s") < 300e-6
    assert WAKE not in profile.curves


def test_the_plan_times_the_gaps_on_a_cpu_and_each_step_runs():
    wake = [p for p in points(PLANS["quick"]) if p.family == WAKE]
    assert sorted(p.x for p in wake) == sorted(WAKE_GAPS_S)
    assert len({p.key for p in wake}) == len(WAKE_GAPS_S)  # each gap its own primitive
    assert not [p for p in points(PLANS["quick"], "cuda") if p.family == WAKE]
    assert make_step(wake[0], "cpu")().numel() == 2**16


def _row(model, shape):
    dtype = torch.long if isinstance(model, nn.EmbeddingBag) else torch.float32
    rows = trace_module(model.eval(), torch.empty(shape, dtype=dtype, device="meta")).to_dict("records")
    return next(r for r in rows if r["kind"] != "view" and r["launches"] and "arange" not in r["op"])


@pytest.mark.parametrize("model, shape, parallel", [
    (nn.Linear(784, 128), (1, 784), True),  # a matrix-vector product past 2^14 weights (the VM: parallel)
    (nn.Linear(120, 84), (1, 120), False),  # 10080 weights: serial
    (nn.Linear(128, 128), (8, 128), False),  # 131072 multiply-adds: serial
    (nn.Linear(128, 128), (16, 128), True),  # 262144: parallel
    (nn.ReLU(), (1, GRAIN), False), (nn.ReLU(), (1, GRAIN + 1), True),  # ATen's grain size
    (nn.Tanh(), (1, 64), False), (nn.Tanh(), (1, 128), True), (nn.Sigmoid(), (1, 2048), False),  # MKL's VML
    (nn.LogSoftmax(-1), (1, 10), False), (nn.LogSoftmax(-1), (64, 10), True),  # rows split from two
    (nn.Conv2d(1, 6, 5, padding=2), (1, 1, 28, 28), True),  # oneDNN
    (nn.Conv1d(4, 16, 7), (1, 4, 50), True),  # native, one short sequence: parallel too
    (nn.EmbeddingBag(100, 8), (1, 20), False), (nn.EmbeddingBag(100, 8), (8, 20), True),  # bags split from two
    (nn.MaxPool2d(2), (1, 6, 28, 28), True),
])
def test_which_ops_open_a_parallel_region(model, shape, parallel):
    assert opens_parallel_region(_row(model, shape), 2) is parallel
    assert opens_parallel_region(_row(model, shape), 1) is False  # one thread opens none
    assert opens_parallel_region(_row(model, shape), 0) is parallel  # 0: torch's default, several


def _sleepy(wake_s=30 * US, after_s=10e-6, threads=2):
    cpu = synthetic_profile("cpu")
    return dataclasses.replace(cpu, threads=threads,
                               overheads={**cpu.overheads, "wake_s": wake_s, "wake_after_s": after_s})


def test_a_parallel_op_pays_only_after_a_long_enough_serial_gap():
    par, ser = ({"op": "aten.relu.default", "kind": "elementwise", "launches": 1, "input_shapes": [(n,)],
                 "output_shapes": [(n,)]} for n in (2 * GRAIN, 16))
    profile = _sleepy()
    # parallel, 4 µs serial, parallel, 12 µs serial: the second gap and the wrap-around (12 µs) pay
    timed = [(par, 5 * US, 0.0), (ser, 4 * US, 0.0), (par, 5 * US, 0.0), (ser, 12 * US, 0.0)]
    assert step_wake_s(profile, timed) == (pytest.approx(30 * US), 1, 2)
    assert step_wake_s(profile, timed, between_s=4 * US) == (pytest.approx(60 * US), 2, 2)
    assert step_wake_s(_sleepy(threads=1), timed)[0] == 0.0
    assert step_wake_s(synthetic_profile("cpu"), timed)[0] == 0.0  # no wake measured
    assert step_wake_s(dataclasses.replace(profile, device="cuda"), timed)[0] == 0.0


def test_a_step_pays_the_counted_wakes_and_its_interval_holds_the_rest():
    model = nn.Sequential(nn.Linear(784, 128), nn.ReLU(), nn.Linear(128, 10))
    table, calls = trace_step(model, (784,), 1, "forward")
    sizes = dict(module_calls=calls, n_params=4, param_bytes=4 * 784 * 128)
    records = table.to_dict("records")
    awake = step_prediction(dataclasses.replace(synthetic_profile("cpu"), threads=2), records, **sizes)
    never = step_prediction(_sleepy(after_s=1.0), records, **sizes)  # sleeps past any gap: counts none
    always = step_prediction(_sleepy(after_s=1e-9), records, **sizes)  # sleeps at once: every parallel op pays
    assert (never["wake_regions"], always["wake_regions"]) == (0, 1)
    assert never["latency_s"] == pytest.approx(awake["latency_s"])
    assert always["latency_s"] == pytest.approx(awake["latency_s"] + 30 * US)
    assert never["latency_high_s"] == pytest.approx(awake["latency_high_s"] + 30 * US)
    assert any("OMP_WAIT_POLICY=ACTIVE" in w for w in never["warnings"])
    assert not any("OMP_WAIT_POLICY" in w for w in always["warnings"] + awake["warnings"])


def test_the_calibration_summary_names_the_wake():
    from crossover.opcost.thread_wake import wake_summary

    assert wake_summary(synthetic_profile("cpu")) is None
    assert wake_summary(_sleepy()) == "threads: a parallel op after 10 µs of serial work waits 30 µs for them to wake"


@pytest.mark.serial  # a calibration in a child process: not beside other tests' work
def test_a_calibration_stopped_by_sigterm_keeps_its_whole_rounds(tmp_path):
    """SIGTERM (a time limit's) part-way, with SIGINT ignored as a background job inherits it: the profile
    is built from the rounds that ended, says how many, and the command exits 130."""
    import json
    import signal
    import subprocess
    import sys

    out = tmp_path / "cut"
    child = subprocess.Popen([sys.executable, "-m", "crossover", "calibrate", "--smoke", "--rounds", "2000", "-v",
                              "--out", str(out)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                             bufsize=1, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
    try:
        for line in child.stderr:  # the progress lines name the round
            if "round 3/" in line:
                break
        child.send_signal(signal.SIGTERM)
        err = child.communicate(timeout=120)[1]
    finally:
        child.kill()
    assert child.returncode == 130, err
    profile = json.loads((out / "profile.json").read_text())
    assert 2 <= profile["rounds"] < 2000
    assert f"stopped after {profile['rounds']} of 2000 rounds" in err


def test_rounds_cut_by_an_interrupt_are_kept_whole_only_where_asked():
    from crossover.measurement.module_rounds import measure_rounds

    calls = [0]

    def step():
        calls[0] += 1
        if calls[0] > 60:  # in the third round or later: each visit calls the step a dozen times or more
            raise KeyboardInterrupt

    options = dataclasses.replace(__import__("crossover.measurement.module_rounds", fromlist=["x"]).ROUND_OPTIONS,
                                  warmup_s=0.0, min_warmup_calls=1, min_repeats=2, min_run_time_s=0.0,
                                  max_run_time_s=0.0, min_block_s=0.0)
    with pytest.raises(KeyboardInterrupt):
        measure_rounds([("a", step)], rounds=50, options=options)
    calls[0] = 0
    visits = measure_rounds([("a", step)], rounds=50, options=options, keep_on_interrupt=True)
    done = {v["round"] for v in visits}
    assert done == set(range(len(done))) and 1 <= len(done) < 50  # whole rounds, the cut one dropped
    calls[0] = 10**9  # cut in the first round: nothing whole to keep
    with pytest.raises(KeyboardInterrupt):
        measure_rounds([("a", step)], rounds=50, options=options, keep_on_interrupt=True)
