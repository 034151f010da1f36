#!/usr/bin/env bash
# Fuzzes every loader (network JSON, hardware JSON, graph JSON, calibration JSON, torch CSV) with
# libFuzzer under AddressSanitizer and UndefinedBehaviorSanitizer, SECONDS each (default 600).
# Installs clang when missing; builds in build-fuzz/. Starts from tests/fuzz/corpus/<target>/ (the
# seeds and every input kept so far); new interesting inputs go to build-fuzz/corpus/<target>/,
# and a crashing input is copied into tests/fuzz/corpus/<target>/ so the ordinary test suite
# replays it from then on (test_fuzz_corpus.cpp). Usage: scripts/fuzz.sh [SECONDS] [TARGET ...]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-600}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(network_json hardware_json graph_json calibration_json torch_csv)
if ! command -v clang++ > /dev/null; then
  sudo=""; [ "$(id -u)" -eq 0 ] || sudo=sudo
  $sudo apt-get install -y clang
fi
flags="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer -g"
cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++ \
  -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" \
  -DPIPETWIN_BUILD_FUZZERS=ON -DPIPETWIN_BUILD_TESTS=OFF -DPIPETWIN_BUILD_PYTHON=OFF -DPIPETWIN_ENABLE_CUDA=OFF > /dev/null
cmake --build build-fuzz -j"$(nproc)" --target $(printf 'fuzz_%s ' "${targets[@]}") > /dev/null
failed=0
for target in "${targets[@]}"; do
  work=build-fuzz/corpus/$target
  crashes=build-fuzz/crashes/$target
  mkdir -p "$work" "$crashes"
  echo "fuzzing $target for ${seconds} s"
  if ! build-fuzz/fuzz/fuzz_$target "$work" "tests/fuzz/corpus/$target" -max_total_time="$seconds" \
         -artifact_prefix="$crashes/" -print_final_stats=1 > "build-fuzz/$target.log" 2>&1; then
    failed=1
    for crash in "$crashes"/*; do
      cp "$crash" "tests/fuzz/corpus/$target/"
      echo "  $target: crash kept as tests/fuzz/corpus/$target/$(basename "$crash")"
    done
  fi
  grep -E "^stat::number_of_executed_units|^stat::peak_rss_mb" "build-fuzz/$target.log" | sed "s/^/  /" || true
done
exit $failed
