"""Any model's step costed op by op: trace it, calibrate a device's primitives, add up the costs.

================  ====================================================================
module            what it holds
================  ====================================================================
trace             one step of an nn.Module traced into ATen ops (FakeTensor, FLOP counts)
trace_state       what a traced step holds between steps; the gradient copies eager autograd skips
calibration_plan  what a calibration measures: the primitives of each plan
calibrate         running a calibration into a profile directory
profiles          a device's calibration profile: loading, finding, synthetic ones
op_costs          one traced op's cost on a profile (pure)
streaming         a CPU step's memory-bound ops at the rate its stream of fresh buffers moves them (pure)
activations       a CPU's activation functions (tanh, GELU, ...) costed by primitives of their own
thread_wake       a CPU's parallel ops after serial work: which open a region, what waking the threads costs
fused_layers      a CPU's fused inference layers (attention, encoder layer) timed whole against their kernels
reference_models  the generic models whose whole steps fit the composition (two) and set its interval (four)
composition       the composition terms fitted on the reference models, the interval from their errors
module_predict    a module's step latency per device, and where devices cross
================  ====================================================================
"""

from ..lazy_exports import lazy_exports

#: Public name → the module of this package that defines it (imported on first use).
_EXPORTS = {
    "trace_module": "trace",
    "trace_batches": "trace",
    "Profile": "profiles",
    "load_profile": "profiles",
    "load_profiles": "profiles",
    "synthetic_profile": "profiles",
    "run_calibration": "calibrate",
    "op_cost": "op_costs",
    "predict_module": "module_predict",
}
__all__ = list(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
