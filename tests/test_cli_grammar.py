"""One grammar for the command line (issue #29): every command has -q/-v and its exit statuses in
--help; --device everywhere (--devices a hidden alias); --only-machine filters (--machine its
deprecated spelling); one --statistic help; --format text|json|md|csv with --json its short form;
an internal error is one line and status 3, its traceback with -v."""

import csv
import io
import json

import pytest

from conftest import ROOT
from crossover.cli import build_parser
from crossover.cli.args import STATISTIC_HELP
from crossover.cli.output import csv_table, markdown_table, print_tables

RESULTS = ROOT / "experiments" / "results"
QUICK = RESULTS / "amd-epyc-2c" / "quick"
PROFILE = ROOT / "experiments" / "profiles" / "amd-epyc-2c"
MNIST = ["--model", ROOT / "experiments" / "zoo" / "mnist_mlp.py:model", "--input-shape", "1,28,28"]
FAST_FIT = ["--models", "roofline", "--n-boot", 5, "-q"]


def leaf_parsers(parser=None, prefix=()):
    """Every command's parser, by its words (``("fleet", "run")``)."""
    import argparse

    parser = parser or build_parser()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                subs = [a for a in child._actions if isinstance(a, argparse._SubParsersAction)]
                if subs:
                    yield from leaf_parsers(child, prefix + (name,))
                else:
                    yield prefix + (name,), child


def help_text(parser) -> str:
    return " ".join(parser.format_help().split())


def test_every_command_has_quiet_verbose_and_its_exit_statuses_in_help():
    commands = dict(leaf_parsers())
    assert {("list",), ("fleet", "run"), ("export",), ("predict",)} <= set(commands)
    for words, parser in commands.items():
        text = help_text(parser)
        assert "-q, --quiet" in text and "-v, --verbose" in text, words
        assert ("exit status: 0 fine; 1 a regression found (compare --fail-above); 2 bad input (one line on "
                "stderr); 3 an internal error (one line; rerun with -v for the traceback)") in text, words


def test_statistic_is_documented_the_same_way_everywhere():
    shared = " ".join(STATISTIC_HELP.split())
    having = [words for words, parser in leaf_parsers() if "--statistic" in parser._option_string_actions]
    assert {("fit",), ("predict",), ("advise",), ("compare",), ("fleet", "compare")} <= set(having)
    for words in having:
        parser = dict(leaf_parsers())[words]
        action = parser._option_string_actions["--statistic"]
        assert action.default == "p10" and set(action.choices) == {"p10", "median", "min"}
        assert " ".join(action.help.split()).startswith(shared), words


def test_device_everywhere_and_devices_is_a_hidden_alias():
    for words, parser in leaf_parsers():
        options = parser._option_string_actions
        if "--devices" in options:
            assert "--device" in options and options["--devices"].dest == options["--device"].dest == "device"
            assert "--devices" not in help_text(parser), words
    parser = build_parser()
    for spelling in ("--device", "--devices"):
        args = parser.parse_args(["sweep", "suite.toml", "--out", "x", spelling, "cpu,cuda"])
        assert args.device == "cpu,cuda"
        assert parser.parse_args(["peaks", spelling, "cpu"]).device == "cpu"
    assert parser.parse_args(["peaks"]).device == "cpu" and parser.parse_args(["sweep", "s", "--out", "x"]).device is None


def test_only_machine_filters_and_machine_is_its_deprecated_alias(capsys):
    parser = build_parser()
    for command in (["predict", "--batch-size", "1"], ["advise", "--slo-ms", "1", "--rate", "1"]):
        assert parser.parse_args(command + ["--only-machine", "m1"]).only_machine == "m1"
        assert capsys.readouterr().err == ""
        assert parser.parse_args(command + ["--machine", "m1"]).only_machine == "m1"
        assert "--machine is deprecated: use --only-machine" in capsys.readouterr().err
        assert "--only-machine" in help_text(dict(leaf_parsers())[(command[0],)])
    assert parser.parse_args(["sweep", "s", "--out", "x", "--machine", "lab"]).machine == "lab"  # a label


def test_only_machine_keeps_one_machines_devices(cli_in_process):
    args = ["predict", "--d-model", 128, "--n-layers", 128, "--batch-size", 1, "--results", RESULTS, *FAST_FIT,
            "--format", "csv"]
    result = cli_in_process(*args, "--only-machine", "amd-epyc-2c")
    assert result.returncode == 0, result.stderr
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    devices = [r for r in rows if r["table"] == "devices"]
    assert devices and all(r["series"].startswith("amd-epyc-2c") for r in devices)
    old = cli_in_process(*args, "--machine", "amd-epyc-2c")
    assert old.returncode == 0 and old.stdout == result.stdout and "deprecated" in old.stderr


def test_options_that_do_not_apply_exit_2_with_one_line(cli_in_process):
    result = cli_in_process("predict", *MNIST, "--batch-size", "1", "--only-machine", "x", "--profiles", PROFILE)
    assert result.returncode == 2 and result.stderr.strip() == "crossover: error: --only-machine does not apply with " \
        "--model (they choose the toy model's series and fits)"
    both = cli_in_process("fit", "-q", "-v")
    assert both.returncode == 2 and len(both.stderr.strip().splitlines()) == 1 and "not allowed" in both.stderr
    bad = cli_in_process("list", "--format", "xml")
    assert bad.returncode == 2 and "invalid choice" in bad.stderr and len(bad.stderr.strip().splitlines()) == 1


# ------------------------------------------------------------------------------------------ formats
def test_markdown_and_csv_tables_parse_back():
    rows = [{"name": "a|b", "value": 1.23456789, "n": 3, "flag": True, "items": [1, 2]},
            {"name": "c", "value": None, "n": 12, "flag": False, "items": []}]
    md = markdown_table(rows).splitlines()
    assert md[0].split("|")[1].strip() == "name" and set(md[1]) <= set("|-: ")
    assert md[1].split("|")[2].endswith(":")  # numbers right-aligned
    assert [c.strip() for c in md[2].strip("|").split(" | ")] == ["a\\|b", "1.235", "3", "true", "[1,2]"]
    parsed = list(csv.DictReader(io.StringIO(csv_table(rows))))
    assert parsed[0] == {"name": "a|b", "value": "1.23456789", "n": "3", "flag": "true", "items": "[1,2]"}
    assert parsed[1]["value"] == ""
    out = io.StringIO()
    print_tables({"one": rows, "two": [{"x": 1}]}, "csv", out)
    merged = list(csv.DictReader(io.StringIO(out.getvalue())))
    assert [r["table"] for r in merged] == ["one", "one", "two"] and merged[2]["x"] == "1"
    out = io.StringIO()
    print_tables({"one": rows, "two": []}, "md", out)
    assert out.getvalue().startswith("### one\n\n| name") and "### two\n\n(none)" in out.getvalue()


def md_rows(text: str) -> list:
    lines = [line for line in text.splitlines() if line.startswith("|")]
    head = [c.strip() for c in lines[0].strip("|").split("|")]
    return [dict(zip(head, (c.strip() for c in line.strip("|").split("|")))) for line in lines[2:]]


@pytest.mark.parametrize("command", [
    ["list", "--results", QUICK, "--profiles", PROFILE],
    ["fit", "--results", QUICK, *FAST_FIT],
    ["predict", "--d-model", 128, "--n-layers", 128, "--batch-size", 1, "--results", QUICK, *FAST_FIT],
    ["predict", *MNIST, "--batch-size", "1,8", "--profiles", PROFILE],
], ids=["list", "fit", "predict", "predict-model"])
def test_format_md_csv_json_text(cli_in_process, command):
    as_json = cli_in_process(*command, "--format", "json")
    assert as_json.returncode == 0, as_json.stderr
    short = cli_in_process(*command, "--json")
    assert json.loads(short.stdout)["schema"] == json.loads(as_json.stdout)["schema"]
    as_csv = cli_in_process(*command, "--format", "csv")
    rows = list(csv.DictReader(io.StringIO(as_csv.stdout)))
    assert as_csv.returncode == 0 and rows, as_csv.stderr
    as_md = cli_in_process(*command, "--format", "md")
    assert as_md.returncode == 0 and md_rows(as_md.stdout)
    text = cli_in_process(*command)
    assert text.returncode == 0 and not text.stdout.startswith("|")
    if command[0] == "list":
        tables = {r["table"] for r in rows}
        assert {"machines", "series", "profiles"} <= tables
        assert {r["machine"] for r in rows if r["table"] == "machines"} == {"amd-epyc-2c"}
        assert "### series" in as_md.stdout


def test_compare_format_csv_and_fail_above(cli_in_process, tmp_path):
    from test_compare import write_run

    a, b = write_run(tmp_path / "a", 1.0, 1), write_run(tmp_path / "b", 1.2, 2)
    result = cli_in_process("compare", a, b, "--format", "csv", "--fail-above", 10)
    assert result.returncode == 1
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    assert len(rows) == 4 and {r["verdict"] for r in rows} == {"slower"} and float(rows[0]["ratio"]) > 1.1
    md = cli_in_process("compare", a, b, "--format", "md")
    assert md.returncode == 0 and len(md_rows(md.stdout)) == 4


# ------------------------------------------------------------------------------------- exit status 3
def test_an_internal_error_is_one_line_and_status_3_with_the_traceback_under_v(monkeypatch, capsys):
    import crossover.cli as cli_module
    from crossover.cli import main

    parser = cli_module.build_parser()
    monkeypatch.setattr(cli_module, "build_parser", lambda: parser)

    def broken(args):
        raise ZeroDivisionError("a bug")

    for action in parser._subparsers._group_actions[0].choices.values():
        action.set_defaults(func=broken)
    assert main(["list"]) == 3
    assert capsys.readouterr().err.strip().splitlines() == [
        "crossover: internal error: ZeroDivisionError: a bug (rerun with -v for the traceback)"]
    assert main(["list", "-v"]) == 3
    err = capsys.readouterr().err
    assert "Traceback (most recent call last)" in err and err.strip().endswith("(rerun with -v for the traceback)")
