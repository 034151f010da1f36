#!/usr/bin/env bash
# `pipetwin run --distributed` under mpirun, as a user runs it (docs/distributed.md):
#  1. 4 ranks train lenet5 under 1f1b to the weights of the same run in one process, bit for bit,
#     and its Chrome trace has one process per rank;
#  2. more ranks than processors is one clear error, said once; so is a mistake in the options;
#  3. a rank killed mid-run ends the job within 10 s, with one line on stderr;
#  4. a rank that stops answering (SIGSTOP) ends the job after --message-timeout, with an error
#     naming the waiting rank and task and the rank it waited for;
#  5. validate --distributed (with its tables across ranks) predicts and measures every row;
#  6. a rank that stops while rank 0 works alone (validate's one-processor table) ends the job
#     after --message-timeout, at the next step that needs it, with an error saying the wait.
# Usage: mpi_run.sh PIPETWIN MPIEXEC
set -euo pipefail
pipetwin=$1
mpiexec=$2
folder=$(mktemp -d)
trap 'rm -rf "$folder"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1  # CI runs as root
mpirun=("$mpiexec" -q --oversubscribe)
fail() { echo "FAILED: $*"; exit 1; }

echo "1. mpirun -np 4 pipetwin run --distributed -m lenet5 -s 1f1b --microbatches 8"
"${mpirun[@]}" -np 4 "$pipetwin" run --distributed -m lenet5 -s 1f1b --microbatches 8 --data synthetic \
  --weights-out "$folder/across.json" --trace "$folder/trace.json" -q > "$folder/across.txt" 2> /dev/null
"$pipetwin" run -m lenet5 -s 1f1b --microbatches 8 -p 4 --data synthetic --weights-out "$folder/alone.json" -q > /dev/null
cmp -s "$folder/across.json" "$folder/alone.json" || fail "the weights of 4 ranks differ from one process's"
grep -q "4 MPI ranks" "$folder/across.txt" || fail "rank 0 did not report the run: $(cat "$folder/across.txt")"
grep -q '"name":"rank 3 (cpu)"' "$folder/trace.json" || fail "the trace has no process for rank 3"
echo "   weights bit-equal to one process's; the trace has a process per rank"

echo "2. more ranks than processors"
if "${mpirun[@]}" -np 3 "$pipetwin" run --distributed -m lenet5 -p 2 > /dev/null 2> "$folder/error.txt"; then
  fail "3 ranks for 2 processors ran"
fi
[ "$(grep -c "3 ranks for 2 processors" "$folder/error.txt")" -eq 1 ] || fail "error not said once: $(cat "$folder/error.txt")"
echo "   $(cat "$folder/error.txt")"

echo "2b. a mistake in the command line, under mpirun"
if "${mpirun[@]}" -np 2 "$pipetwin" run --distributed -m lenet5 --no-such-option > /dev/null 2> "$folder/error.txt"; then
  fail "an unknown option ran"
fi
[ "$(grep -c "no-such-option" "$folder/error.txt")" -eq 1 ] || fail "the mistake was not said once: $(cat "$folder/error.txt")"
echo "   $(grep "no-such-option" "$folder/error.txt")"

# The pid of rank $1 of the job started last (Open MPI puts the rank in each process's environment).
rank_pid() {
  for pid in $(pgrep -f -- "$folder/marker"); do
    if tr '\0' '\n' < "/proc/$pid/environ" 2> /dev/null | grep -qx "OMPI_COMM_WORLD_RANK=$1"; then echo "$pid"; return; fi
  done
}
# Starts a 4-rank run of a minute or so (its --weights-out names the marker, so that its processes
# can be found) and waits until it trains.
start_long_run() {
  "${mpirun[@]}" -np 4 "$pipetwin" run --distributed -m lenet5 -s 1f1b --microbatches 8 --steps 3000 \
    --data synthetic --message-timeout "$1" --weights-out "$folder/marker.json" > /dev/null 2> "$folder/stderr.txt" &
  job=$!
  for _ in $(seq 100); do  # until rank 1 is there (at most 20 s), then 2 s more
    victim=$(rank_pid 1)
    [ -n "$victim" ] && grep -q "training lenet5" "$folder/stderr.txt" && sleep 2 && return
    sleep 0.2
  done
  kill -9 "$job"
  fail "the run did not start: $(cat "$folder/stderr.txt")"
}
# Waits for the job to end within $1 s; prints how long it took.
await_end() {
  local started=$SECONDS
  for _ in $(seq $(( $1 * 10 ))); do
    if ! kill -0 "$job" 2> /dev/null; then
      wait "$job" && fail "the job exited 0"
      echo "$(( SECONDS - started ))"
      return
    fi
    sleep 0.1
  done
  kill -9 "$job"
  pkill -9 -f -- "$folder/marker" || true
  fail "the job was still running $1 s later"
}

echo "3. killing rank 1 mid-run"
start_long_run 60
kill -9 "$victim"
took=$(await_end 10)
# Open MPI's shared-memory transport may itself report the read the kill cut short
# ("[host:pid] Read -1, expected N, errno = 3"): that line is the launcher's, not pipetwin's.
lines=$(grep -v "minibatch" "$folder/stderr.txt" | grep -v '^\[[^]]*:[0-9]*\] Read -1, expected' || true)
[ "$(printf '%s\n' "$lines" | grep -c .)" -eq 1 ] || fail "expected one line, got: $lines"
echo "   ended within ${took} s: $lines"

echo "4. rank 1 stops answering (SIGSTOP), --message-timeout 3"
start_long_run 3
kill -STOP "$victim"
took=$(await_end 30)
kill -9 "$victim" 2> /dev/null || true
# (the first rank to give up may be one that waits for a rank that waits for rank 1; where rank 1
# stopped before the run's opening barrier, as on a slow build, the others give up there)
grep -Eq "pipetwin: rank [0-9]: error: (task .* waited [0-9.]* s for task .* of rank [0-9], and no message came from that rank|rank [0-9] waited [0-9.]* s at a barrier for the other ranks)" "$folder/stderr.txt" ||
  fail "no error naming the rank waited for, or the barrier: $(cat "$folder/stderr.txt")"
echo "   ended within ${took} s: $(grep -E "no message came|at a barrier" "$folder/stderr.txt" | head -1)"

echo "5. validate --distributed"
"${mpirun[@]}" -np 2 "$pipetwin" validate --distributed -m mlp --schedules gpipe,layerpipe -p 1,2 --runs 1 --steps 4 \
  --repeats 2 --data synthetic --json -q > "$folder/validate.json"
python3 - "$folder/validate.json" <<'PY' || fail "validate --distributed: $(cat "$folder/validate.json")"
import json, math, sys
report = json.load(open(sys.argv[1]))
rows = report["rows"]
assert len(rows) == 4 and sorted(r["processors"] for r in rows) == [1, 1, 2, 2], rows
for r in rows:
    assert r["measured_step_s"] > 0 and r["predicted_step_s"] > 0 and math.isfinite(r["replay_error"]), r
assert "2 MPI ranks" in report["placement"], report["placement"]
PY
echo "   4 rows predicted and measured, P=2 across the ranks"
echo "6. validate --distributed: rank 1 stops (SIGSTOP) while rank 0 calibrates alone, --message-timeout 3"
mkdir "$folder/marker-tables"
"${mpirun[@]}" -np 2 "$pipetwin" validate --distributed -m lenet5 --schedules 1f1b -p 1,2 --runs 2 --steps 8 \
  --message-timeout 3 --data synthetic --tables-out "$folder/marker-tables" --json > /dev/null 2> "$folder/stderr.txt" &
job=$!
victim=""
for _ in $(seq 400); do  # until rank 0 calibrates for one processor (at most 40 s)
  grep -q "round 1/2: calibrating" "$folder/stderr.txt" && victim=$(rank_pid 1) && [ -n "$victim" ] && break
  sleep 0.1
done
[ -n "$victim" ] || { kill -9 "$job"; fail "validate did not start: $(cat "$folder/stderr.txt")"; }
kill -STOP "$victim"
took=$(await_end 30)
kill -9 "$victim" 2> /dev/null || true
grep -Eq "pipetwin: rank 0: error: .*(waited|within|for) [0-9.]+ s.*\(--message-timeout sets the wait\)" "$folder/stderr.txt" ||
  fail "no error saying the wait: $(cat "$folder/stderr.txt")"
echo "   ended within ${took} s: $(grep "pipetwin: rank 0: error" "$folder/stderr.txt" | head -1)"
echo "6 passed, 0 failed"
