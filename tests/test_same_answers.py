"""The notebook's fits, the figure, the paper and `crossover predict` quote one crossover."""

import json

import pytest

from crossover import analysis as A
from crossover.analysis import reference_study as study
from crossover.cli.args import DEFAULT_RESULTS
from crossover.plots.figure_context import load_context
from crossover.paper.latex import format_interval, format_number
from crossover.paper.fits import crossover_macros
from crossover.results.store import load_results

HOST = "nvidia-h200-16c"  # the host whose CPU and GPU hold the most baseline rows (paired)


@pytest.mark.slow
def test_notebook_figure_paper_and_predict_agree_on_the_crossover(cli, tmp_path):
    frame = study.main_runs(load_results(DEFAULT_RESULTS, raw=True))
    roles = study.assign_roles(frame)
    assert roles["Host"] == (HOST, "cpu")
    fits = study.fit_baseline(frame, roles)  # the notebook's and the paper's fits
    notebook = A.crossover(fits["Host"], fits["Cuda"], "batch_size", d_model=128, n_layers=128)

    figure = load_context(DEFAULT_RESULTS, tmp_path / "figs", diagram=False).sweep("batch_size")["marker"]

    main_run = frame.loc[frame["machine"] == HOST, "results_dir"].iloc[0]  # the study's rows: the host's main run
    assert set(frame.loc[frame["machine"] == HOST, "results_dir"]) == {main_run}
    result = cli("predict", "--results", main_run, "--only-machine", HOST, "--statistic", "median", "--d-model", 128, "--n-layers", 128,
                 "--batch-size", 1, "--quiet", "--json")
    assert result.returncode == 0, result.stderr
    predicted = json.loads(result.stdout)["crossover"]
    [decision] = json.loads(result.stdout)["decisions"]  # the decision first: which device up to where
    assert decision["text"].startswith(f"use the CPU ({HOST}/cpu) up to batch size ~")  # the paired rounds' median
    assert f"fitted {notebook.x:.0f} [" in decision["text"] and predicted["paired_rounds"]["n_rounds"] == 8
    assert decision["text"].endswith(f"the GPU ({HOST}/cuda) above") and decision["cpu_wins_share"] == 1.0

    paper = {m.name: m.text for m in crossover_macros(fits)}
    assert paper["XoverBatch"] == format_number(notebook.x)
    assert paper["XoverBatchCI"] == format_interval(notebook.low, notebook.high)

    for other in (figure, ):
        assert (other.x, other.low, other.high) == pytest.approx((notebook.x, notebook.low, notebook.high), rel=1e-9)
    assert (predicted["at"], predicted["low"], predicted["high"]) == pytest.approx(
        (notebook.x, notebook.low, notebook.high), rel=1e-9)
