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

# The footprint scaling, made certain to apply: a table with a footprint slowdown of 10% between
# the sequential run's footprint and twice it, used throughout (validate --calibration); every
# row's prediction and factor come back from repredict --alone. LayerPipe's tasks are one layer
# each, so its rows price forwards and first BA parts with the one-layer figures of the
# one-processor table, which the scaling scales too.
"$pipetwin" profile -m mlp "${params[@]}" --microbatches 2 --repeats 2 --data synthetic -q -o "$folder/table.json" > /dev/null
"$python" - "$folder/table.json" <<'PY'
import json, sys
table = json.load(open(sys.argv[1]))
small = table["timed_footprint_bytes"]
assert small > 0, table
table.update(footprint_slowdown=0.1, footprint_small_bytes=small, footprint_large_bytes=2 * small)
assert any(layer.get("F_one_layer_s", -1) > 0 for layer in table["layers"]), table  # a one-processor table's
json.dump(table, open(sys.argv[1], "w"))
PY
"$pipetwin" validate -m mlp "${params[@]}" --schedules sequential,gpipe,zb-h1,layerpipe -p 1,2 --microbatches 2 --steps 4 \
  --runs 1 --data synthetic --json -q --calibration "$folder/table.json" > "$folder/footprint.json"
"$python" "$repredict" --pipetwin "$pipetwin" --validation "$folder/footprint.json" --alone "$folder/table.json" \
  "${params[@]}" --json > "$folder/footprint-again.json"
"$python" - "$folder/footprint.json" "$folder/footprint-again.json" <<'PY'
import json, sys
file_rows = json.load(open(sys.argv[1]))["rows"]
rows = json.load(open(sys.argv[2]))["rows"]
assert len(rows) == len(file_rows) == 8, rows
scaled = 0
for mine, theirs in zip(rows, file_rows):
    name = f"{mine['schedule']} P={mine['processors']}"
    if abs(mine["repredicted_step_s"] / theirs["predicted_step_s"] - 1) > 1e-9:
        sys.exit(f"{name}: repredicted {mine['repredicted_step_s']!r}, validate {theirs['predicted_step_s']!r}")
    if abs(mine["footprint_factor"] - theirs["footprint_factor"]) > 1e-12:
        sys.exit(f"{name}: footprint factor {mine['footprint_factor']!r}, validate {theirs['footprint_factor']!r}")
    scaled += theirs["footprint_factor"] != 1
gpipe = next(r for r in file_rows if r["schedule"] == "gpipe" and r["processors"] == 1)
if not gpipe["footprint_factor"] > 1:
    sys.exit(f"gpipe at P=1 holds both microbatches' stashes, yet its factor is {gpipe['footprint_factor']!r}")
print(f"{len(rows)} rows re-predicted with the footprint scaling ({scaled} scaled) to validate's own")
PY
