"""The built wheel (not the editable checkout): every subpackage is in it and imports, and it carries
the shipped results and profiles that ``crossover predict`` reads without ``--results``."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile

import pytest

from conftest import ROOT


@pytest.fixture(scope="module")
def unpacked_wheel(tmp_path_factory):
    """The wheel built from this checkout, unpacked into a folder put first on ``sys.path``."""
    out = tmp_path_factory.mktemp("wheel")
    # Built from a copy of the tracked files: setuptools builds in the source tree's build/, which two
    # test workers building at once (or a build/ left in the checkout) would share.
    source = out / "source"
    tracked = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    for name in filter(None, tracked.decode().split("\0")):
        if (ROOT / name).is_file():
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, source / name)
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                            "--wheel-dir", str(out), str(source)], capture_output=True, text=True)
    if built.returncode != 0:
        pytest.fail(f"pip wheel failed:\n{built.stderr[-2000:]}")
    (wheel,) = out.glob("crossover-*.whl")
    site = out / "site"
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(site)
    return site


def _subpackages() -> list:
    return sorted(".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "crossover").rglob("__init__.py"))


def test_every_subpackage_is_in_the_wheel_and_imports(unpacked_wheel):
    packages = _subpackages()
    assert len(packages) >= 8  # crossover, cli and the six concerns
    code = ("import importlib, sys\n"
            f"for name in {packages!r}:\n"
            "    module = importlib.import_module(name)\n"
            f"    assert module.__file__.startswith({str(unpacked_wheel)!r}), module.__file__\n"
            "from crossover.shipped_data import shipped_profiles_dir, shipped_results_dir\n"
            "print(shipped_results_dir(), shipped_profiles_dir())\n")
    env = dict(os.environ, PYTHONPATH=str(unpacked_wheel))
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=unpacked_wheel)
    assert run.returncode == 0, run.stderr[-2000:]
    results, profiles = run.stdout.split()
    assert results.startswith(str(unpacked_wheel)) and profiles.startswith(str(unpacked_wheel))
    assert any((unpacked_wheel / "crossover" / "shipped_profiles").rglob("calibration.csv.gz"))
    assert any((unpacked_wheel / "crossover" / "shipped_results").rglob("results.csv"))


def test_the_wheel_carries_the_prices_and_the_json_schemas(unpacked_wheel):
    """advise reads the prices and validates against its schema outside the repository too; every
    --json layout's schema is there."""
    code = ("from crossover.results.prices import read_prices\n"
            "from crossover.analysis.advice import SCHEMA_FILE\n"
            "import json\n"
            "print(sorted(read_prices()), json.loads(SCHEMA_FILE.read_text())['properties']['schema']['const']['name'])\n")
    env = dict(os.environ, PYTHONPATH=str(unpacked_wheel))
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=unpacked_wheel)
    assert run.returncode == 0, run.stderr[-2000:]
    assert "nvidia-h200-16c" in run.stdout and "crossover.advise" in run.stdout
    # ... and the JSON Schema of every --json layout
    shipped = {p.name for p in (unpacked_wheel / "crossover" / "schemas").glob("*.schema.json")}
    assert shipped == {p.name for p in (ROOT / "crossover" / "schemas").glob("*.schema.json")} and len(shipped) > 10
