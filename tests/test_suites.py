from pathlib import Path

import pytest

from crossover.measurement.suites import SuiteError, load_suite, parse_suite

ROOT = Path(__file__).resolve().parents[1]
SUITES = sorted((ROOT / "experiments" / "suites").glob("*.toml"))


def minimal(**extra):
    data = {"name": "t", "devices": ["cpu"], "sweep": [{"name": "b", "batch_size": [1, 2]}]}
    data.update(extra)
    return data


@pytest.mark.parametrize("path", SUITES, ids=[p.stem for p in SUITES])
def test_shipped_suites_are_valid(path):
    suite = load_suite(path)
    assert suite.points(("cpu",))


def test_shipped_suites_cover_every_design_axis():
    names = {p.stem for p in SUITES}
    assert {"quick", "paper", "gpu"} <= names
    paper = load_suite(ROOT / "experiments/suites/paper.toml")
    sweeps = {s.name for s in paper.sweeps}
    assert {"batch_size", "d_model", "n_layers", "fixed_params"} <= sweeps
    assert set(paper.devices) == {"cpu", "cuda"}
    gpu = load_suite(ROOT / "experiments/suites/gpu.toml")
    assert set(gpu.devices) == {"cpu", "cuda"}


def test_product_of_lists_and_defaults():
    suite = parse_suite(minimal(defaults={"d_model": 64}, sweep=[{"name": "g", "n_layers": [1, 2], "batch_size": [1, 4, 8]}]))
    points = suite.points()
    assert len(points) == 6
    assert {p.config.d_model for p in points} == {64}
    assert {(p.config.n_layers, p.config.batch_size) for p in points} == {(1, 1), (1, 4), (1, 8), (2, 1), (2, 4), (2, 8)}


def test_points_are_deduplicated_across_sweeps():
    suite = parse_suite(minimal(sweep=[{"name": "a", "batch_size": [1, 2]}, {"name": "b", "batch_size": [2, 4]}]))
    assert [p.config.batch_size for p in suite.points()] == [1, 2, 4]
    assert [p.sweep for p in suite.points()] == ["a", "a", "b"]


def test_fixed_params_sets_d_model():
    suite = parse_suite(minimal(sweep=[{"name": "f", "total_params": 2**31, "n_layers": [128, 512, 2048]}]))
    assert [(p.config.d_model, p.config.params) for p in suite.points()] == [
        (4096, 2**31), (2048, 2**31), (1024, 2**31)
    ]


def test_fixed_params_must_be_exact():
    with pytest.raises(SuiteError, match="not n_layers"):
        parse_suite(minimal(sweep=[{"name": "f", "total_params": 2**31, "n_layers": [100]}]))


def test_cuda_only_combinations_are_left_out_on_the_cpu():
    suite = parse_suite(minimal(devices=["cpu", "cuda"], sweep=[{"name": "m", "mode": ["eager", "cudagraph"]}]))
    pairs = {(p.config.device, p.config.mode) for p in suite.points()}
    assert pairs == {("cpu", "eager"), ("cuda", "eager"), ("cuda", "cudagraph")}


def test_graphs_capturing_pageable_copies_are_left_out():
    suite = parse_suite(minimal(devices=["cuda"], sweep=[{"name": "t", "mode": ["eager", "cudagraph"],
                                                          "transfer": ["pageable", "pinned"]}]))
    pairs = {(p.config.mode, p.config.transfer) for p in suite.points()}
    assert pairs == {("eager", "pageable"), ("eager", "pinned"), ("cudagraph", "pinned")}


def test_fixed_params_needs_positive_layers():
    with pytest.raises(SuiteError, match="positive"):
        parse_suite(minimal(sweep=[{"name": "f", "total_params": 2**31, "n_layers": [0]}]))


def test_caps_give_a_reason():
    suite = parse_suite(minimal(limits={"max_params": {"cpu": 1000}}))
    assert "max_params" in suite.cap_reason(suite.points()[0].config)


@pytest.mark.parametrize(
    "data, message",
    [
        ({"devices": ["cpu"], "sweep": [{"name": "b", "batch_size": [1]}]}, "name"),
        (minimal(sweep=[]), "sweep"),
        (minimal(sweep=[{"name": "b", "batch": [1]}]), "unknown axis"),
        (minimal(sweep=[{"name": "b", "batch_size": [0]}]), "positive"),
        (minimal(sweep=[{"name": "b", "batch_size": [1.5]}]), "positive"),
        (minimal(sweep=[{"name": "b", "batch_size": []}]), "empty"),
        (minimal(devices=["tpu"]), "unknown device"),
        (minimal(timing={"max_run_time_s": -1}), "timing"),
        (minimal(timing={"speed": 1}), "timing"),
        (minimal(colour="red"), "unknown key"),
        (minimal(defaults={"workload": "inference"}), "workload"),
        (minimal(limits={"max_params": {"cpu": -5}}), "limits"),
    ],
)
def test_invalid_suites_are_refused(data, message):
    with pytest.raises(SuiteError, match=message):
        parse_suite(data)


def test_malformed_toml_and_missing_file(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("name = \n[[sweep")
    with pytest.raises(SuiteError, match="not valid TOML"):
        load_suite(bad)
    with pytest.raises(SuiteError, match="does not exist"):
        load_suite(tmp_path / "missing.toml")


def test_rounds_per_suite_and_per_sweep():
    suite = parse_suite(minimal(options={"rounds": 3}, sweep=[{"name": "a", "batch_size": [1, 2]},
                                                            {"name": "b", "rounds": 1, "batch_size": [4]}]))
    assert [p.rounds for p in suite.points()] == [3, 3, 1]
    with pytest.raises(SuiteError, match="rounds"):
        parse_suite(minimal(options={"rounds": 0}))
