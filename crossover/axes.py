"""The values each configuration axis can take (no heavy imports: the CLI's --help stays fast)."""

#: Where a step runs.
DEVICES = ("cpu", "cuda")
#: Inference forward pass, or a full training step (forward + loss + backward + SGD update).
WORKLOADS = ("forward", "train")
#: Eager PyTorch, ``torch.compile``, or a captured CUDA graph replayed (CUDA only).
MODES = ("eager", "compile", "cudagraph")
#: ``tf32`` keeps float32 storage and lets CUDA matmuls use TF32 tensor cores; ``bfloat16`` and
#: ``float16`` are native (weights and activations stored in that dtype), not autocast.
DTYPES = ("float32", "tf32", "bfloat16", "float16")
#: Bytes of one stored element of each dtype (``tf32`` stores float32): the memory traffic of a
#: configuration (:attr:`crossover.measurement.toy_step.Config.bytes`) and the latency models' bandwidth terms.
BYTES_PER_ELEMENT = {"float32": 4, "tf32": 4, "bfloat16": 2, "float16": 2}
#: ``device``: the input already lives on the device; ``pageable``/``pinned``: each step copies it
#: from (pageable or pinned) host memory first.
TRANSFERS = ("device", "pageable", "pinned")
#: ``latency``: synchronise after every call; ``throughput``: once per block of calls.
REGIMES = ("latency", "throughput")
#: Shuffled interleaved rounds of short visits when timing a user's model (``crossover measure --model``).
DEFAULT_ROUNDS = 30
