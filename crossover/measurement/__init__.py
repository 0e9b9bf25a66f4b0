"""Measuring: the timer, the toy model, sweeps of suites, the noise floor, the machine's state.

=============  ====================================================================
module         what it holds
=============  ====================================================================
timer          one step timed correctly (warm-up, sync, adaptive repeats, regimes)
toy_model      the residual-MLP toy
toy_counts     its exact parameter, FLOP and byte counts (no torch)
toy_step       one configuration of the toy: build, make its step, measure it
suites         suite TOML files validated into points
sweep          running a suite: shuffled paired rounds, resume, drift references
module_rounds  any nn.Module timed in shuffled interleaved rounds
user_module    the user's model: a factory from a file, a sample shape
noise          the machine's noise floor: one run's estimate against another's
noise_file     reading noise.json (no torch: fit and predict quote it)
machine_load   competing load and thread oversubscription, before and during a run
procfs         /proc, cgroup and cpufreq readings
environment    the environment record: machine label, CPU, GPU, versions, threads, hardware
torch_install  the installed torch's version and build, read without importing it
fleet          a suite on many nodes with submitit: jobs, their status, resubmission
fleet_targets  targets (partitions, node kinds) from TOML into submitit's parameters
fleet_job      one fleet job on its node: each step, its record (job.json)
=============  ====================================================================
"""

from ..lazy_exports import lazy_exports

#: Public name → the module of this package that defines it (imported on first use).
_EXPORTS = {
    "time_step": "timer",
    "TimerOptions": "timer",
    "Timing": "timer",
    "ResidualMLP": "toy_model",
    "Config": "toy_step",
    "measure": "toy_step",
    "load_suite": "suites",
    "run_suite": "sweep",
    "measure_module": "module_rounds",
    "measure_rounds": "module_rounds",
    "load_factory": "user_module",
    "machine_label": "environment",
    "cuda_available": "environment",
    "check_machine": "machine_load",
    "run_fleet": "fleet",
    "fleet_status": "fleet",
}
__all__ = list(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
