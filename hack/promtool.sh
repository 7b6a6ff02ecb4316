#!/usr/bin/env bash
# Prints the path of promtool, Prometheus's rule checker and rule test engine, building it from the
# Prometheus Go module (hack/promtool/go.mod, a module of its own so that Prometheus's dependencies
# stay out of Tollgate's go.mod) the first time, cached in bin/ after. The build tag remove_all_sd
# leaves out the service-discovery plugins (cloud SDKs) that rule tests never use, which roughly
# halves the build.
# Usage: hack/promtool.sh [DIR]   (default bin). Progress goes to stderr, the path to stdout.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dir="${1:-$root/bin}"
mkdir -p "$dir"
dir="$(cd "$dir" && pwd)"

module="$root/hack/promtool"
version="$(cd "$module" && go list -m -f '{{.Version}}' github.com/prometheus/prometheus)"
bin="$dir/promtool-$version"
if [ ! -x "$bin" ]; then
	echo "building promtool $version from Go module sources (first run only; cached in $dir)..." >&2
	start=$SECONDS
	(cd "$module" && go build -tags remove_all_sd -trimpath -ldflags "-s -w" -o "$bin.tmp.$$" github.com/prometheus/prometheus/cmd/promtool) >&2
	mv "$bin.tmp.$$" "$bin"
	echo "built $bin in $((SECONDS - start))s" >&2
fi
echo "$bin"
