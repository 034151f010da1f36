#!/usr/bin/env bash
# GPU runs on a machine that reaches no package registry (docs/design.md, "GPU runs"), in two steps:
#
#   experiments/gpu/gpu.sh prepare    here: download the Debian .debs pipetwin builds with (SystemC,
#                                     Eigen, oneDNN, doctest, nlohmann-json, CLI11, fmt, zlib) and the
#                                     Fashion-MNIST dataset into .gpu/ (ignored by git, < 64 MiB)
#   experiments/gpu/gpu.sh prebuild   here, instead of building there: build the GPU binaries on this
#                                     machine (its CUDA toolkit must have the GPU machine's major
#                                     version; sm_90, the H100/H200, unless ARCH names another) and
#                                     copy them, with the shared libraries they need beyond the C/C++
#                                     runtime and CUDA's, into .gpu/build and .gpu/lib (no MPI, no
#                                     Python); the steps below then use them and skip the build
#   experiments/gpu/gpu.sh device     there (device tool: carry [".gpu"]): unpack them into a private
#                                     prefix, then build, test, validate and baseline below in turn
#   experiments/gpu/gpu.sh build      there: build with nvcc for the GPU found (build-gpu/), list devices
#   experiments/gpu/gpu.sh test       there: every test, the CUDA ones included (they skip without a GPU;
#                                     TESTS=pattern: only those)
#   experiments/gpu/gpu.sh partitions there: whether SM partitions isolate (pipetwin_partition_benchmark)
#   experiments/gpu/gpu.sh tasks      there: what a task's host synchronisation costs against
#                                     event-chained tasks and a CUDA graph (pipetwin_task_sync_benchmark)
#   experiments/gpu/gpu.sh handoffs   there: the thread handoff a profile times, 8 times after each of
#                                     several sleep lengths (pipetwin_handoff_benchmark; no GPU used)
#   experiments/gpu/gpu.sh next       there, with prebuilt binaries: the next call docs/cuda-executor.md
#                                     names, under an internal deadline (BUDGET_S, 540 s), packed into
#                                     next.tgz in $OUT
#   experiments/gpu/gpu.sh session    there, with prebuilt binaries: test, tasks, partitions, handoffs, a
#                                     --tf32 run, validate and baseline in turn, each step's log in $OUT
#   experiments/gpu/gpu.sh validate   there: `pipetwin validate --device cuda` on resnet56 and vgg16,
#                                     six schedules, P = 1, 2, 4, 8 SM partitions, one warm-up round
#                                     not kept, each kept round's tables in tables-MODEL.tgz (MODELS, SMS,
#                                     PROCS, STEPS, RUNS, WARMUP, REPEATS override; REPEATS 16, as before the CPU default
#                                     became 64, to keep the device time; TIME_LIMIT=S: --time-limit, no
#                                     round begun that would end past S s); tables and JSON; TRACES=1
#                                     adds each kept round's runs as Chrome traces (traces-MODEL.txz;
#                                     TRACES=1f1b,layerpipe: those schedules' runs only); TWINS=all
#                                     (or 1) profiles with --unmarked-twins all (files named
#                                     MODEL-twins), TWINS=none with --unmarked-twins none (files named
#                                     MODEL-marked); the default is auto (the one-processor tables'
#                                     overheads from twins)
#   experiments/gpu/gpu.sh probe      there: resnet56's 1f1b, layerpipe and sequential on 8 partitions
#                                     run alone (`pipetwin run`, 3 each), with the host's load and CPU
#                                     steal before and after (probe.txt, appended): run before and after
#                                     `validate` in one call, it tells the machine's unsteadiness from
#                                     the validation process's (docs/cuda-executor.md, 2026-11-28)
#   experiments/gpu/gpu.sh baseline   there: experiments/gpu/pytorch_baseline.py (needs torch there)
#   experiments/gpu/gpu.sh constants  there: experiments/gpu/operator_constants.py: the operator cost
#                                     model's assumed figures measured, its GEMM and GPT-block times
#                                     against PyTorch's (needs torch there; HARDWARE=h100 or h200)
#   experiments/gpu/gpu.sh ranks      there, where the machine has mpirun (the build then has MPI):
#                                     the CUDA executor across 2 ranks sharing the GPU (--rank-link
#                                     mpi), its weights against one process's; and NCCL where there
#                                     are 2 GPUs (docs/distributed.md, "GPUs across ranks")
#
# Logs and tables go to $OUT. Each step fits the device tool's 10 minutes a call; on a warm machine
# build-gpu/ persists, so the steps can be separate calls.
#
# The device step needs only what the GPU image has (nvcc, CMake, a C++ compiler); pkg-config is not
# needed (CMake finds SystemC in the prefix directly). The Python package is not built there.
set -euo pipefail
cd "$(dirname "$0")/../.."
self="$PWD/experiments/gpu/gpu.sh"
carry=.gpu
packages=(libsystemc libsystemc-dev libeigen3-dev doctest-dev nlohmann-json3-dev libcli11-dev libfmt-dev
          libfmt9 zlib1g-dev libdnnl2 libdnnl-dev ocl-icd-libopencl1 dataset-fashion-mnist)

# .gpu/ travels to the GPU machine only as a carried path: git ignores it here.
make_carry() {
  mkdir -p "$carry"
  local exclude
  exclude=$(git rev-parse --git-path info/exclude)
  mkdir -p "$(dirname "$exclude")"
  grep -qx "/$carry/" "$exclude" 2>/dev/null || echo "/$carry/" >> "$exclude"
}

prepare() {
  make_carry
  (cd "$carry" && rm -f ./*.deb && apt-get download "${packages[@]}" >&2)
  du -sh "$carry" >&2
  echo "prepared $(ls "$carry"/*.deb | wc -l) packages in $carry; run the device step with carry [\"$carry\"]" >&2
}

prefix=/tmp/pipetwin-prefix
build=build-gpu
out=${OUT:-/tmp/pipetwin-gpu-out}

prebuild() {
  local dir=build-gpucarry binary
  local binaries=(pipetwin pipetwin_tests pipetwin_partition_benchmark pipetwin_task_sync_benchmark pipetwin_handoff_benchmark)
  cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=Release -DPIPETWIN_ENABLE_MPI=OFF -DPIPETWIN_BUILD_PYTHON=OFF \
        -DCMAKE_CUDA_ARCHITECTURES="${ARCH:-90}" >&2
  cmake --build "$dir" -j "$(nproc)" --target "${binaries[@]}" pipetwin_cuda >&2
  make_carry
  rm -rf "$carry/build" "$carry/lib" "$carry/lib.tar.xz"
  mkdir -p "$carry/build/bin" "$carry/build/lib" "$carry/lib"
  for binary in "${binaries[@]}"; do cp "$dir/bin/$binary" "$carry/build/bin/"; done
  cp "$dir/lib/libpipetwin_cuda.so" "$carry/build/lib/"
  # Which source the binaries are (the device's copy of the tree has no git): session logs say it.
  git describe --always --dirty > "$carry/build/COMMIT"
  # What the binaries load beyond glibc, the C++ runtime and CUDA's libraries (the GPU machine's own).
  ldd "$carry"/build/bin/* "$carry"/build/lib/* | awk '/=> \//{print $3}' | sort -u |
    grep -Ev '/(ld-linux|libc|libm|libdl|librt|libpthread|libstdc\+\+|libgcc_s|libcuda|libcudart|libcublas|libcublasLt)[.-]' |
    while read -r library; do cp -L "$library" "$carry/lib/"; done
  # Packed: oneDNN alone is 38 MB, and a call carries 64 MiB at most.
  tar cJf "$carry/lib.tar.xz" -C "$carry" lib && rm -rf "$carry/lib"
  du -sh "$carry" >&2
  echo "prebuilt in $carry/build, their libraries in $carry/lib.tar.xz; run the device steps with carry [\"$carry\"]" >&2
}

# The carried .debs unpacked into a private prefix, and the paths the build and the binaries need;
# with prebuilt binaries (gpu.sh prebuild), those and their libraries instead.
unpack() {
  mkdir -p "$out" "$prefix"
  if [ -x "$carry/build/bin/pipetwin" ]; then
    build="$carry/build"
    [ -d "$prefix/lib" ] || tar xJf "$carry/lib.tar.xz" -C "$prefix"
    export LD_LIBRARY_PATH="$prefix/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    return
  fi
  [ -n "$(ls "$carry"/*.deb 2>/dev/null)" ] || { echo "no .debs in $carry: run 'gpu.sh prepare' here first" >&2; exit 2; }
  for deb in "$carry"/*.deb; do dpkg-deb -x "$deb" "$prefix"; done
  arch_lib=$(ls -d "$prefix"/usr/lib/*-linux-gnu | head -1)
  export LD_LIBRARY_PATH="$arch_lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  # The dataset where the executors look for it by default.
  mkdir -p /usr/share/datasets 2>/dev/null && cp -r "$prefix"/usr/share/datasets/fashion-mnist /usr/share/datasets/ 2>/dev/null || true
}

build() {
  unpack
  # Debian's CMake package files live under usr/lib/<triplet>/cmake and usr/share/<name>/cmake.
  local prefix_path="$prefix/usr;$arch_lib/cmake;$prefix/usr/share" sm
  sm=$( (nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null || true) | head -1 | tr -d '.')
  {
    nvidia-smi || echo "no nvidia-smi here: building for sm_${sm:-90}, the GPU tests will skip"
    cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$prefix_path" \
          -DCMAKE_CUDA_ARCHITECTURES="${sm:-90}" -DPIPETWIN_BUILD_PYTHON=OFF
    # TARGETS: only these (the device step builds what it runs, to spend less device time)
    cmake --build "$build" -j "$(nproc)" ${TARGETS:+--target $TARGETS}
    "$build"/bin/pipetwin devices
  } 2>&1 | tee "$out/build.log"
}

# TESTS: a ctest -R pattern (default: every test); each test stops after 300 s. With prebuilt
# binaries (no ctest files), the doctest cases whose names match TEST_CASES (default: the CUDA ones).
run_tests() {
  unpack
  if [ "$build" = "$carry/build" ]; then
    "$build"/bin/pipetwin_tests --test-case="${TEST_CASES:-*CUDA*}" --duration=true 2>&1 | tee "$out/test.log"
  else
    ctest --test-dir "$build" --output-on-failure -j 4 --timeout 300 ${TESTS:+-R "$TESTS"} 2>&1 | tee "$out/test.log"
  fi
}

# A task's host synchronisation against event-chained tasks and a CUDA graph: 4 and 8 partitions of
# 16 SMs with tasks of 20 kernels of 10 us (about a resnet56 stage's kernels at P = 4), the same
# with empty kernels (the overhead alone), and 4 plain streams.
tasks() {
  unpack
  {
    "$build"/bin/pipetwin_task_sync_benchmark --processors 4 --sms 16 --kernels 20 --kernel-us 10
    "$build"/bin/pipetwin_task_sync_benchmark --processors 8 --sms 16 --kernels 20 --kernel-us 10
    "$build"/bin/pipetwin_task_sync_benchmark --processors 4 --sms 16 --kernels 20 --kernel-us 0
    "$build"/bin/pipetwin_task_sync_benchmark --placement streams --processors 4 --kernels 20 --kernel-us 10
  } 2>&1 | tee "$out/tasks.txt"
}

# The handoff a profile times (measure_handoff_s), 8 measurements after each sleep length from
# 0.1 to 10 ms: one measurement's spread, and how the handoff grows with the sleep before it
# (docs/cuda-executor.md, "Measured on an H200"). Host threads only: the GPU machine's CPUs.
handoffs() {
  unpack
  "$build"/bin/pipetwin_handoff_benchmark --measurements 8 2>&1 | tee "$out/handoffs.txt"
}

# --tf32 against fp32: resnet56 under 1f1b on 4 partitions, the step and the last loss of each.
tf32() {
  unpack
  local common=(-m resnet56 -s 1f1b -p 4 --placement partitions --partition-sms 16 --microbatches 8 --steps 12 --data synthetic)
  {
    echo "fp32:"; "$build"/bin/pipetwin run --device cuda "${common[@]}"
    echo "tf32:"; "$build"/bin/pipetwin run --device cuda --tf32 "${common[@]}"
  } 2>&1 | tee "$out/tf32.txt"
}

# Whether SM partitions isolate: a compute-bound kernel on the whole GPU, on one partition of
# SMS SMs alone, and on it while every other partition runs too (partition_benchmark.cu).
partitions() {
  unpack
  "$build"/bin/pipetwin_partition_benchmark --sms "${SMS:-16}" 2>&1 | tee "$out/partitions.txt"
}

# Predicted against measured on SM partitions of one GPU (16 SMs each, so P = 8 fits an H100's
# 132): resnet56 and vgg16 (CIFAR), six schedules, P = 1, 2, 4, 8. Tables and JSON in $OUT.
validate() {
  unpack
  local model name failed=0
  # TWINS=all (or 1): every table's overheads from unmarked twins of the profile's runs, the files
  # named MODEL-twins; TWINS=none: none (the way before 2026-11-28), MODEL-marked.
  local twins=() suffix=
  case "${TWINS:-auto}" in
    1|all) twins=(--unmarked-twins all); suffix=-twins ;;
    none) twins=(--unmarked-twins none); suffix=-marked ;;
    auto) ;;
    *) echo "TWINS must be auto, all (or 1) or none, got '$TWINS'" >&2; return 2 ;;
  esac
  for model in ${MODELS:-resnet56 vgg16}; do
    name=$model$suffix
    mkdir -p "$out/tables-$name"
    local traces=()
    [ -z "${TRACES:-}" ] || { mkdir -p "$out/traces-$name"; traces=(--traces-out "$out/traces-$name"); }
    "$build"/bin/pipetwin validate --tables-out "$out/tables-$name" ${traces[@]+"${traces[@]}"} ${twins[@]+"${twins[@]}"} --warmup-rounds "${WARMUP:-1}" --device cuda --placement partitions --partition-sms "${SMS:-16}" -m "$model" \
        --schedules sequential,gpipe,1f1b,pipedream,layerpipe,stale-weights -p "${PROCS:-1,2,4,8}" \
        --microbatches 8 --steps "${STEPS:-12}" --runs "${RUNS:-3}" --repeats "${REPEATS:-16}" --data synthetic --json \
        ${TIME_LIMIT:+--time-limit "$TIME_LIMIT"} \
        > "$out/validate-$name.json" 2> "$out/validate-$name.log" || { cat "$out/validate-$name.log"; failed=1; continue; }
    python3 - "$out/validate-$name.json" <<'PY' | tee "$out/validate-$name.txt"
import json, sys
r = json.load(open(sys.argv[1]))
print(f"{r['model']} · {r['placement']} · {r['microbatches']} microbatches x {r['samples_per_microbatch']} samples")
print(f"{'schedule':>14} {'P':>2} {'pred_ms':>9} {'meas_ms':>9} {'error':>7} {'spread':>6} {'tasks':>7} {'replay':>7} "
      f"{'pred_x':>6} {'meas_x':>6} {'pred_MiB':>9} {'meas_MiB':>9} {'peak_err':>8}")
for w in r["rows"]:
    print(f"{w['schedule']:>14} {w['processors']:>2} {w['predicted_step_s']*1e3:9.3f} {w['measured_step_s']*1e3:9.3f} "
          f"{w['step_error']*100:+6.1f}% {w['measured_spread']*100:5.1f}% {w['task_time_error']*100:+6.1f}% "
          f"{w['replay_error']*100:+6.1f}% {w['predicted_speedup']:5.2f}x {w['measured_speedup']:5.2f}x "
          f"{w['predicted_step_peak_memory_bytes']/2**20:9.1f} {w['measured_step_peak_memory_bytes']/2**20:9.1f} "
          f"{w['step_peak_memory_error']*100:+7.1f}%"
          + (f" pool {w['measured_pool_peak_bytes']/2**20:.1f}" if w.get('measured_pool_peak_bytes') else ""))
print(f"mean |error| {r['mean_abs_step_error']*100:.1f}%, largest {r['max_abs_step_error']*100:.1f}%; Kendall tau "
      + " ".join(f"P={p}: {t:.2f}" for p, t in r["kendall_tau"].items())
      + "; separable tau " + " ".join(f"P={p}: " + ("-" if t["tau"] is None else f"{t['tau']:.2f}") + f" ({t['pairs']} of {t['of']} pairs)"
                                      for p, t in r["separable_kendall_tau"].items()))
print("pairs in the predicted order / against it / predicted the same step: "
      + " ".join(f"P={p}: {o['in_order']}/{o['against']}/{o['predicted_equal']}" for p, o in r.get("pair_order", {}).items()))
for line in r.get("too_noisy", []):
    print("too noisy:", line)
PY
    # One file for the tables: a device call brings back 8 files at most.
    tar czf "$out/tables-$name.tgz" -C "$out" "tables-$name" && rm -rf "${out:?}/tables-$name"
    # TRACES=1: every row's traces; TRACES=1f1b,layerpipe: those schedules' only (a device call
    # brings back 16 MiB a file: resnet56's six schedules at P = 1 and 8, 4 rounds, were 18.4 MB
    # gzipped). xz packs JSON about a quarter smaller than gzip.
    if [ -d "$out/traces-$name" ]; then
      if [ "$TRACES" != 1 ]; then
        local trace keep schedule
        for trace in "$out/traces-$name"/*.json; do
          keep=0
          for schedule in ${TRACES//,/ }; do [[ $(basename "$trace") == "$model-$schedule-p"* ]] && keep=1; done
          [ "$keep" = 1 ] || rm -f "$trace"
        done
      fi
      tar cJf "$out/traces-$name.txz" -C "$out" "traces-$name" && rm -rf "${out:?}/traces-$name"
    fi
  done
  return "$failed"
}

# The machine's steadiness apart from a validation's: resnet56 on 8 partitions of 16 SMs, three
# schedules run alone, 3 times each, with the host's load and its CPUs' steal time around them.
probe() {
  unpack
  local schedule i ran
  steal() { awk '/^cpu /{print "steal " $9 " of " $2+$3+$4+$5+$6+$7+$8+$9 " jiffies"}' /proc/stat; }
  {
    echo "== probe $(date +%T): $(cut -d' ' -f1-3 /proc/loadavg) load, $(steal); $(nvidia-smi -L 2>&1 | head -1)"
    for i in 1 2 3; do
      for schedule in 1f1b layerpipe sequential; do
        ran=$("$build"/bin/pipetwin run --device cuda --placement partitions --partition-sms 16 -m resnet56 \
              -s "$schedule" -p 8 --microbatches 8 --steps 8 --data synthetic 2>&1) || true
        # the result's row (P, total_s, step_s, ...), or what went wrong
        echo "$schedule run $i: $( (grep -A1 '^P ' <<< "$ran" || echo "$ran") | tail -1)"
      done
    done
    echo "== probe end $(date +%T): $(cut -d' ' -f1-3 /proc/loadavg) load, $(steal)"
  } 2>&1 | tee -a "$out/probe.txt"
}

baseline() {
  unpack
  python3 experiments/gpu/pytorch_baseline.py --pipetwin "$build/bin/pipetwin" 2>&1 | tee "$out/baseline.txt" || true
}

constants() {
  unpack
  python3 experiments/gpu/operator_constants.py --pipetwin "$build/bin/pipetwin" --hardware "${HARDWARE:-h100}" \
      --out "$out" 2>&1 | tee "$out/constants.txt" || true
}

# The CUDA executor across ranks: lenet5 under 1f1b on 2 ranks, weights against one process's
# (within 1e-4 relative per layer: the ranks run the same kernels, so they should be bit-equal).
ranks() {
  unpack
  # pipetwin_mpi_tests is built only where CMake found MPI.
  if ! command -v mpirun > /dev/null || [ ! -x "$build"/bin/pipetwin_mpi_tests ]; then
    echo "no mpirun here, or a build without MPI: the CUDA executor across ranks was not run" | tee "$out/ranks.txt"
    return
  fi
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1  # Open MPI as root; others ignore them
  local mpi=(mpirun) common=(-m lenet5 -s 1f1b --microbatches 4 --steps 5 --data synthetic -q)
  local gpus
  gpus=$(nvidia-smi -L 2>/dev/null | wc -l)
  {
    "$build"/bin/pipetwin run --device cuda --placement streams -p 2 "${common[@]}" --weights-out "$out/ranks-alone.json"
    "${mpi[@]}" -np 2 "$build"/bin/pipetwin run --distributed --device cuda --placement streams --rank-link mpi \
        "${common[@]}" --weights-out "$out/ranks-mpi.json"
    if [ "$gpus" -ge 2 ]; then
      "${mpi[@]}" -np 2 "$build"/bin/pipetwin run --distributed --device cuda --placement gpus --rank-link nccl \
          "${common[@]}" --weights-out "$out/ranks-nccl.json"
    else
      echo "one GPU: NCCL needs a GPU per rank, not run"
    fi
    for across in "$out"/ranks-mpi.json "$out"/ranks-nccl.json; do
      [ -f "$across" ] || continue
      cmp -s "$across" "$out/ranks-alone.json" && echo "$(basename "$across"): bit-equal to one process" \
        || echo "$(basename "$across"): DIFFERS from one process"
    done
  } 2>&1 | tee "$out/ranks.txt"
}

# One device call's worth with prebuilt binaries: each step's failure is logged and the next runs.
session() {
  unpack
  nvidia-smi 2>&1 | tee "$out/session.log" || true
  "$build"/bin/pipetwin devices 2>&1 | tee -a "$out/session.log" || true
  echo "binaries built at $(cat "$carry/build/COMMIT" 2> /dev/null || echo '(built here, or no record)')" | tee -a "$out/session.log"
  local step
  for step in run_tests tasks partitions handoffs tf32 validate baseline; do
    echo "== $step $(date +%T)" | tee -a "$out/session.log"
    ( "$step" ) || echo "== $step failed ($?)" | tee -a "$out/session.log"
  done
  echo "== done $(date +%T)" | tee -a "$out/session.log"
}

# The call docs/cuda-executor.md names as the next ("The next device call"), as one device call:
# the CUDA tests, the PyTorch baseline (one processor on the whole GPU; vgg16's step since its
# conv bias gradients are summed by blocks, 2026-12-01; 62 s on 2026-11-29), resnet56's validation
# at P = 1, 8 over 10 rounds (enough for the sign test to order pairs; 289 s on an H200 on
# 2026-12-01) with 1f1b's and pipedream's runs traced (their backwards per microbatch: whether
# each costs the same now that backwards add into the sum), then vgg16's at P = 2, 4 over 3
# (three tables a round). Each step gets the smaller of its cap and what is left of BUDGET_S
# (default 540: a call's 10 minutes less the machine's start and the transfers), so that the
# packing at the end always runs: everything in next.tgz (a call brings back 8 files at most),
# the short texts beside it.
next_call() {
  local final=$out work=/tmp/pipetwin-next start deadline log
  rm -rf "$work" && mkdir -p "$work" "$final"
  start=$(date +%s)
  deadline=$((start + ${BUDGET_S:-540}))
  log=$work/session.log
  { nvidia-smi; nvidia-smi --query-gpu=name,uuid,driver_version,clocks.max.sm --format=csv; echo "nproc $(nproc)"
    echo "binaries built at $(cat "$carry/build/COMMIT" 2> /dev/null || echo '(no record: gpu.sh prebuild before 2026-12-01)')"
  } >> "$log" 2>&1 || true
  timed() {  # timed NAME CAP_S COMMAND...
    local name=$1 cap=$2 left
    shift 2
    left=$((deadline - $(date +%s)))
    [ "$left" -gt "$cap" ] && left=$cap
    if [ "$left" -lt 15 ]; then echo "== $name skipped ($left s left)" | tee -a "$log"; return; fi
    echo "== $name $(date +%T) (+$(( $(date +%s) - start )) s, limit $left s)" | tee -a "$log"
    # A validation begins no round that would end past its limit, and reports the rounds done
    # (--time-limit): 20 s before the step's, for its summary and the packing.
    OUT=$work TIME_LIMIT=$((left > 21 ? left - 20 : 1)) timeout "$left" "$@" || echo "== $name failed or stopped ($?)" | tee -a "$log"
  }
  timed test 90 "$self" test
  timed baseline 90 "$self" baseline
  timed validate 330 env STEPS=8 RUNS=10 WARMUP=1 MODELS=resnet56 PROCS=1,8 TRACES=1f1b,pipedream "$self" validate
  timed vgg16 200 env STEPS=8 RUNS=3 WARMUP=1 MODELS=vgg16 PROCS=2,4 "$self" validate
  echo "== done $(date +%T) (+$(( $(date +%s) - start )) s)" | tee -a "$log"
  tar czf "$final/next.tgz" -C "$work" .
  local text
  for text in session.log test.log baseline.txt validate-resnet56.txt validate-vgg16.txt; do
    [ -f "$work/$text" ] && cp "$work/$text" "$final/"
  done
  return 0
}

case "${1:-}" in
  prepare) prepare ;;
  prebuild) prebuild ;;
  tasks) tasks ;;
  handoffs) handoffs ;;
  next) next_call ;;
  tf32) tf32 ;;
  session) session ;;
  build) build ;;
  test) run_tests ;;
  validate) validate ;;
  baseline) baseline ;;
  probe) probe ;;
  constants) constants ;;
  ranks) ranks ;;
  partitions) partitions ;;
  device) build; run_tests; partitions; handoffs; constants; validate; baseline; ranks ;;
  *) echo "usage: experiments/gpu/gpu.sh prepare|prebuild|build|test|partitions|tasks|handoffs|next|validate|tf32|probe|baseline|constants|ranks|device|session" >&2; exit 2 ;;
esac
