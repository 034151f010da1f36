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
