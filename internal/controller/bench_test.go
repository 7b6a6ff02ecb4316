package controller

import (
	"context"
	"fmt"
	"io"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	v1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/bundlestore"
	"github.com/tollgate-dev/tollgate/internal/policy"
	"github.com/tollgate-dev/tollgate/internal/testenv"
)

// benchEnv is a control plane with the controllers running, for one benchmark.
type benchEnv struct {
	ctx   context.Context
	c     client.WithWatch
	ctrls *Controllers
}

func startBenchEnv(b *testing.B) *benchEnv {
	b.Helper()
	logf.SetLogger(zap.New(zap.WriteTo(io.Discard)))
	env, err := testenv.New()
	if err != nil {
		b.Fatalf("the control plane must start: %v", err)
	}
	cfg, err := env.Start()
	if err != nil {
		b.Fatalf("the control plane must start: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ctrls, done, err := startControllers(ctx, cfg, env.Scheme, DefaultBundleInterval)
	if err != nil {
		cancel()
		_ = env.Stop()
		b.Fatal(err)
	}
	c, err := client.NewWithWatch(fastConfig(cfg), client.Options{Scheme: env.Scheme})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			b.Errorf("manager: %v", err)
		}
		if err := env.Stop(); err != nil {
			b.Errorf("stopping the control plane: %v", err)
		}
	})
	return &benchEnv{ctx: ctx, c: c, ctrls: ctrls}
}

// namespace creates a namespace with n passports and one policy, and waits for its bundle.
func (e *benchEnv) namespace(b *testing.B, n int) string {
	b.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "bench-"}}
	if err := e.c.Create(e.ctx, ns); err != nil {
		b.Fatal(err)
	}
	if err := e.c.Create(e.ctx, newPolicy(ns.Name, "shell")); err != nil {
		b.Fatal(err)
	}
	e.parallel(b, n, func(i int) error { return e.c.Create(e.ctx, newPassport(ns.Name, fmt.Sprintf("agent-%04d", i))) })
	e.waitBundle(b, ns.Name, func(bd policy.Bundle) bool { return len(bd.Passports) == n && len(bd.Policies) == 1 })
	return ns.Name
}

// parallel runs f(0..n-1) on 16 goroutines.
func (e *benchEnv) parallel(b *testing.B, n int, f func(i int) error) {
	b.Helper()
	idx := make(chan int, n)
	for i := range n {
		idx <- i
	}
	close(idx)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	for range 16 {
		wg.Go(func() {
			for i := range idx {
				if err := f(i); err != nil {
					mu.Lock()
					first = err
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	if first != nil {
		b.Fatal(first)
	}
}

func (e *benchEnv) waitBundle(b *testing.B, ns string, ok func(policy.Bundle) bool) {
	b.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		if bd, _, err := readBundle(e.ctx, e.c, ns); err == nil && ok(bd) {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	b.Fatalf("the bundle of %s did not reach the wanted state", ns)
}

// watchBundle watches the bundle ConfigMaps of ns.
func (e *benchEnv) watchBundle(b *testing.B, ns string) watch.Interface {
	b.Helper()
	w, err := e.c.Watch(e.ctx, &corev1.ConfigMapList{}, client.InNamespace(testOperatorNamespace),
		client.MatchingLabels(bundlestore.NamespaceSelector(ns)))
	if err != nil {
		b.Fatal(err)
	}
	return w
}

// nextRevision waits for a bundle ConfigMap event carrying a revision other than prev and returns it
// with the decoded bundle.
func nextRevision(b *testing.B, w watch.Interface, prev string) (string, policy.Bundle) {
	b.Helper()
	timeout := time.After(30 * time.Second)
	for {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				b.Fatal("watch closed")
			}
			cm, isCM := ev.Object.(*corev1.ConfigMap)
			if !isCM || ev.Type == watch.Deleted || bundlestore.Revision(cm) == prev {
				continue
			}
			bd, err := bundlestore.Decode([]corev1.ConfigMap{*cm})
			if err != nil {
				b.Fatal(err)
			}
			return bundlestore.Revision(cm), bd
		case <-timeout:
			b.Fatal("no new bundle revision within 30s")
		}
	}
}

func percentile(d []time.Duration, p float64) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[min(len(s)-1, int(float64(len(s))*p))]
}

func reportLatencies(b *testing.B, lat []time.Duration) {
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	b.ReportMetric(ms(percentile(lat, 0.50)), "p50-ms")
	b.ReportMetric(ms(percentile(lat, 0.99)), "p99-ms")
	b.ReportMetric(ms(percentile(lat, 1)), "max-ms")
	b.ReportMetric(float64(len(lat)), "samples")
}

// latencySamples is the number of isolated single changes each latency benchmark measures.
const latencySamples = 100

// benchSingleChange measures API write → new bundle revision stored, for isolated single changes
// (spaced past the bundle interval) in a namespace of 100 passports and one policy.
func benchSingleChange(b *testing.B, change func(e *benchEnv, ns string, i int) error, applied func(policy.Bundle, int) bool) {
	e := startBenchEnv(b)
	ns := e.namespace(b, 100)
	_, rev, err := readBundle(e.ctx, e.c, ns)
	if err != nil {
		b.Fatal(err)
	}
	w := e.watchBundle(b, ns)
	defer w.Stop()
	b.ReportAllocs()
	var lat []time.Duration
	for b.Loop() {
		for range latencySamples {
			i := len(lat) + 1
			start := time.Now()
			if err := change(e, ns, i); err != nil {
				b.Fatal(err)
			}
			var bd policy.Bundle
			rev, bd = nextRevision(b, w, rev)
			lat = append(lat, time.Since(start))
			if !applied(bd, i) {
				b.Fatalf("revision %s does not hold change %d", rev, i)
			}
			time.Sleep(DefaultBundleInterval + 50*time.Millisecond)
		}
	}
	reportLatencies(b, lat)
}

// BenchmarkPolicyChangeToBundle measures a GuardrailPolicy update → new bundle revision stored.
func BenchmarkPolicyChangeToBundle(b *testing.B) {
	benchSingleChange(b, func(e *benchEnv, ns string, i int) error {
		p := &v1.GuardrailPolicy{}
		if err := e.c.Get(e.ctx, client.ObjectKey{Namespace: ns, Name: "shell"}, p); err != nil {
			return err
		}
		p.Spec.Rules[1].Message = fmt.Sprintf("change %d", i)
		return e.c.Update(e.ctx, p)
	}, func(bd policy.Bundle, i int) bool {
		return len(bd.Policies) == 1 && bd.Policies[0].Spec.Rules[1].Message == fmt.Sprintf("change %d", i)
	})
}

// BenchmarkPassportSuspensionToBundle measures suspending (or reactivating) a passport → new bundle
// revision stored.
func BenchmarkPassportSuspensionToBundle(b *testing.B) {
	status := func(i int) v1.PassportStatusValue {
		if i%2 == 1 {
			return v1.PassportSuspended
		}
		return v1.PassportActive
	}
	benchSingleChange(b, func(e *benchEnv, ns string, i int) error {
		p := &v1.AgentPassport{}
		if err := e.c.Get(e.ctx, client.ObjectKey{Namespace: ns, Name: "agent-0000"}, p); err != nil {
			return err
		}
		p.Spec.Status = status(i)
		return e.c.Update(e.ctx, p)
	}, func(bd policy.Bundle, i int) bool {
		p, ok := bundlePassport(bd, "agent-0000")
		return ok && p.Spec.Status == string(status(i))
	})
}

// BenchmarkPassportBurstWrites suspends 1,000 passports of a 1,000-passport namespace at once and
// counts the bundle writes until the bundle holds every suspension (must be far fewer than 1,000).
func BenchmarkPassportBurstWrites(b *testing.B) {
	const n = 1000
	e := startBenchEnv(b)
	b.ReportAllocs()
	var writes, settle []float64
	for b.Loop() {
		ns := e.namespace(b, n)
		w := e.watchBundle(b, ns)
		before := e.ctrls.Bundles.Writes()
		var events int
		start := time.Now()
		e.parallel(b, n, func(i int) error {
			// The passport reconciler writes status concurrently: retry on conflict.
			return retry.RetryOnConflict(retry.DefaultRetry, func() error {
				p := &v1.AgentPassport{}
				if err := e.c.Get(e.ctx, client.ObjectKey{Namespace: ns, Name: fmt.Sprintf("agent-%04d", i)}, p); err != nil {
					return err
				}
				p.Spec.Status = v1.PassportSuspended
				return e.c.Update(e.ctx, p)
			})
		})
		burst := time.Since(start)
		rev := ""
		for {
			var bd policy.Bundle
			rev, bd = nextRevision(b, w, rev)
			events++
			if !slices.ContainsFunc(bd.Passports, func(p policy.Passport) bool { return p.Spec.Status != policy.StatusSuspended }) {
				break
			}
		}
		settle = append(settle, float64(time.Since(start))/float64(time.Millisecond))
		time.Sleep(3 * DefaultBundleInterval) // nothing more may follow
		w.Stop()
		writes = append(writes, float64(e.ctrls.Bundles.Writes()-before))
		b.Logf("%d updates in %s; %d bundle revisions observed, %d ConfigMap writes", n, burst.Round(time.Millisecond), events, e.ctrls.Bundles.Writes()-before)
		if writes[len(writes)-1] >= n {
			b.Fatalf("%v bundle writes for %d updates: not coalesced", writes[len(writes)-1], n)
		}
	}
	b.ReportMetric(writes[len(writes)-1], "bundle-writes")
	b.ReportMetric(n, "updates")
	b.ReportMetric(settle[len(settle)-1], "settle-ms")
}
