package main

import (
	"context"
	"io"

	"github.com/go-logr/logr"
	"github.com/go-logr/zapr"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/tollgate-dev/tollgate/internal/demo"
)

// runDemo runs the local demo on an embedded control plane (see internal/demo).
func runDemo(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("demo", "[--once] [--addr 127.0.0.1:8080] [flags]", stderr)
	once := fs.Bool("once", false, "run the script and exit instead of serving until Ctrl-C")
	addr := fs.String("addr", demo.DefaultAddr, "decision endpoint listen address (port 0 picks a free port)")
	samples := fs.String("samples", "", "directory of manifests to apply (default: the repository's config/samples)")
	kubeconfig := fs.String("kubeconfig", "", "where to write the admin kubeconfig (default: <tmp>/tollgate-demo/kubeconfig)")
	verbose := fs.Bool("v", false, "show the controllers' and endpoint's logs on stderr")
	timeout := fs.Duration("wait-timeout", demo.DefaultWaitTimeout, "bound of each wait for the controllers and the endpoint")
	rest, err := parseFlags(fs, args)
	if err != nil {
		return helpOK(err)
	}
	if len(rest) > 0 {
		return usageError("unexpected arguments %q", rest)
	}
	logger := logr.Discard()
	if *verbose {
		enc := zapcore.NewConsoleEncoder(zap.NewDevelopmentEncoderConfig())
		logger = zapr.NewLogger(zap.New(zapcore.NewCore(enc, zapcore.AddSync(stderr), zapcore.InfoLevel)))
	}
	// controller-runtime warns on its global logger when none is set; point it at ours.
	ctrl.SetLogger(logger)
	if _, err := demo.Run(ctx, demo.Options{
		Out: stdout, Progress: stderr, Once: *once, Addr: *addr, SamplesDir: *samples,
		Kubeconfig: *kubeconfig, Logger: logger, WaitTimeout: *timeout,
	}); err != nil {
		return &exitError{code: exitFailed, err: err}
	}
	return nil
}
