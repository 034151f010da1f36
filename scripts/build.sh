#!/usr/bin/env bash
# Configures (once) and builds pipetwin into build/ with all cores. Extra arguments go to the
# configure step, e.g. scripts/build.sh -DPIPETWIN_ENABLE_CUDA=OFF.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v nvcc >/dev/null && [ -x /usr/local/cuda/bin/nvcc ] && [ -z "${CUDACXX:-}" ]; then
  export CUDACXX=/usr/local/cuda/bin/nvcc
fi
if [ ! -f build/CMakeCache.txt ] || [ $# -gt 0 ]; then
  cmake --preset default "$@" >/dev/null
fi
cmake --build build -j "$(nproc)"
