#!/usr/bin/env bash
# `pipetwin validate` cut short still reports: Ctrl-C (SIGINT) ends the rounds once the one under
# way is done and the rounds done are reported (exit 0, "stopped_early" in --json); a second
# interrupt quits at once; --time-limit begins no round that would end past it.
# Usage: validate_stopped.sh PIPETWIN
set -euo pipefail
pipetwin=$1
folder=$(mktemp -d)
trap 'rm -rf "$folder"' EXIT
common=(validate -m mlp --param widths=32,16,8 --param batch=8 --data synthetic --schedules gpipe -p 1,2 --repeats 2
        --runs 100)
rounds_of() { python3 -c 'import json, sys; r = json.load(open(sys.argv[1])); print(r["rounds"], r["stopped_early"])' "$1"; }
started() {  # started PID ERR PATTERN: until the progress shows PATTERN (at most 60 s)
  for _ in $(seq 600); do
    grep -q "$3" "$2" 2> /dev/null && return 0
    kill -0 "$1" 2> /dev/null || return 1
    sleep 0.1
  done
  return 1
}
"$pipetwin" "${common[@]}" --steps 4 --json > "$folder/out.json" 2> "$folder/err.txt" &
pid=$!
started "$pid" "$folder/err.txt" "run 2/100" || { echo "no second round began"; cat "$folder/err.txt"; exit 1; }
kill -INT "$pid"
wait "$pid" || { echo "interrupted validate failed ($?)"; cat "$folder/err.txt"; exit 1; }
grep -q "stopping once this round's runs end" "$folder/err.txt" || { echo "no word of stopping"; cat "$folder/err.txt"; exit 1; }
read -r rounds stopped <<< "$(rounds_of "$folder/out.json")"
[ "$stopped" = True ] && [ "$rounds" -ge 2 ] && [ "$rounds" -lt 100 ] \
  || { echo "interrupted: rounds $rounds, stopped_early $stopped"; exit 1; }
# Two interrupts: it quits at once, as an interrupted program does (runs long enough that the round
# under way is not over between the two).
"$pipetwin" "${common[@]}" --steps 30000 --json > "$folder/out2.json" 2> "$folder/err2.txt" &
pid=$!
started "$pid" "$folder/err2.txt" "run 1/100" || { echo "no first round began"; cat "$folder/err2.txt"; exit 1; }
kill -INT "$pid"
sleep 0.2
kill -INT "$pid" 2> /dev/null || true
status=0
wait "$pid" || status=$?
[ "$status" -eq 130 ] || { echo "twice interrupted: exit $status, expected 130"; exit 1; }
# A limit no round fits in: the first kept round is taken all the same, and the text says why it ended.
"$pipetwin" "${common[@]}" --steps 4 --time-limit 0.001 > "$folder/out.txt" 2> "$folder/err3.txt"
grep -q "stopped after 1 round of --runs 100" "$folder/out.txt" || { echo "no stop in the text:"; cat "$folder/out.txt"; exit 1; }
grep -q "time limit 0.001 s: another round" "$folder/err3.txt" || { echo "no word of the limit"; cat "$folder/err3.txt"; exit 1; }
echo "interrupted after $rounds rounds and reported; a second interrupt quits; --time-limit stopped after 1 round"
