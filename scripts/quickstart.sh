#!/usr/bin/env bash
# Quick start: install what is missing, build, and run the default evaluation (resnet56 under
# 1F1B on H100 profiles, P = 1..9). Arguments replace the default `evaluate` arguments.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh >/dev/null
if [ $# -eq 0 ]; then
  set -- evaluate --model resnet56 --schedule 1f1b --hardware h100 --procs 1-9 --microbatches 8
fi
exec build/bin/pipetwin "$@"
