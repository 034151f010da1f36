#!/usr/bin/env bash
# Killing `pipetwin sweep` takes its worker processes with it (they used to run on until their
# next write failed). Usage: sweep_killed.sh PIPETWIN
set -euo pipefail
pipetwin=$1
folder=$(mktemp -d)
trap 'rm -rf "$folder"' EXIT
marker="$folder/marker.csv"  # names this run's processes in their command lines
# Jobs of a few seconds each, so that a worker would not notice its parent's end by writing.
"$pipetwin" sweep --model resnet110 --param batch=512 --schedules pipedream --procs 31,32 --microbatches 512 \
  --minibatches 16 --jobs 2 --csv "$marker" > /dev/null 2>&1 &
parent=$!
for _ in $(seq 50); do  # until the workers are there (at most 5 s)
  [ "$(pgrep -f -- "$marker" | wc -l)" -ge 3 ] && break
  sleep 0.1
done
workers=$(( $(pgrep -f -- "$marker" | wc -l) - 1 ))
[ "$workers" -ge 1 ] || { echo "no workers started"; exit 1; }
kill -9 "$parent"
wait "$parent" 2> /dev/null || true
for _ in $(seq 10); do  # they must be gone within 1 s (a job takes several)
  [ -z "$(pgrep -f -- "$marker")" ] && { echo "the $workers workers ended with their parent"; exit 0; }
  sleep 0.1
done
echo "workers still running after their parent was killed: $(pgrep -f -- "$marker" | tr '\n' ' ')"
exit 1
