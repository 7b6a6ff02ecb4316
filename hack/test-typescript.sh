#!/usr/bin/env bash
# Builds and tests the TypeScript SDK (sdk/typescript) against a real `tollgate serve`.
#
#   hack/test-typescript.sh            # from anywhere; exits non-zero when anything fails
#
# Steps: build bin/tollgate; `npm ci` from the committed package-lock.json (skipped when
# node_modules already matches the lock, Node and npm: see the stamp below); compile with the
# pinned tsc; run node's test runner on sdk/typescript/test. Nothing is installed globally.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
sdk="$root/sdk/typescript"

die() {
	echo "test-typescript: $*" >&2
	exit 1
}

command -v go >/dev/null || die "go is not on PATH"
command -v node >/dev/null || die "node is not on PATH (Node.js 20 or later is needed)"
command -v npm >/dev/null || die "npm is not on PATH"
command -v git >/dev/null || die "git is not on PATH (the adapter tests make a git repository)"
node_major="$(node -p 'process.versions.node.split(".")[0]')"
[ "$node_major" -ge 20 ] || die "Node.js $(node --version) is too old: 20 or later is needed"

start=$(date +%s)

echo "test-typescript: building bin/tollgate"
(cd "$root" && go build -o bin/tollgate ./cmd/tollgate)

# node_modules is reinstalled only when the lock file, Node or npm changed since the last
# successful `npm ci` (the stamp lives inside node_modules, so deleting it forces a reinstall).
stamp="$sdk/node_modules/.tollgate-npm-ci-stamp"
want="$(cat "$sdk/package-lock.json" "$sdk/package.json" | sha256sum | cut -d' ' -f1) node-$(node --version) npm-$(npm --version)"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
	echo "test-typescript: node_modules matches package-lock.json, skipping npm ci"
else
	echo "test-typescript: npm ci"
	(cd "$sdk" && npm ci --no-audit --no-fund --prefer-offline --loglevel=error)
	echo "$want" >"$stamp"
fi

# dist is rebuilt (and the declarations type-checked) only when a source, a tsconfig or the lock
# changed since the last successful build.
build_stamp="$sdk/dist/.tollgate-build-stamp"
build_want="$(cd "$sdk" && find src test/typecheck -type f -name '*.ts' | LC_ALL=C sort | xargs cat tsconfig.json tsconfig.typecheck.json package-lock.json | sha256sum | cut -d' ' -f1) node-$(node --version)"
if [ -f "$build_stamp" ] && [ "$(cat "$build_stamp")" = "$build_want" ]; then
	echo "test-typescript: dist matches the sources, skipping tsc"
else
	echo "test-typescript: tsc"
	rm -rf "$sdk/dist"
	# The build, and (in parallel: each is one core for ~10 s) a check of the declarations as a
	# user of each entry point meets them, against the frameworks' own types.
	(cd "$sdk" && ./node_modules/.bin/tsc -p tsconfig.json) &
	build=$!
	(cd "$sdk" && ./node_modules/.bin/tsc -p tsconfig.typecheck.json) &
	check=$!
	build_status=0
	check_status=0
	wait "$build" || build_status=$?
	wait "$check" || check_status=$?
	[ "$build_status" -eq 0 ] || die "tsc -p tsconfig.json failed"
	[ "$check_status" -eq 0 ] || die "tsc -p tsconfig.typecheck.json failed"
	echo "$build_want" >"$build_stamp"
fi

echo "test-typescript: node --test"
# The suites start their own `tollgate serve`; the environment must not point them elsewhere.
unset TOLLGATE_URL TOLLGATE_PASSPORT TOLLGATE_TOKEN_FILE
status=0
(cd "$sdk" && TOLLGATE_BIN="$root/bin/tollgate" node --test --test-concurrency=1 test/*.test.mjs) || status=$?
echo "test-typescript: finished in $(($(date +%s) - start))s (exit $status)"
exit "$status"
