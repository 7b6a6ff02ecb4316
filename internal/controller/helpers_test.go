package controller

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/tollgate-dev/tollgate/internal/bundlestore"
	"github.com/tollgate-dev/tollgate/internal/policy"
)

// testOperatorNamespace is where the test managers write bundles.
const testOperatorNamespace = "tollgate-system"

// fastConfig returns cfg without client-side rate limiting (envtest runs thousands of writes).
func fastConfig(cfg *rest.Config) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.QPS, c.Burst = 5000, 10000
	return c
}

// startControllers creates the operator namespace and runs a manager with every reconciler until ctx
// ends; done receives the manager's exit error.
func startControllers(ctx context.Context, cfg *rest.Config, scheme *runtime.Scheme, interval time.Duration) (*Controllers, <-chan error, error) {
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, nil, err
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: testOperatorNamespace}}
	if err := c.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, nil, fmt.Errorf("creating the operator namespace: %w", err)
	}
	mgr, err := ctrl.NewManager(fastConfig(cfg), ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
	})
	if err != nil {
		return nil, nil, err
	}
	ctrls, err := Setup(mgr, Options{OperatorNamespace: testOperatorNamespace, BundleInterval: interval,
		MaxConcurrentReconciles: 4, SkipNameValidation: true})
	if err != nil {
		return nil, nil, err
	}
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	return ctrls, done, nil
}

// errNoBundle means no ConfigMap holds the namespace's bundle.
var errNoBundle = errors.New("no bundle stored")

// readBundle returns the stored bundle of ns and its revision.
func readBundle(ctx context.Context, c client.Reader, ns string) (policy.Bundle, string, error) {
	var cms corev1.ConfigMapList
	if err := c.List(ctx, &cms, client.InNamespace(testOperatorNamespace), client.MatchingLabels(bundlestore.NamespaceSelector(ns))); err != nil {
		return policy.Bundle{}, "", err
	}
	if len(cms.Items) == 0 {
		return policy.Bundle{}, "", errNoBundle
	}
	b, err := bundlestore.Decode(cms.Items)
	if err != nil {
		return policy.Bundle{}, "", err
	}
	return b, bundlestore.Revisions(cms.Items), nil
}
