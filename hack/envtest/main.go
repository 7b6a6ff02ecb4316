// Command envtest builds envtest's kube-apiserver and etcd from Go module sources into a directory
// (default bin/k8s) when they are missing, and prints that directory. Progress goes to stderr.
// Usage: go run ./hack/envtest [DIR]   (hack/envtest.sh wraps it).
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"

	"github.com/tollgate-dev/tollgate/internal/envtestsrc"
)

func main() {
	dir := filepath.Join("bin", "k8s")
	if len(os.Args) > 1 {
		dir = os.Args[1]
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "envtest:", err)
		os.Exit(1)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := envtestsrc.Build(ctx, abs, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "envtest:", err)
		os.Exit(1)
	}
	fmt.Println(abs)
}
