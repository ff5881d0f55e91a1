#!/usr/bin/env bash
# Installs what the project needs on a fresh Debian machine, skipping what is already there:
# Debian packages through apt-get, then node_modules through npm ci.
set -euo pipefail
cd "$(dirname "$0")/.."

SUDO=""
if [ "$(id -u)" != "0" ] && command -v sudo >/dev/null 2>&1; then SUDO="sudo"; fi

# binary → Debian package
declare -A NEED=(
  [nats-server]=nats-server
  [mariadbd]=mariadb-server
  # the dashboard test drives a real headless browser
  [chromium]=chromium
)
missing=()
for bin in "${!NEED[@]}"; do
  if ! command -v "$bin" >/dev/null 2>&1 && [ ! -x "/usr/sbin/$bin" ]; then missing+=("${NEED[$bin]}"); fi
done
# the learner's torch side runs under Debian's python (see docs/LEARNER.md); OpenBLAS makes it ~17x faster
if ! /usr/bin/python3 -c "import torch, onnx, numpy, msgpack" >/dev/null 2>&1; then
  missing+=(python3-torch python3-onnx python3-numpy python3-msgpack)
fi
if ! ls /usr/lib/x86_64-linux-gnu/openblas-pthread/ >/dev/null 2>&1 && ! ls /usr/lib/*/openblas-pthread/ >/dev/null 2>&1; then
  missing+=(libopenblas0-pthread)
fi
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing Debian packages: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# onnxruntime-node's install script would try to download CUDA files: its CPU binaries ship in the package
export ONNXRUNTIME_NODE_INSTALL=skip
if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  echo "setup: npm ci"
  npm ci --no-audit --no-fund --loglevel=error
fi
