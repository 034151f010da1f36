#!/usr/bin/env bash
# The executor across MPI ranks against the same run in one process (docs/distributed.md): the
# steady-state step time of each schedule at P = ranks, measured by `pipetwin run` three times
# each way, taking turns, and the ratio of the medians. Run after the build (needs mpirun); prints
# figures only. Usage: experiments/mpi_benchmark.sh [MODEL] [RANKS] [STEPS]
set -euo pipefail
cd "$(dirname "$0")/.."
model=${1:-lenet5}
ranks=${2:-2}
steps=${3:-100}
pipetwin=${PIPETWIN:-build/bin/pipetwin}  # PIPETWIN=path compares another build
command -v mpirun > /dev/null || { echo "mpirun not found (apt-get install openmpi-bin libopenmpi-dev)"; exit 1; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
step_s() {  # the measured step (iteration_s) of one run, from its JSON
  python3 -c 'import json, sys; print(json.load(sys.stdin)["iteration_s"])'
}
median() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
echo "== $model, P = $ranks, $steps minibatches a run, 3 runs each way on $(nproc) cores (steady-state step, ms)"
printf '%-12s %12s %12s %8s\n' schedule one_process "$ranks"_ranks ratio
for schedule in gpipe 1f1b pipedream zb-h1; do
  alone=() across=()
  for _ in 1 2 3; do
    alone+=("$("$pipetwin" run -m "$model" -s "$schedule" -p "$ranks" --steps "$steps" --data synthetic --json -q | step_s)")
    across+=("$(mpirun -q --oversubscribe -np "$ranks" "$pipetwin" run --distributed -m "$model" -s "$schedule" \
                 --steps "$steps" --data synthetic --json -q | step_s)")
  done
  a=$(printf '%s\n' "${alone[@]}" | median)
  b=$(printf '%s\n' "${across[@]}" | median)
  awk -v s="$schedule" -v a="$a" -v b="$b" 'BEGIN { printf "%-12s %12.2f %12.2f %7.2fx\n", s, a * 1e3, b * 1e3, b / a }'
done
