package decider

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/tollgate-dev/tollgate/internal/bundlestore"
	"github.com/tollgate-dev/tollgate/internal/policy"
)

// TestInformerPath writes, updates and deletes a bundle ConfigMap in envtest and checks that the
// decider serves each state.
func TestInformerPath(t *testing.T) {
	cs := kube(t)
	store := watchedStore(t, cs)
	_, ts := startServer(t, store, Options{})
	const ns = "team-c"
	b := samplesBundleUnique(t, ns)
	putBundle(t, cs, b)
	waitRevision(t, store, ns, b.Revision())
	req := map[string]any{"passport": ns + "/coding-agent", "tool_name": "web_search"}
	if d := decide(t, ts.URL, req, nil); d.Decision != policy.DecisionAllow || d.BundleRevision != b.Revision() {
		t.Fatalf("before update: %s %v rev %s", d.Decision, d.Reasons, d.BundleRevision)
	}

	// Suspend the passport: the next revision denies.
	for i := range b.Passports {
		if b.Passports[i].Name == "coding-agent" {
			b.Passports[i].Spec.Status = policy.StatusSuspended
		}
	}
	putBundle(t, cs, b)
	waitRevision(t, store, ns, b.Revision())
	if d := decide(t, ts.URL, req, nil); firstCode(d) != policy.CodePassportSuspended || d.BundleRevision != b.Revision() {
		t.Fatalf("after update: %s %v rev %s", d.Decision, d.Reasons, d.BundleRevision)
	}

	// Delete the bundle: the namespace is dropped.
	if err := cs.CoreV1().ConfigMaps(operatorNS).Delete(context.Background(), bundlestore.Name(ns), metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "namespace "+ns+" to be removed", func() bool { _, ok := store.Snapshot(ns); return !ok })
	if d := decide(t, ts.URL, req, nil); firstCode(d) != policy.CodePassportNotFound {
		t.Fatalf("after delete: %s %v", d.Decision, d.Reasons)
	}
}

// TestBrokenBundleKeepsLastGood writes a bundle that does not compile and one that does not decode:
// both are recorded (status, metric) while the last good snapshot keeps serving.
func TestBrokenBundleKeepsLastGood(t *testing.T) {
	cs := kube(t)
	store := watchedStore(t, cs)
	_, ts := startServer(t, store, Options{})
	const ns = "team-b"
	good := samplesBundleUnique(t, ns)
	putBundle(t, cs, good)
	waitRevision(t, store, ns, good.Revision())

	// A policy with a CEL type error.
	bad := samplesBundleUnique(t, ns)
	bad.Policies[0].Spec.Rules = append(bad.Policies[0].Spec.Rules, policy.Rule{
		Name: "broken", Tools: []string{"bash"}, When: "input.command +", Action: policy.ActionDeny})
	putBundle(t, cs, bad)
	waitFor(t, "the compile error to be recorded", func() bool { return teamBStatus(store).LastError != "" })
	st := teamBStatus(store)
	if st.Revision != good.Revision() || !strings.Contains(st.LastError, "rules[1].when") {
		t.Errorf("status after bad bundle = %+v", st)
	}
	d := decide(t, ts.URL, map[string]any{"passport": ns + "/coding-agent", "tool_name": "ls"}, nil)
	if d.Decision != policy.DecisionAllow || d.BundleRevision != good.Revision() {
		t.Errorf("after bad bundle: %s %v rev %s, want allow from %s", d.Decision, d.Reasons, d.BundleRevision, good.Revision())
	}

	// A ConfigMap whose payload is not gzip.
	cms, err := bundlestore.Encode(operatorNS, good)
	if err != nil {
		t.Fatal(err)
	}
	cms[0].Annotations[bundlestore.AnnotationRevision] = "sha256:corrupt"
	cms[0].BinaryData[bundlestore.DataKey] = []byte("not gzip")
	errsBefore := store.LoadErrors()
	putConfigMap(t, cs, &cms[0])
	waitFor(t, "the decode error to be recorded", func() bool { return store.LoadErrors() > errsBefore })
	if st := teamBStatus(store); st.Revision != good.Revision() || !strings.Contains(st.LastError, "decompress") {
		t.Errorf("status after corrupt ConfigMap = %+v", st)
	}
	code, body := call(t, http.MethodGet, ts.URL+"/v1/status", nil, nil)
	if code != 200 || !strings.Contains(string(body), "decompress") {
		t.Errorf("/v1/status = %d %s", code, body)
	}
	_, body = call(t, http.MethodGet, ts.URL+"/metrics", nil, nil)
	if !strings.Contains(string(body), `tollgate_bundle_load_failing{namespace="team-b"} 1`) ||
		strings.Contains(string(body), `tollgate_bundle_load_errors_total{namespace="team-b"} 0`) {
		t.Errorf("metrics do not show the failing bundle")
	}
	if d := decide(t, ts.URL, map[string]any{"passport": ns + "/coding-agent", "tool_name": "ls"}, nil); d.BundleRevision != good.Revision() {
		t.Errorf("after corrupt ConfigMap: rev %s", d.BundleRevision)
	}

	// Repair: the good bundle is served again and the error clears.
	putBundle(t, cs, samplesBundleUnique(t, ns))
	waitFor(t, "the error to clear", func() bool { return teamBStatus(store).LastError == "" })
}

func teamBStatus(store *Store) NamespaceStatus {
	for _, st := range store.Status() {
		if st.Namespace == "team-b" {
			return st
		}
	}
	return NamespaceStatus{}
}

// serviceAccountToken creates ServiceAccount name in ns (if needed) and a token for audiences
// through the TokenRequest API.
func serviceAccountToken(t *testing.T, cs kubernetes.Interface, ns, name string, audiences ...string) string {
	t.Helper()
	ctx := context.Background()
	_, err := cs.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	exp := int64(3600)
	tr, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name, &authnv1.TokenRequest{
		Spec: authnv1.TokenRequestSpec{Audiences: audiences, ExpirationSeconds: &exp},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("TokenRequest for %s/%s: %v", ns, name, err)
	}
	return tr.Status.Token
}

// TestAuthentication checks callers with real TokenReviews against envtest.
func TestAuthentication(t *testing.T) {
	cs := kube(t)
	authn := NewTokenReviewAuthenticator(cs, TokenReviewConfig{CacheSize: 8})
	url := samplesServer(t, Options{Authenticator: authn})

	coding := serviceAccountToken(t, cs, "team-a", "coding-agent", "tollgate")
	other := serviceAccountToken(t, cs, "team-a", "other-agent", "tollgate")
	otherNS := serviceAccountToken(t, cs, "team-b", "coding-agent", "tollgate")
	wrongAud := serviceAccountToken(t, cs, "team-a", "coding-agent", "https://kubernetes.default.svc")
	bearer := func(tok string) map[string]string { return map[string]string{"Authorization": "Bearer " + tok} }
	req := map[string]any{"passport": "team-a/coding-agent", "tool_name": "ls"}

	t.Run("allowed subject", func(t *testing.T) {
		d := decide(t, url, req, bearer(coding))
		if d.Decision != policy.DecisionAllow {
			t.Fatalf("got %s %v", d.Decision, d.Reasons)
		}
		// By agent id, and on the batch and verify routes too.
		if d := decide(t, url, map[string]any{"agent_id": "ap_coding_agent_01", "tool_name": "ls"}, bearer(coding)); d.Decision != policy.DecisionAllow {
			t.Errorf("by agent id: %s %v", d.Decision, d.Reasons)
		}
		code, body := call(t, http.MethodPost, url+"/v1/decide:batch", map[string]any{"requests": []any{req}}, bearer(coding))
		if code != 200 || !strings.Contains(string(body), `"allow":true`) {
			t.Errorf("batch: %d %s", code, body)
		}
	})
	t.Run("subject not listed", func(t *testing.T) {
		for name, tok := range map[string]string{"other service account": other, "same name in another namespace": otherNS} {
			d := decide(t, url, req, bearer(tok))
			if d.Allow || firstCode(d) != policy.CodeSubjectNotAllowed || d.BundleRevision == "" || d.PassportDigest == "" {
				t.Errorf("%s: got %+v, want deny %s", name, d, policy.CodeSubjectNotAllowed)
			}
		}
		code, body := call(t, http.MethodPost, url+"/api/verify/policy/system.command.execute.v1",
			map[string]any{"context": map[string]any{"agent_id": "ap_coding_agent_01", "command": "ls"}}, bearer(other))
		if code != 200 || !strings.Contains(string(body), policy.CodeSubjectNotAllowed) {
			t.Errorf("verify: %d %s", code, body)
		}
	})
	t.Run("rejected tokens", func(t *testing.T) {
		for name, hdr := range map[string]map[string]string{
			"no token":       nil,
			"not bearer":     {"Authorization": "Basic dXNlcjpwYXNz"},
			"garbage token":  bearer("not-a-token"),
			"wrong audience": bearer(wrongAud),
		} {
			code, body := call(t, http.MethodPost, url+"/v1/decide", req, hdr)
			var e struct{ Error struct{ Code, Field string } }
			_ = json.Unmarshal(body, &e)
			if code != http.StatusUnauthorized || e.Error.Code != ErrCodeUnauthenticated || e.Error.Field != "Authorization" {
				t.Errorf("%s: %d %s", name, code, body)
			}
		}
	})
	t.Run("cache", func(t *testing.T) {
		n := authn.CacheLen()
		if n == 0 || n > 8 {
			t.Errorf("cache holds %d results, want 1..8", n)
		}
		for range 3 {
			decide(t, url, req, bearer(coding))
		}
		if authn.CacheLen() != n {
			t.Errorf("repeated token grew the cache from %d to %d", n, authn.CacheLen())
		}
		_, body := call(t, http.MethodGet, url+"/metrics", nil, nil)
		if !strings.Contains(string(body), "tollgate_authentication_failures_total 4") {
			t.Errorf("authentication failures not counted")
		}
	})
}
