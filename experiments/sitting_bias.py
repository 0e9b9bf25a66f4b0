"""Which zoo points a machine's sittings miss the same way: per model, workload, batch and thread count, the
median error over the sittings and the share of them that read the point low.

    python experiments/sitting_bias.py experiments/results/intel-xeon-2c/logs --pattern 'bench_zoo_1128?'

Reads ``bench_zoo.py --csv`` tables (``<pattern>_t1.csv``, ``_t2.csv``), each scored by the code of its own
day: a point low in nearly every sitting, whatever the code, is a bias of the method, not noise.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path


def main(argv=None) -> int:
    import pandas as pd

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("logs", type=Path, help="folder of bench_zoo.py --csv tables")
    parser.add_argument("--pattern", default="bench_zoo_1128?", help="file names before _t1.csv / _t2.csv (a glob)")
    args = parser.parse_args(argv)
    tables = []
    for path in sorted(args.logs.glob(f"{args.pattern}_t[12].csv")):
        table = pd.read_csv(path)
        table["threads"] = int(re.search(r"_t(\d)\.csv$", path.name).group(1))
        tables.append(table)
    if not tables:
        print(f"no {args.pattern}_t1.csv or _t2.csv in {args.logs}", file=sys.stderr)
        return 2
    data = pd.concat(tables)
    data["error_pct"] = 100.0 * data["error"]
    keys = ["model", "workload", "batch_size"]
    median = data.pivot_table(index=keys, columns="threads", values="error_pct", aggfunc="median").round(1)
    low = data.pivot_table(index=keys, columns="threads", values="error_pct", aggfunc=lambda e: (e < 0).mean()).round(2)
    count = pd.Series([int(t["threads"].iloc[0]) for t in tables]).value_counts().sort_index()
    print(f"{len(tables)} tables; sittings per thread count: " + ", ".join(f"{t}: {n}" for t, n in count.items()))
    print(pd.concat([median, low], axis=1, keys=["median error %", "share low"]).to_string())
    return 0


if __name__ == "__main__":
    sys.exit(main())
