package decider

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	guardrailsv1alpha1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/bundlestore"
	"github.com/tollgate-dev/tollgate/internal/convert"
	"github.com/tollgate-dev/tollgate/internal/policy"
	"github.com/tollgate-dev/tollgate/internal/testenv"
)

// The envtest control plane is started on first use by a test that needs it, and stopped after all
// tests. A control plane that cannot start fails those tests; they never skip.
var (
	envOnce sync.Once
	envRun  *envtest.Environment
	envCfg  *rest.Config
	envErr  error
)

const operatorNS = "tollgate-system"

func TestMain(m *testing.M) {
	code := m.Run()
	if envRun != nil {
		if err := envRun.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stopping envtest:", err)
		}
	}
	os.Exit(code)
}

// kube returns a clientset for the shared envtest control plane, starting it when needed.
func kube(t testing.TB) kubernetes.Interface {
	t.Helper()
	envOnce.Do(func() {
		envRun, envErr = testenv.New()
		if envErr != nil {
			return
		}
		// Decision-endpoint tests create ServiceAccount tokens: envtest's kube-apiserver is started
		// with --service-account-issuer/key files by default, so TokenRequest and TokenReview work.
		envCfg, envErr = envRun.Start()
		if envErr != nil {
			return
		}
		var cs kubernetes.Interface
		cs, envErr = kubernetes.NewForConfig(envCfg)
		if envErr != nil {
			return
		}
		for _, ns := range []string{operatorNS, "team-a", "team-b"} {
			_, err := cs.CoreV1().Namespaces().Create(context.Background(),
				&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
			if err != nil && !apierrors.IsAlreadyExists(err) {
				envErr = err
				return
			}
		}
	})
	if envErr != nil {
		t.Fatalf("the envtest control plane must start (this suite never skips): %v", envErr)
	}
	cs, err := kubernetes.NewForConfig(envCfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// samplesBundle returns config/samples as the bundle of namespace ns.
func samplesBundle(t testing.TB, ns string) policy.Bundle {
	t.Helper()
	b, err := loadSamples(filepath.Join(testenv.RepoRoot(), "config", "samples"), ns)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func loadSamples(dir, ns string) (policy.Bundle, error) {
	files, err := filepath.Glob(filepath.Join(dir, "guardrails_*.yaml"))
	if err != nil || len(files) == 0 {
		return policy.Bundle{}, fmt.Errorf("no samples in %s: %v", dir, err)
	}
	b := policy.Bundle{Version: policy.BundleVersion, Namespace: ns}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return policy.Bundle{}, err
		}
		var meta metav1.TypeMeta
		if err := yaml.Unmarshal(data, &meta); err != nil {
			return policy.Bundle{}, fmt.Errorf("%s: %w", f, err)
		}
		switch meta.Kind {
		case "AgentPassport":
			var p guardrailsv1alpha1.AgentPassport
			if err := yaml.Unmarshal(data, &p); err != nil {
				return policy.Bundle{}, err
			}
			p.Namespace, p.UID = ns, k8stypes.UID("uid-"+p.Name)
			pp, err := convert.Passport(&p)
			if err != nil {
				return policy.Bundle{}, err
			}
			b.Passports = append(b.Passports, pp)
		case "GuardrailPolicy":
			var p guardrailsv1alpha1.GuardrailPolicy
			if err := yaml.Unmarshal(data, &p); err != nil {
				return policy.Bundle{}, err
			}
			p.Namespace = ns
			pp, err := convert.Policy(&p)
			if err != nil {
				return policy.Bundle{}, err
			}
			b.Policies = append(b.Policies, pp)
		}
	}
	return b, nil
}

// putBundle writes b's ConfigMaps into the operator namespace (create or update).
func putBundle(t testing.TB, cs kubernetes.Interface, b policy.Bundle) {
	t.Helper()
	cms, err := bundlestore.Encode(operatorNS, b)
	if err != nil {
		t.Fatal(err)
	}
	for i := range cms {
		putConfigMap(t, cs, &cms[i])
	}
}

func putConfigMap(t testing.TB, cs kubernetes.Interface, cm *corev1.ConfigMap) {
	t.Helper()
	ctx := context.Background()
	api := cs.CoreV1().ConfigMaps(operatorNS)
	cur, err := api.Get(ctx, cm.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		if _, err := api.Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	case err != nil:
		t.Fatal(err)
	default:
		cm.ResourceVersion = cur.ResourceVersion
		if _, err := api.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

// watchedStore starts WatchBundlesWithLogger into a new store for the test's lifetime.
func watchedStore(t testing.TB, cs kubernetes.Interface, opts ...StoreOption) *Store {
	t.Helper()
	store := NewStore(opts...)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- WatchBundlesWithLogger(ctx, cs, operatorNS, store, quietLogger()) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("WatchBundlesWithLogger: %v", err)
		}
	})
	return store
}

// waitFor polls cond (a test helper; the code under test never polls) until it holds or 20s pass.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func waitRevision(t testing.TB, store *Store, ns, rev string) {
	t.Helper()
	waitFor(t, "namespace "+ns+" to serve revision "+rev, func() bool {
		s, ok := store.Snapshot(ns)
		return ok && s.Revision() == rev
	})
}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// startServer serves store over real HTTP on loopback.
func startServer(t testing.TB, store *Store, opts Options) (*Server, *httptest.Server) {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = quietLogger()
	}
	srv := NewServer(store, opts)
	ts := httptest.NewServer(srv)
	t.Cleanup(func() {
		ts.Close()
		srv.Close()
	})
	return srv, ts
}

// call POSTs (or GETs when body is nil and method is GET) and returns status and body.
func call(t testing.TB, method, url string, body any, hdr map[string]string) (int, []byte) {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = bytes.NewReader([]byte(b))
	case []byte:
		rd = bytes.NewReader(b)
	default:
		data, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, data
}

// decide POSTs req to /v1/decide and decodes the 200 answer.
func decide(t testing.TB, base string, req any, hdr map[string]string) policy.Decision {
	t.Helper()
	code, body := call(t, http.MethodPost, base+"/v1/decide", req, hdr)
	if code != http.StatusOK {
		t.Fatalf("POST /v1/decide = %d %s, want 200", code, body)
	}
	var d policy.Decision
	if err := json.Unmarshal(body, &d); err != nil {
		t.Fatalf("decoding decision %s: %v", body, err)
	}
	return d
}

func firstCode(d policy.Decision) string {
	if len(d.Reasons) == 0 {
		return ""
	}
	return d.Reasons[0].Code
}

// samplesBundleUnique is samplesBundle with agent ids made unique to ns, so that several sample
// namespaces can be loaded side by side without ambiguous agent ids.
func samplesBundleUnique(t testing.TB, ns string) policy.Bundle {
	t.Helper()
	b := samplesBundle(t, ns)
	for i := range b.Passports {
		b.Passports[i].Spec.AgentID += "_" + strings.ReplaceAll(ns, "-", "_")
	}
	return b
}
