#!/usr/bin/env bash
# Type-checks and runs every test (unit and integration: real nats-server, MariaDB, processes),
# then prints one closing line: `N passed, N failed[, N skipped]`.
set -uo pipefail
cd "$(dirname "$0")/.."
bin/setup.sh || { echo "0 passed, 1 failed (setup)"; exit 1; }

log=$(mktemp)
tc_fail=0
if npx tsc --noEmit -p .; then echo "typecheck: ok"; else tc_fail=1; echo "typecheck: FAILED"; fi
npx ava "$@" 2>&1 | tee "$log"
ava_rc=${PIPESTATUS[0]}

# ava (non-TTY) prints one line per test: ✔ passed, ✘ [fail] failed, - [skip] skipped
passed=$(grep -c "✔" "$log" || true)
failed=$(grep -c "✘ \[fail\]" "$log" || true)
skipped=$(grep -Ec "^\s*- \[skip\]" "$log" || true)
uncaught=$(grep -Eo "^\s*[0-9]+ (uncaught exceptions?|unhandled rejections?)" "$log" | grep -Eo "[0-9]+" | awk "{s+=\$1} END {print s+0}")
passed=${passed:-0}; failed=${failed:-0}; skipped=${skipped:-0}; uncaught=${uncaught:-0}
passed=$((passed + (1 - tc_fail)))
failed=$((failed + tc_fail + uncaught))
if [ "$ava_rc" != "0" ] && [ "$failed" = "0" ]; then failed=1; fi
rm -f "$log"
line="$passed passed, $failed failed"
[ "$skipped" != "0" ] && line="$line, $skipped skipped"
echo "$line"
[ "$failed" = "0" ]
