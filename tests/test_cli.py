import json

import pytest
import torch

from conftest import ROOT


def test_measure_json_contract(cli):
    result = cli("measure", "--d-model", 32, "--n-layers", 2, "--batch-size", 3, "--device", "cpu",
                 "--max-run-time-s", 0.05, "--json")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    for key in ("median_s", "iqr_s", "flops", "params", "device"):
        assert key in data
    assert data["device"] == "cpu" and data["params"] == 2 * 32**2 and data["flops"] == 2 * 3 * 32**2 * 2
    assert data["median_s"] > 0 and data["threads"] >= 1


def test_measure_human_output(cli):
    result = cli("measure", "--d-model", 16, "--n-layers", 2, "--max-run-time-s", 0.05)
    assert result.returncode == 0, result.stderr
    assert "median" in result.stdout and "FLOP/s" in result.stdout  # prefix per value: MFLOP/s, GFLOP/s, ...


def test_sweep_then_load(cli, tmp_path):
    suite = tmp_path / "s.toml"
    suite.write_text(
        'name = "s"\n[defaults]\nd_model = 16\nn_layers = 2\n[timing]\nmax_run_time_s = 0.02\nmin_run_time_s = 0.01\n'
        '[[sweep]]\nname = "b"\nbatch_size = [1, 2]\n'
    )
    result = cli("sweep", suite, "--out", tmp_path / "out", "--quiet", "--no-calibrate")
    assert result.returncode == 0, result.stderr
    import crossover

    frame = crossover.load_results(tmp_path / "out")
    assert list(frame["batch_size"]) == [1, 2]


def test_help_for_every_command(cli):
    for command in ([], ["measure"], ["sweep"], ["env"]):
        result = cli(*command, "--help")
        assert result.returncode == 0 and "usage" in result.stdout


def test_env_json(cli):
    result = cli("env", "--json")
    data = json.loads(result.stdout)
    assert data["torch_num_threads"] >= 1 and data["cpu_model"] and data["torch"] == torch.__version__


def assert_clean_error(result, *fragments):
    assert result.returncode == 2, (result.stdout, result.stderr)
    lines = [line for line in result.stderr.strip().splitlines() if not line.startswith("crossover: note:")]
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.stderr
    assert lines[0].startswith("crossover")
    for fragment in fragments:
        assert fragment in lines[0]


@pytest.mark.parametrize(
    "args, fragment",
    [
        (["--d-model", "0"], "positive integer"),
        (["--n-layers", "-3"], "positive integer"),
        (["--batch-size", "1.5"], "positive integer"),
        (["--d-model", "abc"], "positive integer"),
        (["--device", "tpu"], "invalid choice"),
        (["--mode", "cudagraph"], "needs device 'cuda'"),
        (["--dtype", "tf32"], "CUDA matmul"),
        (["--threads", "-1"], "non-negative"),
    ],
)
def test_measure_bad_input_exits_2_with_one_line(cli, args, fragment):
    assert_clean_error(cli("measure", *args), fragment)


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA")
def test_cuda_without_cuda_exits_2(cli, tmp_path):
    assert_clean_error(cli("measure", "--device", "cuda"), "CUDA is not available")
    assert_clean_error(cli("sweep", ROOT / "experiments/suites/quick.toml", "--out", tmp_path, "--device", "cuda"),
                       "CUDA is not available")


def test_bad_suites_exit_2(cli, tmp_path):
    malformed = tmp_path / "bad.toml"
    malformed.write_text("name = [\n")
    assert_clean_error(cli("sweep", malformed, "--out", tmp_path / "o"), "not valid TOML")
    unknown = tmp_path / "unknown.toml"
    unknown.write_text('name = "u"\n[[sweep]]\nname = "x"\nwidth = [1]\n')
    assert_clean_error(cli("sweep", unknown, "--out", tmp_path / "o"), "unknown axis")
    assert_clean_error(cli("sweep", tmp_path / "missing.toml", "--out", tmp_path / "o"), "does not exist")
    assert_clean_error(cli("sweep", ROOT / "experiments/suites/quick.toml"), "--out")
    assert not (tmp_path / "o").exists()


def test_results_of_another_schema_exit_2_and_are_not_touched(cli, tmp_path):
    out = tmp_path / "old"
    out.mkdir()
    metadata = json.dumps({"schema": "crossover-results", "schema_version": 999, "runs": {}})
    (out / "metadata.json").write_text(metadata)
    (out / "results.csv").write_text("some,old,data\n1,2,3\n")
    result = cli("sweep", ROOT / "experiments/suites/quick.toml", "--out", out, "--resume")
    assert_clean_error(result, "schema version")
    assert (out / "metadata.json").read_text() == metadata
    assert (out / "results.csv").read_text() == "some,old,data\n1,2,3\n"


def test_existing_results_without_resume_exit_2_and_are_kept(cli, tmp_path):
    suite = tmp_path / "s.toml"
    suite.write_text('name = "s"\n[defaults]\nd_model = 16\nn_layers = 2\n[timing]\nmax_run_time_s = 0.02\n'
                     'min_run_time_s = 0.01\n[[sweep]]\nname = "b"\nbatch_size = [1]\n')
    assert cli("sweep", suite, "--out", tmp_path / "out", "--quiet", "--no-calibrate").returncode == 0
    before = (tmp_path / "out" / "results.csv").read_text()
    assert_clean_error(cli("sweep", suite, "--out", tmp_path / "out"), "--resume")
    assert (tmp_path / "out" / "results.csv").read_text() == before


def test_exit_codes_are_in_the_help_and_an_internal_error_is_status_3(cli, monkeypatch, capsys):
    import crossover.cli as cli_module

    assert "3 an internal error" in " ".join(cli("--help").stdout.split())

    def broken(args):
        raise ZeroDivisionError("a bug")

    parser = cli_module.build_parser()
    monkeypatch.setattr(cli_module, "build_parser", lambda: parser)
    parser.set_defaults(func=broken)
    for action in parser._subparsers._group_actions[0].choices.values():
        action.set_defaults(func=broken)
    assert cli_module.main(["env"]) == 3
    assert capsys.readouterr().err.strip().splitlines() == [
        "crossover: internal error: ZeroDivisionError: a bug (rerun with -v for the traceback)"]


def test_the_first_cpu_sweep_records_a_calibration_beside_its_results_and_resume_does_not_again(cli, tmp_path):
    suite = tmp_path / "s.toml"
    suite.write_text('name = "s"\n[defaults]\nd_model = 16\nn_layers = 2\n[timing]\nmax_run_time_s = 0.02\n'
                     'min_run_time_s = 0.01\n[[sweep]]\nname = "b"\nbatch_size = [1, 2]\n')
    out = tmp_path / "out"
    first = cli("sweep", suite, "--out", out, "--calibration-plan", "smoke")
    assert first.returncode == 0, first.stderr
    profile = out / "calibration" / "profile.json"
    assert profile.exists() and "calibrating this CPU" in first.stderr
    stamp = profile.stat().st_mtime_ns
    again = cli("sweep", suite, "--out", out, "--quiet", "--resume", "--calibration-plan", "smoke")
    assert again.returncode == 0 and profile.stat().st_mtime_ns == stamp and "calibrating" not in again.stderr
    other = tmp_path / "other"
    assert cli("sweep", suite, "--out", other, "--quiet", "--no-calibrate").returncode == 0
    assert not (other / "calibration").exists()


def test_list_shows_the_shipped_machines_series_and_profiles(cli_in_process):
    result = cli_in_process("list", "--json")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["schema"]["name"] == "crossover.list"
    assert {"amd-epyc-2c", "nvidia-h200-16c"} <= set(data["machines"])
    assert {(p["machine"], p["device"]) for p in data["profiles"]} >= {("nvidia-h200-16c", "cuda"),
                                                                        ("nvidia-h200-16c", "cpu")}
    h200 = [s for s in data["series"] if s["machine"] == "nvidia-h200-16c" and s["device"] == "cuda"
            and s["mode"] == "eager"]
    assert h200 and max(s["points"] for s in h200) > 30
    text = cli_in_process("list")
    assert text.returncode == 0 and "this machine:" in text.stdout and "nvidia-h200-16c/cuda" in text.stdout
