"""The reference study's choices: which machine is the host, and the roles built on it."""

import pandas as pd

from crossover.analysis.reference_study import BASELINE, assign_roles, baseline_rows, host_machine


def _frame(rows):
    """One baseline row per (machine, device, size index) in ``rows``: {(machine, device): count}."""
    return pd.DataFrame([dict(BASELINE, machine=m, device=d, threads=4, d_model=64, n_layers=i + 1, batch_size=1)
                         for (m, d), n in rows.items() for i in range(n)])


def test_the_host_is_the_machine_with_both_cpu_and_gpu():
    frame = _frame({("vm", "cpu"): 5, ("gpu-only", "cuda"): 9, ("box", "cpu"): 4, ("box", "cuda"): 4})
    assert host_machine(frame) == "box"
    roles = assign_roles(frame)
    # the host's CPU and GPU are Host and Cuda even though another GPU machine sorts first by name
    assert roles["Host"] == ("box", "cpu") and roles["Cuda"] == ("box", "cuda")
    assert roles["CudaB"] == ("gpu-only", "cuda") and roles["Vm"] == ("vm", "cpu") and "HostB" not in roles


def test_with_two_hosts_the_one_with_more_baseline_rows_wins_whatever_the_frame():
    frame = _frame({("a-box", "cpu"): 3, ("a-box", "cuda"): 3, ("b-box", "cpu"): 6, ("b-box", "cuda"): 6})
    # rows outside the baseline (another mode) do not count: a-box has the most rows, b-box the most baseline ones
    other = _frame({("a-box", "cpu"): 10}).assign(mode="compile")
    frame = pd.concat([frame, other], ignore_index=True)
    assert host_machine(frame) == host_machine(baseline_rows(frame)) == "b-box"
    roles = assign_roles(frame)
    assert roles["Host"] == ("b-box", "cpu") and roles["HostB"] == ("a-box", "cpu")
    tie = _frame({("b-box", "cpu"): 2, ("b-box", "cuda"): 2, ("a-box", "cpu"): 2, ("a-box", "cuda"): 2})
    assert host_machine(tie) == "a-box"  # a tie goes to the first by name


def test_no_host_without_a_machine_measuring_both():
    assert host_machine(_frame({("vm", "cpu"): 3, ("gpu-only", "cuda"): 3})) is None
    assert assign_roles(_frame({("vm", "cpu"): 3, ("gpu-only", "cuda"): 3})) == {"Vm": ("vm", "cpu"),
                                                                                "Cuda": ("gpu-only", "cuda")}
