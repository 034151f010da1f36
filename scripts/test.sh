#!/usr/bin/env bash
# Install what is missing, build, and run every test (doctest suite and CLI checks via ctest).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
ctest --test-dir build --output-on-failure -j "$(nproc)"
