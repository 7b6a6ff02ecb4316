#!/usr/bin/env bash
# Runs every test with the envtest control plane and prints a summary: each package's result, the
# number of Ginkgo specs each envtest suite ran, and the totals. The full log is kept in bin/test.log;
# on failure the failing tests' output is printed too.
# Usage: KUBEBUILDER_ASSETS=DIR hack/test.sh [go test flags...]
set -uo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
log="$root/bin/test.log"
mkdir -p "$root/bin"

cd "$root"
# The counter-store tests run real redis-server processes (Debian's package, installed if missing).
REDIS_SERVER="$(hack/redis.sh)" || { echo "hack/redis.sh failed: redis-server is needed by the counter-store tests" >&2; exit 1; }
export REDIS_SERVER
go test ./... -count=1 -timeout 40m -v "$@" 2>&1 | sed -u 's/\x1b\[[0-9;]*m//g' > "$log"
status=${PIPESTATUS[0]}

grep -E '^(ok|FAIL|\?)[[:space:]]+github.com/' "$log" || true
grep -E '^Ran [0-9]+ of [0-9]+ Specs' "$log" | sed 's/^/ginkgo: /' || true
passed=$(grep -cE '^[[:space:]]*--- PASS:' "$log")
failed=$(grep -cE '^[[:space:]]*--- FAIL:' "$log")
skipped=$(grep -cE '^[[:space:]]*--- SKIP:' "$log")
if [ "$status" -ne 0 ]; then
	echo "---- failures (full log: $log) ----"
	grep -nE -B2 -A30 '^[[:space:]]*--- FAIL:|^\[FAIL\]|\[FAILED\]|^panic:|build failed|^FAIL[[:space:]]' "$log" | tail -400
fi
echo "tests: $passed passed, $failed failed, $skipped skipped"
exit "$status"
