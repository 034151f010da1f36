#!/usr/bin/env bash
# The accelerator plug-in example (experiments/accelerator_plugin) built out of tree, as a user
# builds it: pipetwin installed into a temporary prefix (cmake --install, its CMake package), the
# example configured with find_package(pipetwin), built and run. Its 1F1B speedups must rise with
# the processors, and the mac_array model must have timed the tasks (cycles differ from the
# roofline's, which `pipetwin simulate` gives for the same hardware file without the plug-in).
# Usage: plugin_out_of_tree.sh BUILD_DIR SOURCE_DIR PIPETWIN
set -euo pipefail
build=$1
source=$2
pipetwin=$3
folder=$(mktemp -d)
trap 'rm -rf "$folder"' EXIT
fail() { echo "FAILED: $*"; exit 1; }

cmake --install "$build" --prefix "$folder/prefix" --component development > "$folder/install.log"
cmake -S "$source/experiments/accelerator_plugin" -B "$folder/build" -DCMAKE_PREFIX_PATH="$folder/prefix" \
  -DCMAKE_BUILD_TYPE=Release > "$folder/configure.log" 2>&1 || { cat "$folder/configure.log"; fail "configure"; }
cmake --build "$folder/build" > "$folder/build.log" 2>&1 || { cat "$folder/build.log"; fail "build"; }
(cd "$folder/build" && ./mac_array_example) > "$folder/out.txt" || { cat "$folder/out.txt"; fail "the example failed"; }
cat "$folder/out.txt"
# P total period speedup: four rows, speedups rising.
awk 'NR > 2 { if ($4 + 0 <= last) bad = 1; last = $4 + 0; rows++ } END { exit (rows == 4 && !bad) ? 0 : 1 }' \
  "$folder/out.txt" || fail "expected 4 rows with rising speedups"
plugin_cycles=$(awk 'NR == 3 { print $2 }' "$folder/out.txt")
# The same graph without the plug-in: the graph names an accelerator only the example registers.
if "$pipetwin" simulate -m resnet20 -s 1f1b --hardware "$folder/build/mac_array.json" --procs 1 --microbatches 8 \
    > "$folder/cli.txt" 2>&1; then
  fail "pipetwin simulate ran a graph whose accelerator it does not know"
fi
grep -q "unknown accelerator model 'mac_array'" "$folder/cli.txt" || { cat "$folder/cli.txt"; fail "no clear error"; }
roofline_cycles=$("$pipetwin" simulate -m resnet20 -s 1f1b --hardware "$folder/build/mac_array.json" --procs 1 \
  --microbatches 8 --param accelerator=fixed --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["total_cycles"])')
[ "$plugin_cycles" != "$roofline_cycles" ] || fail "the plug-in's cycles equal the roofline's ($plugin_cycles)"
echo "mac_array: $plugin_cycles cycles at P=1; the same hardware's roofline: $roofline_cycles"
