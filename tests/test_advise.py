"""`crossover advise`: the serving model on synthetic latency curves whose cheapest batch size,
replica count and cost are known in closed form; a target no device meets; prices (a missing one is
refused in one line); the plot by its drawn data; the JSON against its schema; the shipped data."""

import json
import math

import numpy as np
import pytest

from crossover.analysis.advice import (ADVISE_SCHEMA, MAX_BUSY, SCHEMA_FILE, LatencyCurve, advise_curves,
                                       lowest_bound_by_rate, replicas_needed)
from crossover.errors import AnalysisError, PriceError
from crossover.opcost.profiles import load_profile, shipped_profile_files
from crossover.results.prices import MachinePrice, parse_price_override, price_of, read_prices, with_overrides

MNIST = ["--model", "experiments/zoo/mnist_mlp.py:model", "--input-shape", "1,28,28"]
A_S, B_S, HIGH = 1e-3, 1e-5, 1.1  # the synthetic CPU: t(B) = a + b·B, t_high = 1.1·t


def linear_cpu(price=2.0, top=400, machine="box", threads=4):
    b = np.arange(1, top + 1)
    t = A_S + B_S * b
    return LatencyCurve(machine=machine, device="cpu", threads=threads, batch_size=b, latency_s=t,
                        latency_high_s=HIGH * t, source="predicted").priced(price, "a test")


def flat_gpu(price=3.0, step_s=5e-3, high_s=6e-3, top=400):
    b = np.arange(1, top + 1)
    return LatencyCurve(machine="gpubox", device="cuda", threads=None, batch_size=b, latency_s=np.full(len(b), step_s),
                        latency_high_s=np.full(len(b), high_s), source="measured").priced(price, "a test")


def closed_form(rate, slo, a=A_S, b=B_S, h=HIGH, top=400):
    """The cheapest (B, n) of t = a + b·B, t_high = h·t: the fewest replicas n for which the batches that
    carry the rate (B ≥ λa/(0.8n − λb)) overlap those within the target (B ≤ (slo − h·a)/(n/λ + h·b));
    the smallest such B has the lowest bound."""
    for n in range(1, 1000):
        if MAX_BUSY * n <= rate * b:
            continue
        low = math.ceil(rate * a / (MAX_BUSY * n - rate * b))
        high = math.floor((slo - h * a) / (n / rate + h * b))
        if max(low, 1) <= min(high, top):
            batch = max(low, 1)
            return batch, n, batch * n / rate + h * (a + b * batch)
    return None


@pytest.mark.parametrize("rate, slo, batch, replicas", [(1e4, 20e-3, 15, 1), (1e5, 10e-3, 167, 2), (3e4, 5e-3, None, None),
                                                        (2e3, 3e-3, None, None), (5e4, 4e-3, None, None)])
def test_the_cheapest_batch_and_replicas_are_the_closed_form(rate, slo, batch, replicas):
    expected = closed_form(rate, slo)
    if batch is not None:  # by hand: 1e4/s needs B ≥ 12.5/0.7 → 15 on one replica; 1e5/s, B ≥ 125/0.75 → 167 on two
        assert expected[:2] == (batch, replicas)
    advice = advise_curves([linear_cpu(price=2.0)], slo_s=slo, rate_per_s=rate)
    choice = advice.choice
    assert (choice["batch_size"], choice["replicas"]) == expected[:2]
    assert choice["latency_bound_s"] == pytest.approx(expected[2], rel=1e-12) and choice["latency_bound_s"] <= slo
    assert choice["usd_per_hour"] == pytest.approx(2.0 * expected[1])
    assert choice["usd_per_million_requests"] == pytest.approx(2.0 * expected[1] / (rate * 3600) * 1e6)
    assert choice["busy"] == pytest.approx(rate * (A_S + B_S * expected[0]) / (expected[1] * expected[0])) and choice["busy"] <= MAX_BUSY
    assert advice.text.startswith(f"use box/cpu (4 threads): batch {expected[0]}, ")


def test_the_first_case_by_hand():
    choice = advise_curves([linear_cpu(price=2.0)], slo_s=20e-3, rate_per_s=1e4).choice
    # one replica at batch 15: fill 15/1e4 = 1.5 ms, step's upper end 1.1 * 1.15 ms = 1.265 ms
    assert choice["latency_bound_s"] == pytest.approx(2.765e-3)
    assert choice["usd_per_hour"] == 2.0 and choice["usd_per_million_requests"] == pytest.approx(2 / 36e6 * 1e6)


def test_replicas_are_the_ceiling_of_the_load():
    assert replicas_needed(1e4, 1e-3, 10).tolist() == 2  # 1e4 * 1e-3 / 8 = 1.25
    assert replicas_needed(8e3, 1e-3, 10).tolist() == 1  # exactly 80% busy
    assert replicas_needed(1.0, 1e-3, 10).tolist() == 1  # never fewer than one


def test_the_cheapest_device_wins_and_a_dearer_one_is_chosen_when_the_other_cannot():
    cpu, gpu = linear_cpu(price=0.5), flat_gpu(price=3.0)
    advice = advise_curves([gpu, cpu], slo_s=20e-3, rate_per_s=1e4)
    assert advice.choice["label"] == "box/cpu (4 threads)" and advice.choice["usd_per_hour"] == 0.5
    # the GPU alone: 5 ms a step carries 1e4/s on one replica from B = 1e4 * 5e-3 / 0.8 = 62.5 → 63
    gpu_best = next(o["best"] for o in advice.options if o["device"] == "cuda")
    assert (gpu_best["batch_size"], gpu_best["replicas"]) == (63, 1)
    assert gpu_best["latency_bound_s"] == pytest.approx(63 / 1e4 + 6e-3) and gpu_best["source"] == "measured"
    # a dearer CPU (7/h for its one replica) loses to the GPU
    assert advise_curves([gpu, linear_cpu(price=7.0)], slo_s=20e-3, rate_per_s=1e4).choice["device"] == "cuda"
    assert [o["label"] for o in advice.options] == ["box/cpu (4 threads)", "gpubox/cuda"]  # cheapest first


def test_a_cpu_replica_pays_its_threads_share_of_the_machine():
    box = MachinePrice(machine="box", usd_per_hour=8.0, source="a test")
    assert box.replica_usd_per_hour("cpu", threads=4, cores=16) == 2.0
    assert box.replica_usd_per_hour("cuda", threads=16, cores=16) == 8.0  # a GPU replica: the machine
    assert MachinePrice("box", 8.0, "t", cores=8).replica_usd_per_hour("cpu", 4, cores=16) == 4.0  # the file's cores
    with pytest.raises(PriceError):
        box.replica_usd_per_hour("cpu", threads=4, cores=None)


def test_a_target_no_device_meets_says_what_would():
    cpu, gpu = linear_cpu(price=0.5), flat_gpu(price=3.0)
    # 2 ms: the CPU's best is t/0.8 + t_high ≥ 1.25 * 1.01 + 1.111 ms = 2.37 ms at 80% busy; the GPU's step alone is 6 ms
    advice = advise_curves([cpu, gpu], slo_s=2e-3, rate_per_s=1e4)
    assert advice.choice is None and all(o["best"] is None for o in advice.options)
    low = advice.alternatives["lowest_latency"]
    everything = advice.frame
    assert low["latency_bound_s"] == pytest.approx(everything["latency_bound_s"].min())
    assert low["label"] == "box/cpu (4 threads)" and advice.alternatives["one_replica"] is None
    assert advice.text.startswith("no choice meets 2 ms at 10 kreq/s: the lowest latency bound at this rate is ")
    assert "no device meets it at any rate" in advice.text
    data = advice.to_json()
    assert data["choice"] is None and data["alternatives"]["text"] == data["text"]
    # 5 ms at 100/s: a batch of one waits 10 ms to fill; one replica at batch 1 meets 5 ms from
    # 1 / (5 ms - 1.111 ms) = 257 requests/s and carries up to 0.8 / 1.01 ms = 792/s
    slow = advise_curves([cpu], slo_s=5e-3, rate_per_s=100)
    one = slow.alternatives["one_replica"]
    assert slow.choice is None and one["batch_size"] == 1
    assert one["min_rate_per_s"] == pytest.approx(1 / (5e-3 - HIGH * (A_S + B_S)))
    assert one["max_rate_per_s"] == pytest.approx(MAX_BUSY / (A_S + B_S))
    assert slow.alternatives["lowest_latency"]["latency_bound_s"] == pytest.approx(1 / 100 + HIGH * (A_S + B_S))
    assert advise_curves([cpu], slo_s=5e-3, rate_per_s=300).choice is not None  # from 257/s it does


@pytest.mark.parametrize("slo, rate", [(0, 100), (-1e-3, 100), (1e-3, 0), (1e-3, float("nan")), (float("inf"), 1)])
def test_a_target_or_rate_that_is_not_positive_is_refused(slo, rate):
    with pytest.raises(AnalysisError, match="must be a positive number"):
        advise_curves([linear_cpu()], slo_s=slo, rate_per_s=rate)


def test_a_curve_without_a_price_is_refused():
    unpriced = LatencyCurve(machine="m", device="cpu", threads=1, batch_size=[1], latency_s=[1e-3],
                            latency_high_s=[1e-3], source="measured")
    with pytest.raises(AnalysisError, match="no price for m/cpu"):
        advise_curves([unpriced], slo_s=1, rate_per_s=1)


# ------------------------------------------------------------------------------------------ prices
def test_the_shipped_prices_name_every_shipped_machine_with_a_source():
    prices = read_prices()
    assert {"amd-epyc-2c", "nvidia-h100-80gb-hbm3-16c", "nvidia-h200-16c"} <= set(prices)
    assert all(p.usd_per_hour > 0 and p.source for p in prices.values())
    assert prices["nvidia-h200-16c"].source.startswith("assumed")  # an assumption says so


def test_prices_are_checked_overridden_and_missing_ones_named(tmp_path):
    path = tmp_path / "p.toml"
    path.write_text('["a"]\nusd_per_hour = 2\nsource = "x"\ncores = 4\n')
    prices = read_prices(path)
    assert prices["a"].cores == 4 and prices["a"].cpu_only is None
    assert parse_price_override("nvidia-h200-16c=3.5") == ("nvidia-h200-16c", 3.5)
    for bad in ("h200", "=3", "h200=0", "h200=-1", "h200=x"):
        with pytest.raises(PriceError):
            parse_price_override(bad)
    both = with_overrides(prices, {"a": 5.0, "b": 1.0})
    assert both["a"].usd_per_hour == 5.0 and both["a"].cores == 4 and "--price" in both["a"].source
    assert both["b"].usd_per_hour == 1.0
    with pytest.raises(PriceError, match=r"no price for machine c in here: .*--price c=USD_PER_HOUR"):
        price_of(both, ["a", "c"], "here")
    for text in ('["a"]\nusd_per_hour = 0\nsource = "x"\n', '["a"]\nusd_per_hour = 1\n', '["a"]\nusd_per_hour = 1\nsource = "x"\ncores = 0\n',
                 "a = 1\n", "not toml ["):
        path.write_text(text)
        with pytest.raises(PriceError):
            read_prices(path)


def test_a_machine_without_a_price_exits_2_with_one_line(cli_in_process, tmp_path):
    prices = tmp_path / "prices.toml"
    prices.write_text('["amd-epyc-2c"]\nusd_per_hour = 0.07\nsource = "a test"\n')
    run = cli_in_process("advise", *MNIST, "--slo-ms", 10, "--rate", 100, "--prices", prices)
    assert run.returncode == 2 and run.stdout == ""
    assert run.stderr.count("\n") == 1 and run.stderr.startswith("crossover: error: no price for machine")
    assert "nvidia-h200-16c" in run.stderr and "amd-epyc-2c" not in run.stderr
    # the toy: refused before any fit
    run = cli_in_process("advise", "--d-model", 128, "--n-layers", 128, "--slo-ms", 10, "--rate", 100, "--prices", prices)
    assert run.returncode == 2 and run.stderr.count("\n") == 1
    assert "no price for machines nvidia-h100-80gb-hbm3-16c, nvidia-h200-16c" in run.stderr


@pytest.mark.parametrize("option, value", [("--slo-ms", "0"), ("--slo-ms", "-5"), ("--rate", "0"), ("--rate", "nan"),
                                           ("--price", "nvidia-h200-16c=-1")])
def test_a_bad_target_rate_or_price_exits_2_with_one_line(cli_in_process, option, value):
    args = {"--slo-ms": "10", "--rate": "100"}
    extra = [option, value] if option == "--price" else []
    args.update({} if option == "--price" else {option: value})
    run = cli_in_process("advise", *MNIST, *[x for kv in args.items() for x in kv], *extra)
    assert run.returncode == 2 and run.stderr.count("\n") == 1 and option in run.stderr


# -------------------------------------------------------------------------------------------- plot
def test_the_plot_draws_each_device_against_the_rate_with_target_rate_and_choice():
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    from crossover.plots.serving import serving_plot
    from crossover.plots.theme import style

    cpu, gpu = linear_cpu(price=0.5), flat_gpu(price=3.0)
    advice = advise_curves([cpu, gpu], slo_s=20e-3, rate_per_s=1e4)
    rates = np.geomspace(10, 1e6, 41)
    data = advice.by_rate(rates)
    with style():
        ax = Figure().add_subplot(1, 1, 1)
        serving_plot(data, slo_s=20e-3, rate_per_s=1e4, choice=advice.choice, ax=ax)
    lines = {line.get_gid(): line for line in ax.lines}
    assert {"box/cpu (4 threads)", "gpubox/cuda", "target", "rate", "choice"} <= set(lines)
    gpu_line = lines["gpubox/cuda"]
    np.testing.assert_allclose(gpu_line.get_xdata(), rates)
    # the flat GPU at 10/s: one replica at batch 1 (10 * 5 ms / 0.8 < 1), bound 1/10 s + 6 ms
    assert gpu_line.get_ydata()[0] == pytest.approx(0.1 + 6e-3)
    np.testing.assert_allclose(gpu_line.get_ydata(), lowest_bound_by_rate(gpu, rates)["latency_bound_s"])
    # at high rates it levels off: replicas added, the bound tends to t/0.8 + t_high at the best batch
    assert gpu_line.get_ydata()[-1] == pytest.approx(5e-3 / 0.8 + 6e-3, rel=0.02)
    assert list(lines["target"].get_ydata()) == [20e-3, 20e-3] and list(lines["rate"].get_xdata()) == [1e4, 1e4]
    star = lines["choice"]
    assert (star.get_xdata()[0], star.get_ydata()[0]) == (1e4, advice.choice["latency_bound_s"])
    assert "batch 15, 1 replica" in star.get_label()
    # nothing meets the target: no star, a note says so
    none = advise_curves([cpu], slo_s=1e-3, rate_per_s=1e4)
    with style():
        ax = Figure().add_subplot(1, 1, 1)
        serving_plot(none.by_rate(rates), slo_s=1e-3, rate_per_s=1e4, choice=None, ax=ax)
    assert "choice" not in {line.get_gid() for line in ax.lines}
    assert any("no choice meets the target" in t.get_text() for t in ax.texts)


def test_the_cli_writes_the_plot(cli_in_process, tmp_path):
    out = tmp_path / "advise.png"
    run = cli_in_process("advise", *MNIST, "--slo-ms", 10, "--rate", 10000, "--max-batch-size", 64, "--plot", out)
    assert run.returncode == 0 and out.stat().st_size > 10_000 and f"wrote {out}" in run.stderr


# -------------------------------------------------------------------------------------------- JSON
@pytest.fixture(scope="module")
def validate():
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads(SCHEMA_FILE.read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    return lambda data: jsonschema.validate(data, schema)


def test_the_json_follows_its_schema(validate):
    cpu, gpu = linear_cpu(price=0.5), flat_gpu(price=3.0)
    for slo, rate in ((20e-3, 1e4), (2e-3, 1e4), (5e-3, 100)):  # a choice, none at any rate, none at this rate
        data = json.loads(json.dumps(advise_curves([cpu, gpu], slo_s=slo, rate_per_s=rate).to_json()))
        validate(data)
        assert data["schema"] == ADVISE_SCHEMA == {"name": "crossover.advise", "version": 1}
    broken = dict(data, choice={"label": "x"}, alternatives=None)
    with pytest.raises(Exception):
        validate(broken)


def test_advise_on_a_module_from_the_profiles(cli_in_process, validate):
    run = cli_in_process("advise", *MNIST, "--slo-ms", 10, "--rate", 10000, "--max-batch-size", 64, "--json")
    assert run.returncode == 0, run.stderr
    data = json.loads(run.stdout)
    validate(data)
    assert data["question"]["kind"] == "model" and data["choice"] is not None
    assert all(set(o["curve"]["source"]) == {"predicted"} for o in data["options"])  # profiles predict
    shipped = {load_profile(path).machine for path in shipped_profile_files()}
    assert {o["machine"] for o in data["options"]} == shipped and {"amd-epyc-2c", "nvidia-h200-16c"} <= shipped
    cpu = next(o for o in data["options"] if o["label"] == "nvidia-h200-16c/cpu (16 threads)")
    assert (cpu["threads"], cpu["cores"]) == (16, 16) and cpu["replica_usd_per_hour"] == data["prices"]["machines"]["nvidia-h200-16c"]["usd_per_hour"]
    text = cli_in_process("advise", *MNIST, "--slo-ms", 10, "--rate", 10000, "--max-batch-size", 64,
                          "--price", "amd-epyc-2c=100")
    assert text.returncode == 0 and text.stdout.splitlines()[0].startswith("use ")
    assert "amd-epyc-2c: 100 USD/h the machine (given on the command line (--price))" in text.stdout


def test_advise_on_the_toy_uses_measured_latencies_where_the_data_hold_them(cli_in_process, validate):
    from crossover.cli.args import DEFAULT_RESULTS
    from crossover.results.store import load_results

    run = cli_in_process("advise", "--d-model", 128, "--n-layers", 128, "--slo-ms", 10, "--rate", 10000,
                         "--only-machine", "nvidia-h200-16c", "--models", "roofline", "--n-boot", 5, "--quiet", "--json")
    assert run.returncode == 0, run.stderr
    data = json.loads(run.stdout)
    validate(data)
    gpu = next(o for o in data["options"] if o["device"] == "cuda")
    curve = {b: (t, h, s) for b, t, h, s in zip(*(gpu["curve"][k] for k in ("batch_size", "latency_s", "latency_high_s", "source")))}
    assert curve[64][2] == "measured" and curve[3][2] == "predicted" and 64 in gpu["measured_batch_sizes"]
    assert "paired CPU/GPU rounds" in gpu["latencies"] and "predicted elsewhere" in gpu["latencies"]
    # the measured latency is the points' p10 (the median over the two runs that measured it), its upper end the slowest round
    rows = load_results([DEFAULT_RESULTS / "nvidia-h200-16c"])
    rows = rows[(rows["device"] == "cuda") & (rows["mode"] == "eager") & (rows["d_model"] == 128)
                & (rows["n_layers"] == 128) & (rows["batch_size"] == 64)]
    assert curve[64][0] == pytest.approx(float(rows["p10_s"].median()))
    assert curve[64][1] >= curve[64][0]
    assert all(o["machine"] == "nvidia-h200-16c" for o in data["options"])


def test_a_point_of_one_round_borrows_its_devices_spread(cli_in_process):
    """The H100 host's thread sweep measured each point once: its upper end is its latency times the
    median slowest-round ratio of the same device's points measured in several rounds."""
    run = cli_in_process("advise", "--d-model", 128, "--n-layers", 128, "--slo-ms", 100, "--rate", 1000,
                         "--only-machine", "nvidia-h100-80gb-hbm3-16c", "--models", "roofline", "--n-boot", 5, "--quiet",
                         "--json")
    assert run.returncode == 0, run.stderr
    options = {o["label"]: o for o in json.loads(run.stdout)["options"]}
    many = options["nvidia-h100-80gb-hbm3-16c/cpu (16 threads)"]["curve"]
    ratios = [h / t for t, h, s in zip(many["latency_s"], many["latency_high_s"], many["source"]) if s == "measured"]
    one = options["nvidia-h100-80gb-hbm3-16c/cpu (1 thread)"]
    assert one["measured_batch_sizes"] == [1, 64, 512] and "no spread of its own" in one["latencies"]
    factors = [h / t for t, h in zip(one["curve"]["latency_s"], one["curve"]["latency_high_s"])]
    assert factors == pytest.approx([float(np.median(ratios))] * 3, rel=1e-9) and factors[0] > 1
