#!/usr/bin/env bash
# The main job on the embedded default: a private local cluster, built-in parts, shipped data.
# `hr1 exp main` with experiments/configs/main.default.yaml: SIMULATED target, three envs, all methods.
set -euo pipefail
cd "$(dirname "$0")/.."
bin/setup.sh
exec node bin/hr1.js exp main --config experiments/configs/main.default.yaml "$@"
