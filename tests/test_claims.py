"""Claims, the rule of thumb, cost at stated prices and parameters against peaks, on synthetic
results whose answers are known by construction."""

import math

import numpy as np
import pandas as pd
import pytest

from crossover.analysis import claims as C
from crossover.paper import claims as PC
from crossover.errors import CrossoverError
from crossover.fit.latency_models import PARAMS
from crossover.fit.peaks import write_peaks

LAUNCH_S = 50e-6  # the GPU's time per layer while launch-bound: the known threshold
CPU_RATE, GPU_RATE = 100e9, 50e12
ROLES = {"Host": ("box", "cpu"), "Cuda": ("box", "cuda")}


def cpu_layer_s(d, b):
    return 5e-6 + 2 * b * d * d / CPU_RATE


def gpu_layer_s(d, b):
    return max(LAUNCH_S, 2 * b * d * d / GPU_RATE)


def frame_of(sizes, cpu=None, gpu=None, *, workload="forward", modes=("eager", "eager"), machine="box"):
    """Result rows of a CPU and a GPU at ``sizes``; latencies from ``cpu(d, L, b)``/``gpu(d, L, b)``."""
    cpu = cpu or (lambda d, L, b: L * cpu_layer_s(d, b))
    gpu = gpu or (lambda d, L, b: L * gpu_layer_s(d, b))
    rows = []
    for device, latency, mode in (("cpu", cpu, modes[0]), ("cuda", gpu, modes[1])):
        for d, L, b in sizes:
            rows.append(dict(machine=machine, device=device, device_name="Synthetic " + device, workload=workload,
                             mode=mode, dtype="float32", regime="latency", transfer="device",
                             threads=4 if device == "cpu" else 1, d_model=d, n_layers=L, batch_size=b,
                             params=L * d * d, status="ok", median_s=float(latency(d, L, b)), sweep="grid"))
    return pd.DataFrame(rows)


GRID = [(d, L, b) for d in (64, 128, 256, 512, 1024) for L in (4, 16, 128) for b in (1, 4, 16, 64, 256)]


def test_the_rule_recovers_the_known_threshold_and_scores_every_point():
    pairs = C.paired_points(frame_of(GRID), ROLES["Host"], ROLES["Cuda"])
    assert len(pairs) == len(GRID)
    rule = C.fit_threshold_rule(pairs)
    assert rule.low < LAUNCH_S < rule.high and rule.low < rule.threshold < rule.high
    assert (rule.correct, rule.loo_correct, rule.n) == (len(GRID), len(GRID), len(GRID))
    # the 500K-parameter rule's score, counted here from the sizes alone
    truth = [cpu_layer_s(d, b) > gpu_layer_s(d, b) for d, L, b in GRID]
    says = [not (L * d * d < 500_000 and b < 256) for d, L, b in GRID]
    expected = sum(t == s for t, s in zip(truth, says))
    assert 0 < expected < len(GRID)
    assert C.score(pairs, C.params_batch_rule(pairs))["correct"] == expected


def test_a_point_against_the_rule_is_listed_where_it_breaks():
    slow = (512, 16, 64)  # the CPU spends far more than 50 us per layer, but this GPU point is slow
    gpu = lambda d, L, b: L * gpu_layer_s(d, b) * (100 if (d, L, b) == slow else 1)  # noqa: E731
    pairs = C.paired_points(frame_of(GRID, gpu=gpu), ROLES["Host"], ROLES["Cuda"])
    rule = C.fit_threshold_rule(pairs)
    assert rule.correct == len(GRID) - 1 and rule.low < LAUNCH_S < rule.high
    wrong = C.score(pairs, rule.predict(pairs))["misclassified"]
    assert [tuple(r) for r in wrong[list(C.SIZES)].to_numpy()] == [slow]


def test_gpu_wins_everywhere_gives_threshold_zero():
    pairs = C.paired_points(frame_of(GRID, gpu=lambda d, L, b: 1e-7), ROLES["Host"], ROLES["Cuda"])
    rule = C.fit_threshold_rule(pairs)
    assert rule.threshold == 0 and rule.correct == len(GRID)


BATCHES = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048]


def batch_sweep(crossing):
    """CPU linear in the batch, GPU flat: the curves cross at ``crossing`` (None: GPU always faster)."""
    sizes = [(128, 128, b) for b in BATCHES]
    if crossing is None:
        return frame_of(sizes, cpu=lambda d, L, b: 1e-3, gpu=lambda d, L, b: 0.5e-3)
    return frame_of(sizes, cpu=lambda d, L, b: 1e-3 * (1 + b) / (1 + crossing), gpu=lambda d, L, b: 1e-3)


@pytest.mark.parametrize("crossing, verdict", [(64, C.REPRODUCED), (512, C.REFINED), (None, C.CONTRADICTED)])
def test_batch_claim_verdicts(crossing, verdict):
    result = {r.key: r for r in C.evaluate_claims(batch_sweep(crossing), ROLES["Host"], ROLES["Cuda"])}["batch"]
    assert result.verdict == verdict
    if crossing:
        assert result.numbers["crossing"][0] == pytest.approx(crossing)
        assert f"cross at batch {crossing}" in result.evidence()


def test_depth_fixed_mnist_and_rule_claims():
    depths = [(128, L, 1) for L in (128, 256, 512, 1024)]
    fixed = [(int(math.sqrt(2**31 / L)), L, 1) for L in (32, 128, 512, 2048, 8192)]
    small = [(64, 4, b) for b in (1, 16, 64, 512)]  # 16K parameters
    forward = frame_of(depths + fixed + small, cpu=lambda d, L, b: L * (1e-6 if d == 128 or L >= 2048 or d == 64 else 1.0),
                       gpu=lambda d, L, b: L * 1e-5)
    train = frame_of(small, workload="train", cpu=lambda d, L, b: 1e-4 * b, gpu=lambda d, L, b: 1e-2)
    found = {r.key: r for r in C.evaluate_claims(pd.concat([forward, train]), ROLES["Host"], ROLES["Cuda"])}
    assert found["depth"].verdict == C.REPRODUCED and found["depth"].numbers["k"][0] == 4
    assert found["fixed"].verdict == C.REPRODUCED and found["fixed"].numbers["first"][0] == 2048
    assert found["mnist"].verdict == C.REPRODUCED and found["mnist"].numbers["max_b"][0] == 64
    assert found["rule"].verdict == C.REFINED  # the CPU wins inside, and at points outside it too
    # the GPU faster at every depth: the depth claim is contradicted
    flipped = frame_of(depths, cpu=lambda d, L, b: 1.0, gpu=lambda d, L, b: 1e-3)
    depth = {r.key: r for r in C.evaluate_claims(flipped, ROLES["Host"], ROLES["Cuda"])}["depth"]
    assert depth.verdict == C.CONTRADICTED
    table = C.claims_table(pd.concat([forward, train]), ROLES["Host"], ROLES["Cuda"])
    assert list(table["claim"]) == list(C.CLAIMS) and set(table["best_verdict"]) == {C.NOT_MEASURED}


def test_claim_macros_are_latex():
    frame = batch_sweep(64)
    text = {m.name: m.text for m in PC.claim_macros(frame, ROLES)}
    assert text["ClaimBatchVerdict"] == C.REPRODUCED and text["ClaimBatchSource"] == "\\cite{chng}"
    assert "d\\_model" in text["ClaimBatchStatement"] and "$\\sim$64" in text["ClaimBatchStatement"]
    assert text["ClaimFixedStatement"].startswith("at a fixed $2^{31}$")
    assert text["ClaimBatchVmVerdict"] == C.NOT_MEASURED  # no VM in these results


def write_prices(path, gpu=10.0, cpu=1.0, source="a test", cpu_only=True, cores=None):
    """A prices file pricing the machine "box" at ``gpu`` an hour (and, with ``cpu_only``, its CPU alone at ``cpu``)."""
    text = f'["box"]\nname = "box machine"\nusd_per_hour = {gpu}\nsource = "{source}"\n' + (f"cores = {cores}\n" if cores else "")
    if cpu_only:
        text += f'\n["box".cpu_only]\nname = "cpu box"\nusd_per_hour = {cpu}\nsource = "{source}"\n'
    path.write_text(text)
    return path


def test_cost_reads_the_prices_file(tmp_path):
    frame = batch_sweep(64)
    prices = PC.read_prices(write_prices(tmp_path / "prices.toml", gpu=10.0, cpu=1.0))
    text = {m.name: m.text for m in PC.cost_macros(frame, ROLES, {}, prices)}
    assert text["PriceGpu"] == "\\$10.00/h" and text["PriceGpuName"] == "box machine"
    assert text["PriceCpu"] == "\\$1.00/h" and text["PriceCpuName"] == "cpu box"  # the host CPU as a CPU-only instance
    assert text["PriceVm"] == PC.NA  # no VM in these results
    # batch 1: the GPU takes 1 ms per sample at 10 $/h -> 1e6 * 1e-3 * 10 / 3600 = $2.78 per million
    assert text["CostCudaEagerOne"] == "\\$2.78"
    cheaper = {m.name: m.text for m in PC.cost_macros(frame, ROLES, {}, PC.read_prices(
        write_prices(tmp_path / "cheap.toml", gpu=1.0, cpu=1.0)))}
    assert cheaper["CostCudaEagerOne"] == "\\$0.278"
    # equal prices: equal cost where equal latency (batch 64); a 10x dearer GPU moves it to ~649
    assert float(cheaper["CostXoverEmpirical"]) == pytest.approx(64) and 500 < float(text["CostXoverEmpirical"]) < 800
    # without a CPU-only price, the host CPU costs its threads' share of the machine (4 of 8 cores)
    shared = {m.name: m.text for m in PC.cost_macros(frame, ROLES, {}, PC.read_prices(
        write_prices(tmp_path / "share.toml", gpu=10.0, cpu_only=False, cores=8)))}
    assert shared["PriceCpu"] == "\\$5.00/h" and shared["PriceCpuSource"].startswith("4/8 of a test")
    # a machine the file does not price: its roles' cost is n/a
    (tmp_path / "other.toml").write_text('["other"]\nusd_per_hour = 1\nsource = "x"\n')
    other = PC.read_prices(tmp_path / "other.toml")
    assert {m.name: m.text for m in PC.cost_macros(frame, ROLES, {}, other)}["PriceGpu"] == PC.NA
    (tmp_path / "bad.toml").write_text('["box"]\nusd_per_hour = -1\nsource = "x"\n')
    with pytest.raises(CrossoverError):
        PC.read_prices(tmp_path / "bad.toml")
    with pytest.raises(CrossoverError):
        PC.read_prices(write_prices(tmp_path / "nosource.toml", source=""))
    (tmp_path / "old.toml").write_text('gpu = 3.0\n')  # not a machine's table
    with pytest.raises(CrossoverError):
        PC.read_prices(tmp_path / "old.toml")


class _Fit:
    """A fit's parameters table, in display units (what check_parameters reads)."""

    def __init__(self, **si):
        self.rows = pd.DataFrame([dict(param=k, value=v * PARAMS[k].scale, unit=PARAMS[k].unit, low=np.nan,
                                       high=np.nan, identified=True) for k, v in si.items()])

    def parameters(self):
        return self.rows


def test_parameters_above_their_peak_are_flagged(tmp_path):
    write_peaks(tmp_path / "box", "box", {"cpu": dict(flops_per_s=100e9, cache_bytes_per_s=50e9, source="measured")})
    frame = batch_sweep(64).assign(results_dir=str(tmp_path / "box" / "run"))  # peaks.json lies beside the run
    fits = {"Host": _Fit(flops_per_s=300e9, cache_bytes_per_s=20e9), "Cuda": _Fit(flops_per_s=10e12)}
    text = {m.name: m.text for m in PC.peak_macros(frame, ROLES, fits)}
    assert text["HostRateCheck"] == "above peak" and text["HostCacheBandwidthCheck"] == "within peak"
    assert text["HostRatePeak"] == "100\\,GFLOP/s" and text["HostPeakSource"].startswith("measured")
    assert text["CudaRateCheck"] == "no peak known" and text["PeaksAbove"] == "1 of 3"
    table = PC.peaks_table(PC.peak_macros(frame, ROLES, fits))
    assert "\\HostRate & \\HostRatePeak & \\HostRateCheck" in table


def test_heldout_macros_without_heldout_sizes_say_so():
    text = {m.name: m.text for m in PC.heldout_macros(batch_sweep(64).assign(results_dir="r"), ("roofline",))}
    assert text["HeldoutAvailable"] == "0" and text["HeldoutMedian"] == PC.NA
