#!/usr/bin/env bash
# Install what is missing, build, and run every test: the doctest suite and CLI checks (ctest),
# then the Python package (installed into .venv with `pip install .`): pytest, which also executes
# the notebooks in experiments/notebooks.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
ctest --test-dir build --output-on-failure -j "$(nproc)"
python=$(scripts/install-python.sh)
"$python" -m pytest -q -rs tests/python  # -rs: each skipped test with its reason (no GPU here)
