package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	guardrailsv1alpha1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
	"github.com/tollgate-dev/tollgate/internal/controller"
)

// leaderElectionID is the Lease every manager replica competes for.
const leaderElectionID = "controller.tollgate.dev"

// managerFlagError is a bad command line (exit status 2).
type managerFlagError struct{ error }

func (managerFlagError) ExitCode() int   { return 2 }
func (e managerFlagError) Unwrap() error { return e.error }

// runManager runs the controllers (and, through webhookFlags, the admission webhooks) until ctx ends.
func runManager(ctx context.Context, args []string, _, stderr io.Writer) error {
	fs := flag.NewFlagSet("manager", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		metricsAddr    = fs.String("metrics-bind-address", "0", "Address of the metrics endpoint (e.g. :8443 for HTTPS, :8080 for HTTP); 0 disables it.")
		secureMetrics  = fs.Bool("metrics-secure", true, "Serve metrics over HTTPS with authentication and authorization through the API server.")
		probeAddr      = fs.String("health-probe-bind-address", ":8081", "Address of the /healthz and /readyz probes.")
		leaderElect    = fs.Bool("leader-elect", false, "Elect a leader (Lease "+leaderElectionID+") so only one replica runs the controllers.")
		kubeconfig     = fs.String("kubeconfig", "", "kubeconfig file (default: in-cluster config, then $KUBECONFIG).")
		qps            = fs.Float64("kube-api-qps", 50, "Queries per second to the API server.")
		burst          = fs.Int("kube-api-burst", 100, "Burst of queries to the API server.")
		bundleInterval = fs.Duration("bundle-interval", controller.DefaultBundleInterval, "Minimum time between two writes of one namespace's bundle; updates within it coalesce.")
		workers        = fs.Int("max-concurrent-reconciles", 2, "Workers per controller.")
		wf             webhookFlags
	)
	wf.bind(fs)
	zapOpts := zap.Options{}
	zapOpts.BindFlags(fs)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return managerFlagError{err}
	}
	if fs.NArg() > 0 {
		return managerFlagError{fmt.Errorf("unexpected arguments %v", fs.Args())}
	}
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zapOpts), zap.WriteTo(stderr)))

	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = *kubeconfig
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return fmt.Errorf("loading the API server configuration: %w", err)
	}
	cfg.QPS, cfg.Burst = float32(*qps), *burst

	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return fmt.Errorf("building the scheme: %w", err)
	}
	if err := guardrailsv1alpha1.AddToScheme(scheme); err != nil {
		return fmt.Errorf("building the scheme: %w", err)
	}
	opNS := wf.namespace()
	opts := ctrl.Options{
		Scheme: scheme,
		Metrics: metricsserver.Options{
			BindAddress:   *metricsAddr,
			SecureServing: *secureMetrics,
		},
		HealthProbeBindAddress:        *probeAddr,
		LeaderElection:                *leaderElect,
		LeaderElectionID:              leaderElectionID,
		LeaderElectionNamespace:       opNS,
		LeaderElectionReleaseOnCancel: true,
	}
	if *secureMetrics {
		opts.Metrics.FilterProvider = filters.WithAuthenticationAndAuthorization
	}
	if err := wf.managerOptions(&opts); err != nil {
		return managerFlagError{err}
	}
	mgr, err := ctrl.NewManager(cfg, opts)
	if err != nil {
		return fmt.Errorf("creating the manager: %w", err)
	}
	if err := controller.SetupWithManager(mgr, controller.Options{
		OperatorNamespace:       opNS,
		BundleInterval:          *bundleInterval,
		MaxConcurrentReconciles: *workers,
	}); err != nil {
		return err
	}
	if err := wf.setup(ctx, mgr); err != nil {
		return err
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return fmt.Errorf("adding the health check: %w", err)
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return fmt.Errorf("adding the readiness check: %w", err)
	}
	ctrl.Log.WithName("manager").Info("starting", "operatorNamespace", opNS, "leaderElection", *leaderElect)
	if err := mgr.Start(ctx); err != nil {
		return fmt.Errorf("running the manager: %w", err)
	}
	return nil
}
