#!/usr/bin/env bash
# Quick start: install what is missing, build, and run the default sweep: every registered
# schedule for resnet56 on H100 profiles at P = 1, 2, 4, 8, simulated, with speedups over sequential
# training on one GPU. Arguments replace the default `sweep` arguments.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh >/dev/null
if [ $# -eq 0 ]; then
  set -- sweep --model resnet56 --schedules all --hardware h100 --procs 1,2,4,8 --microbatches 8
fi
exec build/bin/pipetwin "$@"
