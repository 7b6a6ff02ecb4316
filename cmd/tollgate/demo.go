package main

import (
	"context"
	"flag"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/zapr"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/tollgate-dev/tollgate/internal/demo"
)

// demoCommand runs the local demo on an embedded control plane (see internal/demo).
type demoCommand struct {
	once    bool
	listen  listenOptions
	samples string
	// kubeconfig is where the demo writes the admin kubeconfig (it does not read one).
	kubeconfig string
	verbose    bool
	timeout    time.Duration
}

func newDemoCommand() command {
	return &demoCommand{listen: listenOptions{addr: demo.DefaultAddr}, timeout: demo.DefaultWaitTimeout}
}

// BindFlags registers demo's flags.
func (c *demoCommand) BindFlags(fs *flag.FlagSet) {
	fs.BoolVar(&c.once, "once", c.once, "run the script and exit instead of serving until Ctrl-C")
	c.listen.BindFlags(fs)
	fs.StringVar(&c.samples, "samples", c.samples, "directory of manifests to apply (default: config/samples, embedded in the binary)")
	fs.StringVar(&c.kubeconfig, "kubeconfig", c.kubeconfig, "where to write the admin kubeconfig (default: <tmp>/tollgate-demo/kubeconfig)")
	fs.BoolVar(&c.verbose, "v", c.verbose, "show the controllers' and endpoint's logs on stderr")
	fs.DurationVar(&c.timeout, "wait-timeout", c.timeout, "bound of each wait for the controllers and the endpoint")
	deprecatedAliases(fs, alias{"addr", "bind-address"})
}

// Run runs the demo script, then (without --once) serves until ctx ends.
func (c *demoCommand) Run(ctx context.Context, cio *cmdIO, args []string) error {
	if len(args) > 0 {
		return usageError("unexpected arguments %q", args)
	}
	logger := logr.Discard()
	if c.verbose {
		enc := zapcore.NewConsoleEncoder(zap.NewDevelopmentEncoderConfig())
		logger = zapr.NewLogger(zap.New(zapcore.NewCore(enc, zapcore.AddSync(cio.stderr), zapcore.InfoLevel)))
	}
	// controller-runtime warns on its global logger when none is set; point it at ours.
	ctrl.SetLogger(logger)
	_, err := demo.Run(ctx, demo.Options{
		Out: cio.stdout, Progress: cio.stderr, Once: c.once, Addr: c.listen.addr, SamplesDir: c.samples,
		Kubeconfig: c.kubeconfig, Logger: logger, WaitTimeout: c.timeout,
	})
	return err
}
