"""The host allocator's state a CPU step is timed in: glibc's steady state, set on purpose.

glibc maps an allocation at or above its *mmap threshold* afresh and unmaps it on free, so every
call faults its pages in; below the threshold it reuses its heap. The threshold starts at 128 KiB and
rises to the size of the largest mapped block freed so far, up to 32 MiB. A long-running process
has freed such blocks long ago; a process that has just started has not, and a model's buffers
above 128 KiB fault in every step. On the 2-core VM at one thread the 1-D CNN's step at batch 64
took 5.3 ms with 2214 page faults per step in a fresh process, and 1.9 ms with none once one 31 MiB
block had been freed; the depthwise CNN's 5.4 and 2.3 ms (``experiments/bench_allocator.py``, its log
in ``experiments/results/amd-epyc-2c/logs/``). Which of the two a measurement saw depended on what
the process had measured before.

:func:`settle_allocator` frees one block just under the largest threshold before any timing, so
every measurement is of the long-running state, the one the predictions cost
(:data:`crossover.opcost.op_costs.FRESH_MIN_BYTES`: only buffers of 32 MiB or more fault).

Even settled, a buffer of 32 MiB or more is not always faulted in: glibc maps it afresh only when no
free block of its heap fits it, and the heap's free blocks are what the process freed before (the
step's own smaller buffers, coalesced; other work's), less what it trimmed (the free top past twice
the threshold). On the 2-core VM at one thread the depthwise CNN's step at batch 512 faulted 64-144 MiB
of its four 32 MiB buffers in five settled processes (51-83 ms) and 0-128 MiB in eight visits of one
process whose heap other work disturbed (27-80 ms); the encoder layer's, mostly larger, 512-640 of
704 MiB (``experiments/bench_allocator.py --processes``, ``--visits``). A prediction costs them all
(what a process running only that model pays) and its interval reaches down to the step without them
(:func:`crossover.opcost.module_predict.step_prediction`).

A buffer of 32 MiB is often one the model never names: oneDNN's blocked copy of a convolution's
activations, its channels padded to whole blocks (:func:`crossover.opcost.op_costs.onednn_copies`). And
buffers all under the threshold fault too when the heap's free top outgrows the trim threshold (twice the
mmap threshold) and glibc gives it back at a step's end: on the VM the separable 1-D model's step at batch
512 faulted a median 0 MiB a step in one settled process and 87 MiB in another
(``experiments/results/intel-xeon-2c/logs/bench_allocator_padded_1128x_t1.log``). Predictions do not
count such trims.
"""

from __future__ import annotations

import platform

__all__ = ["settle_allocator", "SETTLE_BYTES", "fresh_pages_fill", "NO_FRESH_PAGES_ENV", "no_fresh_pages_env"]

#: The block freed to raise glibc's mmap threshold: just under its 32 MiB ceiling
#: (``DEFAULT_MMAP_THRESHOLD_MAX``; a block freed above the ceiling leaves the threshold where it was).
SETTLE_BYTES = 31 * 2**20

#: glibc's environment that keeps a serving process's buffers on its heap, step after step: nothing mapped
#: afresh (``M_MMAP_MAX`` 0: large buffers come from the heap too) and nothing given back (a trim threshold
#: past any step's heap). In processes of their own on the 2-core VM at batch 512, one thread
#: (``experiments/results/intel-xeon-2c/logs/bench_allocator_nommap_1128x_t1.log``), the WaveNet-style block
#: faulted nothing and took 300 ms against 944-983 MiB a step and 739-775 ms by default; the depthwise CNN
#: 65 ms against 117-120; the encoder layer 776 ms against 1162-1207; each near its prediction without page
#: faults (343, 62.7 and 771 ms: ``predict_without_faults_1128x.log``). The heap then holds the step's largest
#: footprint for good.
NO_FRESH_PAGES_ENV = {"MALLOC_MMAP_MAX_": "0", "MALLOC_TRIM_THRESHOLD_": str(2**32)}


def no_fresh_pages_env() -> str:
    """:data:`NO_FRESH_PAGES_ENV` as a shell prefix (``MALLOC_MMAP_MAX_=0 MALLOC_TRIM_THRESHOLD_=...``)."""
    return " ".join(f"{k}={v}" for k, v in NO_FRESH_PAGES_ENV.items())


_SETTLED: list = []


def settle_allocator() -> bool:
    """Put glibc's allocator into a long-running process's state (see the module docstring), once
    per process.

    Returns
    -------
    bool
        True when it was done now; False on a C library other than glibc (whose allocator has no
        such threshold) or when already done.
    """
    if _SETTLED or platform.libc_ver()[0] != "glibc":
        return False
    import torch

    block = torch.empty(SETTLE_BYTES // 4, dtype=torch.float32)
    block.fill_(0.0)  # touched, so the block is really mapped before it is freed
    del block
    _SETTLED.append(True)
    return True


def fresh_pages_fill(n: int):
    """A call that fills ``n`` floats on anonymous pages mapped for it: what the kernel charges to fault a
    step's fresh buffer in, page by page (the calibration's ``fresh_fill`` primitive). ``torch.empty`` of
    the same size is not sure to: glibc serves it from the heap, faulting nothing, when earlier work left
    a free block that large (on the Intel VM that probe read no faults in two two-thread calibrations of
    1128m-n and half the usual in a third, while zoo steps of the same processes faulted 123-125 MiB a
    step). On a system without anonymous maps (Windows), the allocator's fresh block, faulted or not."""
    import mmap

    import torch

    if not hasattr(mmap, "MAP_ANONYMOUS"):
        return lambda: torch.empty(n).fill_(1.0)

    def fresh_fill():
        pages = mmap.mmap(-1, 4 * n, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
        tensor = torch.frombuffer(pages, dtype=torch.float32)
        tensor.fill_(1.0)
        del tensor  # the buffer is exported while a tensor views it
        pages.close()

    return fresh_fill
