"""Sweep suites: TOML files that say which points to measure, validated into dataclasses.

A suite file looks like this (see ``experiments/suites/`` for real ones)::

    name = "quick"
    description = "A minute on a 2-core CPU; enough points on every axis to fit a model."
    devices = ["cpu"]                 # every point is measured on each of these

    [defaults]                        # DESIGN's anchor: what an axis is when it is not swept
    d_model = 128
    n_layers = 128
    batch_size = 1

    [timing]                          # crossover.measurement.timer.TimerOptions fields
    max_run_time_s = 0.5

    [limits]
    max_params = { cpu = 268435456 }  # larger points are recorded as skipped, with the reason

    [options]
    rounds = 3                        # every point 3 times, minutes apart, each round shuffled
    profile = false                   # also count operators/kernels per step
    seed = 0                          # the shuffled order is replayable from it (recorded per run)
    pair_by = ["device"]              # points differing only here are measured back to back
    reference_every = 10              # a drift reference per device before every 10 measurements

    [[sweep]]
    name = "batch_size"
    batch_size = [1, 4, 16, 64]       # a list is swept; several lists give their product

    [[sweep]]
    name = "threads"
    devices = ["cpu"]                 # only these of the suite's devices
    threads = [1, 2]

    [[sweep]]
    name = "fixed_params"
    rounds = 1                        # overrides [options] rounds for this sweep
    total_params = 2147483648         # d_model = sqrt(total_params / n_layers), must be exact
    n_layers = [128, 512, 2048]

Any :class:`crossover.measurement.toy_step.Config` field can be a default, a scalar in a sweep, or a list.
A point whose combination does not exist (``cudagraph`` or ``tf32`` on the CPU, a CUDA graph
capturing a pageable copy) is left out of the plan.
"""

from __future__ import annotations

import itertools
import math
import tomllib
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Optional, Union

from ..axes import DEVICES
from ..errors import ConfigError, SuiteError
from .toy_step import Config
from .timer import TimerOptions

__all__ = ["Suite", "Sweep", "SuiteError", "load_suite", "parse_suite", "PlannedPoint"]

CONFIG_FIELDS = tuple(f.name for f in fields(Config))
SWEEP_AXES = tuple(name for name in CONFIG_FIELDS if name != "device")
TOP_LEVEL_KEYS = {"name", "description", "devices", "defaults", "timing", "limits", "options", "sweep"}
LIMIT_KEYS = {"max_params", "max_flops"}
OPTION_KEYS = {"profile", "rounds", "seed", "pair_by", "reference_every"}
#: Config fields a suite may pair by (``device`` pairs a CPU with a GPU; ``threads`` two CPU series).
PAIRABLE = ("device", "threads", "mode", "dtype", "workload", "transfer", "regime")


@dataclass(frozen=True)
class Sweep:
    """One named sweep: axis name → tuple of values (scalars become 1-tuples)."""

    name: str
    axes: dict
    total_params: Optional[int] = None
    devices: Optional[tuple] = None  # restricts the suite's devices for this sweep
    rounds: Optional[int] = None  # overrides the suite's rounds (e.g. 1 for minute-long points)


@dataclass(frozen=True)
class PlannedPoint:
    """A point of the plan: the sweep that asked for it, its config, and its number of rounds."""

    sweep: str
    config: Config
    rounds: int = 1


@dataclass(frozen=True)
class Suite:
    """A validated suite. ``points()`` expands it into configs, each once."""

    name: str
    description: str
    devices: tuple
    defaults: dict
    timing: TimerOptions
    sweeps: tuple
    max_params: dict = field(default_factory=dict)  # device → params cap
    max_flops: dict = field(default_factory=dict)  # device → FLOPs-per-step cap
    profile: bool = False
    rounds: int = 1  # measure every point this many times, each round in a fresh shuffled order
    seed: int = 0  # seeds every round's shuffle (recorded with the run, so its order can be replayed)
    pair_by: tuple = ("device",)  # points differing only in these fields are measured back to back
    reference_every: int = 0  # a drift-reference measurement per device before every N points (0: once per round)

    def reference_configs(self, devices: Optional[tuple] = None) -> list:
        """The drift reference of each device: the suite's anchor sizes, eager forward float32, on
        that device (a cheap point whose only reason to change within a run is the machine)."""
        devices = tuple(devices) if devices is not None else self.devices
        sizes = {k: v for k, v in self.defaults.items() if k in ("d_model", "n_layers", "batch_size", "threads")}
        return [Config(**{**sizes, "device": device}) for device in devices]

    def points(self, devices: Optional[tuple] = None) -> list:
        """Every distinct point of the suite, in file order, for ``devices`` (default: the suite's)."""
        devices = tuple(devices) if devices is not None else self.devices
        seen = set()
        planned = []
        for sweep in self.sweeps:
            for device in devices:
                if sweep.devices is not None and device not in sweep.devices:
                    continue
                for config in _expand(sweep, self.defaults, device):
                    if config not in seen:
                        seen.add(config)
                        planned.append(PlannedPoint(sweep.name, config, sweep.rounds or self.rounds))
        return planned

    def cap_reason(self, config: Config) -> Optional[str]:
        """Why the suite's limits skip ``config``, or None."""
        cap = self.max_params.get(config.device)
        if cap is not None and config.params > cap:
            return f"over the suite's {config.device} cap max_params={cap:,} (has {config.params:,})"
        cap = self.max_flops.get(config.device)
        if cap is not None and config.flops > cap:
            return f"over the suite's {config.device} cap max_flops={cap:,} (has {config.flops:,})"
        return None


def _expand(sweep: Sweep, defaults: dict, device: str) -> list:
    axis_names = list(sweep.axes)
    configs = []
    for values in itertools.product(*(sweep.axes[name] for name in axis_names)):
        settings = {**defaults, **dict(zip(axis_names, values)), "device": device}
        if sweep.total_params is not None:
            n_layers = settings["n_layers"]
            if isinstance(n_layers, bool) or not isinstance(n_layers, int) or n_layers <= 0:
                raise SuiteError(f"sweep {sweep.name!r}: n_layers must be a positive integer, got {n_layers!r}")
            d_model = math.isqrt(sweep.total_params // n_layers)
            if d_model * d_model * n_layers != sweep.total_params:
                raise SuiteError(
                    f"sweep {sweep.name!r}: total_params={sweep.total_params} is not n_layers * d_model**2 "
                    f"for n_layers={n_layers}; pick n_layers that divide it into a square"
                )
            settings["d_model"] = d_model
        try:
            configs.append(Config(**settings))
        except ConfigError as exc:
            if _device_specific(exc):
                continue  # e.g. cudagraph on the CPU: not a point of that device
            raise SuiteError(f"sweep {sweep.name!r}: {exc}") from None
    return configs


def _device_specific(exc: ConfigError) -> bool:
    """Combinations that do not exist (on a device): left out of a product of axes, not an error."""
    text = str(exc)
    return "needs device 'cuda'" in text or "CUDA matmul mode" in text or "cannot capture" in text


def _as_tuple(name: str, value) -> tuple:
    values = tuple(value) if isinstance(value, list) else (value,)
    if not values:
        raise SuiteError(f"{name} is an empty list")
    return values


def parse_suite(data: dict, source: str = "<suite>") -> Suite:
    """Validate a suite given as a dict (parsed TOML) and return a :class:`Suite`."""

    def fail(message: str):
        raise SuiteError(f"{source}: {message}")

    unknown = set(data) - TOP_LEVEL_KEYS
    if unknown:
        fail(f"unknown key(s) {sorted(unknown)}; expected some of {sorted(TOP_LEVEL_KEYS)}")
    name = data.get("name")
    if not isinstance(name, str) or not name:
        fail("needs a 'name' string")
    devices = _as_tuple("devices", data.get("devices", ["cpu"]))
    for device in devices:
        if device not in DEVICES:
            fail(f"unknown device {device!r} in 'devices'; expected some of {DEVICES}")

    defaults = data.get("defaults", {})
    if not isinstance(defaults, dict):
        fail("[defaults] must be a table")
    bad = set(defaults) - set(SWEEP_AXES)
    if bad:
        fail(f"unknown key(s) {sorted(bad)} in [defaults]; expected some of {list(SWEEP_AXES)}")
    try:
        Config(**defaults)
    except (ConfigError, TypeError) as exc:
        fail(f"[defaults]: {exc}")

    timing_table = data.get("timing", {})
    valid_timing = {f.name for f in fields(TimerOptions)}
    if not isinstance(timing_table, dict) or set(timing_table) - valid_timing:
        fail(f"[timing] accepts only {sorted(valid_timing)}")
    try:
        timing = TimerOptions(**timing_table)
    except ValueError as exc:
        fail(f"[timing]: {exc}")

    limits = data.get("limits", {})
    if not isinstance(limits, dict) or set(limits) - LIMIT_KEYS:
        fail(f"[limits] accepts only {sorted(LIMIT_KEYS)}, each a table of device = number")
    caps = {}
    for key in LIMIT_KEYS:
        table = limits.get(key, {})
        if not isinstance(table, dict) or any(
            d not in DEVICES or isinstance(v, bool) or not isinstance(v, int) or v <= 0 for d, v in table.items()
        ):
            fail(f"[limits] {key} must map devices to positive integers, e.g. {{ cpu = 268435456 }}")
        caps[key] = dict(table)

    options = data.get("options", {})
    if not isinstance(options, dict) or set(options) - OPTION_KEYS:
        fail(f"[options] accepts only {sorted(OPTION_KEYS)}")
    profile = options.get("profile", False)
    if not isinstance(profile, bool):
        fail("[options] profile must be true or false")
    rounds = options.get("rounds", 1)
    if isinstance(rounds, bool) or not isinstance(rounds, int) or rounds < 1:
        fail("[options] rounds must be a positive integer")
    seed = options.get("seed", 0)
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        fail("[options] seed must be a non-negative integer")
    reference_every = options.get("reference_every", 0)
    if isinstance(reference_every, bool) or not isinstance(reference_every, int) or reference_every < 0:
        fail("[options] reference_every must be a non-negative integer (0: once per round)")
    pair_by = options.get("pair_by", ["device"])
    if isinstance(pair_by, str):
        pair_by = [pair_by]
    if not isinstance(pair_by, list) or any(name not in PAIRABLE for name in pair_by):
        fail(f"[options] pair_by must be a list of some of {list(PAIRABLE)}")

    raw_sweeps = data.get("sweep")
    if not isinstance(raw_sweeps, list) or not raw_sweeps:
        fail("needs at least one [[sweep]] table")
    sweeps = []
    for index, raw in enumerate(raw_sweeps):
        if not isinstance(raw, dict):
            fail(f"sweep #{index + 1} is not a table")
        sweep_name = raw.get("name")
        if not isinstance(sweep_name, str) or not sweep_name:
            fail(f"sweep #{index + 1} needs a 'name'")
        total_params = raw.get("total_params")
        sweep_devices = raw.get("devices")
        if sweep_devices is not None:
            sweep_devices = _as_tuple("devices", sweep_devices)
            if not set(sweep_devices) <= set(devices):
                fail(f"sweep {sweep_name!r}: devices {list(sweep_devices)} must be among the suite's {list(devices)}")
        axes = {}
        for key, value in raw.items():
            if key in ("name", "total_params", "devices", "rounds"):
                continue
            if key not in SWEEP_AXES:
                fail(f"sweep {sweep_name!r}: unknown axis {key!r}; expected some of {list(SWEEP_AXES)}")
            try:
                axes[key] = _as_tuple(key, value)
            except SuiteError as exc:
                fail(f"sweep {sweep_name!r}: {exc}")
        if total_params is not None:
            if isinstance(total_params, bool) or not isinstance(total_params, int) or total_params <= 0:
                fail(f"sweep {sweep_name!r}: total_params must be a positive integer")
            if "d_model" in axes:
                fail(f"sweep {sweep_name!r}: total_params sets d_model; do not give d_model too")
            if "n_layers" not in axes:
                fail(f"sweep {sweep_name!r}: total_params needs an n_layers list")
        sweep_rounds = raw.get("rounds")
        if sweep_rounds is not None and (isinstance(sweep_rounds, bool) or not isinstance(sweep_rounds, int) or sweep_rounds < 1):
            fail(f"sweep {sweep_name!r}: rounds must be a positive integer")
        sweeps.append(Sweep(sweep_name, axes, total_params, sweep_devices, sweep_rounds))

    suite = Suite(
        name=name,
        description=str(data.get("description", "")),
        devices=devices,
        defaults=dict(defaults),
        timing=timing,
        sweeps=tuple(sweeps),
        max_params=caps["max_params"],
        max_flops=caps["max_flops"],
        profile=profile,
        rounds=rounds,
        seed=seed,
        pair_by=tuple(pair_by),
        reference_every=reference_every,
    )
    try:
        suite.points()  # validates every combination now, not halfway through a sweep
    except (SuiteError, TypeError) as exc:
        fail(str(exc))
    return suite


def load_suite(path: Union[str, Path]) -> Suite:
    """Read and validate a suite TOML file.

    Raises
    ------
    SuiteError
        The file is missing, is not valid TOML, or is not a valid suite.
    """
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise SuiteError(f"suite file {path} does not exist") from None
    except IsADirectoryError:
        raise SuiteError(f"suite file {path} is a directory") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise SuiteError(f"{path} is not valid TOML: {exc}") from None
    return parse_suite(data, source=str(path))
