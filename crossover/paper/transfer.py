"""The paper's numbers on predicting one's own model away from where the method was made: every
shipped zoo set (:mod:`crossover.analysis.zoo_runs`: the GPU machines' zoo, measured in the same visit
as the calibration that predicts it) scored per model and device, and where each machine's CPU and GPU
cross.

:func:`transfer_frames` is the I/O (it traces the zoo's models; its result is cached on disk, keyed by
every file it reads and the source of the code that predicts); the rest is pure.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pandas as pd

from ..analysis.zoo_check import TARGET_MEDIAN, TARGET_WORST
from .latex import DASH, Macro, format_number

__all__ = ["transfer_frames", "transfer_errors", "transfer_macros", "transfer_table", "TRANSFER_COLUMNS",
           "CROSSOVER_SETS", "predicted_set_names"]

#: The table's columns: (zoo set, device, header, macro letters).
#: The H100's third visit comes first: nothing was chosen looking at it; nor at the fourth and fifth, beside it,
#: nor at the H200's third and fourth when they were measured (zoo_checks.toml's ``tuned`` says what since).
TRANSFER_COLUMNS = (("h100-run3", "cuda", "H100 GPU", "HundredGpu"),
                    ("h100-run3", "cpu", "host, 16 thr.", "HundredCpu"),
                    ("h100-run3-1t", "cpu", "host, 1 thr.", "HundredCpuOne"),
                    ("h100-run4", "cuda", "H100 GPU, 4th", "HundredGpuFourth"),
                    ("h100-run4", "cpu", "host, 16 thr., 4th", "HundredCpuFourth"),
                    ("h100-run4-1t", "cpu", "host, 1 thr., 4th", "HundredCpuOneFourth"),
                    ("h200-run3", "cuda", "H200 GPU, 3rd", "TwoHundredGpuThird"),
                    ("h200-run3", "cpu", "host, 16 thr., 3rd", "TwoHundredCpuThird"),
                    ("h200-run3-1t", "cpu", "host, 1 thr., 3rd", "TwoHundredCpuOneThird"),
                    ("h200-run3b", "cuda", "GPU, again", "TwoHundredGpuThirdB"),
                    ("h200-run3b", "cpu", "16 thr., again", "TwoHundredCpuThirdB"),
                    ("h200-run3b-1t", "cpu", "1 thr., again", "TwoHundredCpuOneThirdB"),
                    ("h200-run4", "cuda", "H200 GPU, 4th", "TwoHundredGpuFourth"),
                    ("h200-run4", "cpu", "host, 16 thr., 4th", "TwoHundredCpuFourth"),
                    ("h200-run4-1t", "cpu", "host, 1 thr., 4th", "TwoHundredCpuOneFourth"),
                    ("h200-run4b", "cuda", "GPU, again", "TwoHundredGpuFourthB"),
                    ("h200-run4b", "cpu", "16 thr., again", "TwoHundredCpuFourthB"),
                    ("h200-run4b-1t", "cpu", "1 thr., again", "TwoHundredCpuOneFourthB"),
                    ("h100-run5", "cuda", "H100 GPU, 5th", "HundredGpuFifth"),
                    ("h100-run5", "cpu", "host, 16 thr., 5th", "HundredCpuFifth"),
                    ("h100-run5-1t", "cpu", "host, 1 thr., 5th", "HundredCpuOneFifth"),
                    ("h100-run2", "cuda", "H100 GPU, 2nd", "HundredGpuSecond"),
                    ("h200-run2", "cuda", "H200 GPU", "TwoHundredGpu"),
                    ("h200-run1", "cuda", "H200 GPU, 1st", "TwoHundredGpuFirst"),
                    ("h200-run1", "cpu", "host, 1st", "TwoHundredCpuFirst"))
#: Where the table's columns are split into stacked tabulars (before these columns): the H100's third and
#: fourth visits, the H200's third and fourth (each zoo measured twice, by the run and by a second process
#: minutes later on the same lease), then the rest.
TRANSFER_BREAKS = (6, 12, 18)
#: The zoo sets whose CPU/GPU crossovers the text quotes: (zoo set, macro letters).
CROSSOVER_SETS = (("h100-run3", "Hundred"), ("h100-run4", "HundredFourth"), ("h100-run5", "HundredFifth"),
                  ("h100-run2", "HundredSecond"),
                  ("h200-run1", "TwoHundredFirst"), ("h200-run3", "TwoHundredThird"), ("h200-run3b", "TwoHundredThirdB"),
                  ("h200-run4", "TwoHundredFourth"), ("h200-run4b", "TwoHundredFourthB"))
#: Rows: (model, workload) -> (macro letters, its name in the table; a star: a kind the calibration's
#: reference models do not cover).
TRANSFER_MODELS = {
    ("mnist_mlp", "forward"): ("Mnist", "MNIST MLP"), ("mnist_mlp", "train"): ("MnistTrain", "MNIST MLP, train"),
    ("lenet5", "forward"): ("Lenet", "LeNet-5"), ("transformer_layer", "forward"): ("Encoder", "encoder layer"),
    ("toy", "forward"): ("Toy", "toy"), ("conv1d_sequence", "forward"): ("ConvSeq", "1-D CNN$^\\ast$"),
    ("depthwise_cnn", "forward"): ("Depthwise", "depthwise CNN$^\\ast$"),
    ("embedding_bag", "forward"): ("Bag", "embedding bag$^\\ast$"), ("gru_classifier", "forward"): ("Gru", "GRU$^\\ast$"),
}
TARGET_MEDIAN_PCT, TARGET_WORST_PCT = round(100 * TARGET_MEDIAN, 9), round(100 * TARGET_WORST, 9)


def predicted_set_names() -> set:
    """The zoo sets the paper predicts: the transfer table's and the crossovers' (the other shipped sets,
    such as the H100's first visit, are read for their measurements only)."""
    return {c[0] for c in TRANSFER_COLUMNS} | {name for name, _ in CROSSOVER_SETS}


def _cache_key(sets) -> str:
    from ..results.disk_cache import source_digest

    digest = hashlib.sha256(source_digest("opcost", "analysis/zoo_runs", "analysis/decision").encode())
    for s in sets:
        files = sorted(s.zoo.glob("measure-*.json")) + [Path(p) / "profile.json" for p in s.profiles]
        for f in files:
            stat = f.stat() if f.exists() else None
            digest.update(f"{s.name}:{f}:{stat.st_size if stat else 0}:{stat.st_mtime_ns if stat else 0}".encode())
    return digest.hexdigest()[:24]


def transfer_frames(sets=None) -> dict:
    """Per zoo set name: its measurements with predictions (:func:`zoo_set_predictions`); sets whose
    models or files are missing (an installed wheel has no zoo) are left out."""
    from ..analysis.zoo_runs import read_zoo_sets, zoo_models_dir, zoo_set_predictions
    from ..errors import AnalysisError
    from ..results import disk_cache

    sets = read_zoo_sets() if sets is None else sets
    sets = [s for s in sets if s.zoo.is_dir() and all((Path(p) / "profile.json").is_file() for p in s.profiles)]
    if not sets or not zoo_models_dir().is_dir():
        return {}
    path = disk_cache.cache_dir() / "transfer" / f"{_cache_key(sets)}.pkl"
    if disk_cache.enabled():
        cached = disk_cache.read_pickle(path)
        if cached is not None:
            return cached
    frames = {}
    for s in sets:
        try:
            frames[s.name] = zoo_set_predictions(s)
        except AnalysisError:
            continue
    if disk_cache.enabled():
        disk_cache.write_pickle(path, frames)
    return frames


def transfer_errors(frames: dict) -> pd.DataFrame:
    """Per (set, device, model, workload): ``median_pct``, ``worst_pct``, ``bias_pct``
    (:func:`crossover.analysis.zoo_check.error_table`, in %)."""
    from ..analysis.zoo_check import error_table

    rows = []
    for name, frame in frames.items():
        table = error_table(frame)
        for r in table.itertuples():
            rows.append(dict(set=name, device=r.device, model=r.model, workload=r.workload,
                             median_pct=100 * r.median_error, worst_pct=100 * r.worst_error, bias_pct=100 * r.bias))
    return pd.DataFrame(rows, columns=["set", "device", "model", "workload", "median_pct", "worst_pct", "bias_pct"])


def transfer_macros(frames: dict) -> list:
    """Per table column (:data:`TRANSFER_COLUMNS`): ``Transfer<col>Within`` (models within a median of 10%
    and a worst of 25%), ``...Entries``, ``...Median`` (the median of the models' median errors),
    ``...Worst`` (the largest error), ``...Inside`` (measurements inside the predicted interval, %) and
    ``...HalfWidth`` (the interval's median half-width, %), ``...Sitting`` and ``...SittingMedian`` (the
    sitting's share of a miss and the median of medians without it,
    :func:`~crossover.analysis.zoo_check.without_sitting`; a dash where the zoo was measured without the
    reference models); per zoo set with both devices measured, ``Transfer<set>Holds`` (models
    whose predicted crossover lies within x1.5 of the measured one, or neither crosses) and ``...InInterval``
    (the measured crossover inside the predicted one's interval: :func:`~crossover.analysis.zoo_check.crossover_table`)
    of ``...Pairs``, and
    ``...WinnerRight`` of ``...Decided`` (points whose devices differ by more than 10%)."""
    from ..analysis.zoo_check import crossover_table, interval_table, without_sitting

    errors = transfer_errors(frames)
    macros = []
    for set_name, device, header, letters in TRANSFER_COLUMNS:
        sub = errors[(errors["set"] == set_name) & (errors["device"] == device)]
        for (model, workload), (model_letters, _) in TRANSFER_MODELS.items():
            row = sub[(sub["model"] == model) & (sub["workload"] == workload)]
            macros.append(Macro(f"Transfer{letters}{model_letters}",
                                f"{row['median_pct'].iloc[0]:.0f} / {row['worst_pct'].iloc[0]:.0f}" if len(row) else DASH,
                                f"zoo set {set_name}, {device}, {model} {workload}: median / worst |error| (%)"))
        what = f"zoo set {set_name}, {device}"
        within = int(((sub["median_pct"] <= TARGET_MEDIAN_PCT) & (sub["worst_pct"] <= TARGET_WORST_PCT)).sum())
        frame = frames.get(set_name)
        held = interval_table(frame) if frame is not None else pd.DataFrame()
        held = held[held["device"] == device] if len(held) else held
        if len(held):
            macros += [Macro(f"Transfer{letters}Inside", format_number(100 * float(held["inside_share"].iloc[0]), 2),
                             f"{what}: measurements inside the predicted interval (%)"),
                       Macro(f"Transfer{letters}HalfWidth", format_number(100 * float(held["median_half_width"].iloc[0]), 2),
                             f"{what}: the interval's median half-width (% of the prediction)")]
        else:
            macros += [Macro(f"Transfer{letters}Inside", DASH, f"{what}: no intervals"),
                       Macro(f"Transfer{letters}HalfWidth", DASH, f"{what}: no intervals")]
        ratio = (frame.attrs.get("sitting_ratios") or {}).get(device) if frame is not None else None
        if ratio is not None:
            shifted = transfer_errors({set_name: without_sitting(frame, {device: ratio})})
            shifted = shifted[shifted["device"] == device]
            macros += [Macro(f"Transfer{letters}Sitting", format_number(ratio, 4),
                             f"{what}: the calibration's reference steps measured in the zoo's rounds / the "
                             f"calibration's own measurement (median)"),
                       Macro(f"Transfer{letters}SittingMedian", format_number(float(np.median(shifted["median_pct"])), 2),
                             f"{what}: median of the models' median |error| with the predictions scaled by it (%)")]
        else:
            macros += [Macro(f"Transfer{letters}Sitting", DASH, f"{what}: no reference steps in the zoo's rounds"),
                       Macro(f"Transfer{letters}SittingMedian", DASH, f"{what}: no reference steps in the zoo's rounds")]
        macros += [Macro(f"Transfer{letters}Within", str(within) if len(sub) else DASH, f"{what}: models within target"),
                   Macro(f"Transfer{letters}Entries", str(len(sub)) if len(sub) else DASH, f"{what}: models"),
                   Macro(f"Transfer{letters}Median", format_number(float(np.median(sub["median_pct"])), 2)
                         if len(sub) else DASH, f"{what}: median of the models' median |error| (%)"),
                   Macro(f"Transfer{letters}Worst", format_number(float(sub["worst_pct"].max()), 2)
                         if len(sub) else DASH, f"{what}: largest |error| (%)")]
    for set_name, letters in CROSSOVER_SETS:
        table = crossover_table(frames[set_name]) if set_name in frames else pd.DataFrame()
        what = f"zoo set {set_name}: CPU against GPU"
        have = len(table) > 0
        macros += [Macro(f"Transfer{letters}Holds", str(int(table["holds"].sum())) if have else DASH,
                         f"{what}: predicted crossover within x1.5"),
                   Macro(f"Transfer{letters}Pairs", str(len(table)) if have else DASH, f"{what}: models"),
                   Macro(f"Transfer{letters}InInterval", str(sum(v is True for v in table["in_interval"]))
                         if have and any(isinstance(v, bool) for v in table["in_interval"]) else DASH,
                         f"{what}: measured crossover inside the predicted one's interval"),
                   Macro(f"Transfer{letters}WinnerRight", str(int(table["winner_right"].sum())) if have else DASH,
                         f"{what}: points with the faster device right"),
                   Macro(f"Transfer{letters}Decided", str(int(table["decided_points"].sum())) if have else DASH,
                         f"{what}: points whose devices differ by more than 10%")]
    return macros


def transfer_table(breaks: tuple = TRANSFER_BREAKS) -> str:
    """A tabular of median / worst |error| (%) per model (rows) and zoo set and device (columns), whose
    cells reference :func:`transfer_macros`' macros; the columns are split before each index of
    ``breaks`` into tabulars stacked in one (so that the table stays legible at the text's width)."""
    edges = [0, *breaks, len(TRANSFER_COLUMNS)]
    chunks = [TRANSFER_COLUMNS[a:b] for a, b in zip(edges, edges[1:]) if b > a]
    parts = []
    for columns in chunks:
        head = " & ".join(header for _, _, header, _ in columns)
        lines = ["\\begin{tabular}{l" + "r" * len(columns) + "}", "\\toprule", f"model & {head} \\\\",
                 "\\midrule"]
        for model_letters, name in TRANSFER_MODELS.values():
            cells = [f"\\Transfer{letters}{model_letters}" for _, _, _, letters in columns]
            lines.append(f"{name} & " + " & ".join(cells) + " \\\\")
        parts.append("\n".join(lines + ["\\bottomrule", "\\end{tabular}"]))
    if len(parts) == 1:
        return parts[0] + "\n"
    return "\\begin{tabular}{@{}c@{}}\n" + "\n\\\\[6pt]\n".join(parts) + "\n\\end{tabular}\n"
