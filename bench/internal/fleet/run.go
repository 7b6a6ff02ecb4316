package fleet

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	guardrailsv1alpha1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/controller"
	"github.com/tollgate-dev/tollgate/internal/decider"
	"github.com/tollgate-dev/tollgate/internal/policy"
)

// OperatorNamespace is where the fleet's manager writes bundles.
const OperatorNamespace = "tollgate-system"

// Config is one propagation run.
type Config struct {
	// Shape is the fleet.
	Shape Shape
	// Replicas is the number of deciders, each with its own API connection, informer and Store.
	Replicas int
	// Trials is the number of measured suspensions (after Warmup unmeasured ones).
	Trials, Warmup int
	// Writers is the number of concurrent API writers used to create the fleet.
	Writers int
	// Timeout bounds one trial (and, times the namespace count over 100 plus one, the seeding).
	Timeout time.Duration
	// Progress reports what the run does; nil means silent.
	Progress func(format string, args ...any)
}

// Result is what a run measured.
type Result struct {
	// Seed is the time from the first create until every replica decides with every namespace's
	// complete bundle (all passports, all cluster policies).
	Seed time.Duration
	// Suspension is, for each trial, the time from a passport's suspension (the API update) until
	// the last replica denies it with oap.passport_suspended.
	Suspension []time.Duration
	// SuspensionPerReplica is the same time for each replica and trial (Trials × Replicas).
	SuspensionPerReplica []time.Duration
	// ClusterChange is the time from a cluster policy update until every replica enforces the new
	// generation in every namespace.
	ClusterChange time.Duration
	// BundleWrites is the number of bundle ConfigMap writes the manager made.
	BundleWrites int64
}

// pollEvery is how often the replicas are asked while waiting for a change to show.
const pollEvery = time.Millisecond

// Run starts the manager with every Tollgate reconciler and cfg.Replicas decider watchers against
// the API server of restCfg, creates the fleet, and times suspensions and a cluster policy change
// until every replica enforces them. It stops everything it started before returning.
func Run(ctx context.Context, restCfg *rest.Config, scheme *runtime.Scheme, cfg Config) (Result, error) {
	var res Result
	progress := cfg.Progress
	if progress == nil {
		progress = func(string, ...any) {}
	}
	if cfg.Replicas < 1 || cfg.Shape.Namespaces < 1 || cfg.Shape.Passports < 1 {
		return res, errors.New("fleet: at least one replica, namespace and passport are needed")
	}
	if cfg.Writers < 1 {
		cfg.Writers = 8
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 15 * time.Second
	}
	fast := rest.CopyConfig(restCfg)
	fast.QPS, fast.Burst = 5000, 10000
	c, err := client.New(fast, client.Options{Scheme: scheme})
	if err != nil {
		return res, fmt.Errorf("creating a client: %w", err)
	}

	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	errs := make(chan error, cfg.Replicas+1)
	defer func() {
		cancel()
		wg.Wait()
	}()
	if err := createNamespace(ctx, c, OperatorNamespace, nil); err != nil {
		return res, err
	}
	mgr, err := ctrl.NewManager(fast, ctrl.Options{Scheme: scheme, Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0"})
	if err != nil {
		return res, fmt.Errorf("creating the manager: %w", err)
	}
	ctrls, err := controller.Setup(mgr, controller.Options{OperatorNamespace: OperatorNamespace, SkipNameValidation: true, MaxConcurrentReconciles: 4})
	if err != nil {
		return res, fmt.Errorf("setting up the controllers: %w", err)
	}
	wg.Go(func() {
		if err := mgr.Start(ctx); err != nil {
			errs <- fmt.Errorf("manager: %w", err)
		}
	})
	stores := make([]*decider.Store, cfg.Replicas)
	for r := range stores {
		cs, err := kubernetes.NewForConfig(restCfg) // one connection per replica, as separate pods have
		if err != nil {
			return res, fmt.Errorf("creating the clientset of replica %d: %w", r, err)
		}
		stores[r] = decider.NewStore()
		store := stores[r]
		wg.Go(func() {
			if err := decider.WatchBundlesWithLogger(ctx, cs, OperatorNamespace, store, slog.New(slog.DiscardHandler)); err != nil {
				errs <- fmt.Errorf("decider replica: %w", err)
			}
		})
	}
	failed := func() error {
		select {
		case err := <-errs:
			return err
		default:
			return nil
		}
	}

	// Seed the fleet and wait until every replica has every namespace's complete bundle.
	s := cfg.Shape
	cluster := s.ClusterGuardrailPolicies()
	start := time.Now()
	if err := seed(ctx, c, s, cluster, cfg.Writers, progress); err != nil {
		return res, err
	}
	progress("fleet: created %s in %s; waiting for %d replicas", s, time.Since(start).Round(time.Millisecond), cfg.Replicas)
	seedTimeout := cfg.Timeout * time.Duration(s.Namespaces/100+1) * 4
	if err := waitAll(ctx, stores, s, seedTimeout, failed, func(snap *policy.Snapshot) bool {
		for k := range cluster {
			if snap.SelectedPassports(guardrailsv1alpha1.ClusterPolicyPrefix+cluster[k].Name) != s.Passports {
				return false
			}
		}
		return true
	}); err != nil {
		return res, fmt.Errorf("seeding: %w", err)
	}
	res.Seed = time.Since(start)
	progress("fleet: every replica enforces every namespace %s after the first write", res.Seed.Round(time.Millisecond))

	// Suspensions: a random passport of a random namespace each time.
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range cfg.Trials + cfg.Warmup {
		ns, pp := s.Namespace(rng.IntN(s.Namespaces)), rng.IntN(s.Passports)
		last, per, err := suspensionTrial(ctx, c, stores, ns, pp, cfg.Timeout, failed)
		if err != nil {
			return res, fmt.Errorf("suspension trial %d: %w", i, err)
		}
		if i >= cfg.Warmup {
			res.Suspension = append(res.Suspension, last)
			res.SuspensionPerReplica = append(res.SuspensionPerReplica, per...)
		}
		if (i+1)%20 == 0 {
			progress("fleet: %d/%d suspension trials", i+1, cfg.Trials+cfg.Warmup)
		}
	}

	// A cluster policy change, until every namespace of every replica enforces it.
	if res.ClusterChange, err = clusterChange(ctx, c, stores, s, cfg, failed); err != nil {
		return res, err
	}
	progress("fleet: cluster policy change enforced in %d namespaces on %d replicas after %s", s.Namespaces, cfg.Replicas, res.ClusterChange.Round(time.Millisecond))
	res.BundleWrites = ctrls.Bundles.Writes()
	return res, failed()
}

func createNamespace(ctx context.Context, c client.Client, name string, lbls map[string]string) error {
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: lbls}}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s: %w", name, err)
	}
	return nil
}

// seed creates the fleet's cluster policies, namespaces, passports and policies with writers
// concurrent writers.
func seed(ctx context.Context, c client.Client, s Shape, cluster []guardrailsv1alpha1.ClusterGuardrailPolicy, writers int, progress func(string, ...any)) error {
	for k := range cluster {
		if err := c.Create(ctx, &cluster[k]); err != nil {
			return fmt.Errorf("creating cluster policy %s: %w", cluster[k].Name, err)
		}
	}
	work := make(chan int)
	var firstErr atomic.Pointer[error]
	var done atomic.Int64
	var wg sync.WaitGroup
	for range writers {
		wg.Go(func() {
			for i := range work {
				if err := seedNamespace(ctx, c, s, i); err != nil {
					firstErr.CompareAndSwap(nil, &err)
				}
				if n := done.Add(1); n%100 == 0 {
					progress("fleet: %d/%d namespaces created", n, s.Namespaces)
				}
			}
		})
	}
	for i := range s.Namespaces {
		if firstErr.Load() != nil {
			break
		}
		work <- i
	}
	close(work)
	wg.Wait()
	if err := firstErr.Load(); err != nil {
		return *err
	}
	return nil
}

func seedNamespace(ctx context.Context, c client.Client, s Shape, i int) error {
	if err := createNamespace(ctx, c, s.Namespace(i), map[string]string{Label: "on"}); err != nil {
		return err
	}
	for _, p := range s.GuardrailPolicies(i) {
		if err := c.Create(ctx, &p); err != nil {
			return fmt.Errorf("creating policy %s/%s: %w", p.Namespace, p.Name, err)
		}
	}
	for _, p := range s.PassportObjects(i) {
		if err := c.Create(ctx, &p); err != nil {
			return fmt.Errorf("creating passport %s/%s: %w", p.Namespace, p.Name, err)
		}
	}
	return nil
}

// waitAll polls until every replica's snapshot of every fleet namespace satisfies ok.
func waitAll(ctx context.Context, stores []*decider.Store, s Shape, timeout time.Duration, failed func() error, ok func(*policy.Snapshot) bool) error {
	deadline := time.Now().Add(timeout)
	next := make([]int, len(stores)) // the first namespace of each replica not yet seen satisfying ok
	for {
		pending := 0
		for r, store := range stores {
			for next[r] < s.Namespaces {
				snap, loaded := store.Snapshot(s.Namespace(next[r]))
				if !loaded || !ok(snap) {
					break
				}
				next[r]++
			}
			pending += s.Namespaces - next[r]
		}
		if pending == 0 {
			return nil
		}
		if err := failed(); err != nil {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d namespace snapshots still not up to date after %s (replica progress %v of %d)", pending, timeout, next, s.Namespaces)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * pollEvery):
		}
	}
}

// suspensionTrial suspends passport pp of ns, times until each replica denies it with
// oap.passport_suspended, then reactivates it and waits (untimed) until no replica does.
func suspensionTrial(ctx context.Context, c client.Client, stores []*decider.Store, ns string, pp int, timeout time.Duration, failed func() error) (time.Duration, []time.Duration, error) {
	req := Request(pp)
	suspended := func(store *decider.Store) bool {
		snap, ok := store.Snapshot(ns)
		if !ok {
			return false
		}
		d := snap.Decide(ctx, req)
		return d.Decision == policy.DecisionDeny && len(d.Reasons) > 0 && d.Reasons[0].Code == policy.CodePassportSuspended
	}
	start := time.Now()
	if err := setPassportStatus(ctx, c, ns, PassportName(pp), guardrailsv1alpha1.PassportSuspended); err != nil {
		return 0, nil, err
	}
	per, err := waitReplicas(ctx, stores, start, timeout, failed, suspended)
	if err != nil {
		return 0, nil, fmt.Errorf("suspending %s/%s: %w", ns, PassportName(pp), err)
	}
	if err := setPassportStatus(ctx, c, ns, PassportName(pp), guardrailsv1alpha1.PassportActive); err != nil {
		return 0, nil, err
	}
	if _, err := waitReplicas(ctx, stores, time.Now(), timeout, failed, func(s *decider.Store) bool { return !suspended(s) }); err != nil {
		return 0, nil, fmt.Errorf("reactivating %s/%s: %w", ns, PassportName(pp), err)
	}
	return slices.Max(per), per, nil
}

// waitReplicas polls every replica until ok holds for it and returns each one's time since start.
func waitReplicas(ctx context.Context, stores []*decider.Store, start time.Time, timeout time.Duration, failed func() error, ok func(*decider.Store) bool) ([]time.Duration, error) {
	took := make([]time.Duration, len(stores))
	left := len(stores)
	for {
		for r, store := range stores {
			if took[r] == 0 && ok(store) {
				took[r] = max(time.Since(start), 1)
				left--
			}
		}
		if left == 0 {
			return took, nil
		}
		if err := failed(); err != nil {
			return nil, err
		}
		if time.Since(start) > timeout {
			return nil, fmt.Errorf("%d of %d replicas not there after %s", left, len(stores), timeout)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(pollEvery):
		}
	}
}

func setPassportStatus(ctx context.Context, c client.Client, ns, name string, status guardrailsv1alpha1.PassportStatusValue) error {
	for {
		var p guardrailsv1alpha1.AgentPassport
		if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &p); err != nil {
			return fmt.Errorf("reading passport %s/%s: %w", ns, name, err)
		}
		p.Spec.Status = status
		err := c.Update(ctx, &p)
		if apierrors.IsConflict(err) {
			continue // the status reconciler wrote in between
		}
		if err != nil {
			return fmt.Errorf("updating passport %s/%s: %w", ns, name, err)
		}
		return nil
	}
}

// clusterChange adds a rule to the first cluster policy and times until every replica enforces it
// in every namespace.
func clusterChange(ctx context.Context, c client.Client, stores []*decider.Store, s Shape, cfg Config, failed func() error) (time.Duration, error) {
	name := ClusterPolicyName(0)
	var cp guardrailsv1alpha1.ClusterGuardrailPolicy
	if err := c.Get(ctx, types.NamespacedName{Name: name}, &cp); err != nil {
		return 0, fmt.Errorf("reading cluster policy %s: %w", name, err)
	}
	cp.Spec.Rules = append(cp.Spec.Rules, guardrailsv1alpha1.Rule{Name: "no-sudo", Tools: []string{"bash"},
		When: `has(input.command) && input.command.startsWith("sudo ")`, Action: guardrailsv1alpha1.ActionDeny, Code: "oap.blocked_pattern"})
	want := len(cp.Spec.Rules)
	start := time.Now()
	if err := c.Update(ctx, &cp); err != nil {
		return 0, fmt.Errorf("updating cluster policy %s: %w", name, err)
	}
	timeout := cfg.Timeout * time.Duration(s.Namespaces/100+1) * 4
	if err := waitAll(ctx, stores, s, timeout, failed, func(snap *policy.Snapshot) bool {
		return snap.RuleCount(guardrailsv1alpha1.ClusterPolicyPrefix+name) == want
	}); err != nil {
		return 0, fmt.Errorf("cluster policy change: %w", err)
	}
	return time.Since(start), nil
}
