"""Every command's ``--json`` has one style: one object whose ``schema`` is
``{"name": "crossover.<layout>", "version": N}``, laid out as the JSON Schema shipped in
crossover/schemas/<layout>.schema.json. Each command runs here on small shipped or synthetic data, and
its real output is validated against its schema (the fleet's three layouts: tests/test_fleet.py).
"""

import json
import shutil

import pytest

from conftest import ROOT, validate_json
from crossover.cli.args import print_json
from crossover.jsonable import SCHEMAS_DIR, check_stamp, schema_file, schema_tag, stamped
from test_compare import write_run

pytest.importorskip("jsonschema")

RESULTS = ROOT / "experiments" / "results"
QUICK = RESULTS / "amd-epyc-2c" / "quick"
PROFILE = ROOT / "experiments" / "profiles" / "amd-epyc-2c"
MNIST = ["--model", ROOT / "experiments" / "zoo" / "mnist_mlp.py:model", "--input-shape", "1,28,28"]
FAST_FIT = ["--models", "roofline", "--n-boot", 5, "--quiet"]
#: The layouts whose commands tests/test_fleet.py runs (they need a fleet, and submitit).
FLEET_LAYOUTS = {"fleet_status", "fleet_compare", "fleet_cost"}


def run_json(cli_in_process, *args, status=0):
    """``crossover ARGS --json`` in this process: stdout parsed as one JSON object, validated."""
    result = cli_in_process(*args, "--json")
    assert result.returncode == status, result.stderr
    return validate_json(json.loads(result.stdout))


@pytest.fixture
def runs(tmp_path):
    """Two synthetic results directories: b 20% slower than a at every point."""
    return write_run(tmp_path / "a", 1.0, 1), write_run(tmp_path / "b", 1.2, 2)


# ------------------------------------------------------------------------------------- each command
COMMANDS = {
    "env": ["env"],
    "measure": ["measure", "--d-model", 16, "--n-layers", 2, "--batch-size", 2, "--device", "cpu",
                "--max-run-time-s", 0.03, "--raw"],
    "measure_model": ["measure", *MNIST, "--batch-size", "1,2", "--rounds", 1],
    "noise": ["noise", "--windows", 2, "--rounds", 1, "--span-s", 0, "--pause-s", 0],
    "peaks": ["peaks", "--smoke"],
    "fit": ["fit", "--results", QUICK, *FAST_FIT],
    "predict": ["predict", "--d-model", 128, "--n-layers", 128, "--batch-size", 1, "--results", QUICK, *FAST_FIT],
    "predict_model": ["predict", *MNIST, "--batch-size", "1,8", "--profiles", PROFILE],
    "advise": ["advise", *MNIST, "--slo-ms", 10, "--rate", 1000, "--max-batch-size", 16, "--profiles", PROFILE],
    "list": ["list", "--results", QUICK, "--profiles", PROFILE],
}


@pytest.mark.parametrize("layout", sorted(COMMANDS))
def test_each_commands_json_follows_its_schema(cli_in_process, layout):
    data = run_json(cli_in_process, *COMMANDS[layout])
    assert data["schema"] == schema_tag(layout) and list(data)[0] == "schema"


def test_calibrate_json_is_the_profile_and_follows_its_schema(cli_in_process, tmp_path):
    out = tmp_path / "profile"
    shutil.copytree(PROFILE, out)
    data = run_json(cli_in_process, "calibrate", "--rebuild", "--out", out)  # measures nothing
    assert data["schema"] == schema_tag("profile") and data["machine"] == "amd-epyc-2c"
    assert validate_json(json.loads((out / "profile.json").read_text()))["schema"] == data["schema"]


def test_the_measurement_keys_scripts_use_are_there(cli_in_process, tmp_path):
    measure = run_json(cli_in_process, *COMMANDS["measure"])
    assert (measure["d_model"], measure["batch_size"], measure["device"]) == (16, 2, "cpu")
    assert len(measure["raw_times_s"]) == measure["n_repeats"]
    noise = run_json(cli_in_process, *COMMANDS["noise"], "--out", tmp_path)
    assert noise["out"] == str(tmp_path / "noise.json") and (tmp_path / "noise.json").is_file()
    peaks = run_json(cli_in_process, *COMMANDS["peaks"], "--out", tmp_path)
    assert set(peaks["peaks"]) == {"cpu"} and peaks["out"] == str(tmp_path)


# --------------------------------------------------------------------------------------- compare
def test_compare_json_follows_its_schema(cli_in_process, runs):
    data = run_json(cli_in_process, "compare", *runs)
    assert data["schema"] == {"name": "crossover.compare", "version": 1} and "schema_version" not in data
    assert data["summary"]["slower"] == 4 and data["failed"] is False
    assert {p["verdict"] for p in data["points"]} == {"slower"}


def test_compare_fail_above_prints_the_json_alone_and_exits_1(cli_in_process, runs):
    result = cli_in_process("compare", *runs, "--json", "--fail-above", 10)
    assert result.returncode == 1
    data = validate_json(json.loads(result.stdout))  # the whole of stdout is the one object: no line after it
    assert result.stdout.rstrip().endswith("}") and data["failed"] is True
    assert "above --fail-above 10%" in result.stderr and "{" not in result.stderr
    within = cli_in_process("compare", *runs, "--json", "--fail-above", 30)
    assert within.returncode == 0 and validate_json(json.loads(within.stdout))["failed"] is False


# ---------------------------------------------------------------------------------- the one style
def test_every_shipped_schema_is_valid_named_after_its_layout_and_tested():
    jsonschema = pytest.importorskip("jsonschema")
    layouts = {path.name.removesuffix(".schema.json") for path in SCHEMAS_DIR.glob("*.schema.json")}
    assert layouts == set(COMMANDS) | {"profile", "compare"} | FLEET_LAYOUTS
    for layout in layouts:
        schema = json.loads(schema_file(layout).read_text())
        jsonschema.Draft202012Validator.check_schema(schema)
        assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
        tag = schema["properties"]["schema"]["const"]
        assert tag == schema_tag(layout, tag["version"]) and schema["required"][0] == "schema"
        assert schema["$id"] == f"urn:crossover:schema:{layout}:{tag['version']}"
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert '"crossover" = ["schemas/*.json"' in pyproject  # the wheel carries them


def test_print_json_refuses_an_output_without_its_schema(capsys):
    with pytest.raises(ValueError, match="schema"):
        print_json({"a": 1})
    with pytest.raises(ValueError, match="schema"):
        print_json({"schema": "crossover-compare", "schema_version": 1})  # the old style
    print_json({"a": 1, "schema": schema_tag("compare")})
    print_json({"a": float("nan")}, schema_tag("env"))
    first, second = capsys.readouterr().out.replace("}\n{", "}\n\n{").split("\n\n")
    assert json.loads(first) == {"a": 1, "schema": schema_tag("compare")}
    assert list(json.loads(second).items()) == [("schema", schema_tag("env")), ("a", None)]  # stamped first
    with pytest.raises(ValueError):
        stamped(schema_tag("env"), {"schema": schema_tag("peaks")})
    with pytest.raises(ValueError):
        check_stamp({"schema": {"name": "crossover.env", "version": "1"}})
    for bad in ("", "a.b", "x/y"):
        with pytest.raises(ValueError):
            schema_tag(bad)
