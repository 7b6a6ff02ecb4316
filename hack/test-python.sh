#!/usr/bin/env bash
# Tests the Python SDK (sdk/python) and its framework adapters against a real `tollgate serve`.
#
# Does all its own setup: builds bin/tollgate, creates the virtual environment bin/venv-python,
# installs the pinned dependencies from sdk/python/requirements-test.lock (hash-checked, every
# transitive dependency listed) and the SDK itself (editable), then runs pytest. The environment is
# reused while the lock file, pyproject.toml and the Python interpreter stay the same.
#
# Usage: hack/test-python.sh [pytest args...]     (PYTHON=python3.12 to pick the interpreter)
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
sdk="$root/sdk/python"
venv="$root/bin/venv-python"
lock="$sdk/requirements-test.lock"
stamp="$venv/.tollgate-stamp"
python="${PYTHON:-python3}"

cd "$root"
mkdir -p bin

echo "test-python: building bin/tollgate"
go build -o bin/tollgate ./cmd

if ! command -v "$python" >/dev/null 2>&1; then
	echo "test-python: $python not found: install Python 3.10 or newer (or set PYTHON)" >&2
	exit 1
fi
if ! "$python" -c 'import sys; sys.exit(sys.version_info < (3, 10))'; then
	echo "test-python: $("$python" --version 2>&1) is too old: the SDK needs Python 3.10 or newer" >&2
	exit 1
fi

# The environment is current when it was made by this interpreter from this lock and pyproject.
want="$({ "$python" -c 'import sys; print(sys.executable, sys.version)'; cat "$lock" "$sdk/pyproject.toml"; } | sha256sum | cut -d' ' -f1)"
if [ -x "$venv/bin/python" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
	echo "test-python: reusing $venv (lock unchanged)"
else
	echo "test-python: creating $venv from $(basename "$lock")"
	start=$(date +%s)
	rm -rf "$venv"
	"$python" -m venv "$venv"
	pip=("$venv/bin/python" -m pip --disable-pip-version-check --no-input --quiet)
	"${pip[@]}" install --require-hashes --no-deps --only-binary :all: -r "$lock"
	"${pip[@]}" install --no-deps --no-build-isolation --editable "$sdk"
	"$venv/bin/python" -m pip check
	echo "$want" >"$stamp"
	echo "test-python: environment ready in $(($(date +%s) - start))s"
fi

cd "$sdk"
export TOLLGATE_BIN="$root/bin/tollgate"
exec "$venv/bin/python" -m pytest -p no:cacheprovider "$@"
