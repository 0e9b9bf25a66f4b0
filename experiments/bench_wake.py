"""The thread wake-up term on a machine whose OpenMP threads sleep sooner: the zoo with and without it.

    python experiments/bench_wake.py --spin 2000 --out DIR [--threads 2]
    python experiments/bench_wake.py --out DIR          # the runtime's default spin

On the 2-core VM the OpenMP threads spin for 1-3 ms before they sleep, longer than any serial gap of a zoo
step, so the wake-up term (:mod:`crossover.opcost.thread_wake`) reads nothing there. ``GOMP_SPINCOUNT``
shortens the spin (1000: asleep after a few µs, 6 µs as its calibration read it; 2000: 17 µs), a stand-in for a machine whose
threads sleep early. This script runs ``experiments/bench_zoo.py --plan quick`` under it (the calibration
and the zoo in the same rounds; ``DIR/sitting.log``), rebuilds the same calibration without its wake
primitives (``DIR/profile-nowake``: the model as it was before them, composition terms refitted), and
rescores the sitting's measurements on both profiles: per model the median and worst error, and how many
measurements each interval holds. Run it on a quiet machine (~2.5 min on 2 cores); a folder that holds an
ended sitting is rescored without measuring again (its profile rebuilt by the code at hand).
"""

from __future__ import annotations

import argparse
import gzip
import os
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def _run(command: list, env: dict, log: Path = None, ok=(0,)) -> str:
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    if log is not None:
        log.write_text(done.stdout + done.stderr)
    if done.returncode not in ok:
        sys.stderr.write(done.stderr)
        raise SystemExit(done.returncode)
    return done.stdout


def without_wake(calibration: Path, out: Path) -> None:
    """``out/calibration.csv.gz``: ``calibration``'s rows but the wake primitives', and its profile rebuilt."""
    import csv

    from crossover.opcost.thread_wake import WAKE

    out.mkdir(parents=True, exist_ok=True)
    with gzip.open(calibration / "calibration.csv.gz", "rt", newline="") as src, \
            gzip.open(out / "calibration.csv.gz", "wt", newline="") as dst:
        reader = csv.DictReader(src)
        writer = csv.DictWriter(dst, fieldnames=reader.fieldnames)
        writer.writeheader()
        writer.writerows(row for row in reader if row["family"] != WAKE)
    shutil.copy(calibration / "profile.json", out / "profile.json")  # its machine, threads and metadata


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--spin", type=int, default=0, help="GOMP_SPINCOUNT for the sitting (default: unset)")
    parser.add_argument("--threads", type=int, default=2, help="intra-op threads (default 2)")
    parser.add_argument("--out", type=Path, required=True, help="folder for the sitting and the two profiles")
    args = parser.parse_args(argv)
    env = dict(os.environ)
    env.pop("GOMP_SPINCOUNT", None)
    sitting_env = dict(env, **({"GOMP_SPINCOUNT": str(args.spin)} if args.spin else {}))
    args.out.mkdir(parents=True, exist_ok=True)
    zoo_csv, profile = args.out / "zoo.csv", args.out / "profile"
    if zoo_csv.exists() and (profile / "profile.json").exists():  # a sitting that ended: rescored, not redone
        print(f"(reusing the sitting in {args.out}, its profile rebuilt by this code)", file=sys.stderr)
        _run([sys.executable, "-m", "crossover", "calibrate", "--device", "cpu", "--rebuild", "--out", str(profile)],
             env)
    else:  # bench_zoo exits 1 where a model misses its target: a result here, not a failure
        _run([sys.executable, str(HERE / "bench_zoo.py"), "--plan", "quick", "--threads", str(args.threads), "--out",
              str(profile), "--csv", str(zoo_csv)], sitting_env, args.out / "sitting.log", ok=(0, 1))
    nowake = args.out / "profile-nowake"
    without_wake(profile, nowake)
    _run([sys.executable, "-m", "crossover", "calibrate", "--device", "cpu", "--rebuild", "--out", str(nowake)], env)
    print(f"GOMP_SPINCOUNT={args.spin or 'unset'}, {args.threads} threads; the sitting: {args.out / 'sitting.log'}")
    for label, folder in (("with the wake-up term", profile), ("without (its primitives dropped)", nowake)):
        text = _run([sys.executable, str(HERE / "bench_zoo.py"), "--profile", str(folder), "--rescore", str(zoo_csv)],
                    env, ok=(0, 1))
        from crossover.opcost.profiles import load_profile

        loaded = load_profile(folder)
        print(f"\n== {label}: wake {loaded.overhead('wake_s') * 1e6:.1f} µs after "
              f"{loaded.overhead('wake_after_s') * 1e6:.1f} µs; composition "
              + ", ".join(f"{k} {v:.3g}" for k, v in loaded.meta.get("composition_fit", {}).items()))
        print("\n".join(line for line in text.splitlines() if "median |error|" in line))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
