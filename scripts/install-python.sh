#!/usr/bin/env bash
# Installs the Python side into .venv: the pipetwin package (`pip install .`, which builds the C++
# core with scikit-build-core) and what its tests and notebooks need (pytest, nbclient, ipykernel,
# pandas, matplotlib), all from PyPI. Rebuilds only what changed (build/pip-*). Prints the
# interpreter to use.
set -euo pipefail
cd "$(dirname "$0")/.."
python=${PIPETWIN_PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$python" -m venv .venv >&2
fi
.venv/bin/python -m pip install -q --upgrade pip >&2
.venv/bin/python -m pip install -q -C "build-dir=build/pip-{wheel_tag}" ".[test]" >&2
echo "$(pwd)/.venv/bin/python"
