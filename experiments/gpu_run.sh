#!/usr/bin/env bash
# The GPU run in one command, for whoever next has a GPU machine for a few minutes. From the repo root:
#   OUT=/some/empty/dir bash experiments/gpu_run.sh
# Within the device tool's 10-minute command limit: each stage has its own limit, below, and the whole run a
# deadline, DEADLINE_S (default 560 s) from its start: a stage's limit is cut to what is left of it (less 12 s
# for the stage's own stopping), and a stage with under 8 s left is skipped. The H100 runs of 2026-11-26 took
# 443, 486 and 507 s; the fourth visit's (2026-11-27) ran every stage to its limit, each 1-3 s past it while it
# wrote what it had, and the device tool stopped the run at 595 s before the CUDA tests ended: hence the
# deadline, the CUDA tests straight after the zoo, and the host's thread diagnostics before the one-thread
# stages (which take what is left). The fifth visit's (2026-11-28) took 542 s; its paired suite stopped at its
# 100 s limit after 545 of 760 rows (a follow-up call finished it with --resume): now 130 s, paid for by the
# thread-environment and wake-kind stages, whose question that visit answered. The H200's third visit
# (2026-11-29) took 537 s; its zoo stages stopped at their limits (6 of 8 rounds; at one thread 2 of 5: a
# zoo stage spends 15-20 s tracing and predicting before its first round), so they now have 55 and 45 s,
# paid for by the batch-1 thread probe and the parallel-region count, whose questions that visit answered
# (experiments/results/nvidia-h200-16c/run3/step-profile.log). This leaves a 15-minute lease a few minutes for a
# machine's start and one short follow-up call (not a second run; the run's files stay in its work folder). The
# third H200 visit's follow-up (87 s) measured the zoo again in a new process with the run's profiles, which
# showed the spread between processes (up to 1.5x at one thread; run3/README section):
#   export PYTHONPATH=.; w=$(ls -d /tmp/gpu_run.*); python3 experiments/gpu_zoo.py --out $w/zoo-b --devices cpu,cuda \
#     --profiles $w/profiles --references; python3 experiments/gpu_zoo.py --out $w/zoo-b-1t --devices cpu \
#     --threads 1 --profiles $w/profiles-1t --rounds 5 --references; tar czf $OUT/zoo-b.tgz -C $w zoo-b zoo-b-1t
# Each stage's files are packed into $OUT as soon as the stage ends (at most 8 files, what the device tool
# brings back), the summary table last:
#   env.json        the environment record (machine label, CPU, GPU, driver, torch)
#   paired.tgz      the paired CPU/GPU suite (experiments/suites/gpu-paired.toml): results.csv, metadata.json
#   profiles.tgz    quick calibrations of the GPU and of its host CPU (profiles/cuda, profiles/cpu), and of the
#                   host CPU at one thread (profiles-1t/cpu)
#   zoo.tgz         every zoo model measured on each device (`measure --model --json` files) and predicted
#                   from the two profiles (`predict --model --json`): all of a device's models in the same
#                   shuffled rounds, as the calibration measures its primitives, with the calibration's
#                   reference models among them (measure-reference_*: the process's share of a miss);
#                   zoo-1t/ the CPU side at one thread
#   peaks.json      the devices' measured peaks
#   step-profile.txt  the host CPU's MNIST training step, LeNet-5 and the 1-D CNN at batch 1 and 8 under
#                   torch.profiler, then torch.profiler's kernels and gaps of a few zoo steps on the GPU
#                   (what the deadline leaves of them): the GRU (under-predicted 23-36% on the H200's fourth
#                   visit: its kernels and their device time), the toy at batch 8 (the bias-free kernel of
#                   run4/mm-kernels.log inside a step), the MNIST MLP and LeNet-5, at batch 1 and 8
#   tests.log       the CUDA tests
#   summary.md      each stage's status and time, the rows measured, the zoo's errors
# On a machine without CUDA the CPU stages run and the CUDA stages say they are skipped (a check of the
# script itself; its CPU numbers are not a GPU run's). Needs: python with torch (PYTHON=..., default
# python3), PYTHONPATH=. (set here).
set -uo pipefail
cd "$(dirname "$0")/.."
export PYTHONPATH=.
PY=${PYTHON:-python3}
OUT=${OUT:?set OUT to an empty directory for the files this run brings back}
mkdir -p "$OUT"
work=$(mktemp -d "${TMPDIR:-/tmp}/gpu_run.XXXXXX")
summary="$work/summary.md"
start_s=$(date +%s)
cuda=$($PY -c 'import torch; print(int(torch.cuda.is_available()))' 2>/dev/null || echo 0)
devices=cpu; [ "$cuda" = 1 ] && devices=cpu,cuda
printf '# GPU run\n\n| stage | status | seconds |\n| --- | --- | --- |\n' > "$summary"

# stage NAME LIMIT_S COMMAND...: run COMMAND with a time limit (SIGTERM first, which crossover and gpu_zoo.py
# turn into a stop between rows or rounds with what they measured written; SIGINT would not do: a background
# job of a non-interactive shell, as the device tool runs this, inherits it ignored), record its status and
# time in the summary.
DEADLINE_S=${DEADLINE_S:-560}
stage() {
    local name=$1 limit=$2; shift 2
    local t0 rc left; t0=$(date +%s)
    left=$(( DEADLINE_S - (t0 - start_s) - 12 ))
    if [ "$left" -lt 8 ]; then skip "$name" "the run's ${DEADLINE_S} s deadline"; return; fi
    [ "$left" -lt "$limit" ] && limit=$left
    echo "=== $name (limit ${limit}s) at $(( t0 - start_s ))s"
    timeout -s TERM -k 10 "$limit" "$@" > "$work/$name.log" 2>&1; rc=$?
    tail -n 5 "$work/$name.log"
    local status=ok; [ "$rc" = 124 ] && status="stopped at its limit"; [ "$rc" != 0 ] && [ "$rc" != 124 ] && status="failed ($rc)"
    printf '| %s | %s | %s |\n' "$name" "$status" "$(( $(date +%s) - t0 ))" >> "$summary"
}
skip() { echo "=== $1: skipped ($2)"; printf '| %s | skipped: %s | 0 |\n' "$1" "$2" >> "$summary"; }
pack() { local name=$1; shift; (cd "$work" && tar czf "$OUT/$name" "$@" 2>/dev/null) || true; }

stage env 7 $PY -m crossover env --json
sed -n '/^{/,$p' "$work/env.log" > "$OUT/env.json"

# The paired suite: each point's CPU and GPU back to back in every shuffled round (CUDA only: on a CPU
# machine there is nothing to pair).
if [ "$cuda" = 1 ]; then
    stage paired 130 $PY -m crossover sweep experiments/suites/gpu-paired.toml --out "$work/paired" --quiet --no-calibrate
    pack paired.tgz paired
else
    skip paired "no CUDA on this machine"
fi

# Quick calibrations, the GPU's first (its host CPU's takes longer), into profiles/<device>.
if [ "$cuda" = 1 ]; then
    stage calibrate-cuda 65 $PY -m crossover calibrate --device cuda --quick --out "$work/profiles/cuda"
else
    skip calibrate-cuda "no CUDA on this machine"
fi
stage calibrate-cpu 95 $PY -m crossover calibrate --device cpu --quick --out "$work/profiles/cpu"
pack profiles.tgz profiles

# The zoo: every model on each device, predicted from the profiles, then measured in one pool of shuffled
# rounds per device (the devices' rounds in turn), the calibration's reference models among them: within
# the H100's fourth visit the zoo's process ran them 1.063x the calibration's time of them on the GPU.
stage zoo 55 $PY experiments/gpu_zoo.py --out "$work/zoo" --devices "$devices" --profiles "$work/profiles" --references
pack zoo.tgz zoo

# The CUDA tests, before the diagnostics below (the fourth visit's run was stopped before they ended).
if [ "$cuda" = 1 ]; then
    stage cuda-tests 30 $PY -m pytest -q -p no:cacheprovider tests/test_measurement.py tests/test_calibrate.py -k cuda
    cp "$work/cuda-tests.log" "$OUT/tests.log"
else
    skip cuda-tests "no CUDA on this machine"
fi

# (The batch-1 thread probe, experiments/bench_batch1_host.py, ran on the H200's third visit: at 4 threads
# SGD's add_ after a batch-1 step took 11.2 µs a call against 1988 at 16, LeNet-5's 6->16 convolution 184
# against 1437; run3/step-profile.log. Its question is answered and its stage gone.)
stage peaks 12 $PY -m crossover peaks --device "$devices" --out "$work"
[ -f "$work/peaks.json" ] && cp "$work/peaks.json" "$OUT/peaks.json"

# The host CPU at one thread: a quick calibration and the zoo's CPU side, so that a thread-aware CPU cost
# can be checked on a machine nobody tuned it on (a profile at N threads predicts at N threads). Cut to
# what the deadline leaves: a calibration stopped between rounds builds its profile from those it has.
stage calibrate-cpu-1t 75 $PY -m crossover calibrate --device cpu --quick --rounds 6 --threads 1 --out "$work/profiles-1t/cpu"
stage zoo-cpu-1t 45 $PY experiments/gpu_zoo.py --out "$work/zoo-1t" --devices cpu --threads 1 --profiles "$work/profiles-1t" --rounds 5 --references
pack profiles.tgz profiles profiles-1t
pack zoo.tgz zoo zoo-1t

# What is left of the deadline: torch.profiler on the slow batch-1 host steps and on the GPU's steps. (The
# parallel-region count, experiments/bench_parallel_regions.py, stopped at its 10 s limit on the H200's
# third visit with nothing printed; its stage is gone.)
stage cpu-step-profile 13 $PY experiments/gpu_zoo.py --profile-steps --devices cpu --models mnist_mlp,lenet5,conv1d_sequence --out "$work/zoo"
if [ "$cuda" = 1 ]; then
    stage step-profile 12 $PY experiments/gpu_zoo.py --profile-steps --devices cuda --models gru_classifier,toy,mnist_mlp,lenet5 --batches 1,8 --out "$work/zoo"
else
    skip step-profile "no CUDA on this machine"
fi
cat "$work/cpu-step-profile.log" "$work/step-profile.log" > "$OUT/step-profile.txt" 2>/dev/null

{
    printf '\nwall time: %ss\n\n' "$(( $(date +%s) - start_s ))"
    [ -f "$work/zoo/summary.md" ] && cat "$work/zoo/summary.md"
    [ -f "$work/zoo-1t/summary.md" ] && { printf '\n### The host CPU at one thread\n\n'; cat "$work/zoo-1t/summary.md"; }
    if [ -d "$work/paired" ]; then
        printf '\n## The paired suite\n\n```\n'
        $PY - "$work/paired" <<'PY'
import sys
import crossover
frame = crossover.load_results(sys.argv[1], include_skipped=True)
print(frame.groupby(["device", "sweep", "status"]).size().unstack(fill_value=0).to_string())
PY
        printf '```\n'
    fi
} >> "$summary" 2>&1
cp "$summary" "$OUT/summary.md"
cat "$summary"
echo "the run's files stay in $work (for a follow-up call on the same lease)"
