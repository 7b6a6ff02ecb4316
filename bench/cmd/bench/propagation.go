package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
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
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	guardrailsv1alpha1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/bench/internal/report"
	"github.com/tollgate-dev/tollgate/bench/internal/stats"
	"github.com/tollgate-dev/tollgate/internal/controller"
	"github.com/tollgate-dev/tollgate/internal/decider"
	"github.com/tollgate-dev/tollgate/internal/policy"
	"github.com/tollgate-dev/tollgate/internal/testenv"
)

// Propagation targets (issue 8).
const (
	targetPolicyChangeP99 = 500e6
	targetSuspensionP99   = 1e9

	propOperatorNS = "tollgate-system"
	propNS         = "bench-propagation"
	propPassport   = "agent"
	propPolicy     = "toggle"
	propTool       = "probe"
	propCapability = "tool.probe"
	// trialTimeout bounds one trial; a change not enforced by then fails the stage.
	trialTimeout = 15 * time.Second
	// pollEvery is how often the decider is asked while waiting for a change to show.
	pollEvery = time.Millisecond
	// warmupTrials run before the measured ones (informer and client caches, first compiles).
	warmupTrials = 3
)

// propagation is the running system: envtest, the manager with Tollgate's reconcilers and a decider
// store fed by WatchBundlesWithLogger, all in this process.
type propagation struct {
	c     client.Client
	store *decider.Store
	gap   time.Duration
}

// benchPropagation measures, in envtest, how long an API write takes to reach decisions.
func benchPropagation(ctx context.Context, cfg config) ([]report.Row, []string, error) {
	logf.SetLogger(zap.New(zap.WriteTo(io.Discard)))
	env, err := testenv.New()
	if err != nil {
		return nil, nil, err
	}
	t := time.Now()
	restCfg, err := env.Start()
	if err != nil {
		return nil, nil, fmt.Errorf("starting envtest: %w", err)
	}
	defer func() {
		if err := env.Stop(); err != nil {
			progress("stopping envtest: %v", err)
		}
	}()
	progress("envtest started in %s", time.Since(t).Round(time.Millisecond))

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	p, done, err := startSystem(ctx, restCfg, env.Scheme)
	if err != nil {
		return nil, nil, err
	}
	defer func() {
		cancel()
		for range 2 {
			if err := <-done; err != nil {
				progress("shutting down: %v", err)
			}
		}
	}()
	if err := p.seed(ctx); err != nil {
		return nil, nil, err
	}

	policyLat, err := p.trials(ctx, "policy change", cfg.trials, p.policyTrial)
	if err != nil {
		return nil, nil, err
	}
	suspendLat, err := p.trials(ctx, "suspension", cfg.trials, p.suspensionTrial)
	if err != nil {
		return nil, nil, err
	}
	rows := append(
		propagationRows("propagation.policy_change", "3. Policy change → enforced", policyLat, targetPolicyChangeP99),
		propagationRows("propagation.suspension", "3. Passport suspension → deny oap.passport_suspended", suspendLat, targetSuspensionP99)...)
	notes := []string{fmt.Sprintf("Propagation: envtest (kube-apiserver + etcd from bin/k8s) with the manager's reconcilers (default bundle interval %s) and a decider Store fed by WatchBundlesWithLogger in this process; "+
		"each trial times one API update until the decider's first decision that reflects it (polled every %s), isolated changes %s apart; %d trials each after %d warm-up trials.",
		controller.DefaultBundleInterval, pollEvery, p.gap, cfg.trials, warmupTrials)}
	return rows, notes, nil
}

func propagationRows(id, name string, lat stats.Latencies, p99Target float64) []report.Row {
	lat.Sort()
	trials := fmt.Sprintf("%d trials", len(lat))
	one := func(d time.Duration) stats.Summary {
		return stats.Summary{Median: float64(d), Min: float64(lat[0]), Max: float64(lat[len(lat)-1]), Runs: len(lat)}
	}
	return []report.Row{
		{ID: id + ".p50", Name: name + ", p50", Unit: report.UnitNanos, Summary: one(lat.Percentile(50)), Over: trials},
		report.Row{ID: id + ".p99", Name: name + ", p99", Unit: report.UnitNanos, Summary: one(lat.Percentile(99)), Over: trials}.
			WithTarget(report.Target{Op: report.AtMost, Value: p99Target}),
	}
}

// startSystem runs the manager and the bundle watcher until ctx ends; done receives their two exit
// errors.
func startSystem(ctx context.Context, restCfg *rest.Config, scheme *runtime.Scheme) (*propagation, <-chan error, error) {
	c, err := client.New(restCfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, nil, fmt.Errorf("creating a client: %w", err)
	}
	for _, ns := range []string{propOperatorNS, propNS} {
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil && !apierrors.IsAlreadyExists(err) {
			return nil, nil, fmt.Errorf("creating namespace %s: %w", ns, err)
		}
	}
	mgr, err := ctrl.NewManager(restCfg, ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
	})
	if err != nil {
		return nil, nil, fmt.Errorf("creating the manager: %w", err)
	}
	if err := controller.SetupWithManager(mgr, controller.Options{OperatorNamespace: propOperatorNS, SkipNameValidation: true}); err != nil {
		return nil, nil, fmt.Errorf("setting up the controllers: %w", err)
	}
	cs, err := kubernetes.NewForConfig(restCfg)
	if err != nil {
		return nil, nil, fmt.Errorf("creating a clientset: %w", err)
	}
	store := decider.NewStore()
	done := make(chan error, 2)
	go func() { done <- mgr.Start(ctx) }()
	go func() {
		done <- decider.WatchBundlesWithLogger(ctx, cs, propOperatorNS, store, slog.New(slog.DiscardHandler))
	}()
	return &propagation{c: c, store: store, gap: 2 * controller.DefaultBundleInterval}, done, nil
}

// seed creates the passport and the policy the trials change, and waits until the decider allows.
func (p *propagation) seed(ctx context.Context) error {
	passport := &guardrailsv1alpha1.AgentPassport{
		ObjectMeta: metav1.ObjectMeta{Name: propPassport, Namespace: propNS, Labels: map[string]string{"team": "bench"}},
		Spec: guardrailsv1alpha1.AgentPassportSpec{
			Owner:        guardrailsv1alpha1.PassportOwner{ID: "bench@example.com", Type: "team"},
			Status:       guardrailsv1alpha1.PassportActive,
			Capabilities: []guardrailsv1alpha1.Capability{{ID: propCapability}},
			Subjects:     guardrailsv1alpha1.PassportSubjects{ServiceAccounts: []string{"agent"}},
		},
	}
	if err := p.c.Create(ctx, passport); err != nil {
		return fmt.Errorf("creating the passport: %w", err)
	}
	pol := &guardrailsv1alpha1.GuardrailPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: propPolicy, Namespace: propNS},
		Spec: guardrailsv1alpha1.GuardrailPolicySpec{
			PolicyID:         "bench.toggle.v1",
			ToolCapabilities: []guardrailsv1alpha1.ToolCapability{{Tool: propTool, Capability: propCapability}},
			Rules:            []guardrailsv1alpha1.Rule{{Name: "probe", Tools: []string{propTool}, Action: guardrailsv1alpha1.ActionAllow}},
		},
	}
	if err := p.c.Create(ctx, pol); err != nil {
		return fmt.Errorf("creating the policy: %w", err)
	}
	if _, err := p.waitFor(ctx, time.Now(), isAllow); err != nil {
		return fmt.Errorf("waiting for the first bundle: %w", err)
	}
	return nil
}

// decide asks the decider for the probe tool call; ok is false while no bundle is loaded.
func (p *propagation) decide(ctx context.Context) (policy.Decision, bool) {
	snap, ok := p.store.Snapshot(propNS)
	if !ok {
		return policy.Decision{}, false
	}
	return snap.Decide(ctx, policy.Request{Passport: propPassport, ToolName: propTool, ToolInput: map[string]any{}}), true
}

func isAllow(d policy.Decision) bool { return d.Decision == policy.DecisionAllow }

func isPolicyDeny(d policy.Decision) bool {
	return d.Decision == policy.DecisionDeny && len(d.Reasons) > 0 && d.Reasons[0].Code == policy.CodePolicyDenied
}

func isSuspended(d policy.Decision) bool {
	return d.Decision == policy.DecisionDeny && len(d.Reasons) > 0 && d.Reasons[0].Code == policy.CodePassportSuspended
}

// waitFor polls the decider until a decision satisfies ok and returns the time since start.
func (p *propagation) waitFor(ctx context.Context, start time.Time, ok func(policy.Decision) bool) (time.Duration, error) {
	deadline := start.Add(trialTimeout)
	var last policy.Decision
	for {
		if d, loaded := p.decide(ctx); loaded {
			if ok(d) {
				return time.Since(start), nil
			}
			last = d
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("not enforced after %s (last decision %s %v)", trialTimeout, last.Decision, last.Reasons)
		}
		select {
		case <-ctx.Done():
			return 0, fmt.Errorf("waiting for the decider: %w", ctx.Err())
		case <-time.After(pollEvery):
		}
	}
}

// trials runs warm-up plus n measured trials of one kind, each returning its latency.
func (p *propagation) trials(ctx context.Context, what string, n int, trial func(context.Context, int) (time.Duration, error)) (stats.Latencies, error) {
	lat := make(stats.Latencies, 0, n)
	for i := range n + warmupTrials {
		time.Sleep(p.gap) // isolated changes: the previous bundle write is at least gap old
		d, err := trial(ctx, i)
		if err != nil {
			return nil, fmt.Errorf("%s trial %d: %w", what, i, err)
		}
		if i >= warmupTrials {
			lat = append(lat, d)
		}
		if (i+1)%20 == 0 {
			progress("%s: %d/%d trials", what, i+1, n+warmupTrials)
		}
	}
	return lat, nil
}

// policyTrial flips the probe rule between Deny and Allow and times the first decision that follows.
func (p *propagation) policyTrial(ctx context.Context, i int) (time.Duration, error) {
	action, want := guardrailsv1alpha1.ActionDeny, isPolicyDeny
	if i%2 == 1 {
		action, want = guardrailsv1alpha1.ActionAllow, isAllow
	}
	var pol guardrailsv1alpha1.GuardrailPolicy
	if err := p.c.Get(ctx, types.NamespacedName{Namespace: propNS, Name: propPolicy}, &pol); err != nil {
		return 0, fmt.Errorf("reading the policy: %w", err)
	}
	pol.Spec.Rules[0].Action = action
	pol.Spec.Rules[0].Code = ""
	if action == guardrailsv1alpha1.ActionDeny {
		pol.Spec.Rules[0].Code = policy.CodePolicyDenied
	}
	start := time.Now()
	if err := p.c.Update(ctx, &pol); err != nil {
		return 0, fmt.Errorf("updating the policy: %w", err)
	}
	return p.waitFor(ctx, start, want)
}

// suspensionTrial suspends the passport and times the first oap.passport_suspended deny, then
// reactivates it (not timed) and waits until it is allowed again.
func (p *propagation) suspensionTrial(ctx context.Context, _ int) (time.Duration, error) {
	// The policy trials may have left the rule denying: make sure the passport is allowed first.
	if err := p.setRule(ctx, guardrailsv1alpha1.ActionAllow); err != nil {
		return 0, err
	}
	if _, err := p.waitFor(ctx, time.Now(), isAllow); err != nil {
		return 0, err
	}
	start := time.Now()
	if err := p.setPassportStatus(ctx, guardrailsv1alpha1.PassportSuspended); err != nil {
		return 0, err
	}
	took, err := p.waitFor(ctx, start, isSuspended)
	if err != nil {
		return 0, err
	}
	time.Sleep(p.gap)
	if err := p.setPassportStatus(ctx, guardrailsv1alpha1.PassportActive); err != nil {
		return 0, err
	}
	if _, err := p.waitFor(ctx, time.Now(), isAllow); err != nil {
		return 0, fmt.Errorf("reactivating: %w", err)
	}
	return took, nil
}

func (p *propagation) setRule(ctx context.Context, action guardrailsv1alpha1.RuleAction) error {
	var pol guardrailsv1alpha1.GuardrailPolicy
	if err := p.c.Get(ctx, types.NamespacedName{Namespace: propNS, Name: propPolicy}, &pol); err != nil {
		return fmt.Errorf("reading the policy: %w", err)
	}
	if pol.Spec.Rules[0].Action == action {
		return nil
	}
	pol.Spec.Rules[0].Action, pol.Spec.Rules[0].Code = action, ""
	if err := p.c.Update(ctx, &pol); err != nil {
		return fmt.Errorf("updating the policy: %w", err)
	}
	return nil
}

func (p *propagation) setPassportStatus(ctx context.Context, status guardrailsv1alpha1.PassportStatusValue) error {
	var pp guardrailsv1alpha1.AgentPassport
	if err := p.c.Get(ctx, types.NamespacedName{Namespace: propNS, Name: propPassport}, &pp); err != nil {
		return fmt.Errorf("reading the passport: %w", err)
	}
	pp.Spec.Status = status
	if err := p.c.Update(ctx, &pp); err != nil {
		if apierrors.IsConflict(err) {
			return errors.New("updating the passport: conflict (another writer?)")
		}
		return fmt.Errorf("updating the passport: %w", err)
	}
	return nil
}
