"""The sitting's share of a zoo miss: the calibration's reference steps measured again beside the zoo,
against what the calibration measured of them."""

import json

import pandas as pd
import pytest

from crossover.analysis.zoo_check import error_table, interval_table, sitting_ratios, without_sitting
from crossover.analysis.zoo_runs import read_measurements, read_reference_remeasures


def _write(folder, name, model, device, points, calibration=None):
    data = dict(model=model, input_shape=[8], workload="forward", device=device, threads=2,
                points=[dict(batch_size=b, latency_s=s) for b, s in points])
    if calibration is not None:
        data["calibration_measured_s"] = {str(b): s for b, s in calibration.items()}
    (folder / f"measure-{name}-forward-{device}.json").write_text(json.dumps(data))


def test_the_sitting_ratio_is_the_references_median_slowdown(tmp_path):
    # the sitting ran the references 1.2x, 1.1x and 1.5x slower on the GPU (median 1.2), 0.9x on the CPU
    _write(tmp_path, "reference_mlp", "reference:mlp", "cuda", [(1, 1.2e-4), (256, 2.2e-4)], {1: 1e-4, 256: 2e-4})
    _write(tmp_path, "reference_cnn", "reference:cnn", "cuda", [(1, 3e-4), (32, 9e-4)], {1: 2e-4})  # 32: not calibrated
    _write(tmp_path, "reference_mlp", "reference:mlp", "cpu", [(1, 0.9e-4)], {1: 1e-4})
    _write(tmp_path, "mnist_mlp", "experiments/zoo/mnist_mlp.py:model", "cuda", [(1, 5e-4)])
    refs = read_reference_remeasures(tmp_path)
    assert len(refs) == 4 and set(refs["model"]) == {"reference_mlp", "reference_cnn"}
    ratios = sitting_ratios(refs)
    assert ratios == pytest.approx({"cuda": 1.2, "cpu": 0.9})
    assert set(read_measurements(tmp_path)["model"]) == {"mnist_mlp"}  # the zoo's reader skips the references


def test_taking_the_sitting_out_scales_each_devices_predictions(tmp_path):
    frame = pd.DataFrame(dict(model="m", workload="forward", device=["cuda", "cuda", "cpu"], batch_size=[1, 8, 1],
                              measured_s=[1.2e-4, 2.4e-4, 1e-4], predicted_s=[1e-4, 2e-4, 1e-4]))
    before = error_table(frame).set_index("device")
    after = error_table(without_sitting(frame, {"cuda": 1.2})).set_index("device")
    assert before.loc["cuda", "bias"] == pytest.approx(-1 / 6)
    assert after.loc["cuda", "median_error"] == pytest.approx(0, abs=1e-12)  # all of the GPU's miss was the sitting
    assert after.loc["cpu", "median_error"] == before.loc["cpu", "median_error"] == 0  # no ratio: unchanged
    assert sitting_ratios(read_reference_remeasures(tmp_path)) == {}  # no references: nothing to take out


def test_the_ratio_is_against_the_profiles_given_and_skips_unusable_times(tmp_path):
    zoo = tmp_path / "zoo"
    zoo.mkdir()
    # the file records its own visit's calibration (1e-4); another visit's profile measured the step at 2e-4
    _write(zoo, "reference_mlp", "reference:mlp", "cuda", [(1, 1.5e-4), (256, 3e-4)], {1: 1e-4, 256: float("nan")})
    other = tmp_path / "other_cuda"
    other.mkdir()
    (other / "profile.json").write_text(json.dumps(dict(device="cuda", reference_models=[
        dict(model="mlp", workload="forward", batch_size=1, measured_s=2e-4)])))
    own = read_reference_remeasures(zoo)
    assert own[["batch_size", "calibration_s"]].values.tolist() == [[1, 1e-4]]  # the NaN time is left out
    assert sitting_ratios(own) == pytest.approx({"cuda": 1.5})
    given = read_reference_remeasures(zoo, [other])
    assert given[["batch_size", "calibration_s"]].values.tolist() == [[1, 2e-4]]  # batch 256: not in that profile
    assert sitting_ratios(given) == pytest.approx({"cuda": 0.75})


def test_the_interval_table_counts_each_devices_measurements_inside_their_intervals():
    """Per device: the points with an interval, those inside it (ends included), and the median half-width
    over the prediction; a point without a prediction is not counted; a frame without intervals: none."""
    frame = pd.DataFrame(dict(
        device=["cpu", "cpu", "cpu", "cuda", "cuda"],
        measured_s=[1.0, 2.0, 5.0, 1.0, 1.0],
        predicted_s=[1.0, 2.0, 4.0, 1.0, None],
        predicted_low_s=[0.8, 2.0, 3.0, 1.1, 0.5],
        predicted_high_s=[1.2, 3.0, 4.5, 1.3, 1.5]))
    table = interval_table(frame).set_index("device")
    assert table.loc["cpu", "points"] == 3 and table.loc["cpu", "inside"] == 2  # 5.0 lies past 4.5
    assert table.loc["cpu", "inside_share"] == pytest.approx(2 / 3)
    assert table.loc["cpu", "median_half_width"] == pytest.approx(0.2)  # 0.2, 0.25, 0.1875
    assert table.loc["cuda", "points"] == 1 and table.loc["cuda", "inside"] == 0  # 1.0 under 1.1
    assert interval_table(frame.drop(columns=["predicted_low_s"])).empty


def _crossing_frame(measured_gpu_us: float, spread: float = 0.1) -> pd.DataFrame:
    """A CPU at 10·√b µs against a flat GPU, predicted crossing at 100 (GPU 100 µs) with ±``spread``
    intervals; the GPU measured flat at ``measured_gpu_us`` (crossing at (measured/10)²)."""
    rows = []
    for b in (1, 4, 16, 64, 256, 1024):
        cpu, gpu = 10e-6 * b**0.5, 100e-6
        rows += [dict(model="m", workload="forward", device="cpu", batch_size=b, measured_s=cpu, predicted_s=cpu,
                      predicted_low_s=(1 - spread) * cpu, predicted_high_s=(1 + spread) * cpu),
                 dict(model="m", workload="forward", device="cuda", batch_size=b, measured_s=measured_gpu_us * 1e-6,
                      predicted_s=gpu, predicted_low_s=(1 - spread) * gpu, predicted_high_s=(1 + spread) * gpu)]
    return pd.DataFrame(rows)


def test_a_measured_crossover_is_checked_against_the_predicted_interval():
    """Power laws cross exactly in log-log: with ±10% intervals the hand-over may lie from (90/11)² = 66.9
    to (110/9)² = 149.4 around the predicted 100; a GPU measured at 110 µs crosses at 121 (inside, and
    within x1.5), at 140 µs at 196 (outside, and not within x1.5); with ±5% intervals (81.9 to 122.2) one
    measured at 85 µs crosses at 72 (outside, though within x1.5), inside ±40%'s."""
    from crossover.analysis.zoo_check import crossover_table

    row = crossover_table(_crossing_frame(110)).iloc[0]
    assert row.predicted_crossover == pytest.approx(100) and row.measured_crossover == pytest.approx(121)
    assert (row.predicted_low, row.predicted_high) == pytest.approx(((90 / 11) ** 2, (110 / 9) ** 2))
    assert row.in_interval and row.holds
    row = crossover_table(_crossing_frame(140)).iloc[0]
    assert not row.in_interval and not row.holds
    row = crossover_table(_crossing_frame(85, spread=0.05)).iloc[0]
    assert not row.in_interval and row.holds
    assert crossover_table(_crossing_frame(85, spread=0.4)).iloc[0].in_interval
    # measured never crossing (the CPU faster throughout): inside only where the interval's high end is open
    assert not crossover_table(_crossing_frame(400)).iloc[0].in_interval
    assert crossover_table(_crossing_frame(400, spread=0.9)).iloc[0].in_interval
    assert crossover_table(_crossing_frame(110).drop(columns=["predicted_low_s"])).iloc[0].in_interval is None
