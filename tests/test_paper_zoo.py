"""The paper's zoo numbers are computed from the shipped zoo table, and absent ones are dashes."""

import pandas as pd
import pytest

from crossover.paper.latex import DASH
from crossover.paper.zoo import read_zoo, zoo_accuracy, zoo_macros, zoo_table


def _zoo(errors_by_model):
    rows = []
    for (model, workload), errors in errors_by_model.items():
        for batch, error in zip((1, 8, 64, 512), errors):
            rows.append(dict(model=model, workload=workload, batch_size=batch, error=error, inside=abs(error) < 0.1,
                             machine="vm"))
    return pd.DataFrame(rows)


def test_accuracy_per_entry_and_the_target_count():
    zoo = _zoo({("mnist_mlp", "forward"): [0.02, -0.04, 0.06, -0.08],  # median 5%, worst 8%: meets the target
                ("lenet5", "forward"): [0.30, -0.05, 0.05, 0.05]})  # median 5%, worst 30%: misses it
    table = zoo_accuracy(zoo).set_index("model")
    assert table.loc["mnist_mlp", "median_pct"] == pytest.approx(5.0)
    assert table.loc["lenet5", "worst_pct"] == pytest.approx(30.0)
    assert table.loc["lenet5", "inside_pct"] == pytest.approx(75.0)
    macros = {m.name: m.text for m in zoo_macros(zoo.assign(threads=1))}
    assert macros["ZooWithinTarget"] == "1" and macros["ZooEntries"] == "2" and macros["ZooPoints"] == "8"
    assert macros["ZooOneMnistForwardMedian"] == "5" and macros["ZooOneLenetWorst"] == "30"
    assert macros["ZooBelow"] == "3"  # the predictions under the measurement
    assert macros["ZooOneTransformerMedian"] == DASH and macros["ZooTwoMnistForwardMedian"] == DASH  # not measured


def test_no_zoo_gives_dashes_and_the_table_references_every_entry(tmp_path):
    assert read_zoo([tmp_path]).empty
    macros = {m.name: m.text for m in zoo_macros(pd.DataFrame())}
    assert macros["ZooMedian"] == DASH and macros["ZooPoints"] == "0"
    assert all(f"\\{name}" in zoo_table() for name in macros if name.endswith(("Median", "Worst", "Inside"))
               and name not in ("ZooMedian", "ZooWorst"))


def test_the_shipped_zoo_is_read_with_its_machine():
    from crossover.cli.args import DEFAULT_RESULTS

    zoo = read_zoo([DEFAULT_RESULTS])
    assert set(zoo["machine"]) == {"amd-epyc-2c"} and set(zoo["threads"]) == {1, 2} and len(zoo) == 72
