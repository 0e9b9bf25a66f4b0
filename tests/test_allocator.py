"""The host allocator a CPU step is timed in (crossover.measurement.allocator): glibc's long-running state.

Each check runs in a fresh process, since the state is what a process has allocated before."""

import platform
import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="glibc's mmap threshold only")

_FAULTS = """
import resource, sys, torch
torch.set_num_threads(1)
{before}
x = torch.randn(64, 8, 256)
w = torch.randn(32, 8, 5)

def step():  # a 1-D convolution at batch 64: 2 MiB buffers, above glibc's first mmap threshold of 128 KiB
    with torch.no_grad():
        return torch.nn.functional.conv1d(x, w, None, 1, 2)

for _ in range(5):
    step()
start = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(20):
    step()
print((resource.getrusage(resource.RUSAGE_SELF).ru_minflt - start) / 20)
"""


def faults_per_step(before: str) -> float:
    run = subprocess.run([sys.executable, "-c", _FAULTS.format(before=before)], capture_output=True, text=True,
                         timeout=120, check=True)
    return float(run.stdout.split()[-1])


def test_a_fresh_process_faults_its_buffers_in_every_step_and_a_settled_one_does_not():
    # 2 MiB of fresh pages is 512 faults: a fresh process pays several such buffers every step
    assert faults_per_step("") > 256
    settled = "from crossover.measurement.allocator import settle_allocator\nassert settle_allocator()\n" \
              "assert not settle_allocator()  # once per process"
    assert faults_per_step(settled) < 16


def test_measuring_rounds_settles_the_allocator_first():
    rounds = ("from crossover.measurement.module_rounds import measure_rounds\n"
              "from crossover.measurement.timer import TimerOptions\n"
              "measure_rounds([('noop', lambda: None)], rounds=1, options=TimerOptions(warmup_s=0.0, min_warmup_calls=1, "
              "min_repeats=2, min_run_time_s=0.0, max_run_time_s=0.001, target_rel_ci=0.0, min_block_s=0.0))")
    assert faults_per_step(rounds) < 16


def test_each_visit_records_the_bytes_its_step_faults_in():
    """A step that allocates 40 MiB afresh (above glibc's largest mmap threshold) and touches it faults
    about 40 MiB in every call; one that writes into a kept buffer faults none. Each visit of
    measure_rounds records that, and summarise_rounds gives the visits' median."""
    import torch

    from crossover.measurement.module_rounds import ROUND_OPTIONS, measure_rounds, summarise_rounds

    kept = torch.empty(40 * 2**20 // 4).fill_(0.0)  # touched: its pages are in before any visit
    steps = [("fresh", lambda: torch.empty(40 * 2**20 // 4).fill_(1.0)), ("kept", lambda: kept.fill_(1.0))]
    rows = measure_rounds(steps, rounds=5, options=ROUND_OPTIONS)  # the median visit: a stray fault is not the step
    fresh = summarise_rounds([r for r in rows if r["key"] == "fresh"])["faulted_bytes"]
    assert 0.9 * 40 * 2**20 <= fresh <= 1.1 * 40 * 2**20
    assert summarise_rounds([r for r in rows if r["key"] == "kept"])["faulted_bytes"] < 2**20


def test_the_page_fault_probe_faults_its_pages_in_whatever_the_heap_holds():
    """The calibration's ``fresh_fill`` faults its 4 MiB in at every call in a process whose heap keeps
    blocks that large (where ``torch.empty`` of the same size is served from the heap and faults at most about
    half of it: under half alone, under the parallel test run's load 512 of 1024 pages once, 28 November)."""
    probe = ("from crossover.measurement.allocator import fresh_pages_fill\n"
             "import ctypes\n"
             "libc = ctypes.CDLL('libc.so.6')\n"
             "libc.mallopt(-3, 64 * 2**20)  # M_MMAP_THRESHOLD above the probe: torch.empty stays on the heap\n"
             "libc.mallopt(-1, 256 * 2**20)  # M_TRIM_THRESHOLD: and the heap keeps its free top\n"
             "kept = torch.empty(2**21); del kept\n"
             "fill = fresh_pages_fill(2**20)\n"
             "heap = lambda: torch.empty(2**20).fill_(1.0)\n"
             "fill(); heap()\n"
             "mode = sys.argv[1] if len(sys.argv) > 1 else 'fresh'\n")
    code = _FAULTS.format(before=probe).replace(
        "def step():", "def step_():").replace("for _ in range(5):\n    step()", "step = fill if mode == 'fresh' else heap")
    pages = 2**22 // 4096
    fresh = subprocess.run([sys.executable, "-c", code, "fresh"], capture_output=True, text=True, timeout=120, check=True)
    heap = subprocess.run([sys.executable, "-c", code, "heap"], capture_output=True, text=True, timeout=120, check=True)
    assert float(fresh.stdout.split()[-1]) > 0.9 * pages
    assert float(heap.stdout.split()[-1]) < 0.75 * pages
