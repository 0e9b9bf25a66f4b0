"""The GPU run script fits the device tool's 10-minute command limit with room for the machine's start."""

import os
import re
import subprocess
import time
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "experiments" / "gpu_run.sh"


def test_the_run_keeps_a_deadline_inside_one_device_command():
    text = SCRIPT.read_text()
    limits = {name: int(limit) for name, limit in re.findall(r"^\s*stage ([a-z0-9-]+) (\d+) ", text, re.M)}
    assert {"paired", "calibrate-cuda", "calibrate-cpu", "zoo", "calibrate-cpu-1t", "cuda-tests"} <= set(limits)
    deadline_s = int(re.search(r"DEADLINE_S=\$\{DEADLINE_S:-(\d+)\}", text).group(1))
    assert deadline_s <= 570  # a device command may run 600 s; the summary and the last stage's stop need a few
    order = list(limits)
    assert order.index("cuda-tests") < order.index("calibrate-cpu-1t")  # the tests before the diagnostics
    # every stage through the one-thread zoo fits the deadline at its full limit, each 3 s past it (the
    # fourth visit's stages overran by 1-3 s while they wrote what they had), less the last stop's 12 s
    through = order[:order.index("zoo-cpu-1t") + 1]
    assert sum(limits[n] for n in through) + 3 * len(through) <= deadline_s - 12


def test_stages_are_cut_to_the_deadline_and_skipped_past_it(tmp_path):
    fake_python = tmp_path / "python"
    fake_python.write_text("#!/bin/sh\nsleep 2\n")  # every stage: 2 s, no CUDA
    fake_python.chmod(0o755)
    out = tmp_path / "out"
    env = dict(os.environ, PYTHON=str(fake_python), OUT=str(out), DEADLINE_S="30", TMPDIR=str(tmp_path))
    start = time.monotonic()
    run = subprocess.run(["bash", str(SCRIPT)], env=env, capture_output=True, text=True, timeout=120)
    elapsed_s = time.monotonic() - start
    assert run.returncode == 0, run.stderr
    summary = (out / "summary.md").read_text()
    assert re.search(r"\| env \| ok \|", summary)
    assert re.search(r"\| calibrate-cpu \| ok \|", summary)
    assert "| cuda-tests | skipped: no CUDA on this machine |" in summary
    skipped = re.findall(r"\| ([a-z0-9-]+) \| skipped: the run's 30 s deadline \|", summary)
    assert skipped and "cpu-step-profile" in skipped  # the last CPU stage had no time left
    assert elapsed_s < 30
