#!/usr/bin/env bash
# GPU runs on a machine that reaches no package registry (DESIGN.md §7), in two steps:
#
#   experiments/gpu/gpu.sh prepare    here: download the Debian .debs pipetwin builds with (SystemC,
#                                     Eigen, doctest, nlohmann-json, CLI11, fmt, zlib) and the
#                                     Fashion-MNIST dataset into .gpu/ (ignored by git, < 64 MiB)
#   experiments/gpu/gpu.sh device     there (device tool: carry [".gpu"]): unpack them into a private
#                                     prefix, build with nvcc for the GPU found, run every test (the
#                                     CUDA ones included), print the devices; logs go to $OUT
#
# The device step needs only what the GPU image has (nvcc, CMake, a C++ compiler); pkg-config is not
# needed (CMake finds SystemC in the prefix directly). The Python package is not built there.
set -euo pipefail
cd "$(dirname "$0")/../.."
carry=.gpu
packages=(libsystemc libsystemc-dev libeigen3-dev doctest-dev nlohmann-json3-dev libcli11-dev libfmt-dev
          libfmt9 zlib1g-dev dataset-fashion-mnist)

prepare() {
  mkdir -p "$carry"
  local exclude
  exclude=$(git rev-parse --git-path info/exclude)
  mkdir -p "$(dirname "$exclude")"
  grep -qx "/$carry/" "$exclude" 2>/dev/null || echo "/$carry/" >> "$exclude"
  (cd "$carry" && rm -f ./*.deb && apt-get download "${packages[@]}" >&2)
  du -sh "$carry" >&2
  echo "prepared $(ls "$carry"/*.deb | wc -l) packages in $carry; run the device step with carry [\"$carry\"]" >&2
}

device() {
  local out=${OUT:-/tmp/pipetwin-gpu-out} prefix=/tmp/pipetwin-prefix build=build-gpu
  mkdir -p "$out" "$prefix"
  [ -n "$(ls "$carry"/*.deb 2>/dev/null)" ] || { echo "no .debs in $carry: run 'gpu.sh prepare' here first" >&2; exit 2; }
  for deb in "$carry"/*.deb; do dpkg-deb -x "$deb" "$prefix"; done
  local arch_lib
  arch_lib=$(ls -d "$prefix"/usr/lib/*-linux-gnu | head -1)
  export LD_LIBRARY_PATH="$arch_lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  # Debian's CMake package files live under usr/lib/<triplet>/cmake and usr/share/<name>/cmake.
  local prefix_path="$prefix/usr;$arch_lib/cmake;$prefix/usr/share"
  local sm
  sm=$( (nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null || true) | head -1 | tr -d '.')
  {
    nvidia-smi || echo "no nvidia-smi here: building for sm_${sm:-90}, the GPU tests will skip"
    cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$prefix_path" \
          -DCMAKE_CUDA_ARCHITECTURES="${sm:-90}" -DPIPETWIN_BUILD_PYTHON=OFF
    cmake --build "$build" -j "$(nproc)"
    "$build"/bin/pipetwin devices
    # The dataset where the executors look for it by default, or through --data-dir.
    mkdir -p /usr/share/datasets 2>/dev/null && cp -r "$prefix"/usr/share/datasets/fashion-mnist /usr/share/datasets/ 2>/dev/null || true
    ctest --test-dir "$build" --output-on-failure -j "$(nproc)"
  } 2>&1 | tee "$out/device.log"
}

case "${1:-}" in
  prepare) prepare ;;
  device) device ;;
  *) echo "usage: experiments/gpu/gpu.sh prepare|device" >&2; exit 2 ;;
esac
