"""The drawing subcommands: ``crossover figures`` (every figure the results allow, see
:mod:`crossover.plots.figures`) and ``crossover diagram`` (the model drawn by torchview, see
:mod:`crossover.plots.diagram`)."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from .args import DEFAULT_RESULTS, positive_int

__all__ = ["add_figures", "add_diagram"]


# ---------------------------------------------------------------------------------------- figures
def add_figures(sub) -> None:
    """Register ``crossover figures``."""
    from ..plots.figures import FIT_MODEL

    p = sub.add_parser(
        "figures",
        help="draw every figure the results allow (PNG and PDF)",
        description="Draw every figure the results allow into --out: the four sweeps with fitted models "
                    "(the GPU machine's CPU and GPU by the model grouped cross-validation chooses, with their "
                    "crossover and its bootstrap interval, the values the paper quotes; other series "
                    f"{FIT_MODEL}), throughput, the CPU/GPU speed-up maps, execution modes, forward vs "
                    "train, dtypes, the held-out accuracy and the model diagram. Needs no GPU; figures that "
                    "compare with a GPU say so when the results hold none.",
    )
    p.add_argument("--results", type=Path, nargs="+", default=[DEFAULT_RESULTS], metavar="DIR",
                   help="results directories (default: the shipped reference data)")
    p.add_argument("--out", type=Path, default=Path("figures"), metavar="DIR",
                   help="output directory (default: figures)")
    p.set_defaults(func=_cmd_figures)


def _cmd_figures(args) -> int:
    from ..plots.figures import make_figures

    start = time.perf_counter()
    log = (lambda line: None) if args.quiet else (lambda line: print(line, file=sys.stderr))
    paths = make_figures(args.results, args.out, log=log)
    print(f"wrote {len(paths)} files to {args.out} in {time.perf_counter() - start:.1f} s")
    return 0


# ---------------------------------------------------------------------------------------- diagram
def add_diagram(sub) -> None:
    """Register ``crossover diagram``."""
    from ..plots.diagram import FORMATS

    p = sub.add_parser(
        "diagram",
        help="draw the model diagram with torchview (PNG and PDF)",
        description="Draw the toy residual MLP (a few blocks, small width) with torchview into --out as "
                    "diagram.png and diagram.pdf. Needs the optional extra (pip install 'crossover[diagram]') "
                    "and graphviz's 'dot' program; without them it says what to install and exits 2.",
    )
    p.add_argument("--out", type=Path, default=Path("figures"), metavar="DIR",
                   help="output directory (default: figures)")
    p.add_argument("--d-model", type=positive_int, default=16, metavar="D", help="width drawn (default 16)")
    p.add_argument("--n-layers", type=positive_int, default=2, metavar="L", help="blocks drawn (default 2)")
    p.add_argument("--format", dest="formats", nargs="+", default=list(FORMATS), metavar="FMT",
                   help="graphviz formats (default: png pdf)")
    p.set_defaults(func=_cmd_diagram)


def _cmd_diagram(args) -> int:
    from ..plots.diagram import draw_diagram

    start = time.perf_counter()
    paths = draw_diagram(args.out, d_model=args.d_model, n_layers=args.n_layers, formats=args.formats)
    print(f"wrote {', '.join(str(p) for p in paths)} in {time.perf_counter() - start:.1f} s")
    return 0
