"""The paper's numbers on predicting one's own model: the module zoo, predicted from a calibration
profile alone and measured in the same run (``experiments/bench_zoo.py --csv``, shipped as
``<machine>/zoo/bench_zoo.csv`` beside the results).

Pure computation on those tables; :func:`read_zoo` is the I/O.
"""

from __future__ import annotations



import numpy as np
import pandas as pd

from .latex import DASH, Macro, format_number

__all__ = ["ZOO_FILE", "ZOO_MODELS", "read_zoo", "zoo_accuracy", "zoo_macros", "zoo_table"]

ZOO_FILE = "bench_zoo.csv"
#: (model, workload) of the zoo -> the letters its macros carry and its name in the text.
ZOO_MODELS = {
    ("mnist_mlp", "forward"): ("MnistForward", "MNIST MLP (784-128-10), forward"),
    ("mnist_mlp", "train"): ("MnistTrain", "MNIST MLP, training step"),
    ("lenet5", "forward"): ("Lenet", "LeNet-5 (1$\\times$28$\\times$28), forward"),
    ("transformer_layer", "forward"): ("Transformer", "TransformerEncoderLayer (256, 4 heads, seq.\\ 64), forward"),
    ("toy", "forward"): ("Toy", "toy model (d\\_model 256, 8 layers), forward"),
}


def read_zoo(results) -> pd.DataFrame:
    """Every ``bench_zoo.csv`` under the results directories, with a ``machine`` column (the folder
    above ``zoo/``); empty if there is none."""
    from ..results.side_files import side_files

    frames = []
    for path in side_files(results if isinstance(results, (list, tuple)) else [results], f"zoo/{ZOO_FILE}"):
        frames.append(pd.read_csv(path).assign(machine=path.parent.parent.name))
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def zoo_accuracy(zoo: pd.DataFrame) -> pd.DataFrame:
    """Per machine, model and workload: points, median and worst |predicted / measured - 1| (%), and
    the share of measurements inside the predicted interval (%)."""
    if zoo.empty:
        return pd.DataFrame(columns=["machine", "model", "workload", "points", "median_pct", "worst_pct", "inside_pct"])
    zoo = zoo.assign(abs_error=zoo["error"].abs())
    return (zoo.groupby(["machine", "model", "workload"], sort=False)
            .agg(points=("abs_error", "size"), median_pct=("abs_error", lambda e: 100 * e.median()),
                 worst_pct=("abs_error", lambda e: 100 * e.max()),
                 inside_pct=("inside", lambda v: 100 * v.astype(bool).mean()))
            .reset_index())


def zoo_macros(zoo: pd.DataFrame) -> list:
    """``Zoo<Model>Median``, ``...Worst``, ``...Inside`` per zoo entry, ``ZooPoints``, ``ZooMachine``,
    ``ZooMedian``/``ZooWorst`` over every point, ``ZooWithinTarget`` (entries with median <= 10% and
    worst <= 25%) and ``ZooEntries``; dashes where the zoo was not measured."""
    table = zoo_accuracy(zoo)
    macros = []
    for (model, workload), (letters, _) in ZOO_MODELS.items():
        row = table[(table["model"] == model) & (table["workload"] == workload)]
        for stat, column in (("Median", "median_pct"), ("Worst", "worst_pct"), ("Inside", "inside_pct")):
            value = float(row[column].iloc[0]) if len(row) else np.nan
            macros.append(Macro(f"Zoo{letters}{stat}", DASH if np.isnan(value) else format_number(value, 2),
                                f"{model} {workload}: {column} over batch sizes"))
    errors = zoo["error"].abs().to_numpy() if len(zoo) else np.empty(0)
    ok = ((table["median_pct"] <= 10) & (table["worst_pct"] <= 25)).sum() if len(table) else 0
    machine = ", ".join(sorted(zoo["machine"].unique())) if len(zoo) else DASH
    macros += [Macro("ZooPoints", str(len(errors)), "measurements of the zoo"),
               Macro("ZooMachine", machine, "machine the zoo was measured on"),
               Macro("ZooMedian", format_number(100 * np.median(errors), 2) if len(errors) else DASH, "all points"),
               Macro("ZooWorst", format_number(100 * errors.max(), 2) if len(errors) else DASH, "all points"),
               Macro("ZooWithinTarget", str(int(ok)), "entries with median <= 10% and worst <= 25%"),
               Macro("ZooEntries", str(len(table)), "zoo entries measured")]
    return macros


def zoo_table() -> str:
    """A tabular whose cells reference :func:`zoo_macros`' macros (rows in :data:`ZOO_MODELS` order)."""
    rows = [f"{name} & \\Zoo{letters}Median & \\Zoo{letters}Worst & \\Zoo{letters}Inside \\\\"
            for letters, name in ZOO_MODELS.values()]
    return ("\\begin{tabular}{lrrr}\n\\toprule\nmodel & median (\\%) & worst (\\%) & "
            "inside (\\%) \\\\\n\\midrule\n" + "\n".join(rows) + "\n\\bottomrule\n\\end{tabular}\n")
