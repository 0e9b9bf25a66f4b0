import math

import numpy as np
import pytest

from crossover.measurement.timer import TimerOptions, median_confidence_interval, time_step

#: These tests time things or watch the CPU: they run alone, never beside other tests (make test runs them after the rest).
pytestmark = pytest.mark.serial


class FakeClock:
    """A clock that advances only when the fake step runs, by durations from a list."""

    def __init__(self, durations_s):
        self.now = 0.0
        self.durations_s = list(durations_s)
        self.calls = 0

    def __call__(self):
        return self.now

    def step(self):
        self.now += self.durations_s[self.calls % len(self.durations_s)]
        self.calls += 1


def test_statistics_of_known_durations():
    clock = FakeClock([1.0, 2.0, 3.0, 4.0, 5.0])
    options = TimerOptions(warmup_s=0, min_warmup_calls=5, min_repeats=5, max_repeats=5,
                           min_run_time_s=0, max_run_time_s=1e9)
    timing = time_step(clock.step, options, clock=clock)
    assert timing.raw_times_s == (1.0, 2.0, 3.0, 4.0, 5.0)
    assert timing.median_s == 3.0
    assert timing.iqr_s == pytest.approx(4.0 - 2.0)
    assert timing.mean_s == 3.0
    assert timing.min_s == 1.0
    assert timing.warmup_calls == 5
    assert timing.stop_reason == "max repeats"


def test_warmup_calls_are_not_timed():
    # The first three calls are slow (lazy init); the timed ones are all 1 ms.
    durations = [0.5, 0.5, 0.5] + [1e-3] * 1000
    clock = FakeClock(durations)
    timing = time_step(clock.step, TimerOptions(warmup_s=0, min_warmup_calls=3), clock=clock)
    assert max(timing.raw_times_s) == pytest.approx(1e-3)


def test_constant_step_converges_after_min_run_time():
    clock = FakeClock([0.01])
    options = TimerOptions(warmup_s=0, min_repeats=10, min_run_time_s=0.2, max_run_time_s=5)
    timing = time_step(clock.step, options, clock=clock)
    assert timing.stop_reason == "converged"
    assert timing.n_repeats == pytest.approx(20, abs=3)  # 0.2 s of 10 ms steps
    assert timing.median_s == pytest.approx(0.01)
    assert timing.warnings == ()


def test_noisy_step_stops_at_budget_and_warns():
    rng = np.random.default_rng(0)
    clock = FakeClock(rng.uniform(0.005, 0.015, size=997))
    options = TimerOptions(warmup_s=0, min_repeats=10, min_run_time_s=0.1, max_run_time_s=0.5,
                           target_rel_ci=0.001)
    timing = time_step(clock.step, options, clock=clock)
    assert timing.stop_reason == "time budget"
    assert sum(timing.raw_times_s) == pytest.approx(0.5, abs=0.02)
    assert any("noisy" in w for w in timing.warnings)
    assert any("not converged" in w for w in timing.warnings)


def test_throughput_regime_times_blocks_and_syncs_once_per_block():
    clock = FakeClock([1e-4])
    syncs = []
    options = TimerOptions(warmup_s=0, min_warmup_calls=2, min_repeats=3, max_repeats=3,
                           min_block_s=1e-3)
    timing = time_step(clock.step, options, regime="throughput", clock=clock, sync=lambda: syncs.append(clock.calls))
    assert timing.calls_per_repeat == 10
    assert timing.median_s == pytest.approx(1e-4)
    # two syncs per block (before and after), none inside it
    timed_syncs = syncs[-6:]
    assert [b - a for a, b in zip(timed_syncs[::2], timed_syncs[1::2])] == [10, 10, 10]


def test_latency_regime_syncs_after_every_call():
    clock = FakeClock([1e-4])
    syncs = []
    options = TimerOptions(warmup_s=0, min_warmup_calls=1, min_repeats=4, max_repeats=4)
    time_step(clock.step, options, clock=clock, sync=lambda: syncs.append(clock.calls))
    timed_syncs = syncs[-8:]
    assert [b - a for a, b in zip(timed_syncs[::2], timed_syncs[1::2])] == [1, 1, 1, 1]


def test_device_time_from_events():
    clock = FakeClock([2e-3])

    class FakeEvent:
        def record(self):
            self.t = clock.now

        def elapsed_time(self, other):  # milliseconds, like torch.cuda.Event
            return (other.t - self.t) * 1e3 / 2  # the device is busy half the time

    options = TimerOptions(warmup_s=0, min_repeats=5, max_repeats=5)
    timing = time_step(clock.step, options, clock=clock, event_factory=FakeEvent)
    assert timing.device_median_s == pytest.approx(1e-3)
    assert len(timing.device_times_s) == 5


def test_median_confidence_interval_covers_the_median():
    values = np.arange(1, 101, dtype=float)
    low, high = median_confidence_interval(values)
    assert low < np.median(values) < high
    # binomial(100, 1/2): the 95% interval is the 40th..61st order statistics
    assert (low, high) == (40.0, 61.0)
    assert median_confidence_interval([3.0]) == (3.0, 3.0)
    assert all(math.isnan(v) for v in median_confidence_interval([]))


def test_invalid_options_and_regime():
    with pytest.raises(ValueError):
        TimerOptions(min_repeats=0)
    with pytest.raises(ValueError):
        TimerOptions(min_run_time_s=3, max_run_time_s=1)
    with pytest.raises(ValueError):
        time_step(lambda: None, regime="fast")


def test_synchronous_steps_are_timed_in_blocks_in_the_latency_regime():
    clock = FakeClock([1e-4])
    options = TimerOptions(warmup_s=0, min_warmup_calls=2, min_repeats=3, max_repeats=3, min_block_s=1e-3)
    timing = time_step(clock.step, options, clock=clock, synchronous=True)
    assert timing.calls_per_repeat == 10 and timing.regime == "latency"
    assert timing.median_s == pytest.approx(1e-4)
