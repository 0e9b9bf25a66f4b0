"""How one machine kind's zoo steps and calibration reference steps move between visits."""

import gzip
import json

import pandas as pd
import pytest

from crossover.analysis.visit_spread import point_spread, reference_spread, zoo_visits
from crossover.analysis.zoo_runs import ZooSet, read_zoo_sets
from crossover.paper.visits import visit_macros


def _visit(tmp_path, name, machine, mnist_s, reference_rounds_s, device="cuda"):
    """A zoo set with one MNIST MLP GPU file (batch 1 and 8) and a calibration of ``device`` whose
    reference MLP row was measured in rounds ``reference_rounds_s``."""
    zoo = tmp_path / name / "zoo"
    zoo.mkdir(parents=True)
    points = [dict(device="cuda", batch_size=b, latency_s=t) for b, t in zip((1, 8), mnist_s)]
    (zoo / "measure-mnist_mlp-forward-cuda.json").write_text(json.dumps(dict(
        model="experiments/zoo/mnist_mlp.py:model", input_shape=[1, 28, 28], workload="forward", device="cuda",
        threads=16, points=points)))
    calibration = tmp_path / name / "calibration"
    calibration.mkdir()
    (calibration / "profile.json").write_text(json.dumps(dict(device=device)))
    rows = pd.DataFrame(dict(family=["model"] * len(reference_rounds_s) + ["overhead"],
                             key=["model/mlp/forward/1x512"] * len(reference_rounds_s) + ["overhead/dispatch/0x0x0"],
                             median_s=list(reference_rounds_s) + [7e-6]))
    with gzip.open(calibration / "calibration.csv.gz", "wt") as f:
        rows.to_csv(f, index=False)
    return ZooSet(name=name, label=name, zoo=zoo, profiles=(calibration,), machine=machine)


@pytest.fixture
def sets(tmp_path):
    return [_visit(tmp_path, "h-run2", "h", (70e-6, 67e-6), (67e-6, 80e-6)),
            _visit(tmp_path, "h-run1", "h", (83e-6, 79e-6), (68e-6,)),
            _visit(tmp_path, "h-run3", "h", (155e-6, 146e-6), (72e-6, 90e-6)),
            _visit(tmp_path, "other-run1", "other", (100e-6, 100e-6), (50e-6,))]


def test_a_point_on_several_visits_has_its_slowest_over_fastest_ratio_in_the_visits_order(sets):
    spread = point_spread(zoo_visits(sets, "cuda"))
    one = spread[(spread["machine"] == "h") & (spread["batch_size"] == 1)].iloc[0]
    assert one["visits"] == ("h-run1", "h-run2", "h-run3")  # sorted by name, not by the sets' order
    assert one["values_s"] == pytest.approx((83e-6, 70e-6, 155e-6))
    assert one["ratio"] == pytest.approx(155 / 70)
    assert set(spread["machine"]) == {"h"}  # a machine visited once has no spread


def test_reference_steps_are_each_visits_quiet_level_and_a_calibration_counts_once(sets):
    twice = sets + [ZooSet(name="h-run3-1t", label="", zoo=sets[2].zoo, profiles=sets[2].profiles, machine="h")]
    spread = reference_spread(twice, "cuda")
    row = spread[spread["machine"] == "h"].iloc[0]
    assert row["visits"] == ("h-run1", "h-run2", "h-run3")  # the 1-thread set shares run3's calibration
    # the 10th percentile of each visit's rounds: 67 + 0.1 * 13 and 72 + 0.1 * 18
    assert row["values_s"] == pytest.approx((68e-6, 68.3e-6, 73.8e-6))
    assert reference_spread(twice, "cpu").empty  # no CPU calibration among them


def test_the_paper_macros_name_the_visits_and_the_reference_beside_the_zoo(sets):
    text = {m.name: m.text for m in visit_macros(point_spread(zoo_visits(sets, "cuda")),
                                                  reference_spread(sets, "cuda"), machine="h")}
    assert text["VisitsCount"] == "3"
    assert text["VisitsMnistZoo"] == "83, 70 and 155"
    assert text["VisitsMlpReference"] == "68, 68 and 74"
    assert text["VisitsZooWorstWhat"] == "MNIST MLP, batch 1"
    assert text["VisitsZooOverHalf"] == "2"  # 155/70 and 146/67


def test_the_shipped_h100_visits_are_read():
    sets = [s for s in read_zoo_sets() if s.machine == "nvidia-h100-80gb-hbm3-16c"]
    spread = point_spread(zoo_visits(sets, "cuda"))
    assert len(spread) and spread["visits"].map(len).max() >= 3
    assert (spread["ratio"] >= 1).all()


def test_the_paired_runs_ratio_is_per_batch_size_measured_in_every_run():
    from crossover.paper.visits import paired_visit_macros

    def rows(run, times):
        return [dict(machine="h", device="cuda", mode="eager", workload="forward", d_model=128, n_layers=128,
                     sequence=0, results_dir=run, batch_size=b, p10_s=t) for b, t in times.items()]
    frame = pd.DataFrame(rows("a", {1: 1.0, 8: 2.0, 64: 9.0}) + rows("b", {1: 1.1, 8: 2.6}))  # 64: one run only
    text = {m.name: m.text for m in paired_visit_macros(frame, machine="h")}
    assert text["VisitsPairedRuns"] == "2" and text["VisitsPairedWorstRatio"] == "1.30$\\times$"
    assert text["VisitsPairedMedianRatio"] == "1.20$\\times$"  # the median of 1.1 and 1.3
    unpaired = {m.name: m.text for m in paired_visit_macros(frame.assign(sequence=None), machine="h")}
    assert unpaired["VisitsPairedRuns"] == "---"


def test_the_interference_log_is_read_without_its_alone_row(tmp_path):
    from crossover.paper.visits import interference_macros

    log = tmp_path / "m" / "gpu" / "logs" / "interference.log"
    log.parent.mkdir(parents=True)
    log.write_text("cuda=X rounds=5\n condition median_ms vs_alone\n alone 6.4 1.00x\n after_cpu 5.9 0.93x\n"
                   " after_cpu_1thread 5.7 0.89x\n")
    text = {m.name: m.text for m in interference_macros([tmp_path])}
    assert (text["InterferenceLow"], text["InterferenceHigh"]) == ("0.89", "0.93")
    assert {m.text for m in interference_macros([tmp_path / "m" / "gpu" / "logs" / "none"])} == {"---"}
