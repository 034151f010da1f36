#!/usr/bin/env bash
# experiments/gpu/repredict.py --tables predicts a validation's rows again from the tables
# `validate --tables-out` kept, round by round: with the model unchanged, every row's paired error
# is the one validate printed (a second implementation of its blending and pairing, in Python),
# within 1e-9 (the simulator built on the validation's hardware profile, whose clock its task
# costs round to: on simulate's default, h100 at 1.98 GHz against cpu-core's, rows differed by
# about 1e-4).
# Usage: repredict_tables.sh PIPETWIN PYTHON REPREDICT
set -euo pipefail
pipetwin=$1 python=$2 repredict=$3
folder=$(mktemp -d)
trap 'rm -rf "$folder"' EXIT
params=(--param widths=24,16,12,10,6 --param batch=8)
"$pipetwin" validate -m mlp "${params[@]}" --schedules gpipe,1f1b,pipedream -p 1,2 --microbatches 2 --steps 4 \
  --repeats 2 --runs 2 --data synthetic --json -q --tables-out "$folder" > "$folder/validation.json"
"$python" "$repredict" --pipetwin "$pipetwin" --validation "$folder/validation.json" --tables "$folder" "${params[@]}" \
  --json > "$folder/again.json"
"$python" - "$folder/again.json" <<'PY'
import json, sys
rows = json.load(open(sys.argv[1]))["rows"]
assert len(rows) == 6, rows
for r in rows:
    if abs((1 + r["error"]) / (1 + r["file_error"]) - 1) > 1e-9:
        sys.exit(f"{r['schedule']} P={r['processors']}: repredicted {r['error']!r}, validate {r['file_error']!r}")
print(f"{len(rows)} rows re-predicted round by round to validate's own errors")
PY
