"""Public claims about CPU against GPU, tested on paired measurements, and a rule of thumb scored on
every paired point.

A *paired point* is one size (``d_model``, ``n_layers``, ``batch_size``) that a CPU and a GPU both
measured in the same setting (:func:`paired_points`): the CPU and GPU of one machine, or the CPU of
one machine against the GPU of another, paired by size. On those points:

- :func:`evaluate_claims` tests the claims of the toy model's origin (Chng 2024: along batch size,
  ``d_model``, ``n_layers`` and at a fixed 2^31 parameters) and of the MNIST-MLP articles
  (indepth.dev: training a ~100K-parameter MLP is faster on a CPU; "under ~500K parameters and batch
  under 256, a fast CPU wins"), each with a verdict (:data:`VERDICTS`) and the numbers behind it;
- :func:`fit_threshold_rule` fits the rule "the GPU wins iff the CPU spends more than X per layer"
  (the X that classifies the most points) and :func:`score` scores any rule, such as
  :func:`params_batch_rule` (the 500K-parameter rule), listing the points it gets wrong.

What the verdicts mean (stated with the numbers, so a reader can disagree with the threshold):
a claimed parity point (a size up to which the CPU keeps pace) is *reproduced* when it lies inside the
measurement's own interval of the crossing, with the CPU faster below: the range of the crossings of the
paired rounds where the two devices were measured in paired rounds (:func:`measured_interval`), else the
two measured sizes between which the curves cross (what a grid resolves); *refined* when the curves cross
outside that interval (or not in the measured range) with the CPU faster below; *contradicted* when the
GPU is faster already at the smallest size. A claim about who wins over a set of sizes is
reproduced where the data agree at every size, contradicted where they disagree at every size (or
where the claim's own sizes disagree), refined in between. ``not measured``: too few paired points.

Pure computation on a results frame (:func:`crossover.results.store.load_results`); no file I/O.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Optional, Sequence

import numpy as np
import pandas as pd

from .crossovers import curve_crossings
from .reference_study import ANCHOR, baseline_rows
from ..results.columns import SIZE_COLUMNS
from ..units import format_quantity, format_seconds

__all__ = ["VERDICTS", "CLAIMS", "measured_interval", "mnist_zoo_claim", "SIZES", "ClaimResult", "ThresholdRule", "paired_points",
           "evaluate_claims", "claims_table", "fit_threshold_rule", "params_batch_rule", "score",
           "best_mode_summary", "format_plain", "render_template"]

REPRODUCED, REFINED, CONTRADICTED, NOT_MEASURED = "reproduced", "refined", "contradicted", "not measured"
VERDICTS = (REPRODUCED, REFINED, CONTRADICTED, NOT_MEASURED)
SIZES = SIZE_COLUMNS
#: The sizes each claim is about, as its source states them (REFERENCES.md).
FIXED_PARAMS = 2**31
MNIST_PARAMS = 101_770  # 784*128 + 128 + 128*10 + 10: the articles' MLP
MNIST_BATCH = 32
RULE_PARAMS = 500_000
RULE_BATCH = 256
#: Claim key -> (source's cite key, statement template; the numbers come from :func:`_claim_numbers`).
CLAIMS = {
    "batch": ("chng", "at d_model {d}, n_layers {L}, the CPU keeps pace up to batch ~{claimed}; "
                      "above it the CPU's time grows while the GPU's stays flat"),
    "dmodel": ("chng", "at batch 1, n_layers {L}, CPU and GPU are about equal up to d_model ~{claimed}"),
    "depth": ("chng", "at d_model {d}, batch 1, the GPU is no faster than the CPU at any depth"),
    "fixed": ("chng", "at a fixed {params} parameters, the GPU is faster except at the deepest configurations"),
    "mnist": ("indepth-mnist", "training a ~{params}-parameter MLP (batch {batch}) is faster on the CPU"),
    "rule": ("indepth-bigger", "under ~{params} parameters and batch under {batch}, a fast CPU wins"),
}


@dataclass(frozen=True)
class ClaimResult:
    """A claim's verdict on one pair of devices: ``numbers`` (name -> (value, kind); kind ``n`` a
    count or size, ``s`` seconds, ``x`` a ratio, ``%``, ``pow2`` a power of two, ``text``) fill the ``evidence`` template."""

    key: str
    verdict: str
    evidence_template: str = ""
    numbers: dict = field(default_factory=dict)

    def evidence(self, fmt: Optional[Callable] = None) -> str:
        """The evidence as text (``fmt(value, kind)`` formats each number; plain text by default)."""
        return render_template(self.evidence_template, self.numbers, fmt or format_plain)

    def statement(self, fmt: Optional[Callable] = None) -> str:
        """The claim as its source states it, numbers formatted by ``fmt``."""
        return render_template(CLAIMS[self.key][1], _claim_numbers(self.key), fmt or format_plain)


def format_plain(value, kind: str) -> str:
    """A number of a claim's evidence as plain text (see :class:`ClaimResult`)."""
    if kind == "text":
        return str(value)
    if kind == "pow2":
        return f"2^{int(np.log2(value))}"
    if value is None or not np.isfinite(value):
        return "n/a"
    if kind == "s":
        return format_seconds(value)
    if kind == "x":
        return f"{value:.2g}x" if value < 10 else f"{value:.0f}x"
    if kind == "%":
        return format_quantity(value, "%")
    return f"{value:,.0f}" if float(value) == round(value) else f"{value:.3g}"


def render_template(template: str, numbers: dict, fmt: Callable) -> str:
    """``template`` with each ``{name}`` replaced by ``fmt(*numbers[name])``."""
    return template.format(**{k: fmt(*v) for k, v in numbers.items()})


def _claim_numbers(key: str) -> dict:
    n = {"d": (ANCHOR["d_model"], "n"), "L": (ANCHOR["n_layers"], "n")}
    n.update({"batch": dict(claimed=(64, "n")), "dmodel": dict(claimed=(512, "n")),
              "fixed": dict(params=(FIXED_PARAMS, "pow2")), "mnist": dict(params=(100_000, "n"), batch=(MNIST_BATCH, "n")),
              "rule": dict(params=(RULE_PARAMS, "n"), batch=(RULE_BATCH, "n"))}.get(key, {}))
    return n


# ----------------------------------------------------------------------------------- paired points
def paired_points(frame: pd.DataFrame, cpu: tuple, gpu: tuple, *, cpu_mode: str = "eager", gpu_mode: str = "eager",
                  workload: str = "forward", column: str = "median_s") -> pd.DataFrame:
    """Every size both devices measured in the paper's baseline setting (``workload`` and the modes
    as given; each device at its usual thread count, :func:`crossover.analysis.reference_study.baseline_rows`).

    Parameters
    ----------
    frame : pandas.DataFrame
        Results (rounds combined); a size measured by several sweeps counts once (their median).
    cpu, gpu : (machine, device)
        The two series; they may come from different machines (paired by size).
    cpu_mode, gpu_mode : str
        Execution modes (``"compile"`` and ``"cudagraph"``: each device in its fastest mode).
    column : str
        The latency statistic.

    Returns
    -------
    pandas.DataFrame
        d_model, n_layers, batch_size, params, cpu_s, gpu_s, cpu_per_layer_s, gpu_per_layer_s,
        speedup (``cpu_s / gpu_s``: above 1 the GPU is faster), gpu_wins; sorted by size.
    """
    curves = []
    for (machine, device), mode in ((cpu, cpu_mode), (gpu, gpu_mode)):
        rows = baseline_rows(frame, mode=mode, workload=workload) if len(frame) else frame
        if len(rows):
            rows = rows[(rows["machine"] == machine) & (rows["device"] == device)]
            if "status" in rows:
                rows = rows[rows["status"] == "ok"]
        curves.append(rows.groupby(list(SIZES))[column].median() if len(rows) else pd.Series(dtype=float))
    out = pd.concat([curves[0].rename("cpu_s"), curves[1].rename("gpu_s")], axis=1, join="inner").dropna()
    columns = [*SIZES, "params", "cpu_s", "gpu_s", "cpu_per_layer_s", "gpu_per_layer_s", "speedup", "gpu_wins"]
    if out.empty:
        return pd.DataFrame(columns=columns)
    out = out.reset_index()
    out["params"] = out["n_layers"] * out["d_model"] ** 2
    out["cpu_per_layer_s"] = out["cpu_s"] / out["n_layers"]
    out["gpu_per_layer_s"] = out["gpu_s"] / out["n_layers"]
    out["speedup"] = out["cpu_s"] / out["gpu_s"]
    out["gpu_wins"] = out["gpu_s"] < out["cpu_s"]
    return out[columns].sort_values(list(SIZES)).reset_index(drop=True)


def _along(pairs: pd.DataFrame, axis: str, **fixed) -> pd.DataFrame:
    mask = np.ones(len(pairs), bool)
    for name, value in fixed.items():
        mask &= (pairs[name] == value).to_numpy()
    return pairs[mask].sort_values(axis).set_index(axis)


# ------------------------------------------------------------------------------------------ claims
def measured_interval(curve: pd.DataFrame, crossing: float, rounds_range: Optional[tuple] = None) -> tuple:
    """The interval a measurement places its crossing in: ``rounds_range`` (the smallest and largest of
    the paired rounds' own crossings) where given and finite, else the two measured sizes of ``curve``'s
    index between which the curves cross (the crossing itself where it falls on a measured size)."""
    if rounds_range is not None and all(v is not None and np.isfinite(v) for v in rounds_range):
        return float(rounds_range[0]), float(rounds_range[1])
    sizes = np.asarray(curve.index, float)
    below, above = sizes[sizes <= crossing], sizes[sizes >= crossing]
    return (float(below.max()) if len(below) else float(crossing)), (float(above.min()) if len(above) else float(crossing))


def _parity(key: str, curve: pd.DataFrame, claimed: float, axis_label: str,
            rounds_range: Optional[tuple] = None) -> ClaimResult:
    """A claimed parity point along ``curve``'s index (see the module docstring); ``rounds_range``: the
    paired rounds' smallest and largest crossing, where the devices were measured in paired rounds."""
    if len(curve) < 2:
        return ClaimResult(key, NOT_MEASURED)
    lo, hi = curve.index.min(), curve.index.max()
    numbers = dict(lo=(lo, "n"), hi=(hi, "n"), claimed=(claimed, "n"), axis=(axis_label, "text"),
                   gpu_span=(curve["gpu_s"].max() / curve["gpu_s"].min(), "x"),
                   cpu_span=(curve["cpu_s"].max() / curve["cpu_s"].min(), "x"),
                   first_ratio=(curve["speedup"].iloc[0], "x"), first_adv=(1 / curve["speedup"].iloc[0], "x"))
    if curve["gpu_wins"].iloc[0]:
        return ClaimResult(key, CONTRADICTED, "the GPU is faster already at {axis} {lo} ({first_ratio})", numbers)
    roots = curve_crossings(curve["cpu_s"], curve["gpu_s"])
    spans = "; over {axis} {lo}--{hi} the GPU's time varies {gpu_span}, the CPU's {cpu_span}"
    if not roots:
        return ClaimResult(key, REFINED, "no crossing: the CPU is faster up to {axis} {hi}" + spans, numbers)
    low, high = measured_interval(curve, roots[0], rounds_range)
    numbers.update(crossing=(roots[0], "n"), n_crossings=(len(roots), "n"), iv_lo=(low, "n"), iv_hi=(high, "n"))
    text = "curves cross at {axis} {crossing}" + (" (first of {n_crossings} crossings)" if len(roots) > 1 else "")
    text += (" (paired rounds: {iv_lo}--{iv_hi})" if rounds_range is not None and np.isfinite(rounds_range[0])
             else " (between measured {axis} {iv_lo} and {iv_hi})")
    text += "; CPU {first_adv} faster at {axis} {lo}" + spans
    return ClaimResult(key, REPRODUCED if low <= claimed <= high else REFINED, text, numbers)


def _who_wins(key: str, curve: pd.DataFrame, claim_cpu_wins: bool, axis_label: str, *,
              require: Optional[pd.Series] = None) -> ClaimResult:
    """A claim that one device wins at every size of ``curve`` (``claim_cpu_wins``: the CPU)."""
    if len(curve) < 2:
        return ClaimResult(key, NOT_MEASURED)
    agree = ~curve["gpu_wins"] if claim_cpu_wins else curve["gpu_wins"]
    numbers = dict(k=(int(agree.sum()), "n"), n=(len(curve), "n"), lo=(curve.index.min(), "n"),
                   hi=(curve.index.max(), "n"), axis=(axis_label, "text"),
                   ratio_lo=(float((1 / curve["speedup"]).min()), "x"), ratio_hi=(float((1 / curve["speedup"]).max()), "x"))
    text = ("CPU faster at {k} of {n} {axis} values ({lo}--{hi}); GPU time / CPU time "
            "{ratio_lo}--{ratio_hi}")
    verdict = REPRODUCED if agree.all() else CONTRADICTED if not agree.any() else REFINED
    return ClaimResult(key, verdict, text, numbers)


def _fixed(curve: pd.DataFrame) -> ClaimResult:
    """GPU faster except at the deepest configurations (``curve`` indexed by n_layers)."""
    if len(curve) < 2:
        return ClaimResult("fixed", NOT_MEASURED)
    cpu_wins = ~curve["gpu_wins"].to_numpy()
    numbers = dict(n=(len(curve), "n"), lo=(curve.index.min(), "n"), hi=(curve.index.max(), "n"),
                   shallow=(curve["speedup"].iloc[0], "x"))
    if not cpu_wins.any():
        return ClaimResult("fixed", REFINED, "GPU faster at all {n} depths ({lo}--{hi}); {shallow} at {lo} layers", numbers)
    first = int(np.argmax(cpu_wins))
    numbers.update(first=(curve.index[first], "n"), d=(curve["d_model"].iloc[first], "n"),
                   ratio=(1 / curve["speedup"].iloc[first], "x"))
    if cpu_wins[0]:
        return ClaimResult("fixed", CONTRADICTED, "CPU faster already at the shallowest ({lo} layers)", numbers)
    suffix = cpu_wins[first:].all()
    text = ("depths {lo}--{hi}: GPU {shallow} faster at {lo} layers; CPU faster from {first} layers "
            "(d_model {d}; GPU time / CPU time {ratio})")
    return ClaimResult("fixed", REPRODUCED if suffix else REFINED, text, numbers)


def _mnist(train: pd.DataFrame) -> ClaimResult:
    """Training the smallest model measured, at batches up to twice the claim's."""
    if train.empty:
        return ClaimResult("mnist", NOT_MEASURED)
    smallest = train[train["params"] == train["params"].min()].sort_values("batch_size")
    near = smallest[smallest["batch_size"] <= 2 * MNIST_BATCH]
    if near.empty:
        return ClaimResult("mnist", NOT_MEASURED)
    cpu_wins = ~near["gpu_wins"]
    every = smallest[~smallest["gpu_wins"]]
    numbers = dict(params=(int(smallest["params"].iloc[0]), "n"), k=(int(cpu_wins.sum()), "n"), n=(len(near), "n"),
                   b=(near["batch_size"].max(), "n"), ratio=(1 / near["speedup"].iloc[-1], "x"),
                   max_b=(every["batch_size"].max() if len(every) else np.nan, "n"),
                   claimed=(MNIST_PARAMS, "n"))
    text = ("smallest model trained: {params} parameters; CPU faster at {k} of {n} batches up to {b} "
            "(GPU time / CPU time {ratio} at {b}); the largest batch the CPU wins: {max_b}")
    verdict = REPRODUCED if cpu_wins.all() else CONTRADICTED if not cpu_wins.any() else REFINED
    return ClaimResult("mnist", verdict, text, numbers)


def mnist_zoo_claim(points: pd.DataFrame) -> ClaimResult:
    """The MNIST claim on the MNIST MLP itself: its training step measured on both devices at a few batch
    sizes (``points``: ``batch_size``, ``cpu_s``, ``gpu_s``, ``gpu_wins``, as
    :func:`crossover.analysis.launch_rule.zoo_points` gives them for that model). The claim's batch is
    judged by the measured batches around it: reproduced where the CPU wins at both, contradicted where
    the GPU does, refined where they disagree (or only one side was measured)."""
    if points is None or points.empty:
        return ClaimResult("mnist", NOT_MEASURED)
    points = points.sort_values("batch_size")
    below = points[points["batch_size"] <= MNIST_BATCH].tail(1)
    above = points[points["batch_size"] >= MNIST_BATCH].head(1)
    around = pd.concat([below, above]).drop_duplicates("batch_size")
    cpu_wins = ~around["gpu_wins"].astype(bool)
    numbers = dict(params=(MNIST_PARAMS, "n"), batches=(", ".join(str(int(b)) for b in around["batch_size"]), "text"),
                   ratios=(", ".join(f"{g / c:.2g}" for g, c in zip(around["gpu_s"], around["cpu_s"])), "text"),
                   k=(int((~points["gpu_wins"].astype(bool)).sum()), "n"), n=(len(points), "n"))
    text = ("the MNIST MLP itself ({params} parameters), training step: GPU time / CPU time {ratios} at batch "
            "{batches} (around the claim's); the CPU faster at {k} of {n} batches measured")
    verdict = (REPRODUCED if cpu_wins.all() and len(around) == 2 else CONTRADICTED if not cpu_wins.any()
               else REFINED)
    return ClaimResult("mnist", verdict, text, numbers)


def _rule500k(pairs: pd.DataFrame) -> ClaimResult:
    if pairs.empty:
        return ClaimResult("rule", NOT_MEASURED)
    inside = (pairs["params"] < RULE_PARAMS) & (pairs["batch_size"] < RULE_BATCH)
    result = score(pairs, params_batch_rule(pairs))
    outside_cpu = pairs[~inside & ~pairs["gpu_wins"]]
    numbers = dict(n_in=(int(inside.sum()), "n"), k_in=(int((inside & ~pairs["gpu_wins"]).sum()), "n"),
                   correct=(result["correct"], "n"), n=(result["n"], "n"), out=(len(outside_cpu), "n"),
                   n_out=(int((~inside).sum()), "n"),
                   max_params=(outside_cpu["params"].max() if len(outside_cpu) else np.nan, "n"))
    text = ("CPU faster at {k_in} of {n_in} points inside; as a rule it classifies {correct} of {n} points "
            "(CPU faster at {out} of {n_out} points outside" + (", up to {max_params} parameters)" if len(outside_cpu) else ")"))
    if not inside.any():
        return ClaimResult("rule", NOT_MEASURED, text, numbers)
    if (pairs.loc[inside, "gpu_wins"]).any():
        return ClaimResult("rule", CONTRADICTED, text, numbers)
    return ClaimResult("rule", REPRODUCED if result["correct"] >= 0.9 * result["n"] else REFINED, text, numbers)


def evaluate_claims(frame: pd.DataFrame, cpu: tuple, gpu: tuple, *, cpu_mode: str = "eager",
                    gpu_mode: str = "eager", column: str = "median_s", rounds_ranges: Optional[dict] = None) -> list:
    """Every claim of :data:`CLAIMS` tested on the paired points of ``cpu`` and ``gpu`` (see
    :func:`paired_points`; forward passes, and training steps for the MNIST claim). ``rounds_ranges``:
    axis (``"batch_size"``, ``"d_model"``) -> the smallest and largest crossing of the paired rounds
    along it at the claim's sizes, where the two devices were measured in paired rounds.

    Returns
    -------
    list of ClaimResult
        In the order of :data:`CLAIMS`.
    """
    kw = dict(cpu_mode=cpu_mode, gpu_mode=gpu_mode, column=column)
    pairs = paired_points(frame, cpu, gpu, **kw)
    train = paired_points(frame, cpu, gpu, workload="train", **kw)
    d, L = ANCHOR["d_model"], ANCHOR["n_layers"]
    fixed = pairs[(pairs["params"] == FIXED_PARAMS) & (pairs["batch_size"] == 1)].sort_values("n_layers")
    return [
        _parity("batch", _along(pairs, "batch_size", d_model=d, n_layers=L), _claim_numbers("batch")["claimed"][0], "batch",
                (rounds_ranges or {}).get("batch_size")),
        _parity("dmodel", _along(pairs, "d_model", batch_size=1, n_layers=L), _claim_numbers("dmodel")["claimed"][0],
                "d_model", (rounds_ranges or {}).get("d_model")),
        _who_wins("depth", _along(pairs, "n_layers", d_model=d, batch_size=1), True, "depth"),
        _fixed(fixed.set_index("n_layers")),
        _mnist(train),
        _rule500k(pairs),
    ]


def claims_table(frame: pd.DataFrame, cpu: tuple, gpu: tuple, *, best_modes: Sequence = ("compile", "cudagraph"),
                 column: str = "median_s") -> pd.DataFrame:
    """The claims with their verdicts, eager and with each device in ``best_modes`` (CPU, GPU), as
    plain text: claim, source, statement, verdict, evidence, best_verdict, best_evidence."""
    eager = evaluate_claims(frame, cpu, gpu, column=column)
    best = evaluate_claims(frame, cpu, gpu, cpu_mode=best_modes[0], gpu_mode=best_modes[1], column=column)
    return pd.DataFrame([dict(claim=e.key, source=CLAIMS[e.key][0], statement=e.statement(), verdict=e.verdict,
                              evidence=e.evidence(), best_verdict=b.verdict, best_evidence=b.evidence())
                         for e, b in zip(eager, best)])


# ------------------------------------------------------------------------------------ rules of thumb
@dataclass(frozen=True)
class ThresholdRule:
    """"The GPU wins iff ``column`` exceeds ``threshold``", fitted to paired points.

    ``low``/``high`` bound the thresholds that score the same (the largest value classified as a CPU
    win and the smallest as a GPU win); ``threshold`` is their geometric mean, 0 where calling the
    GPU the winner everywhere scores best (``low`` 0), inf where calling the CPU does (``high`` inf). ``correct`` of ``n`` points are classified right on the
    points it was fitted to, ``loo_correct`` when each point is classified by the rule fitted without
    it (leave one out).
    """

    column: str
    threshold: float
    low: float
    high: float
    correct: int
    n: int
    loo_correct: int

    def predict(self, pairs: pd.DataFrame) -> np.ndarray:
        """Whether the rule says the GPU wins at each paired point."""
        return pairs[self.column].to_numpy(float) > self.threshold


def _best_threshold(values: np.ndarray, gpu_wins: np.ndarray) -> tuple:
    """(threshold, low, high, correct) maximising right calls of ``values > threshold``. Candidates:
    below every value (the GPU always: threshold 0), above every value (the CPU always: inf), and
    each gap between neighbouring values (its geometric middle); among equal scores the widest gap
    (in log) wins, a gap before either extreme."""
    order = np.unique(values)
    candidates = [(0.0, 0.0, order[0], -1.0), (np.inf, order[-1], np.inf, -1.0)]
    candidates += [(float(np.sqrt(a * b)), a, b, float(np.log(b / a))) for a, b in zip(order[:-1], order[1:])]
    best = None
    for t, low, high, gap in candidates:
        correct = int(((values > t) == gpu_wins).sum())
        if best is None or (correct, gap) > best[0]:
            best = ((correct, gap), (t, float(low), float(high), correct))
    return best[1]


def fit_threshold_rule(pairs: pd.DataFrame, column: str = "cpu_per_layer_s") -> ThresholdRule:
    """Fit "the GPU wins iff ``column`` > X" to paired points (:func:`paired_points`).

    X is the threshold that classifies the most points (ties: the widest gap between neighbouring
    values, X at its geometric middle); see :class:`ThresholdRule`.
    """
    values = pairs[column].to_numpy(float)
    wins = pairs["gpu_wins"].to_numpy(bool)
    if not len(values):
        return ThresholdRule(column, np.nan, np.nan, np.nan, 0, 0, 0)
    t, low, high, correct = _best_threshold(values, wins)
    loo = 0
    for i in range(len(values)):
        keep = np.arange(len(values)) != i
        if keep.any():
            t_i = _best_threshold(values[keep], wins[keep])[0]
            loo += int((values[i] > t_i) == wins[i])
    return ThresholdRule(column, float(t), float(low), float(high), correct, len(values), loo)


def params_batch_rule(pairs: pd.DataFrame, max_params: float = RULE_PARAMS, max_batch: float = RULE_BATCH) -> np.ndarray:
    """The articles' rule: the CPU wins under ``max_params`` parameters and batch under ``max_batch``,
    the GPU elsewhere. Returns whether it says the GPU wins at each paired point."""
    return ~((pairs["params"].to_numpy() < max_params) & (pairs["batch_size"].to_numpy() < max_batch))


def score(pairs: pd.DataFrame, gpu_wins_predicted) -> dict:
    """How a rule does on paired points: ``correct``, ``n`` and ``misclassified`` (the points it gets
    wrong, with the sizes, both latencies and the CPU's time per layer)."""
    predicted = np.asarray(gpu_wins_predicted, bool)
    right = predicted == pairs["gpu_wins"].to_numpy(bool)
    return dict(correct=int(right.sum()), n=len(pairs), misclassified=pairs[~right].reset_index(drop=True))


def best_mode_summary(frame: pd.DataFrame, cpu: tuple, gpu: tuple, *, large_batch: int = RULE_BATCH,
                      best_modes: Sequence = ("compile", "cudagraph"), column: str = "median_s") -> dict:
    """Eager and best-mode (``best_modes``: CPU, GPU) latencies along the batch sweep at the anchor's
    ``d_model`` and ``n_layers``: ``batch1`` (cpu_s, gpu_s per mode), ``large`` (min and max GPU
    speed-up at batch >= ``large_batch`` per mode), ``gpu_wins``/``n`` over every best-mode pair."""
    out = {}
    for name, modes in (("eager", ("eager", "eager")), ("best", tuple(best_modes))):
        pairs = paired_points(frame, cpu, gpu, cpu_mode=modes[0], gpu_mode=modes[1], column=column)
        curve = _along(pairs, "batch_size", d_model=ANCHOR["d_model"], n_layers=ANCHOR["n_layers"])
        one = curve.loc[1] if 1 in curve.index else None
        big = curve[curve.index >= large_batch]
        out[name] = dict(cpu_s=np.nan if one is None else float(one["cpu_s"]),
                         gpu_s=np.nan if one is None else float(one["gpu_s"]),
                         large_low=float(big["speedup"].min()) if len(big) else np.nan,
                         large_high=float(big["speedup"].max()) if len(big) else np.nan,
                         large_n=len(big), gpu_wins=int(pairs["gpu_wins"].sum()), n=len(pairs))
    return out
