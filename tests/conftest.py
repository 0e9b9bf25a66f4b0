import os
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]

requires_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")


def load_experiment(name: str):
    """The script ``experiments/<name>.py`` loaded as a module (the experiments are not a package)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, ROOT / "experiments" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run_cli(*args, env=None, timeout=300):
    """Run ``python -m crossover ARGS`` in a subprocess; return the CompletedProcess."""
    import subprocess

    full_env = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "crossover", *map(str, args)],
        capture_output=True,
        text=True,
        env=full_env,
        timeout=timeout,
        cwd=ROOT,
    )


@pytest.fixture
def cli():
    return run_cli


@pytest.fixture
def cli_in_process(capsys):
    """``crossover ARGS`` in this process (faster than a subprocess): returncode, stdout, stderr."""
    from types import SimpleNamespace

    from crossover.cli import main

    def run(*args):
        status = main([str(a) for a in args])
        out, err = capsys.readouterr()
        return SimpleNamespace(returncode=status, stdout=out, stderr=err)

    return run


@pytest.fixture
def cpu_hog():
    """A busy-loop process on every core this process may use (another user's job); always killed."""
    import subprocess
    import time

    processes = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(len(os.sched_getaffinity(0)))]
    try:
        time.sleep(0.3)  # let them get going
        yield processes
    finally:
        for process in processes:
            process.kill()
        for process in processes:
            process.wait(timeout=10)


@pytest.fixture(autouse=True, scope="session")
def _private_fit_cache(tmp_path_factory):
    """Fits cached by the tests go to a directory of this session's (subprocesses inherit it)."""
    previous = os.environ.get("CROSSOVER_CACHE_DIR")
    os.environ["CROSSOVER_CACHE_DIR"] = str(tmp_path_factory.mktemp("fit-cache"))
    yield
    if previous is None:
        os.environ.pop("CROSSOVER_CACHE_DIR", None)
    else:
        os.environ["CROSSOVER_CACHE_DIR"] = previous


def pytest_collection_modifyitems(config, items):
    """A test that starts a CPU hog watches the CPU: it runs with the serial tests, alone."""
    import pytest

    for item in items:
        if "cpu_hog" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.serial)


def validate_json(data: dict) -> dict:
    """Check a ``--json`` output against the JSON Schema its ``schema`` names (shipped in
    crossover/schemas/); return ``data``. Skips where jsonschema is not installed."""
    import json

    jsonschema = pytest.importorskip("jsonschema")
    from crossover.jsonable import check_stamp, schema_file

    tag = check_stamp(data)
    path = schema_file(tag)
    assert path.is_file(), f"no schema file {path.name} for {tag}"
    schema = json.loads(path.read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["properties"]["schema"]["const"] == tag, f"{path.name} describes another layout or version"
    jsonschema.validate(data, schema, cls=jsonschema.Draft202012Validator)
    return data
