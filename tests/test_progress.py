"""Progress: the ETA comes from the planned work, fits report every least-squares fit, and progress
goes to stderr only where it is wanted, never into --json."""

import io
import json
import tomllib
from types import SimpleNamespace

import pytest

from crossover.measurement import sweep
from crossover.cli import main
from crossover.cli.args import DEFAULT_RESULTS
from crossover.fit.all_series import fit_results
from crossover.fit.series_fit import fit_costs, one_row_per_size
from crossover.fit.validation import check_frame, split_heldout
from crossover.measurement.toy_step import ConfigError
from crossover.progress import Progress, progress_bar, wants_progress
from crossover.results.store import load_results
from crossover.measurement.suites import parse_suite

QUICK = DEFAULT_RESULTS / "amd-epyc-2c" / "quick"


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


class Terminal(io.StringIO):
    def isatty(self):
        return True


def test_eta_is_the_time_per_unit_of_planned_cost_times_the_cost_left():
    clock, out = Clock(), io.StringIO()
    bar = Progress(3, stream=out, weights=[1.0, 1.0, 8.0], clock=clock)
    clock.now += 10  # the first item (cost 1) took 10 s: 9 units of cost are left
    bar.update("first")
    assert bar.eta_s() == pytest.approx(90.0)  # a count of items would say 20 s
    assert "00:10<01:30, 1/3  first" in out.getvalue()  # a log: one line per update, by tqdm.format_meter
    clock.now += 30  # the second (cost 1) took longer: 40 s for 2 units, 8 left
    bar.update("second")
    assert bar.eta_s() == pytest.approx(160.0)
    clock.now += 5
    bar.update("third")
    assert bar.eta_s() == 0.0 and out.getvalue().count("\n") == 3


def test_replan_changes_the_work_left_not_the_work_done():
    clock = Clock()
    bar = Progress(4, stream=io.StringIO(), weights=[2.0, 2.0, 2.0, 2.0], clock=clock)
    clock.now += 4
    bar.update("a")  # 2 s per unit of cost
    bar.replan([5.0])  # the rest was found done (a cached fit) but for one item, dearer than guessed
    assert (bar.done, bar.total) == (1, 2)
    assert bar.eta_s() == pytest.approx(10.0)


def test_redraws_are_throttled_but_the_last_item_is_always_drawn():
    clock, out = Clock(), io.StringIO()
    bar = Progress(100, stream=out, clock=clock, min_interval_s=1.0)
    for _ in range(100):
        clock.now += 0.001
        bar.update("x")
    lines = out.getvalue().splitlines()
    assert len(lines) == 2 and lines[-1].endswith("100/100  x") and "100%" in lines[-1]  # the first and the last


def test_a_terminal_gets_a_tqdm_bar_redrawn_in_place_and_a_log_none_of_its_carriage_returns():
    clock, out = Clock(), Terminal()
    bar = Progress(3, stream=out, weights=[1.0, 1.0, 8.0], clock=clock, desc="measuring")
    assert bar._bar is not None  # tqdm draws it
    clock.now += 10
    bar.update("first")
    bar.note("warning: a line of its own")
    clock.now += 35
    bar.update("second", count=2)
    text = out.getvalue()
    assert "\r" in text and "warning: a line of its own\n" in text and text.endswith("\n")
    assert "measuring: 100%" in text and "3/3  second" in text and bar._bar is None  # closed at the last item
    log = io.StringIO()
    quiet = Progress(3, stream=log, enabled=False)
    quiet.update("a")
    assert log.getvalue() == "" and quiet.done == 1


def test_the_sweep_bar_is_weighted_by_each_points_planned_cost(tmp_path, monkeypatch):
    suite = parse_suite(tomllib.loads("""
name = "costs"
devices = ["cpu"]
[defaults]
d_model = 16
n_layers = 2
[timing]
warmup_s = 0.5
max_run_time_s = 1.0
[[sweep]]
name = "mode"
mode = ["eager", "compile"]
"""))
    bars = []

    class Recording(Progress):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            bars.append(self)

    def skip(config, *args, **kwargs):
        raise ConfigError("not measured in this test")

    monkeypatch.setattr(sweep, "Progress", Recording)
    sweep.run_suite(suite, tmp_path, stream=io.StringIO(), measure_fn=skip,
                    check_load=lambda threads: SimpleNamespace(warnings=[], busy=False))
    [bar] = bars
    planned = sweep.plan_rounds(suite.points(("cpu",)), seed=suite.seed, pair_by=suite.pair_by,
                                references=tuple(suite.reference_configs(("cpu",))),
                                reference_every=suite.reference_every)
    modes = [item.point.config.mode for item in planned]
    assert bar.total == len(planned) == bar.done
    # each point's time budget (warm-up + run time), and 5 s more to compile: not one unit per point
    for mode, weight in zip(modes, bar.weights):
        assert weight == pytest.approx(1.5 + (5.0 if mode == "compile" else 0.0), rel=0.01)


class Bar:
    """Records what fit_results tells a bar."""

    def __init__(self, costs):
        self.planned, self.updates, self.plans, self.closed = list(costs), [], [], False
        self.done = 0

    def update(self, text, count=1):
        self.updates.append(text)
        self.done += count

    def replan(self, costs):
        self.plans.append(list(costs))

    def close(self):
        self.closed = True


def test_a_fit_reports_every_least_squares_fit_it_planned(tmp_path, monkeypatch):
    monkeypatch.setenv("CROSSOVER_CACHE_DIR", str(tmp_path))
    frame = load_results(QUICK, raw=True)
    bars = []

    def progress(costs):
        bars.append(Bar(costs))
        return bars[-1]

    options = dict(n_boot=7, statistic="p10")
    fit_results(frame, ["affine", "roofline"], progress=progress, **options)
    [bar] = bars
    assert bar.planned == fit_costs(frame, ["affine", "roofline"], **options)
    assert len(bar.updates) == len(bar.planned) and bar.closed  # one step per fit, none missed or extra
    stages = [text.split(": ")[1].split()[0] for text in bar.updates]
    n_sizes = stages.count("loo")  # one refit per fitted size, for the prediction interval
    assert n_sizes == len(one_row_per_size(split_heldout(check_frame(frame, "p10"))[0]))
    assert stages == ["cv"] * (len(bar.planned) - 8 - n_sizes) + ["fit"] + ["loo"] * n_sizes + ["bootstrap"] * 7
    chosen = bar.updates[-1].split()[-1]
    # once the model is chosen, the refits left cost what that model's refits cost; then nothing is left
    left = n_sizes + 7
    assert bar.plans[0] == fit_costs(frame, [chosen], **options, chosen=chosen)[-left:] and bar.plans[-1] == []
    # the second time the fit comes from the cache: no fit to report, and its work leaves the plan
    fit_results(frame, ["affine", "roofline"], progress=progress, **options)
    assert bars[1].updates == [] and bars[1].plans == [[]] and bars[1].closed


def test_costs_follow_the_work_of_each_model():
    frame = load_results(QUICK, raw=True)
    one = fit_costs(frame, ["affine"], n_boot=3)
    two = fit_costs(frame, ["affine", "roofline+cache"], n_boot=3)
    n_sizes = len(one_row_per_size(split_heldout(check_frame(frame, "p10"))[0]))
    assert len(two) == 2 * len(one) - 4 - n_sizes  # the folds of both, one fit, a refit per size, 3 refits
    assert max(two) > max(one)  # more parameters and starts cost more
    assert one[-3:] == [2.0] * 3  # an affine refit: 2 parameters, 1 start


def test_progress_is_drawn_on_a_terminal_or_when_asked():
    assert wants_progress(Terminal()) and not wants_progress(Terminal(), quiet=True)
    assert not wants_progress(io.StringIO()) and wants_progress(io.StringIO(), asked=True)


def test_progress_bar_is_the_tqdm_backed_progress():
    out = io.StringIO()
    bar = progress_bar([1.0, 3.0], stream=out, desc="fitting", min_interval_s=0)
    assert isinstance(bar, Progress) and bar.weights == [1.0, 3.0]
    bar.update("a")
    bar.replan([1.0])  # the last item costs less than planned
    bar.update("b")
    bar.close()
    assert "fitting: 100%" in out.getvalue() and "2/2  b" in out.getvalue() and bar.weight_done == bar.weight_total


def test_fit_help_has_no_doubled_percent_sign(capsys):
    with pytest.raises(SystemExit):
        main(["fit", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "%%" not in text and "MAPE and % of held-out predictions within ±10%" in text


def test_json_stdout_stays_clean_and_progress_goes_to_stderr_when_asked(cli):
    args = ["fit", "--results", QUICK, "--models", "affine", "--n-boot", 5, "--json"]
    env = {"CROSSOVER_NO_CACHE": "1"}
    shown = cli(*args, "--progress", env=env)
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)["schema"]["name"] == "crossover.fit"
    assert "amd-epyc-2c/cpu" in shown.stderr  # the bar's text names the series being fitted
    hidden = cli(*args, env=env)  # stderr is a pipe here, not a terminal: no bar unless asked
    assert hidden.returncode == 0 and hidden.stderr == "" and json.loads(hidden.stdout) == json.loads(shown.stdout)
