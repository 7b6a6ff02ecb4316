package webhook_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/go-logr/logr"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
	"sigs.k8s.io/yaml"

	guardrailsv1alpha1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/testenv"
	tgwebhook "github.com/tollgate-dev/tollgate/internal/webhook"
	"github.com/tollgate-dev/tollgate/internal/webhook/pod"
	"github.com/tollgate-dev/tollgate/internal/webhook/v1alpha1"
)

// BenchmarkAdmission measures admission latency of the pod injector and the GuardrailPolicy
// webhooks on a real envtest control plane, three ways:
//
//   - */handler: the admission handler called in-process on a decoded admission.Request (the
//     injector reads the passport from the manager's informer cache): the webhook's own work.
//   - */tls: the webhook as the API server calls it: an AdmissionReview POSTed over the webhook
//     server's real TLS listener (keep-alive, as the API server's client does), timed from request
//     to decoded response. p99-ms is the figure held to the 5 ms target.
//   - */apiserver: a server-side dry-run create through the API server into a namespace the webhooks
//     intercept, interleaved with the same create into a namespace they ignore (baseline);
//     overhead-p50-ms / overhead-p99-ms are the differences of those percentiles: what the webhook
//     adds to a real create, API server to webhook round trip included.
func BenchmarkAdmission(b *testing.B) {
	h, err := startHarness(logr.Discard())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if err := h.stop(); err != nil {
			b.Error(err)
		}
	})
	ctx := context.Background()
	covered := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "bench-"}}
	ignored := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "bench-ignored-",
		Labels: map[string]string{tgwebhook.LabelWebhook: tgwebhook.WebhookIgnore}}}
	for _, ns := range []*corev1.Namespace{covered, ignored} {
		if err := h.client.Create(ctx, ns); err != nil {
			b.Fatal(err)
		}
	}
	pp := &guardrailsv1alpha1.AgentPassport{
		ObjectMeta: metav1.ObjectMeta{Namespace: covered.Name, Name: "coder"},
		Spec: guardrailsv1alpha1.AgentPassportSpec{Owner: guardrailsv1alpha1.PassportOwner{ID: "platform@example.com"},
			Subjects: guardrailsv1alpha1.PassportSubjects{ServiceAccounts: []string{"coding-agent"}}},
	}
	if err := h.client.Create(ctx, pp); err != nil {
		b.Fatal(err)
	}
	// Let the injector's informer see the passport so every request is served from the cache.
	time.Sleep(500 * time.Millisecond)

	newPod := func(ns string) *corev1.Pod {
		p := agentPod(ns, "bench", map[string]string{guardrailsv1alpha1.AnnotationPassport: "coder"}, "coding-agent")
		p.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}
		return p
	}
	newPolicy := func(ns string) *guardrailsv1alpha1.GuardrailPolicy {
		p, err := samplePolicy()
		if err != nil {
			b.Fatal(err)
		}
		p.Namespace = ns
		return p
	}

	wio := &h.env.WebhookInstallOptions
	base := "https://" + net.JoinHostPort(wio.LocalServingHost, strconv.Itoa(wio.LocalServingPort))
	hc, err := tlsClient(wio.LocalServingCAData)
	if err != nil {
		b.Fatal(err)
	}

	policyGVK := metav1.GroupVersionKind{Group: guardrailsv1alpha1.GroupVersion.Group, Version: "v1alpha1", Kind: "GuardrailPolicy"}
	policyGVR := metav1.GroupVersionResource{Group: guardrailsv1alpha1.GroupVersion.Group, Version: "v1alpha1", Resource: "guardrailpolicies"}
	b.Run("pod/handler", func(b *testing.B) {
		inj, err := pod.NewInjector(h.mgr.GetClient(), nil, admission.NewDecoder(h.mgr.GetScheme()),
			pod.Options{DeciderURL: deciderURL, TokenExpiration: pod.MinTokenExpiration})
		if err != nil {
			b.Fatal(err)
		}
		timeHandler(b, inj, review(b, newPod(covered.Name), covered.Name, metav1.GroupVersionKind{Version: "v1", Kind: "Pod"},
			metav1.GroupVersionResource{Version: "v1", Resource: "pods"}), true)
	})
	b.Run("policy-validate/handler", func(b *testing.B) {
		hook := admission.WithValidator(h.mgr.GetScheme(), admission.Validator[*guardrailsv1alpha1.GuardrailPolicy](v1alpha1.GuardrailPolicyValidator{}))
		timeHandler(b, hook, review(b, newPolicy(covered.Name), covered.Name, policyGVK, policyGVR), false)
	})
	b.Run("pod/tls", func(b *testing.B) {
		body := review(b, newPod(covered.Name), covered.Name, metav1.GroupVersionKind{Version: "v1", Kind: "Pod"},
			metav1.GroupVersionResource{Version: "v1", Resource: "pods"})
		timeTLS(b, hc, base+pod.Path, body, true)
	})
	b.Run("policy-validate/tls", func(b *testing.B) {
		body := review(b, newPolicy(covered.Name), covered.Name, policyGVK, policyGVR)
		timeTLS(b, hc, base+"/validate-guardrails-tollgate-dev-v1alpha1-guardrailpolicy", body, false)
	})
	b.Run("policy-default/tls", func(b *testing.B) {
		body := review(b, newPolicy(covered.Name), covered.Name, policyGVK, policyGVR)
		timeTLS(b, hc, base+"/mutate-guardrails-tollgate-dev-v1alpha1-guardrailpolicy", body, false)
	})
	b.Run("pod/apiserver", func(b *testing.B) {
		timeDryRun(b, h.client, func() client.Object { return newPod(covered.Name) }, func() client.Object { return newPod(ignored.Name) })
	})
	b.Run("policy/apiserver", func(b *testing.B) {
		timeDryRun(b, h.client, func() client.Object { return newPolicy(covered.Name) }, func() client.Object { return newPolicy(ignored.Name) })
	})
}

func samplePolicy() (*guardrailsv1alpha1.GuardrailPolicy, error) {
	data, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "config", "samples", "guardrails_v1alpha1_guardrailpolicy_shell_safety.yaml"))
	if err != nil {
		return nil, fmt.Errorf("reading the sample policy: %w", err)
	}
	p := &guardrailsv1alpha1.GuardrailPolicy{}
	if err := yaml.Unmarshal(data, p); err != nil {
		return nil, fmt.Errorf("decoding the sample policy: %w", err)
	}
	return p, nil
}

func tlsClient(caPEM []byte) (*http.Client, error) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, fmt.Errorf("no CA certificate in the envtest serving CA")
	}
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig:     &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12},
		MaxIdleConnsPerHost: 4,
	}}, nil
}

func review(b *testing.B, obj any, ns string, kind metav1.GroupVersionKind, res metav1.GroupVersionResource) []byte {
	b.Helper()
	raw, err := json.Marshal(obj)
	if err != nil {
		b.Fatal(err)
	}
	body, err := json.Marshal(admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{
			UID: types.UID("bench"), Kind: kind, Resource: res, Namespace: ns, Name: "bench",
			Operation: admissionv1.Create, Object: runtimeRaw(raw),
		},
	})
	if err != nil {
		b.Fatal(err)
	}
	return body
}

// timeHandler calls the handler in-process b.N times on the AdmissionReview body and reports percentiles.
func timeHandler(b *testing.B, hook admission.Handler, body []byte, wantPatch bool) {
	b.Helper()
	var in admissionv1.AdmissionReview
	if err := json.Unmarshal(body, &in); err != nil {
		b.Fatal(err)
	}
	req := admission.Request{AdmissionRequest: *in.Request}
	ctx := context.Background()
	lat := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		resp := hook.Handle(ctx, req)
		lat = append(lat, time.Since(start))
		if !resp.Allowed || (wantPatch && len(resp.Patches) == 0) {
			b.Fatalf("unexpected admission response: %+v", resp)
		}
	}
	b.StopTimer()
	report(b, "", lat)
}

// timeTLS POSTs body to url b.N times over one keep-alive connection and reports percentiles.
func timeTLS(b *testing.B, hc *http.Client, url string, body []byte, wantPatch bool) {
	b.Helper()
	post := func() error {
		resp, err := hc.Post(url, "application/json", bytes.NewReader(body))
		if err != nil {
			return err
		}
		defer func() { _ = resp.Body.Close() }()
		data, err := io.ReadAll(resp.Body)
		if err != nil {
			return err
		}
		var out admissionv1.AdmissionReview
		if err := json.Unmarshal(data, &out); err != nil {
			return fmt.Errorf("decoding %s: %w", data, err)
		}
		if out.Response == nil || !out.Response.Allowed || (wantPatch && len(out.Response.Patch) == 0) {
			return fmt.Errorf("unexpected admission response: %s", data)
		}
		return nil
	}
	if err := post(); err != nil { // warm the connection and the handler
		b.Fatal(err)
	}
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		if err := post(); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(start))
	}
	b.StopTimer()
	report(b, "", lat)
}

// timeDryRun alternates dry-run creates of covered (webhooks called) and baseline (webhooks skipped).
func timeDryRun(b *testing.B, c client.Client, covered, baseline func() client.Object) {
	b.Helper()
	create := func(obj client.Object) time.Duration {
		start := time.Now()
		if err := c.Create(context.Background(), obj, client.DryRunAll); err != nil {
			b.Fatal(err)
		}
		return time.Since(start)
	}
	create(covered())
	create(baseline())
	var with, without []time.Duration
	b.ResetTimer()
	for b.Loop() {
		with = append(with, create(covered()))
		without = append(without, create(baseline()))
	}
	b.StopTimer()
	report(b, "", with)
	report(b, "baseline-", without)
	b.ReportMetric(ms(percentile(with, 0.50)-percentile(without, 0.50)), "overhead-p50-ms")
	b.ReportMetric(ms(percentile(with, 0.99)-percentile(without, 0.99)), "overhead-p99-ms")
}

func report(b *testing.B, prefix string, lat []time.Duration) {
	b.ReportMetric(ms(percentile(lat, 0.50)), prefix+"p50-ms")
	b.ReportMetric(ms(percentile(lat, 0.99)), prefix+"p99-ms")
}

func percentile(lat []time.Duration, q float64) time.Duration {
	if len(lat) == 0 {
		return 0
	}
	s := slices.Clone(lat)
	slices.Sort(s)
	i := int(math.Ceil(q*float64(len(s)))) - 1
	return s[max(i, 0)]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func runtimeRaw(raw []byte) runtime.RawExtension { return runtime.RawExtension{Raw: raw} }
