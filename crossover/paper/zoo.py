"""The paper's numbers on predicting one's own model: the module zoo, predicted from a calibration
profile alone and measured in the same run (``experiments/bench_zoo.py --threads N --csv``, shipped as
``<machine>/zoo/bench_zoo_t<N>.csv`` beside the results, one sitting per thread count).

Pure computation on those tables; :func:`read_zoo` is the I/O.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from .latex import DASH, Macro, format_number

__all__ = ["ZOO_FILES", "ZOO_MODELS", "ZOO_THREADS", "read_zoo", "zoo_accuracy", "zoo_macros", "zoo_table"]

#: The sittings' tables beside the results: ``bench_zoo_t<threads>.csv``.
ZOO_FILES = "bench_zoo_t*.csv"
#: (model, workload) of the zoo -> the letters its macros carry and its name in the text (starred: the
#: kinds the calibration's reference models do not cover).
ZOO_MODELS = {
    ("mnist_mlp", "forward"): ("MnistForward", "MNIST MLP (784-128-10), forward"),
    ("mnist_mlp", "train"): ("MnistTrain", "MNIST MLP, training step"),
    ("lenet5", "forward"): ("Lenet", "LeNet-5 (1$\\times$28$\\times$28), forward"),
    ("transformer_layer", "forward"): ("Transformer", "TransformerEncoderLayer (256, 4 heads, seq.\\ 64), forward"),
    ("toy", "forward"): ("Toy", "toy model (d\\_model 256, 8 layers), forward"),
    ("gru_classifier", "forward"): ("Gru", "GRU (32$\\to$64, 50 steps)$^*$"),
    ("conv1d_sequence", "forward"): ("Conv", "1-D CNN (8$\\times$256)$^*$"),
    ("depthwise_cnn", "forward"): ("Depthwise", "depthwise-separable CNN$^*$"),
    ("embedding_bag", "forward"): ("Bag", "embedding bag (20 ids)$^*$"),
}
#: The thread counts the table has columns for, and the word each one's macros carry.
ZOO_THREADS = {1: "One", 2: "Two"}


def read_zoo(results) -> pd.DataFrame:
    """Every ``bench_zoo_t<N>.csv`` under the results directories, with ``machine`` (the folder above
    ``zoo/``) and ``threads`` (``N``) columns; empty if there is none."""
    from ..results.side_files import side_files

    frames = []
    for path in side_files(results if isinstance(results, (list, tuple)) else [results], f"zoo/{ZOO_FILES}"):
        threads = int(re.fullmatch(r"bench_zoo_t(\d+)\.csv", path.name).group(1))
        frames.append(pd.read_csv(path).assign(machine=path.parent.parent.name, threads=threads))
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def zoo_accuracy(zoo: pd.DataFrame) -> pd.DataFrame:
    """Per machine, thread count, model and workload: points, median and worst |predicted / measured - 1|
    (%), and the share of measurements inside the predicted interval (%)."""
    if zoo.empty:
        return pd.DataFrame(columns=["machine", "threads", "model", "workload", "points", "median_pct", "worst_pct",
                                     "inside_pct"])
    zoo = zoo.assign(abs_error=zoo["error"].abs())
    if "threads" not in zoo:
        zoo = zoo.assign(threads=0)
    return (zoo.groupby(["machine", "threads", "model", "workload"], sort=False)
            .agg(points=("abs_error", "size"), median_pct=("abs_error", lambda e: 100 * e.median()),
                 worst_pct=("abs_error", lambda e: 100 * e.max()),
                 inside_pct=("inside", lambda v: 100 * v.astype(bool).mean()))
            .reset_index())


def zoo_macros(zoo: pd.DataFrame) -> list:
    """``Zoo<Threads><Model>Median``, ``...Worst``, ``...Inside`` per zoo entry and thread count of
    :data:`ZOO_THREADS` (``ZooOneGruMedian``), dashes where it was not measured; over every point:
    ``ZooPoints``, ``ZooBelow`` (predictions under the measurement), ``ZooMachine``, ``ZooMedian`` and
    ``ZooWorst``, ``ZooWithinTarget`` (entries with median <= 10% and worst <= 25%) and ``ZooEntries``."""
    table = zoo_accuracy(zoo)
    macros = []
    for threads, word in ZOO_THREADS.items():
        for (model, workload), (letters, _) in ZOO_MODELS.items():
            row = table[(table["model"] == model) & (table["workload"] == workload) & (table["threads"] == threads)]
            for stat, column in (("Median", "median_pct"), ("Worst", "worst_pct"), ("Inside", "inside_pct")):
                value = float(row[column].iloc[0]) if len(row) else np.nan
                macros.append(Macro(f"Zoo{word}{letters}{stat}", DASH if np.isnan(value) else format_number(value, 2),
                                    f"{model} {workload} at {threads} thread(s): {column} over batch sizes"))
    errors = zoo["error"].to_numpy(dtype=float) if len(zoo) else np.empty(0)
    ok = ((table["median_pct"] <= 10) & (table["worst_pct"] <= 25)).sum() if len(table) else 0
    machine = ", ".join(sorted(zoo["machine"].unique())) if len(zoo) else DASH
    macros += [Macro("ZooPoints", str(len(errors)), "measurements of the zoo"),
               Macro("ZooBelow", str(int((errors < 0).sum())), "predictions below the measurement"),
               Macro("ZooMachine", machine, "machine the zoo was measured on"),
               Macro("ZooMedian", format_number(100 * np.median(np.abs(errors)), 2) if len(errors) else DASH,
                     "all points"),
               Macro("ZooWorst", format_number(100 * np.abs(errors).max(), 2) if len(errors) else DASH, "all points"),
               Macro("ZooWithinTarget", str(int(ok)), "entries (model, thread count) with median <= 10% and worst <= 25%"),
               Macro("ZooEntries", str(len(table)), "zoo entries measured (model, thread count)")]
    return macros


def zoo_table() -> str:
    """A tabular whose cells reference :func:`zoo_macros`' macros: a row per :data:`ZOO_MODELS` entry,
    median, worst and inside per thread count of :data:`ZOO_THREADS`."""
    heads = " & ".join(f"\\multicolumn{{3}}{{c}}{{{n} thread{'s' if n > 1 else ''}}}" for n in ZOO_THREADS)
    subs = " & ".join("median & worst & inside" for _ in ZOO_THREADS)
    rows = [name + "".join(f" & \\Zoo{word}{letters}{stat}" for word in ZOO_THREADS.values()
                           for stat in ("Median", "Worst", "Inside")) + " \\\\"
            for letters, name in ZOO_MODELS.values()]
    return ("\\begin{tabular}{l" + "rrr" * len(ZOO_THREADS) + "}\n\\toprule\n & " + heads + " \\\\\n"
            "model & " + subs + " \\\\\n\\midrule\n" + "\n".join(rows) + "\n\\bottomrule\n\\end{tabular}\n")
