#!/usr/bin/env bash
# The simulator's speed figures (issue "The SystemC simulator"): simulated tasks per wall-second,
# and the wall time of the reference sweep. Run after scripts/build.sh; prints figures only.
set -euo pipefail
cd "$(dirname "$0")/.."
echo "== simulated tasks per wall-second (build/bin/pipetwin_sim_benchmark) on $(nproc) cores"
build/bin/pipetwin_sim_benchmark
echo
echo "== wall time of: pipetwin sweep --model resnet110 --schedules sequential,gpipe,1f1b,pipedream --procs 1-64 --microbatches 64"
start=$(date +%s.%N)
build/bin/pipetwin sweep --model resnet110 --schedules sequential,gpipe,1f1b,pipedream --procs 1-64 \
  --microbatches 64 --csv /tmp/pipetwin_sweep_benchmark.csv >/dev/null
end=$(date +%s.%N)
rows=$(($(wc -l < /tmp/pipetwin_sweep_benchmark.csv) - 1))
printf 'sweep wall time: %.2f s for %d configurations (CSV in /tmp/pipetwin_sweep_benchmark.csv)\n' \
  "$(awk "BEGIN { print $end - $start }")" "$rows"
echo
# Uneven work: LayerPipe's per-layer graphs are 10-30 times the others' tasks, so how the worker
# processes share the configurations shows (dealt round-robin, one worker got every LayerPipe row).
echo "== wall time of: pipetwin sweep --model resnet362 --procs 1-32 --microbatches 128 --param batch=128 (every schedule)"
workers=$(nproc)
TIMEFORMAT='%R %U %S'
times=$( { time build/bin/pipetwin sweep --model resnet362 --procs 1-32 --microbatches 128 --param batch=128 -q \
  --csv /tmp/pipetwin_uneven_sweep_benchmark.csv >/dev/null; } 2>&1 )
read -r wall user sys <<< "$times"
printf 'uneven sweep wall time: %.2f s; the workers busy %.0f%% of it (CPU time %.1f s over %d cores)\n' \
  "$wall" "$(awk "BEGIN { print 100 * ($user + $sys) / ($wall * $workers) }")" \
  "$(awk "BEGIN { print $user + $sys }")" "$workers"
