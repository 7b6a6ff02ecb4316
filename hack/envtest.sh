#!/usr/bin/env bash
# Prints a directory holding envtest's kube-apiserver and etcd, building them from Go module sources
# the first time (about 5 minutes for kube-apiserver, 30 seconds for etcd on 2 cores; cached after).
# The pinned module files are embedded in internal/envtestsrc, which `tollgate demo` builds from too.
# Usage: hack/envtest.sh [DIR]   (default bin/k8s). Progress goes to stderr, the directory to stdout.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dir="${1:-$root/bin/k8s}"
mkdir -p "$dir"
dir="$(cd "$dir" && pwd)"
if [ -x "$dir/etcd" ] && [ -x "$dir/kube-apiserver" ]; then
	echo "$dir"
	exit 0
fi
cd "$root" && exec go run ./hack/envtest "$dir"
