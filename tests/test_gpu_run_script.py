"""The GPU run script fits the device tool's 10-minute command limit with room for the machine's start."""

import re
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "experiments" / "gpu_run.sh"


def test_the_stage_limits_add_up_to_less_than_one_device_command():
    text = SCRIPT.read_text()
    limits = {name: int(limit) for name, limit in re.findall(r"^\s*stage ([a-z0-9-]+) (\d+) ", text, re.M)}
    assert {"paired", "calibrate-cuda", "calibrate-cpu", "zoo", "calibrate-cpu-1t", "cuda-tests"} <= set(limits)
    assert sum(limits.values()) <= 590  # a device command may run 600 s
    stated = re.search(r"below, (\d+) s in all", text)
    assert stated and int(stated.group(1)) == sum(limits.values())  # the header says what the stages add up to
