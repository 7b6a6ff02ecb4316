#!/usr/bin/env bash
# Tests the Python SDK (sdk/python) and its framework adapters against a real `tollgate serve`.
#
# Does all its own setup: builds bin/tollgate, creates the virtual environment bin/venv-python,
# installs the pinned dependencies from sdk/python/requirements-test.lock (hash-checked, every
# transitive dependency listed) and the SDK itself (editable), then runs pytest. The environment is
# reused while the lock file and the Python interpreter stay the same (the SDK is reinstalled when
# its pyproject.toml changes).
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
go build -o bin/tollgate ./cmd/tollgate

if ! command -v "$python" >/dev/null 2>&1; then
	echo "test-python: $python not found: install Python 3.10 or newer (or set PYTHON)" >&2
	exit 1
fi
if ! "$python" -c 'import sys; sys.exit(sys.version_info < (3, 10))'; then
	echo "test-python: $("$python" --version 2>&1) is too old: the SDK needs Python 3.10 or newer" >&2
	exit 1
fi

# The dependencies are current when this interpreter installed them from this lock; the SDK's
# editable install when it was made from this pyproject.toml.
deps="$({ "$python" -c 'import sys; print(sys.executable, sys.version)'; cat "$lock"; } | sha256sum | cut -d' ' -f1)"
self="$(sha256sum "$sdk/pyproject.toml" | cut -d' ' -f1)"
pip=("$venv/bin/python" -m pip --disable-pip-version-check --no-input --quiet)
if [ -x "$venv/bin/python" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$deps" ]; then
	echo "test-python: reusing $venv (lock unchanged)"
else
	echo "test-python: creating $venv from $(basename "$lock")"
	start=$(date +%s)
	rm -rf "$venv"
	"$python" -m venv "$venv"
	"${pip[@]}" install --require-hashes --no-deps --only-binary :all: -r "$lock"
	echo "$deps" >"$stamp"
	echo "test-python: dependencies installed in $(($(date +%s) - start))s"
fi
if [ "$(cat "$stamp.sdk" 2>/dev/null)" != "$self" ]; then
	"${pip[@]}" install --no-deps --no-build-isolation --editable "$sdk"
	"$venv/bin/python" -m pip check
	echo "$self" >"$stamp.sdk"
fi

cd "$sdk"
export TOLLGATE_BIN="$root/bin/tollgate"
exec "$venv/bin/python" -m pytest -p no:cacheprovider "$@"
