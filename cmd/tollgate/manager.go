package main

import (
	"context"
	"flag"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
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

// managerCommand runs the controllers and the admission webhooks.
type managerCommand struct {
	metricsAddr    string
	secureMetrics  bool
	probeAddr      string
	leaderElect    bool
	kube           kubeOptions
	bundleInterval time.Duration
	deciderReports bool
	workers        int
	webhooks       webhookOptions
	log            logOptions
	zap            zap.Options
}

func newManagerCommand() command {
	return &managerCommand{
		metricsAddr:    "0",
		secureMetrics:  true,
		probeAddr:      ":8081",
		kube:           kubeOptions{qps: 50, burst: 100},
		bundleInterval: controller.DefaultBundleInterval,
		deciderReports: true,
		workers:        2,
		log:            logOptions{format: logFormatJSON},
	}
}

// BindFlags registers the manager's flags (kubebuilder's spellings) and controller-runtime's --zap-*.
func (c *managerCommand) BindFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.metricsAddr, "metrics-bind-address", c.metricsAddr,
		"Address of the metrics endpoint (e.g. :8443 for HTTPS, :8080 for HTTP); 0 disables it.")
	fs.BoolVar(&c.secureMetrics, "metrics-secure", c.secureMetrics,
		"Serve metrics over HTTPS with authentication and authorization through the API server.")
	fs.StringVar(&c.probeAddr, "health-probe-bind-address", c.probeAddr, "Address of the /healthz and /readyz probes.")
	fs.BoolVar(&c.leaderElect, "leader-elect", c.leaderElect,
		"Elect a leader (Lease "+leaderElectionID+") so only one replica runs the controllers.")
	c.kube.BindFlags(fs, kubeconfigUsage)
	c.kube.bindRateFlags(fs)
	fs.BoolVar(&c.deciderReports, "decider-reports", c.deciderReports,
		"fold the decider replicas' DeciderReports into status (ENFORCED, Enforced, Degraded, passport denials, autoSuspend)")
	fs.DurationVar(&c.bundleInterval, "bundle-interval", c.bundleInterval,
		"Minimum time between two writes of one namespace's bundle; updates within it coalesce.")
	fs.IntVar(&c.workers, "max-concurrent-reconciles", c.workers, "Workers per controller.")
	c.webhooks.BindFlags(fs)
	c.log.BindFlags(fs)
	c.zap.BindFlags(fs)
}

// Run runs the manager until ctx ends.
func (c *managerCommand) Run(ctx context.Context, cio *cmdIO, args []string) error {
	if len(args) > 0 {
		return usageError("unexpected arguments %v", args)
	}
	c.log.zapOptions(&c.zap)
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&c.zap), zap.WriteTo(cio.stderr)))
	opts, err := c.managerOptions()
	if err != nil {
		return err
	}
	cfg, err := c.kube.restConfig("")
	if err != nil {
		return err
	}
	mgr, err := ctrl.NewManager(cfg, opts)
	if err != nil {
		return fmt.Errorf("creating the manager: %w", err)
	}
	if err := c.setup(ctx, mgr); err != nil {
		return err
	}
	ctrl.Log.WithName("manager").Info("starting", "operatorNamespace", c.webhooks.namespace(), "leaderElection", c.leaderElect)
	if err := mgr.Start(ctx); err != nil {
		return fmt.Errorf("running the manager: %w", err)
	}
	return nil
}

// managerOptions are the manager's scheme, metrics, probes, leader election and webhook server.
// Bad webhook flags are a usage error.
func (c *managerCommand) managerOptions() (ctrl.Options, error) {
	scheme, err := newScheme()
	if err != nil {
		return ctrl.Options{}, err
	}
	opts := ctrl.Options{
		Scheme: scheme,
		Metrics: metricsserver.Options{
			BindAddress:   c.metricsAddr,
			SecureServing: c.secureMetrics,
		},
		HealthProbeBindAddress:        c.probeAddr,
		LeaderElection:                c.leaderElect,
		LeaderElectionID:              leaderElectionID,
		LeaderElectionNamespace:       c.webhooks.namespace(),
		LeaderElectionReleaseOnCancel: true,
	}
	if c.secureMetrics {
		opts.Metrics.FilterProvider = filters.WithAuthenticationAndAuthorization
	}
	if err := c.webhooks.managerOptions(&opts); err != nil {
		return ctrl.Options{}, &exitError{code: exitUsage, err: err}
	}
	return opts, nil
}

// newScheme holds the Kubernetes built-in types and Tollgate's.
func newScheme() (*runtime.Scheme, error) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, fmt.Errorf("building the scheme: %w", err)
	}
	if err := guardrailsv1alpha1.AddToScheme(scheme); err != nil {
		return nil, fmt.Errorf("building the scheme: %w", err)
	}
	return scheme, nil
}

// setup registers the controllers, the webhooks and the health checks on mgr.
func (c *managerCommand) setup(ctx context.Context, mgr ctrl.Manager) error {
	if err := controller.SetupWithManager(mgr, controller.Options{
		OperatorNamespace:       c.webhooks.namespace(),
		BundleInterval:          c.bundleInterval,
		MaxConcurrentReconciles: c.workers,
		DeciderReports:          c.deciderReports,
	}); err != nil {
		return err
	}
	if err := c.webhooks.setup(ctx, mgr); err != nil {
		return err
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return fmt.Errorf("adding the health check: %w", err)
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return fmt.Errorf("adding the readiness check: %w", err)
	}
	return nil
}
