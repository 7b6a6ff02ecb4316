#!/usr/bin/env bash
# Makes sure redis-server (Debian's redis-server package) is installed, for the counter-store tests:
# they start their own servers on free loopback ports (internal/testredis). Prints the binary's path.
# Usage: hack/redis.sh
set -euo pipefail

if [ -n "${REDIS_SERVER:-}" ] && [ -x "$REDIS_SERVER" ]; then
	echo "$REDIS_SERVER"
	exit 0
fi
if ! command -v redis-server >/dev/null 2>&1; then
	sudo=""
	if [ "$(id -u)" -ne 0 ]; then
		sudo="sudo"
	fi
	echo "hack/redis.sh: installing redis-server from Debian's packages" >&2
	# The unit would start a system-wide server on 6379; the tests run their own.
	export DEBIAN_FRONTEND=noninteractive
	if ! $sudo apt-get install -y --no-install-recommends redis-server >&2; then
		$sudo apt-get update >&2
		$sudo apt-get install -y --no-install-recommends redis-server >&2
	fi
fi
command -v redis-server
