#!/usr/bin/env bash
# The main job on the embedded default: a private local cluster, the shipped learned targets (one
# per env, from the vendored zoo), the built-in engineer trained first, shipped data.
# `hr1 exp main` with experiments/configs/main.zoo.yaml. The SIMULATED-target table of earlier
# versions is `hr1 exp main --config experiments/configs/main.default.yaml` (tests, benchmarks).
set -euo pipefail
cd "$(dirname "$0")/.."
bin/setup.sh
exec node bin/hr1.js exp main --config experiments/configs/main.zoo.yaml "$@"
