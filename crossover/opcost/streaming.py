"""Memory-bound ops in a step's stream of fresh buffers, on a CPU (pure).

A calibration times an elementwise op alone: called again and again on the same input and output,
whose bytes stay in the last-level cache up to its size. In a model's step an op reads what the op
before it just wrote and writes a buffer last touched several ops ago, so past the private caches
part of its bytes come from DRAM, whose bandwidth does not grow with threads as the shared cache's
does. On the 2-core VM (``experiments/bench_stream_context.py``, four processes in each of two runs;
its log in ``experiments/results/amd-epyc-2c/logs``), four ReLUs in a row over 16 MiB took 1.24-1.39
times the lone ReLU's time each at one thread and 0.97-1.89 times at two, while at 1 and 4 MiB they
took 0.8-1.1 times; the lone ReLU's own rate at two threads moved between the runs (134-179 GB/s over 16 MiB,
50-100 GB/s over 64 MiB): the VM shares its memory system, so the chain is timed in the calibration's
own rounds. In the 1-D CNN's batch-512 step at two threads its two ReLUs took 980-1095 µs against
383 predicted from the lone curve and 835 with the chain (``experiments/bench_op_breakdown.py``; its log
``bench_op_breakdown_conv1d_t2.log``).

The calibration's :data:`CHAIN_FAMILY` primitive times :data:`CHAIN_OPS` ReLUs in a row, each reading
the fresh output of the one before, at the plan's sizes from :data:`CHAIN_MIN_BYTES`;
:func:`stream_factor` is its time per op over the lone elementwise curve's at the same bytes (at least
1), and :func:`in_stream` costs a memory-bound op (one of
:data:`crossover.opcost.op_costs.MEMORY_FAMILIES`, whose time beyond the floor is memory traffic) at
least the lone ReLU's time at its bytes times that factor: a roofline whose bandwidth is the
stream's (an op quicker alone than the ReLU at its bytes: its own time plus the stream's extra). A
profile without the primitive (every calibration before it, and every GPU's) costs as before.
"""

from __future__ import annotations

from .profiles import Profile, log_between

__all__ = ["CHAIN_FAMILY", "CHAIN_OPS", "CHAIN_MIN_BYTES", "stream_factor", "stream_seconds", "in_stream"]

#: The calibration family of the chained ReLUs (a curve over one ReLU's bytes, seconds per ReLU).
CHAIN_FAMILY = "elementwise_chain"
#: ReLUs per call of the chain primitive.
CHAIN_OPS = 4
#: The smallest bytes (input and output of one ReLU) the chain is timed at; the factor fades to 1 at a
#: quarter of it. Within the private caches the CPU decides: on the AMD VM a ReLU over 1 MiB read alike
#: alone and after a multiply (the chain was timed from 2 MiB until 2026-11-27), on the Intel VM (2 MiB of
#: L2 a core) a ReLU of 512 KiB in and out took 11 µs alone and 25-30 µs after a multiply wrote its input
#: (``torch.relu(x * 1.5)`` against ``x * 1.5``, one thread, three processes), as the depthwise CNN's
#: ReLUs did in its step (95 µs against 35 predicted, batch 8, ``bench_op_breakdown.py``); the chain itself
#: read only 1.01-1.04 times the lone ReLU at 128 KiB and 1.01-1.08 at 512 KiB there (six sittings,
#: ``experiments/results/intel-xeon-2c/logs/*1127c*``): a ReLU after a ReLU is not what slows that step.
CHAIN_MIN_BYTES = 128 * 2**10
def stream_factor(profile: Profile, bytes_moved: float) -> float:
    """How much slower a memory-bound op moving ``bytes_moved`` runs in a step than alone on ``profile``:
    the chained ReLU's time over the lone elementwise curve's at those bytes, held at its value at the
    chain's largest size above it, fading in log scale to 1 from the smallest down to a quarter of it;
    1 where the profile has no chain (a GPU's, or a calibration from before the primitive)."""
    chain, alone = profile.curves.get(CHAIN_FAMILY), profile.curves.get("elementwise")
    if chain is None or alone is None or profile.device != "cpu" or bytes_moved <= 0:
        return 1.0
    x = min(max(bytes_moved, chain.x[0]), chain.x[-1])
    factor = max(chain(x) / alone(x), 1.0)
    if bytes_moved < chain.x[0]:
        return log_between(bytes_moved, chain.x[0] / 4, chain.x[0], 1.0, factor)
    return factor


def stream_seconds(profile: Profile, bytes_moved: float) -> float:
    """The seconds a step's stream takes to move ``bytes_moved`` through one memory-bound op on ``profile``:
    the lone elementwise curve's time at those bytes times :func:`stream_factor` (the chained ReLU's
    own time where the chain was timed at those bytes); 0 where the profile has no chain."""
    if CHAIN_FAMILY not in profile.curves or "elementwise" not in profile.curves or profile.device != "cpu":
        return 0.0
    return profile.curves["elementwise"](bytes_moved) * stream_factor(profile, bytes_moved)


def in_stream(profile: Profile, seconds: float, bytes_moved: float) -> float:
    """``seconds`` of one memory-bound op as a step runs it: at least :func:`stream_seconds`. A roofline
    with the stream's bandwidth: an op whose own kernel is slower than streaming its bytes (2×2
    max-pooling with indices, ~3 GB/s on the VM) is not slowed further. An op quicker than the lone ReLU
    at its bytes (its calibration, not the ReLU's, says what it costs alone) pays the stream's extra over
    the lone ReLU, ``alone · (factor - 1)``, on its own time; where the stream is no slower
    (:func:`stream_factor` is 1: small bytes, a profile without the chain) the op keeps its own time."""
    factor = stream_factor(profile, bytes_moved)
    if factor <= 1.0:
        return seconds
    alone = profile.curves["elementwise"](bytes_moved)
    # an op quicker than the lone ReLU at its bytes pays the stream's extra (continuous as the factor fades)
    return max(seconds, min(seconds, alone) + alone * (factor - 1.0))
