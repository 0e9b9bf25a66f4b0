"""The paper's macros, computed from small synthetic results whose numbers are known."""

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import optimize

from crossover import analysis as A
from crossover.paper import numbers as P
from crossover.results.store import ResultsWriter, raw_times_to_text

ROOT = Path(__file__).resolve().parents[1]
HOST = dict(step_s=20e-6, layer_s=15e-6, flops_per_s=200e9, bytes_per_s=40e9)
CUDA = dict(step_s=100e-6, layer_s=40e-6, flops_per_s=50e12, bytes_per_s=2e12)
VM = dict(step_s=30e-6, layer_s=25e-6, flops_per_s=80e9, bytes_per_s=20e9)


def _sizes():
    points = {(128, 128, b, "batch_size") for b in (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048)}
    points |= {(d, 128, 1, "d_model") for d in (64, 128, 256, 512, 1024, 2048)}
    points |= {(128, n, 1, "n_layers") for n in (16, 32, 64, 256, 512)}
    points |= {(d, n, b, "map") for d in (64, 256) for n in (8, 32) for b in (1, 16, 128)}
    return sorted(points)


def _write(directory, machine, devices, seed, slow_round=1.0, *, paired=False, only=None, n_rounds=2):
    """Two rounds per point; round 1 ``slow_round`` times slower (a slow spell of a shared machine).
    ``paired``: rows carry their place in the plan (``sequence``), as a paired suite writes them;
    ``only``: that sweep alone; ``n_rounds``: rounds per point."""
    rng = np.random.default_rng(seed)
    sequence = iter(range(10**6))
    writer = ResultsWriter(directory, f"run{seed}", {"machine": machine, "torch": "2.13.0+cpu",
                                                      "date_utc": "2026-01-02T03:04:05+00:00",
                                                      "cpu_model": "Synthetic CPU", "cpu_usable_cores": 4,
                                                      "gpu_name": "Synthetic GPU" if "cuda" in devices else None})
    for device, params in devices.items():
        rows = [(d, n, b, s, "eager", params) for d, n, b, s in _sizes() if only in (None, s)]
        if only is None:
            rows.append((128, 128, 1, "mode", "cudagraph" if device == "cuda" else "compile",
                         {**params, "layer_s": params["layer_s"] / 4}))
        for d, n, b, sweep, mode, true_params in rows:
            for rnd in range(n_rounds):
                true = float(A.model_latency_s("roofline", true_params, d, n, b))
                raw = true * np.exp(0.01 * rng.standard_normal(9)) * (slow_round if rnd else 1.0)
                flops, nbytes = A.step_counts(d, n, b)
                writer.append(dict(
                    machine=machine, device=device, sweep=sweep, workload="forward", mode=mode, dtype="float32",
                    regime="latency", transfer="device", threads=4, threads_requested=4, round=rnd,
                    d_model=d, n_layers=n, batch_size=b, params=n * d * d, flops=int(flops), bytes=int(nbytes),
                    status="ok", median_s=float(np.median(raw)), compile_s=1.5 if mode == "compile" else np.nan,
                    iqr_s=float(np.subtract(*np.percentile(raw, [75, 25]))), raw_times_s=raw_times_to_text(raw),
                    **({"sequence": next(sequence)} if paired else {})))


@pytest.fixture(scope="module")
def macros(tmp_path_factory):
    root = tmp_path_factory.mktemp("results")
    _write(root / "synth-gpu", "synth-gpu", {"cpu": HOST, "cuda": CUDA}, seed=1)
    _write(root / "synth-vm", "synth-vm", {"cpu": VM}, seed=2)
    found = P.compute_macros([root], n_boot=12, seed=0, jobs=1, models=("roofline",))
    return {m.name: m.text for m in found}, found, root


def _value(text):
    """The first number in a macro's text (thin-space groups removed)."""
    return float(re.search(r"[-\d.]+", text.replace("\\,", "")).group(0))


def test_formatting():
    assert P.format_number(25.7049) == "25.7"
    assert P.format_number(0.0123456) == "0.0123"
    assert P.format_number(2097152, 7) == "2\\,097\\,152"
    assert P.format_number(128) == "128" and P.format_number(1085.2, 4) == "1085"
    assert P.format_number(float("nan")) == P.NA
    assert P.format_quantity(25.7e-6, "s") == "25.7\\,\\ensuremath{\\mu}s"
    assert P.format_quantity(7.56e-3, "s") == "7.56\\,ms"
    assert P.format_quantity(66800, "GFLOP/s") == "66.8\\,TFLOP/s"
    assert P.format_interval(217.0, 354.3) == "[217, 354]"


def test_known_crossover_and_parameters(macros):
    text, _, _ = macros

    def log_ratio(b):
        cpu = A.model_latency_s("roofline", HOST, 128, 128, b)
        gpu = A.model_latency_s("roofline", CUDA, 128, 128, b)
        return float(np.log(cpu / gpu))

    true_batch = optimize.brentq(log_ratio, 1, 2048)
    assert 4 < true_batch < 1000  # the design puts it inside the sweep
    assert _value(text["XoverBatch"]) == pytest.approx(true_batch, rel=0.1)
    low, high = (float(v) for v in re.findall(r"[\d.]+", text["XoverBatchCI"].replace("\\,", "")))
    assert low <= _value(text["XoverBatch"]) <= high
    assert text["XoverBatchNever"] == "0\\,\\%"
    assert text["XoverBatchBelow"] == "CPU" and text["XoverBatchAbove"] == "GPU"
    assert _value(text["HostPerLayer"]) == pytest.approx(HOST["layer_s"] * 1e6, rel=0.1)
    assert _value(text["CudaPerLayer"]) == pytest.approx(CUDA["layer_s"] * 1e6, rel=0.1)
    assert _value(text["VmRate"]) == pytest.approx(VM["flops_per_s"] * 1e-9, rel=0.15)
    assert text["HostModel"] == "\\texttt{roofline}"


def test_counts_modes_and_metadata(macros):
    text, _, _ = macros
    n = len({(d, n, b) for d, n, b, _ in _sizes()}) + 1  # sweeps share the anchor; one mode point
    assert text["NumMachines"] == "2"
    assert text["NumPoints"] == str(3 * n) and int(text["NumMeasurements"]) >= 3 * n * 2
    assert text["HostPoints"] == str(n) and text["VmMaxRounds"] == "2"
    assert text["VmTorch"] == "2.13.0+cpu" and text["CudaDate"] == "2026-01-02"
    assert text["CudaGpuName"] == "Synthetic GPU" and text["VmCores"] == "4"
    # eager / cudagraph at the anchor: a quarter of the per-layer time
    eager = A.model_latency_s("roofline", CUDA, 128, 128, 1)
    graph = A.model_latency_s("roofline", {**CUDA, "layer_s": CUDA["layer_s"] / 4}, 128, 128, 1)
    assert _value(text["CudaGraphSpeedup"]) == pytest.approx(eager / graph, rel=0.05)
    assert _value(text["HostCompileTime"]) == pytest.approx(1.5)
    assert text["SweepBatchMax"] == "2048" and text["FixedParams"] == P.NA


def test_macro_file_is_valid_and_covers_the_paper(macros, tmp_path):
    _, found, root = macros
    paths = P.write(found, tmp_path / "numbers.tex", str(root))
    body = paths[0].read_text()
    names = re.findall(r"\\newcommand\{\\([A-Za-z]+)\}", body)
    assert len(names) == len(set(names)) == len(found)
    assert not re.search(r"\bnan\b|\binf\b", body, re.IGNORECASE)
    paper = (ROOT / "paper" / "paper.tex").read_text()
    defined_in_paper = set(re.findall(r"\\newcommand\{\\([A-Za-z]+)\}", paper))
    used = set(re.findall(r"\\([A-Z][A-Za-z]+)", paper)) - defined_in_paper - {"IfFileExists", "PackageError"}
    for table in paths[1:]:
        used |= set(re.findall(r"\\([A-Z][A-Za-z]+)", table.read_text()))
    assert used <= set(names), f"paper uses undefined macros: {sorted(used - set(names))}"
    with pytest.raises(ValueError):
        P.render([P.Macro("Twice", "1"), P.Macro("Twice", "2")])
    with pytest.raises(ValueError):
        P.render([P.Macro("Bad", "nan")])


def test_missing_gpu_still_defines_every_role(tmp_path):
    _write(tmp_path / "only-vm", "only-vm", {"cpu": VM}, seed=3)
    text = {m.name: m.text for m in P.compute_macros([tmp_path], n_boot=0, models=("roofline",))}
    assert text["CudaPerLayer"] == P.NA and text["XoverBatch"] == P.NA and text["HostMachine"] == P.NA
    assert text["VmPerLayer"] != P.NA


def test_cli_writes_the_files(tmp_path, capsys):
    _write(tmp_path / "r" / "m", "m", {"cpu": VM}, seed=4)
    out = tmp_path / "gen" / "numbers.tex"
    assert P.main(["--results", str(tmp_path / "r"), "--out", str(out), "--n-boot", "0", "--jobs", "1"]) == 0
    assert out.exists() and (out.parent / "parameters.tex").exists() and (out.parent / "accuracy.tex").exists()
    assert P.main(["--results", str(tmp_path / "nowhere"), "--out", str(out)]) == 2
    assert "paper_numbers:" in capsys.readouterr().err


def test_graph_outlier_is_the_slowest_cuda_graph_point():
    import pandas as pd

    base = dict(machine="gpu-box", device="cuda", mode="cudagraph", d_model=P.ANCHOR["d_model"],
                n_layers=P.ANCHOR["n_layers"], **{k: v for k, v in P.BASELINE.items()
                                                  if k not in ("mode", "d_model", "n_layers")})
    latencies = {1: 1e-3, 4: 1.2e-3, 16: 7e-3, 64: 1.4e-3}
    frame = pd.DataFrame([dict(base, batch_size=b, median_s=t, device_busy_s=0.9 * t) for b, t in latencies.items()])
    values = {m.name: m.text for m in P._graph_outlier_macros(frame, {"Cuda": ("gpu-box", "cuda")})}
    assert values["GraphOutlierBatch"] == "16"
    assert _value(values["GraphOutlierRatio"]) == pytest.approx(7e-3 / 1.2e-3, rel=0.01)
    assert _value(values["GraphOutlierOthers"]) == pytest.approx(1.2, rel=0.01)  # 1.2 ms, in ms
    assert all(v == P.NA for v in (m.text for m in P._graph_outlier_macros(frame, {})))


def test_quiet_and_gemm_macros(macros):
    text, _, _ = macros

    def log_ratio(b):
        return float(np.log(A.model_latency_s("roofline", HOST, 128, 128, b)
                            / A.model_latency_s("roofline", CUDA, 128, 128, b)))

    # 1% noise: the 10th percentile sits ~1% under the median on both devices, the crossover stays
    assert _value(text["XoverQuietBatch"]) == pytest.approx(optimize.brentq(log_ratio, 1, 2048), rel=0.1)
    assert text["HostQuietModel"] == "\\texttt{roofline}"
    assert _value(text["HostQuietCvMape"]) < 5
    # the gemm candidates join the fits that only had "roofline": CV picks a roofline either way
    assert text["HostGemmModel"].startswith("\\texttt{roofline")
    assert _value(text["XoverGemmBatch"]) == pytest.approx(_value(text["XoverBatch"]), rel=0.2)


def test_run_to_run_compares_two_runs_of_one_machine(tmp_path):
    from crossover.results.store import load_results

    # run b: round 1 of every point 1.6x slower. The median of its two rounds is 1.3x run a's; the
    # pooled 10th percentile comes from the fast round and matches run a's.
    _write(tmp_path / "a", "synth-vm", {"cpu": VM}, seed=3)
    _write(tmp_path / "b", "synth-vm", {"cpu": VM}, seed=4, slow_round=1.6)
    text = {m.name: m.text for m in P.run_to_run_macros(load_results([tmp_path], raw=True))}
    assert _value(text["RunToRunMedian"]) == pytest.approx(100 * np.log(1.3), rel=0.1)
    assert _value(text["RunToRunQuiet"]) < 3
    sizes = {(d, n, b) for d, n, b, _ in _sizes()}
    assert text["RunToRunPoints"] == str(len(sizes)) and text["RunToRunMachine"] == "\\texttt{synth-vm}"
    alone = {m.name: m.text for m in P.run_to_run_macros(load_results([tmp_path / "a"], raw=True))}
    assert alone["RunToRunMedian"] == P.NA


def test_quiet_crossover_sees_past_a_slow_gpu_round(tmp_path):
    # The GPU's second round 1.6x slower everywhere: its medians are 1.3x the truth and move the
    # median crossover; the 10th percentiles come from the fast round and keep the true one.
    _write(tmp_path / "synth-gpu", "synth-gpu", {"cpu": HOST}, seed=5)
    _write(tmp_path / "synth-gpu-cuda", "synth-gpu", {"cuda": CUDA}, seed=6, slow_round=1.6)
    text = {m.name: m.text for m in P.compute_macros([tmp_path], n_boot=0, models=("roofline",))}

    def log_ratio(b, slow=1.0):
        return float(np.log(A.model_latency_s("roofline", HOST, 128, 128, b)
                            / (slow * A.model_latency_s("roofline", CUDA, 128, 128, b))))

    true_batch = optimize.brentq(log_ratio, 1, 2048)
    assert _value(text["XoverQuietBatch"]) == pytest.approx(true_batch, rel=0.1)
    assert _value(text["XoverBatch"]) == pytest.approx(optimize.brentq(log_ratio, 1, 2048, args=(1.3,)), rel=0.1)
    assert abs(_value(text["XoverBatch"]) / true_batch - 1) > 0.2


def test_every_latency_model_parameter_has_a_macro_name_and_a_latex_label():
    from crossover.fit.latency_models import PARAMS
    from crossover.paper.fits import PARAM_LABELS, PARAM_NAMES

    assert set(PARAM_NAMES) == set(PARAMS) == set(PARAM_LABELS)
    assert len(set(PARAM_NAMES.values())) == len(PARAM_NAMES)  # one macro per parameter


def _true_crossing(slow=1.0):
    def log_ratio(b):
        return float(np.log(A.model_latency_s("roofline", HOST, 128, 128, b)
                            / (slow * A.model_latency_s("roofline", CUDA, 128, 128, b))))

    return optimize.brentq(log_ratio, 1, 2048)


def test_headline_gives_every_gpu_machine_its_paired_crossover(tmp_path):
    """Machine a: its main run paired, and a second paired run of its batch sweep. Machine b: its main run
    unpaired (no sequence, the fits read it), its paired run of the batch sweep beside it, with the GPU
    1.5x slower in the unpaired run (a slow launch path): the paired macros of b come from the paired run,
    its ``Xover...`` ones from the unpaired one."""
    from crossover.analysis.paired_rounds import crossover_distribution
    from crossover.paper.headline import machine_suffixes
    from crossover.results.store import load_results

    _write(tmp_path / "a" / "paired", "a-gpu", {"cpu": HOST, "cuda": CUDA}, seed=1, paired=True, n_rounds=3)
    _write(tmp_path / "a" / "paired-seed1", "a-gpu", {"cpu": HOST, "cuda": CUDA}, seed=2, paired=True,
           only="batch_size", n_rounds=4)
    _write(tmp_path / "b" / "unpaired", "b-gpu", {"cpu": HOST}, seed=3)
    _write(tmp_path / "b" / "unpaired-cuda", "b-gpu", {"cuda": {**CUDA, "layer_s": 1.5 * CUDA["layer_s"],
                                                                  "step_s": 1.5 * CUDA["step_s"]}}, seed=4)
    _write(tmp_path / "b" / "paired", "b-gpu", {"cpu": HOST, "cuda": CUDA}, seed=5, paired=True,
           only="batch_size", n_rounds=3)
    found = P.compute_macros([tmp_path], n_boot=12, seed=0, jobs=1, models=("roofline",))
    text = {m.name: m.text for m in found}
    assert text["HostMachine"] == "\\texttt{a-gpu}" and text["HostBMachine"] == "\\texttt{b-gpu}"

    rounds = load_results([tmp_path], combine_rounds=False)
    fixed = dict(d_model=128, n_layers=128, workload="forward", mode="eager", dtype="float32", transfer="device")
    for prefix, directory, n in (("PairedHost", "a/paired", 3), ("PairedHostOther", "a/paired-seed1", 4),
                                 ("PairedHostB", "b/paired", 3)):
        part = rounds[rounds["results_dir"] == str(tmp_path / directory)]
        machine = part["machine"].iloc[0]
        dist = crossover_distribution(part, {"machine": machine, "device": "cpu"},
                                      {"machine": machine, "device": "cuda"}, fixed=fixed)
        assert text[prefix + "RoundCount"] == str(n) == text[prefix + "Crossing"]
        assert _value(text[prefix + "Median"]) == pytest.approx(dist.median, rel=0.01)
        assert _value(text[prefix + "Median"]) == pytest.approx(_true_crossing(), rel=0.05)
        assert text[prefix + "Quartiles"].startswith("[") and "--" in text[prefix + "Range"]
        assert _value(text[prefix + "Fit"]) == pytest.approx(_true_crossing(), rel=0.1)
        assert text[prefix + "FitCI"].startswith("[") and text[prefix + "FitHolds"] in ("holds", "misses")
    assert text["PairedHostRuns"] == "2" and text["PairedHostBRuns"] == "1"
    assert text["PairedHostMainRun"] == "paired" and text["PairedHostBMainRun"] == "unpaired"
    # a's first paired run is the one its fits read: the same fitted crossover
    assert (text["PairedHostFit"], text["PairedHostFitCI"]) == (text["XoverBatch"], text["XoverBatchCI"])
    assert text["XoverHoldsPaired"] == text["PairedHostFitHolds"]
    # b's fits read its unpaired run, whose slower GPU moves the crossover up; its paired run does not
    assert _value(text["XoverHostBBatch"]) == pytest.approx(_true_crossing(1.5), rel=0.1)
    assert _value(text["XoverHostBBatch"]) > 1.2 * _value(text["PairedHostBFit"])
    assert _value(text["PairedHostBGpuAnchor"]) == pytest.approx(
        1e3 * A.model_latency_s("roofline", CUDA, 128, 128, 1), rel=0.05)  # in ms
    assert text["PairedHostBDate"] == P.NA  # the synthetic rows carry no timestamp
    assert all(text["PairedHostBOther" + s] == P.NA for s in ("Median", "Fit", "FitHolds"))
    assert machine_suffixes({"Cuda": 0, "CudaB": 0, "CudaC": 0, "HostC": 0}) == ["", "B", "C"]


def test_headline_macros_exist_without_paired_rounds(macros):
    text, _, _ = macros  # one GPU machine, its rows without a sequence: every headline macro n/a
    for prefix in ("PairedHost", "PairedHostB"):
        assert text[prefix + "Median"] == P.NA and text[prefix + "Fit"] == P.NA and text[prefix + "Runs"] == "0"
    assert text["PairedHostMainRun"] == "unpaired" and text["PairedHostBMainRun"] == P.NA


def test_fits_started_ahead_in_processes_give_the_same_macros(macros, monkeypatch):
    from crossover.analysis import reference_study as study

    _, serial, root = macros
    started = []
    prefetch = study.prefetch_baselines
    monkeypatch.setattr(P, "prefetch_baselines", lambda requests: (started.extend(requests), prefetch(requests)))
    parallel = P.compute_macros([root], n_boot=12, seed=0, jobs=2, models=("roofline",))
    assert started and [(m.name, m.text) for m in parallel] == [(m.name, m.text) for m in serial]
    assert not study._PREFETCHED and not study._POOL  # forgotten after the block


def test_a_prefetched_fit_is_the_fit_asked_for(macros):
    from crossover.analysis import reference_study as study

    frame = study.main_runs(P.load_results([macros[2]], raw=True))
    roles = study.assign_roles(frame)
    options = dict(models=("roofline",), n_boot=5, seed=0)
    alone = study.fit_baseline(frame, roles, **options)
    with study.prefetching(2):
        study.prefetch_baselines([(frame, roles, options), (frame, roles, dict(options, extra_models=("roofline+gemm",)))])
        assert len(study._PREFETCHED) == 2 * sum(f is not None for f in alone.values())
        ahead = study.fit_baseline(frame, roles, **options)
        assert study.fit_baseline(frame, roles, **dict(options, n_boot=6))["Host"].draws.shape == (6, 4)
    for role, fit in alone.items():
        if fit is not None:
            np.testing.assert_array_equal(fit.params, ahead[role].params)
            np.testing.assert_array_equal(fit.draws, ahead[role].draws)


def test_the_thread_sweep_macros_name_the_fastest_count_against_the_usual_one():
    from crossover.paper.facts import thread_sweep_macros

    def row(device, threads, batch, median_s, name):
        return dict(machine="gpu-box", device=device, device_name=name, threads=threads, batch_size=batch,
                    median_s=median_s, d_model=128, n_layers=128, workload="forward", mode="eager",
                    dtype="float32", regime="latency", transfer="device")

    frame = pd.DataFrame([row("cpu", 16, 1, 2.0e-3, "Xeon"), row("cpu", 16, 1, 2.2e-3, "Xeon"),  # the usual count
                          row("cpu", 1, 1, 1.6e-3, "Xeon"), row("cpu", 16, 64, 4.0e-3, "Xeon"),
                          row("cpu", 8, 64, 3.2e-3, "Xeon"), row("cpu", 1, 64, 5.0e-3, "Xeon"),
                          row("cuda", 16, 1, 3.0e-3, "NVIDIA H100")])
    text = {m.name: m.text for m in thread_sweep_macros(frame, {"HostB": ("gpu-box", "cpu")})}
    assert text["ThreadsMachine"] == "NVIDIA H100" and text["ThreadsCounts"] == "1, 8, 16"
    assert text["ThreadsUsual"] == "16" and text["ThreadsBestOneCount"] == "1" and text["ThreadsBestWideCount"] == "8"
    assert text["ThreadsGainOne"].startswith("1.3")  # 2.1 ms (median at 16) / 1.6 ms
    absent = {m.name: m.text for m in thread_sweep_macros(frame[frame["threads"] == 16], {"HostB": ("gpu-box", "cpu")})}
    assert absent["ThreadsBestOneCount"] == P.NA
