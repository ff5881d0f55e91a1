#!/usr/bin/env bash
# The main job on the embedded default: a private local cluster, built-in parts, shipped data.
# Until `hr1 exp main` lands, this runs the cluster demo.
set -euo pipefail
cd "$(dirname "$0")/.."
bin/setup.sh
exec node bin/hr1.js demo "$@"
