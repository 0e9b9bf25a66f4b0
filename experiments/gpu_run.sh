#!/usr/bin/env bash
# The GPU run, for a lent CUDA machine where each command has ~10 minutes. Run from the repo root:
#   bash experiments/gpu_run.sh check   # CUDA tests, timer agreement, the overhead table (~3 min)
#   bash experiments/gpu_run.sh cuda    # the gpu suite's CUDA points (resumes; repeat until done)
#   bash experiments/gpu_run.sh cpu     # the gpu suite's host-CPU points (resumes; repeat until done)
#   bash experiments/gpu_run.sh summary # the summary table of what is measured so far
# Results go to results/gpu/<machine> (git-ignored, so they survive between calls on a warm machine)
# and are copied to $OUT when it is set; commit them under experiments/results/<machine>/gpu.
set -euo pipefail
part=${1:?usage: gpu_run.sh check|cuda|cpu|summary}
export PYTHONPATH=${PYTHONPATH:-.}
PY=${PYTHON:-python}
budget_s=${BUDGET_S:-540}
machine=$($PY -c 'from crossover.measurement.environment import machine_label; print(machine_label())')
results=results/gpu/$machine
mkdir -p "$results"

case "$part" in
  check)
    $PY -m crossover env
    $PY -m pytest -q tests/test_measurement.py tests/test_timing.py -k "cuda or timing" -p no:cacheprovider
    $PY experiments/bench_timer_agreement.py --device cuda --rounds 20 --run-time-s 0.1
    $PY experiments/bench_overhead.py --device cuda --batch-sizes 1 64 --run-time-s 0.5
    $PY experiments/bench_interference.py --rounds 5
    ;;
  cuda|cpu)
    # SIGINT at the budget: the sweep stops between points' rows; --resume continues next call.
    timeout -s INT "$budget_s" $PY -m crossover sweep experiments/suites/gpu.toml --out "$results" \
      --devices "$part" --resume --quiet || echo "gpu_run: stopped at the ${budget_s}s budget; run again to resume"
    ;;
  summary) ;;
  *) echo "gpu_run: unknown part '$part'" >&2; exit 2 ;;
esac

$PY - "$results" <<'PY'
import sys
import crossover
frame = crossover.load_results(sys.argv[1], include_skipped=True)
print(frame.groupby(["device", "sweep", "status"]).size().unstack(fill_value=0).to_string())
ok = frame[(frame.status == "ok") & (frame.sweep == "batch_size")]
print(ok.pivot_table(index="batch_size", columns="device", values="median_s").mul(1e3).round(4).to_string())
PY
if [ -n "${OUT:-}" ]; then cp -r "$results" "$OUT/"; fi
