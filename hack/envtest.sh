#!/usr/bin/env bash
# Prints a directory holding envtest's kube-apiserver and etcd, building them from Go module sources
# the first time (about 5 minutes for kube-apiserver, 30 seconds for etcd on 2 cores; cached after).
# Usage: hack/envtest.sh [DIR]   (default bin/k8s). Progress goes to stderr, the directory to stdout.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dir="${1:-$root/bin/k8s}"
mkdir -p "$dir"
dir="$(cd "$dir" && pwd)"

kube_version="v1.36.3"
ldflags="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
	ldflags+=" -X $pkg.gitVersion=$kube_version -X $pkg.gitMajor=1 -X $pkg.gitMinor=36"
	ldflags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
done

build() { # build NAME MODULE_DIR PACKAGE
	local name="$1" module="$2" pkg="$3"
	if [ -x "$dir/$name" ]; then return; fi
	echo "building envtest $name from Go module sources (first run only; cached in $dir)..." >&2
	local start=$SECONDS
	(cd "$root/hack/envtest/$module" && go build -trimpath -ldflags "$ldflags" -o "$dir/$name.tmp" "$pkg") >&2
	mv "$dir/$name.tmp" "$dir/$name"
	echo "built $dir/$name in $((SECONDS - start))s" >&2
}

build etcd etcd .
build kube-apiserver kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver
echo "$dir"
