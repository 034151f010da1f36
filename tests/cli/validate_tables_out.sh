#!/usr/bin/env bash
# `pipetwin validate --tables-out DIR --warmup-rounds N` writes each kept round's tables, one per
# processor count, that `simulate --calibration` reads back, and says when it warms up; with
# --calibration it refuses. `--traces-out DIR` writes each kept round's runs as Chrome traces,
# the measured run beside the prediction. Usage: validate_tables_out.sh PIPETWIN
set -euo pipefail
pipetwin=$1
folder=$(mktemp -d)
trap 'rm -rf "$folder"' EXIT
common=(validate -m mlp --param widths=24,16,12,10,6 --param batch=8 --schedules gpipe -p 1,2 --microbatches 2
        --steps 2 --repeats 2 --data synthetic)
mkdir "$folder/traces"
"$pipetwin" "${common[@]}" --runs 2 --warmup-rounds 1 --tables-out "$folder" --traces-out "$folder/traces" \
  > "$folder/out.txt" 2> "$folder/err.txt"
grep -q "warm-up round 1/1: calibrating" "$folder/err.txt" || { echo "no warm-up round in the progress"; cat "$folder/err.txt"; exit 1; }
expected="mlp-round1-p1.json mlp-round1-p2.json mlp-round2-p1.json mlp-round2-p2.json"
found=$(cd "$folder" && ls mlp-*.json | tr '\n' ' ' | sed 's/ $//')
[ "$found" = "$expected" ] || { echo "tables: '$found', expected '$expected'"; exit 1; }
# By default (auto) only a GPU's one-processor table takes twins: none of a CPU's.
if grep -l '"overheads_from_unmarked_twins"' "$folder"/mlp-*.json; then echo "a CPU table from twins by default"; exit 1; fi
expected="mlp-gpipe-p1-round1.json mlp-gpipe-p1-round2.json mlp-gpipe-p2-round1.json mlp-gpipe-p2-round2.json"
found=$(cd "$folder/traces" && ls | tr '\n' ' ' | sed 's/ $//')
[ "$found" = "$expected" ] || { echo "traces: '$found', expected '$expected'"; exit 1; }
for trace in "$folder"/traces/*.json; do
  # the measured run's processors and the prediction's, each a process of the trace
  [ "$(grep -o '"name": *"processors (' "$trace" | wc -l)" -eq 2 ] || { echo "$trace: not a run beside its prediction"; exit 1; }
  grep -q '"processors (cpu)"' "$trace" || { echo "$trace: no measured run"; exit 1; }
done
"$pipetwin" simulate -m mlp --param widths=24,16,12,10,6 --param batch=8 -s gpipe -p 2 --microbatches 2 \
  --calibration "$folder/mlp-round2-p2.json" > /dev/null || { echo "simulate does not read a kept table back"; exit 1; }
if "$pipetwin" "${common[@]}" --runs 1 --calibration "$folder/mlp-round1-p1.json" --tables-out "$folder" 2> "$folder/err.txt"; then
  echo "--tables-out with --calibration did not fail"; exit 1
fi
grep -q "with --calibration it takes none" "$folder/err.txt" || { echo "unclear error:"; cat "$folder/err.txt"; exit 1; }
# --unmarked-twins alone (all): the tables' overheads from unmarked twins of the timed runs, and said so.
mkdir "$folder/twins"
"$pipetwin" "${common[@]}" --runs 1 --unmarked-twins --tables-out "$folder/twins" > /dev/null 2>&1 \
  || { echo "validate --unmarked-twins failed"; exit 1; }
for table in "$folder"/twins/*.json; do
  grep -q '"overheads_from_unmarked_twins": *true' "$table" || { echo "$table: no word of its twins"; exit 1; }
done
if "$pipetwin" "${common[@]}" --runs 1 --calibration "$folder/mlp-round1-p1.json" --unmarked-twins 2> "$folder/err.txt"; then
  echo "--unmarked-twins with --calibration did not fail"; exit 1
fi
grep -q "with --calibration it makes none" "$folder/err.txt" || { echo "unclear error:"; cat "$folder/err.txt"; exit 1; }
if "$pipetwin" "${common[@]}" --runs 1 --unmarked-twins sometimes 2> "$folder/err.txt"; then
  echo "--unmarked-twins sometimes did not fail"; exit 1
fi
grep -q "sometimes not in {auto,all,none}" "$folder/err.txt" || { echo "unclear error:"; cat "$folder/err.txt"; exit 1; }
echo "4 tables written and read back, 4 traces written; --calibration refused; tables from unmarked twins"
