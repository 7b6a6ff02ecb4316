// Package testenv starts the real kube-apiserver and etcd (controller-runtime envtest) with
// Tollgate's CRDs installed, for every test suite and tool that needs a control plane.
package testenv

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	goruntime "runtime"

	kstatus "github.com/fluxcd/cli-utils/pkg/kstatus/status"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	guardrailsv1alpha1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
)

// RepoRoot returns the repository root, found from this source file's location.
func RepoRoot() string {
	_, file, _, _ := goruntime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// CRDPath is the directory of the generated CRDs.
func CRDPath() string { return filepath.Join(RepoRoot(), "config", "crd", "bases") }

// AssetsDir returns the directory holding kube-apiserver and etcd: KUBEBUILDER_ASSETS when set, else
// bin/k8s as built by hack/envtest.sh. It fails with a clear message when neither is usable.
func AssetsDir() (string, error) {
	dir := os.Getenv("KUBEBUILDER_ASSETS")
	if dir == "" {
		dir = filepath.Join(RepoRoot(), "bin", "k8s")
	}
	for _, bin := range []string{"kube-apiserver", "etcd"} {
		if _, err := os.Stat(filepath.Join(dir, bin)); err != nil {
			return "", fmt.Errorf("envtest control plane not found in %s (run `make envtest` or set KUBEBUILDER_ASSETS): %w", dir, err)
		}
	}
	return dir, nil
}

// Scheme returns a scheme with the built-in Kubernetes kinds and Tollgate's kinds.
func Scheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		return nil, fmt.Errorf("adding client-go scheme: %w", err)
	}
	if err := guardrailsv1alpha1.AddToScheme(s); err != nil {
		return nil, fmt.Errorf("adding tollgate scheme: %w", err)
	}
	return s, nil
}

// New returns an envtest environment with Tollgate's CRDs, ready to Start. It errors (never skips)
// when the control plane binaries are missing.
func New() (*envtest.Environment, error) {
	assets, err := AssetsDir()
	if err != nil {
		return nil, err
	}
	s, err := Scheme()
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(CRDPath()); err != nil {
		return nil, errors.New("CRDs not generated: run `make manifests`")
	}
	return &envtest.Environment{
		CRDDirectoryPaths:     []string{CRDPath()},
		ErrorIfCRDPathMissing: true,
		BinaryAssetsDirectory: assets,
		Scheme:                s,
	}, nil
}

// KStatus computes obj's status as Flux and Argo CD's kstatus library does, with its kind looked up
// through c's scheme.
func KStatus(c client.Client, obj client.Object) (kstatus.Status, error) {
	gvk, err := c.GroupVersionKindFor(obj)
	if err != nil {
		return "", fmt.Errorf("looking up the kind of %s: %w", obj.GetName(), err)
	}
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return "", fmt.Errorf("converting %s: %w", obj.GetName(), err)
	}
	un := &unstructured.Unstructured{Object: u}
	un.SetGroupVersionKind(gvk)
	res, err := kstatus.Compute(un)
	if err != nil {
		return "", fmt.Errorf("computing the kstatus of %s: %w", obj.GetName(), err)
	}
	return res.Status, nil
}
