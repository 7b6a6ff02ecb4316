// Package envtestsrc builds envtest's control plane, kube-apiserver and etcd, from Go module
// sources: the module files of the two commands are embedded here (named *.txt so that they stay
// data of this package rather than modules of their own), written to a scratch directory and built
// with the Go toolchain on PATH. `hack/envtest.sh` (through `go run ./hack/envtest`) and
// `tollgate demo` both build through Build, so the pinned Kubernetes version lives in one place.
//
// To change a pinned version: copy a directory's files out without the .txt suffix, edit go.mod,
// run `go mod tidy`, and copy go.mod and go.sum back.
package envtestsrc

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"time"
)

// KubernetesVersion is the version of kube-apiserver built (and reported by its /version).
const KubernetesVersion = "v1.36.3"

//go:embed etcd kube-apiserver
var sources embed.FS

// binary is one control plane command: its name, the embedded module directory and its package.
type binary struct{ name, module, pkg string }

// binaries are built in this order: etcd is quick, kube-apiserver takes minutes.
var binaries = []binary{
	{"etcd", "etcd", "."},
	{"kube-apiserver", "kube-apiserver", "k8s.io/kubernetes/cmd/kube-apiserver"},
}

// Missing returns the control plane binaries absent from dir.
func Missing(dir string) []string {
	var missing []string
	for _, b := range binaries {
		if info, err := os.Stat(filepath.Join(dir, b.name)); err != nil || info.IsDir() {
			missing = append(missing, b.name)
		}
	}
	return missing
}

// Build builds every binary missing from dir (created if needed), writing the Go toolchain's output
// and progress lines to progress. It needs `go` on PATH and the module proxy.
func Build(ctx context.Context, dir string, progress io.Writer) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("creating %s: %w", dir, err)
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		return errors.New("kube-apiserver and etcd are built from Go module sources, and no `go` is on PATH: install Go, or set KUBEBUILDER_ASSETS to a directory holding them")
	}
	for _, b := range binaries {
		if _, err := os.Stat(filepath.Join(dir, b.name)); err == nil {
			continue
		}
		if err := build(ctx, gobin, dir, b, progress); err != nil {
			return err
		}
	}
	return nil
}

func build(ctx context.Context, gobin, dir string, b binary, progress io.Writer) error {
	fmt.Fprintf(progress, "building envtest %s %s from Go module sources (first run only; cached in %s)...\n", b.name, KubernetesVersion, dir)
	start := time.Now()
	src, err := os.MkdirTemp(dir, ".src-"+b.name+"-")
	if err != nil {
		return fmt.Errorf("creating a scratch module for %s: %w", b.name, err)
	}
	defer func() { _ = os.RemoveAll(src) }()
	if err := writeModule(src, b.module); err != nil {
		return err
	}
	tmp := filepath.Join(dir, b.name+".tmp")
	cmd := exec.CommandContext(ctx, gobin, "build", "-trimpath", "-ldflags", ldflags(), "-o", tmp, b.pkg)
	cmd.Dir = src
	cmd.Stdout, cmd.Stderr = progress, progress
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("building %s from Go module sources: %w", b.name, err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, b.name)); err != nil {
		return fmt.Errorf("installing %s: %w", b.name, err)
	}
	fmt.Fprintf(progress, "built %s in %s\n", filepath.Join(dir, b.name), time.Since(start).Round(time.Second))
	return nil
}

// writeModule writes the embedded module directory into dst, dropping the .txt suffixes.
func writeModule(dst, module string) error {
	entries, err := fs.ReadDir(sources, module)
	if err != nil {
		return fmt.Errorf("reading embedded module %s: %w", module, err)
	}
	for _, e := range entries {
		data, err := fs.ReadFile(sources, path.Join(module, e.Name()))
		if err != nil {
			return fmt.Errorf("reading embedded %s/%s: %w", module, e.Name(), err)
		}
		name := strings.TrimSuffix(e.Name(), ".txt")
		if err := os.WriteFile(filepath.Join(dst, name), data, 0o644); err != nil {
			return fmt.Errorf("writing %s: %w", name, err)
		}
	}
	return nil
}

// ldflags stamps the Kubernetes version into kube-apiserver, as its release build does.
func ldflags() string {
	minor := strings.Split(strings.TrimPrefix(KubernetesVersion, "v"), ".")[1]
	flags := "-s -w"
	for _, pkg := range []string{"k8s.io/component-base/version", "k8s.io/client-go/pkg/version"} {
		flags += fmt.Sprintf(" -X %[1]s.gitVersion=%[2]s -X %[1]s.gitMajor=1 -X %[1]s.gitMinor=%[3]s"+
			" -X %[1]s.gitTreeState=clean -X %[1]s.buildDate=1970-01-01T00:00:00Z", pkg, KubernetesVersion, minor)
	}
	return flags
}
