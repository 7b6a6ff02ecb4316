package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/tollgate-dev/tollgate/internal/decider"
	"github.com/tollgate-dev/tollgate/internal/policy"
)

// runDecider serves decisions over HTTP from the bundle ConfigMaps of the operator namespace.
func runDecider(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("decider", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		addr          = fs.String("bind-address", ":8080", "address of the decision API (and /healthz, /readyz, /metrics)")
		bundleNS      = fs.String("bundle-namespace", os.Getenv("POD_NAMESPACE"), "namespace holding the bundle ConfigMaps (the operator's namespace; default $POD_NAMESPACE)")
		kubeconfig    = fs.String("kubeconfig", "", "kubeconfig file (default: in-cluster config, then $KUBECONFIG)")
		authn         = fs.Bool("authentication", true, "require a ServiceAccount bearer token (TokenReview) and check passports' subjects; turn off only for local use")
		audience      = fs.String("token-audience", decider.DefaultAudience, "audience callers' tokens must carry")
		tokenTTL      = fs.Duration("token-cache-ttl", 2*time.Minute, "how long a successful TokenReview is cached")
		tokenCache    = fs.Int("token-cache-size", 4096, "maximum number of cached TokenReview results")
		defaultNS     = fs.String("default-namespace", "", "namespace of bare passport names (default: a bare name must be unique)")
		decisionLog   = fs.Bool("decision-log", true, "write one JSON line per decision to stdout")
		logInput      = fs.Bool("decision-log-include-input", false, "include tool arguments and rewritten arguments in the decision log (off: no argument value is logged)")
		logToolInput  = fs.Bool("decision-log-tool-input", false, "deprecated: same as --decision-log-include-input")
		logBuffer     = fs.Int("decision-log-buffer", decider.DefaultLogBuffer, "decision-log buffer in records (records beyond it are dropped and counted)")
		maxBody       = fs.Int64("max-body-bytes", decider.DefaultMaxBodyBytes, "maximum request body size")
		maxBatch      = fs.Int("max-batch", decider.DefaultMaxBatch, "maximum requests per batch")
		shutdown      = fs.Duration("shutdown-timeout", decider.DefaultShutdownTimeout, "how long to drain in-flight requests on shutdown")
		decisionTTL   = fs.Duration("decision-ttl", policy.DefaultDecisionTTL, "expires_in of decisions")
		rlKeys        = fs.Int("rate-limiter-keys", policy.DefaultRateLimiterKeys, "maximum number of rate-limit counters")
		evalFailures  = fs.Int("evaluator-failure-threshold", 5, "consecutive failures that open an external evaluator's circuit")
		evalOpenFor   = fs.Duration("evaluator-open-for", 10*time.Second, "how long an open circuit fails calls before a trial call")
		logJSON       = fs.Bool("log-json", true, "operational logs as JSON on stderr")
		readTimeout   = fs.Duration("read-timeout", decider.DefaultReadTimeout, "HTTP read timeout")
		writeTimeout  = fs.Duration("write-timeout", decider.DefaultWriteTimeout, "HTTP write timeout")
		idleTimeout   = fs.Duration("idle-timeout", decider.DefaultIdleTimeout, "HTTP keep-alive idle timeout")
		headerTimeout = fs.Duration("read-header-timeout", decider.DefaultReadHeaderTimeout, "HTTP read-header timeout")
	)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return deciderFlagError{err}
	}
	if fs.NArg() > 0 {
		return deciderFlagError{fmt.Errorf("unexpected arguments %v", fs.Args())}
	}
	if *bundleNS == "" {
		return deciderFlagError{errors.New("--bundle-namespace is required (or set POD_NAMESPACE)")}
	}
	var handler slog.Handler = slog.NewTextHandler(stderr, nil)
	if *logJSON {
		handler = slog.NewJSONHandler(stderr, nil)
	}
	log := slog.New(handler)
	setMemoryLimit(log)

	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = *kubeconfig
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return fmt.Errorf("loading kubeconfig: %w", err)
	}
	cfg.UserAgent = "tollgate-decider"
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("building Kubernetes client: %w", err)
	}

	store := decider.NewStore(
		decider.WithStoreRateLimiter(policy.NewRateLimiter(*rlKeys)),
		decider.WithEvaluatorPool(decider.NewEvaluatorPool(decider.EvaluatorConfig{
			FailureThreshold: *evalFailures, OpenFor: *evalOpenFor,
		})),
		decider.WithCompileOptions(policy.WithDecisionTTL(*decisionTTL)),
	)
	opts := decider.Options{
		DefaultNamespace: *defaultNS, MaxBodyBytes: *maxBody, MaxBatch: *maxBatch, Logger: log,
		ReadTimeout: *readTimeout, WriteTimeout: *writeTimeout, IdleTimeout: *idleTimeout,
		ReadHeaderTimeout: *headerTimeout, ShutdownTimeout: *shutdown,
	}
	if *authn {
		opts.Authenticator = decider.NewTokenReviewAuthenticator(cs, decider.TokenReviewConfig{
			Audience: *audience, TTL: *tokenTTL, CacheSize: *tokenCache,
		})
	} else {
		log.Warn("authentication is off: any caller may present any passport")
	}
	if *decisionLog {
		opts.DecisionLog = decider.NewDecisionLog(stdout, *logBuffer, *logInput || *logToolInput)
	}
	srv := decider.NewServer(store, opts)

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	watchErr := make(chan error, 1)
	go func() {
		watchErr <- decider.WatchBundlesWithLogger(ctx, cs, *bundleNS, store, log)
		cancel()
	}()
	serveErr := srv.ListenAndServe(ctx, *addr)
	cancel()
	return errors.Join(serveErr, <-watchErr)
}

// deciderFlagError is a command-line mistake (exit status 2).
type deciderFlagError struct{ err error }

func (e deciderFlagError) Error() string { return e.err.Error() }
func (e deciderFlagError) Unwrap() error { return e.err }

// ExitCode implements exitCoder.
func (deciderFlagError) ExitCode() int { return 2 }
