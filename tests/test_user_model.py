"""The user's model: loading a factory, and measure/predict --model, bad input included (exit 2, one line)."""

import json

import pytest
from torch import nn

from conftest import ROOT
from crossover.errors import ConfigError
from crossover.measurement.module_rounds import ROUND_OPTIONS
from crossover.opcost.profiles import synthetic_profile, write_profile
from crossover.measurement.user_module import build_model, input_dtype, load_factory, parse_input_shape
from test_cli import assert_clean_error


MNIST = ROOT / "experiments" / "zoo" / "mnist_mlp.py"


@pytest.fixture
def model_file(tmp_path):
    path = tmp_path / "mine.py"
    path.write_text("from torch import nn\n\ndef model():\n    return nn.Linear(4, 2)\n\n"
                    "def not_a_module():\n    return 42\n\nvalue = 3\n\ndef broken():\n    raise KeyError('x')\n")
    return path


@pytest.fixture
def profile_dir(tmp_path):
    out = tmp_path / "profile"
    out.mkdir()
    write_profile(out, synthetic_profile(dispatch_s=3e-6, flop_rate=1e10, bandwidth=1e10, machine="mine"))
    return out


def test_load_factory_and_build(model_file):
    factory = load_factory(f"{model_file}:model")
    assert isinstance(factory(), nn.Linear)
    assert isinstance(build_model(f"{model_file}:model"), nn.Module)
    assert parse_input_shape("3,32,32") == (3, 32, 32) and parse_input_shape(" 784 ") == (784,)
    assert str(input_dtype("long")) == "torch.int64" and str(input_dtype()) == "torch.float32"


@pytest.mark.parametrize("spec, fragment", [
    ("{dir}/missing.py:model", "does not exist"),
    ("{dir}:model", "not a .py file"),
    ("{file}:nothing", "has no factory 'nothing'"),
    ("{file}:value", "is not callable"),
    ("{file}:not_a_module", "returned int, not a torch.nn.Module"),
    ("{file}:broken", "KeyError"),
    ("{file}", "FILE.py:FACTORY"),
])
def test_bad_factories_are_one_line_config_errors(model_file, spec, fragment):
    with pytest.raises(ConfigError, match=fragment) as info:
        build_model(spec.format(dir=model_file.parent, file=model_file))
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("text", ["", "3,,2", "a,b", "0,3", "-1"])
def test_bad_shapes(text):
    with pytest.raises(ConfigError, match="input-shape"):
        parse_input_shape(text)


def test_predict_model_json(cli_in_process, profile_dir):
    result = cli_in_process("predict", "--model", f"{MNIST}:model", "--input-shape", "1,28,28", "--batch-size", "1,8",
                 "--profiles", profile_dir, "--json")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert [d["batch_size"] for d in data["devices"]] == [1, 8] and data["crossover"] is None
    assert all(d["device"] == "cpu" and d["latency_s"] > 0 for d in data["devices"])
    assert data["devices"][1]["latency_s"] > data["devices"][0]["latency_s"]
    human = cli_in_process("predict", "--model", f"{MNIST}:model", "--input-shape", "1,28,28", "--batch-size", "8",
                "--profiles", profile_dir, "--workload", "train")
    assert human.returncode == 0 and "mine/cpu" in human.stdout and "bound" in human.stdout


@pytest.mark.parametrize("args, fragment", [
    (["--model", "{tmp}/missing.py:model", "--input-shape", "4"], "does not exist"),
    (["--model", "{file}:nothing", "--input-shape", "4"], "has no factory"),
    (["--model", "{file}:not_a_module", "--input-shape", "4"], "not a torch.nn.Module"),
    (["--model", f"{MNIST}:model", "--input-shape", "3,32,32"], "module '1' (Linear)"),
    (["--model", f"{MNIST}:model", "--input-shape", "1,28,28", "--profiles", "{tmp}/nowhere"], "does not exist"),
    (["--model", f"{MNIST}:model"], "--input-shape"),
    (["--model", f"{MNIST}:model", "--input-shape", "1,x"], "input-shape"),
    (["--batch-size", "1,8", "--d-model", "8", "--n-layers", "2"], "one value without --model"),
    (["--batch-size", "1"], "--d-model and --n-layers"),
])
def test_predict_bad_input_exits_2_with_one_line(cli_in_process, model_file, profile_dir, args, fragment):
    args = [a.format(tmp=model_file.parent, file=model_file) for a in args]
    if "--profiles" not in args and "--model" in args:
        args += ["--profiles", str(profile_dir)]
    if "--batch-size" not in args:
        args += ["--batch-size", "2"]
    assert_clean_error(cli_in_process("predict", *args), fragment)


@pytest.mark.parametrize("args, fragment", [
    (["--model", "{file}:nothing", "--input-shape", "4"], "has no factory"),
    (["--model", f"{MNIST}:model", "--input-shape", "3,32,32"], "module '1' (Linear)"),
    (["--model", f"{MNIST}:model", "--input-shape", "1,28,28", "--mode", "compile"], "not supported with --model"),
    (["--batch-size", "1,2"], "one value without --model"),
    (["--batch-size", "1,0"], "positive integer"),
])
def test_measure_bad_input_exits_2_with_one_line(cli_in_process, model_file, args, fragment):
    args = [a.format(file=model_file) for a in args]
    assert_clean_error(cli_in_process("measure", *args), fragment)


@pytest.mark.serial
@pytest.mark.parametrize("workload", ["forward", "train"])
def test_measure_model_mnist_mlp(cli_in_process, workload):
    result = cli_in_process("measure", "--model", f"{MNIST}:model", "--input-shape", "1,28,28", "--batch-size", "1,8",
                 "--workload", workload, "--rounds", 2, "--json")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["device"] == "cpu" and data["workload"] == workload and data["rounds"] == 2
    points = {p["batch_size"]: p for p in data["points"]}
    assert set(points) == {1, 8}
    for point in points.values():
        assert point["device"] == "cpu" and 0 < point["latency_s"] <= point["median_s"]
        # two rounds of at least the timer's minimum of repeats each (a loaded machine gets no more)
        assert point["n_repeats"] >= 2 * ROUND_OPTIONS.min_repeats


@pytest.mark.parametrize("option, value", [("--mode", "compile"), ("--statistic", "median"), ("--along", "d_model"),
                                           ("--n-layers", "4"), ("--n-boot", "7")])
def test_predict_model_refuses_the_toys_options(cli_in_process, profile_dir, option, value):
    """Options that choose the toy's series and fits do not apply to your own model: one line, exit 2
    (they used to be ignored silently); the defaults themselves pass."""
    result = cli_in_process("predict", "--model", f"{MNIST}:model", "--input-shape", "1,28,28", "--batch-size", "1",
                            "--profiles", profile_dir, option, value)
    assert_clean_error(result, option, "does not apply with --model")
    ok = cli_in_process("predict", "--model", f"{MNIST}:model", "--input-shape", "1,28,28", "--batch-size", "1",
                        "--profiles", profile_dir, "--mode", "eager")
    assert ok.returncode == 0, ok.stderr


def test_integer_inputs_draw_ids_over_the_smallest_embedding_table():
    """An embedding model is measured with ids over its vocabulary: ids 0/1 hit two rows of the table
    and time a lookup no real input makes (the zoo's bag at batch 512: 50 against 64 µs on the VM)."""
    import torch

    from crossover.measurement.module_rounds import example_input, id_range

    bag = nn.Sequential(nn.EmbeddingBag(5000, 8, mode="mean"), nn.Linear(8, 2))
    two_tables = nn.ModuleList([nn.Embedding(300, 4), nn.Embedding(7000, 4)])
    assert id_range(bag) == 5000 and id_range(two_tables) == 300 and id_range(nn.Linear(3, 3)) == 2
    assert id_range() == 2
    ids = example_input((20,), 512, dtype=torch.long, model=bag)
    assert ids.dtype == torch.long and ids.shape == (512, 20)
    assert 0 <= int(ids.min()) and int(ids.max()) < 5000 and len(ids.unique()) > 1000
    assert set(example_input((20,), 64, dtype=torch.long).unique().tolist()) <= {0, 1}
    assert torch.equal(example_input((20,), 8, dtype=torch.long, model=bag),
                       example_input((20,), 8, dtype=torch.long, model=bag))  # seeded: the same input each time
