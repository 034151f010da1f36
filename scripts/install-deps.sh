#!/usr/bin/env bash
# Installs the Debian 12 packages pipetwin builds with, only those that are missing (idempotent,
# and quick when everything is there). The CUDA toolkit is optional: CUDA parts build when nvcc
# is found (on PATH or in /usr/local/cuda/bin).
set -euo pipefail
packages=(build-essential cmake pkg-config libsystemc-dev libeigen3-dev doctest-dev
          nlohmann-json3-dev libcli11-dev libfmt-dev zlib1g-dev libdnnl-dev dataset-fashion-mnist
          python3-dev python3-venv libopenmpi-dev openmpi-bin coinor-libcbc-dev)
missing=()
for package in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$package")
  fi
done
if ((${#missing[@]} == 0)); then
  exit 0
fi
echo "pipetwin: installing ${missing[*]}" >&2
sudo=()
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "pipetwin: need root or sudo to install ${missing[*]}" >&2; exit 1; }
  sudo=(sudo)
fi
"${sudo[@]}" apt-get update -q
DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
