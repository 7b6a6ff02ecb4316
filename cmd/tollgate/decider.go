package main

import (
	"context"
	"errors"
	"flag"
	"log/slog"
	"os"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/tollgate-dev/tollgate/internal/decider"
	"github.com/tollgate-dev/tollgate/internal/policy"
)

// deciderCommand serves decisions over HTTP from the bundle ConfigMaps of the operator namespace.
type deciderCommand struct {
	listen           listenOptions
	bundleNamespace  string
	kube             kubeOptions
	authentication   bool
	tokenReview      tokenReviewOptions
	defaultNamespace string
	decisionLog      decisionLogOptions
	log              logOptions
	engine           engineOptions
	http             httpOptions
	report           reportOptions
	signing          signingOptions
	tracing          tracingOptions
}

func newDeciderCommand() command {
	return &deciderCommand{
		listen:          listenOptions{addr: ":8080"},
		bundleNamespace: os.Getenv("POD_NAMESPACE"),
		authentication:  true,
		tokenReview:     newTokenReviewOptions(),
		decisionLog:     newDecisionLogOptions(true),
		log:             logOptions{format: logFormatJSON},
		report:          newReportOptions(),
		engine: engineOptions{
			decisionTTL: policy.DefaultDecisionTTL, counters: newCounterStoreOptions(),
			evaluatorFailures: 5, evaluatorOpenFor: 10 * time.Second,
		},
		http: httpOptions{
			maxBody: decider.DefaultMaxBodyBytes, maxBatch: decider.DefaultMaxBatch,
			shutdown: decider.DefaultShutdownTimeout, read: decider.DefaultReadTimeout, write: decider.DefaultWriteTimeout,
			idle: decider.DefaultIdleTimeout, readHeader: decider.DefaultReadHeaderTimeout,
		},
		tracing: tracingOptions{service: "tollgate-decider"},
	}
}

// BindFlags registers the decider's flags.
func (c *deciderCommand) BindFlags(fs *flag.FlagSet) {
	c.listen.BindFlags(fs)
	fs.StringVar(&c.bundleNamespace, "bundle-namespace", c.bundleNamespace,
		"namespace holding the bundle ConfigMaps (the operator's namespace; default $POD_NAMESPACE)")
	c.kube.BindFlags(fs, kubeconfigUsage)
	fs.BoolVar(&c.authentication, "authentication", c.authentication,
		"require a ServiceAccount bearer token (TokenReview) and check passports' subjects; turn off only for local use")
	c.tokenReview.BindFlags(fs)
	bindDefaultNamespace(fs, &c.defaultNamespace, "a bare name must be unique")
	c.decisionLog.BindFlags(fs, "stdout")
	c.log.BindFlags(fs)
	c.log.bindLogJSON(fs)
	c.engine.BindFlags(fs)
	c.http.BindFlags(fs)
	c.report.BindFlags(fs)
	c.signing.BindFlags(fs)
	c.tracing.BindFlags(fs)
}

// Run serves decisions until ctx ends or the bundle watch fails.
func (c *deciderCommand) Run(ctx context.Context, cio *cmdIO, args []string) error {
	if len(args) > 0 {
		return usageError("unexpected arguments %v", args)
	}
	if c.bundleNamespace == "" {
		return usageError("--bundle-namespace is required (or set POD_NAMESPACE)")
	}
	log := c.log.logger(cio.stderr)
	setMemoryLimit(log)
	cs, err := c.kube.clientset("tollgate-decider")
	if err != nil {
		return err
	}
	store, closeCounters, err := c.engine.newStore(ctx, log)
	if err != nil {
		return err
	}
	defer closeCounters()
	tp, stopTracing, err := c.tracing.tracerProvider(ctx, log)
	if err != nil {
		return err
	}
	defer flushTraces(stopTracing, log)
	opts, err := c.serverOptions(cs, log, cio)
	if err != nil {
		return err
	}
	opts.TracerProvider = tp
	if opts.Signer, err = c.signing.signer(); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if opts.Reporter, err = c.report.reporter(ctx, &c.kube, c.bundleNamespace, store, log); err != nil {
		return err
	}
	srv := decider.NewServer(store, opts)
	return c.serve(ctx, srv, cs, store, log)
}

// serverOptions are the decision server's options: limits, authentication, decision log.
func (c *deciderCommand) serverOptions(cs kubernetes.Interface, log *slog.Logger, cio *cmdIO) (decider.Options, error) {
	opts := decider.Options{DefaultNamespace: c.defaultNamespace, Logger: log}
	c.http.apply(&opts)
	if c.authentication {
		opts.Authenticator = c.tokenReview.authenticator(cs)
	} else {
		log.Warn("authentication is off: any caller may present any passport")
	}
	dlog, err := c.decisionLog.open(cio.stdout, "stdout", log)
	if err != nil {
		return opts, err
	}
	opts.DecisionLog = dlog
	return opts, nil
}

// serve runs the HTTP server and the bundle watch together: either ending stops the other.
func (c *deciderCommand) serve(ctx context.Context, srv *decider.Server, cs kubernetes.Interface, store *decider.Store, log *slog.Logger) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	watchErr := make(chan error, 1)
	go func() {
		watchErr <- decider.WatchBundlesWithLogger(ctx, cs, c.bundleNamespace, store, log)
		cancel()
	}()
	serveErr := srv.ListenAndServe(ctx, c.listen.addr)
	cancel()
	return errors.Join(serveErr, <-watchErr)
}

// engineOptions configure how the decider compiles and evaluates bundles.
type engineOptions struct {
	decisionTTL       time.Duration
	counters          counterStoreOptions
	evaluatorFailures int
	evaluatorOpenFor  time.Duration
}

// BindFlags registers --decision-ttl, --rate-limiter-keys, the counter-store flags and the external
// evaluators' circuit flags.
func (o *engineOptions) BindFlags(fs *flag.FlagSet) {
	fs.DurationVar(&o.decisionTTL, "decision-ttl", o.decisionTTL, "expires_in of decisions")
	fs.IntVar(&o.counters.memoryKeys, "rate-limiter-keys", o.counters.memoryKeys,
		"maximum number of rate-limit and budget counters kept in memory (without --counter-store)")
	o.counters.BindFlags(fs)
	fs.IntVar(&o.evaluatorFailures, "evaluator-failure-threshold", o.evaluatorFailures,
		"consecutive failures that open an external evaluator's circuit")
	fs.DurationVar(&o.evaluatorOpenFor, "evaluator-open-for", o.evaluatorOpenFor,
		"how long an open circuit fails calls before a trial call")
}

// newStore returns an empty store compiling with these options, and a function closing its
// counter store.
func (o *engineOptions) newStore(ctx context.Context, log *slog.Logger) (*decider.Store, func(), error) {
	counterStore, closeCounters, err := o.counters.open(ctx, log)
	if err != nil {
		return nil, nil, err
	}
	return decider.NewStore(
		counterStore,
		decider.WithEvaluatorPool(decider.NewEvaluatorPool(decider.EvaluatorConfig{
			FailureThreshold: o.evaluatorFailures, OpenFor: o.evaluatorOpenFor,
		})),
		decider.WithCompileOptions(policy.WithDecisionTTL(o.decisionTTL)),
	), closeCounters, nil
}

// httpOptions are the decision server's HTTP limits and timeouts.
type httpOptions struct {
	maxBody                       int64
	maxBatch                      int
	shutdown                      time.Duration
	read, write, idle, readHeader time.Duration
}

// BindFlags registers the limit and timeout flags.
func (o *httpOptions) BindFlags(fs *flag.FlagSet) {
	fs.Int64Var(&o.maxBody, "max-body-bytes", o.maxBody, "maximum request body size")
	fs.IntVar(&o.maxBatch, "max-batch", o.maxBatch, "maximum requests per batch")
	fs.DurationVar(&o.shutdown, "shutdown-timeout", o.shutdown, "how long to drain in-flight requests on shutdown")
	fs.DurationVar(&o.read, "read-timeout", o.read, "HTTP read timeout")
	fs.DurationVar(&o.write, "write-timeout", o.write, "HTTP write timeout")
	fs.DurationVar(&o.idle, "idle-timeout", o.idle, "HTTP keep-alive idle timeout")
	fs.DurationVar(&o.readHeader, "read-header-timeout", o.readHeader, "HTTP read-header timeout")
}

// apply sets the limits and timeouts in opts.
func (o *httpOptions) apply(opts *decider.Options) {
	opts.MaxBodyBytes, opts.MaxBatch, opts.ShutdownTimeout = o.maxBody, o.maxBatch, o.shutdown
	opts.ReadTimeout, opts.WriteTimeout, opts.IdleTimeout, opts.ReadHeaderTimeout = o.read, o.write, o.idle, o.readHeader
}
