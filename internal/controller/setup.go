// Package controller holds Tollgate's reconcilers: AgentPassport and GuardrailPolicy status
// (kstatus-compatible conditions computed by pure functions, one patch per reconcile) and the bundle
// writer that stores each namespace's valid objects for the decision endpoints (internal/bundlestore).
package controller

import (
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/source"

	guardrailsv1alpha1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
)

// DefaultBundleInterval is the default minimum time between two writes of one namespace's bundle.
const DefaultBundleInterval = 100 * time.Millisecond

// Options configures SetupWithManager.
type Options struct {
	// OperatorNamespace is where bundle ConfigMaps are written (required).
	OperatorNamespace string
	// BundleInterval is the minimum time between two writes of one namespace's bundle; events within it
	// coalesce into one write. Zero means DefaultBundleInterval.
	BundleInterval time.Duration
	// MaxConcurrentReconciles is the number of workers of each controller; zero means 2.
	MaxConcurrentReconciles int
	// SkipNameValidation allows several managers with these controllers in one process (tests, demo).
	SkipNameValidation bool
	// DeciderReports folds the decider replicas' DeciderReports (in ReportNamespace, default the
	// operator namespace) into status: GuardrailPolicy enforcement, Enforced and Degraded,
	// AgentPassport recent denies and spec.autoSuspend.
	DeciderReports bool
	// ReportNamespace is where the deciders write their reports (default OperatorNamespace).
	ReportNamespace string
	// ReportRetention deletes reports this long after their last heartbeat (default
	// DefaultReportRetention; negative keeps them).
	ReportRetention time.Duration
}

// Controllers are the reconcilers SetupWithManager registered.
type Controllers struct {
	// Passports reconciles AgentPassport status.
	Passports *PassportReconciler
	// Policies reconciles GuardrailPolicy status.
	Policies *PolicyReconciler
	// ClusterPolicies reconciles ClusterGuardrailPolicy status.
	ClusterPolicies *ClusterPolicyReconciler
	// Bundles writes the namespaces' bundles.
	Bundles *BundleReconciler
	// Reports folds the DeciderReports (nil unless Options.DeciderReports).
	Reports *ReportReconciler
}

// SetupWithManager registers the AgentPassport, GuardrailPolicy, ClusterGuardrailPolicy and bundle
// reconcilers with mgr.
func SetupWithManager(mgr ctrl.Manager, opts Options) error {
	_, err := Setup(mgr, opts)
	return err
}

// Setup is SetupWithManager returning the reconcilers, e.g. to read the bundle writer's write count.
func Setup(mgr ctrl.Manager, opts Options) (*Controllers, error) {
	if opts.OperatorNamespace == "" {
		return nil, errors.New("setting up controllers: the operator namespace is required")
	}
	if opts.BundleInterval <= 0 {
		opts.BundleInterval = DefaultBundleInterval
	}
	if opts.MaxConcurrentReconciles <= 0 {
		opts.MaxConcurrentReconciles = 2
	}
	copts := controller.Options{MaxConcurrentReconciles: opts.MaxConcurrentReconciles}
	if opts.SkipNameValidation {
		skip := true
		copts.SkipNameValidation = &skip
	}

	state := newBundleState()
	bundleCollector.state.Store(state)
	vals := newValidations()
	recorder := mgr.GetEventRecorder("tollgate-controller")
	policyEvents := make(chan event.GenericEvent, 1024)
	passportEvents := make(chan event.GenericEvent, 1024)
	clusterPolicyEvents := make(chan event.GenericEvent, 1024)
	specChanged := builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{}, predicate.LabelChangedPredicate{}))

	c := &Controllers{
		Passports: &PassportReconciler{client: mgr.GetClient(), recorder: recorder, state: state, validations: vals, clock: time.Now},
		Policies:  &PolicyReconciler{client: mgr.GetClient(), recorder: recorder, state: state, validations: vals, clock: time.Now},
		ClusterPolicies: &ClusterPolicyReconciler{client: mgr.GetClient(), recorder: recorder, state: state,
			validations: vals, clock: time.Now},
		Bundles: &BundleReconciler{
			client: mgr.GetClient(), reader: mgr.GetAPIReader(), opNS: opts.OperatorNamespace,
			state: state, validations: vals, pacer: newPacer(opts.BundleInterval),
			policyEvents: policyEvents, passportEvents: passportEvents, clusterPolicyEvents: clusterPolicyEvents,
		},
	}

	if err := ctrl.NewControllerManagedBy(mgr).
		Named("agentpassport").
		For(&guardrailsv1alpha1.AgentPassport{}, builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{},
			predicate.LabelChangedPredicate{}, predicate.AnnotationChangedPredicate{}))). // the lift annotation
		WatchesRawSource(source.Channel[client.Object](passportEvents, &handler.EnqueueRequestForObject{})).
		WithOptions(copts).
		Complete(c.Passports); err != nil {
		return nil, fmt.Errorf("setting up the AgentPassport controller: %w", err)
	}
	if err := ctrl.NewControllerManagedBy(mgr).
		Named("guardrailpolicy").
		For(&guardrailsv1alpha1.GuardrailPolicy{}, specChanged).
		WatchesRawSource(source.Channel[client.Object](policyEvents, &handler.EnqueueRequestForObject{})).
		WithOptions(copts).
		Complete(c.Policies); err != nil {
		return nil, fmt.Errorf("setting up the GuardrailPolicy controller: %w", err)
	}
	if err := ctrl.NewControllerManagedBy(mgr).
		Named("clusterguardrailpolicy").
		For(&guardrailsv1alpha1.ClusterGuardrailPolicy{}, specChanged).
		WatchesRawSource(source.Channel[client.Object](clusterPolicyEvents, &handler.EnqueueRequestForObject{})).
		WithOptions(copts).
		Complete(c.ClusterPolicies); err != nil {
		return nil, fmt.Errorf("setting up the ClusterGuardrailPolicy controller: %w", err)
	}
	if opts.DeciderReports {
		if err := setupReports(mgr, opts, c, state, copts, policyEvents, passportEvents); err != nil {
			return nil, err
		}
	}
	h := c.Bundles.eventHandler()
	if err := ctrl.NewControllerManagedBy(mgr).
		Named("bundle").
		Watches(&guardrailsv1alpha1.AgentPassport{}, h).
		Watches(&guardrailsv1alpha1.GuardrailPolicy{}, h).
		Watches(&guardrailsv1alpha1.ClusterGuardrailPolicy{}, c.Bundles.clusterPolicyHandler()).
		Watches(&corev1.Namespace{}, c.Bundles.namespaceHandler(), builder.WithPredicates(predicate.LabelChangedPredicate{})).
		WithOptions(copts).
		Complete(c.Bundles); err != nil {
		return nil, fmt.Errorf("setting up the bundle controller: %w", err)
	}
	return c, nil
}
