package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tollgate-dev/tollgate/internal/decider"
)

// reportOptions configure the decider's DeciderReport (internal/decider/report.go).
type reportOptions struct {
	enabled  bool
	interval time.Duration
	name     string
	podUID   string
}

func newReportOptions() reportOptions {
	name := os.Getenv("POD_NAME")
	if name == "" {
		host, _ := os.Hostname()
		name = decider.ReportName(host)
	}
	return reportOptions{enabled: true, interval: decider.DefaultReportInterval, name: name, podUID: os.Getenv("POD_UID")}
}

// BindFlags registers --report, --report-interval, --report-name and --pod-uid.
func (o *reportOptions) BindFlags(fs *flag.FlagSet) {
	fs.BoolVar(&o.enabled, "report", o.enabled,
		"write this replica's DeciderReport (enforced bundle revisions, per-policy and per-passport counts) to the bundle namespace")
	fs.DurationVar(&o.interval, "report-interval", o.interval, "how often the DeciderReport is written")
	fs.StringVar(&o.name, "report-name", o.name, "the DeciderReport's name (default $POD_NAME, else the host name)")
	fs.StringVar(&o.podUID, "pod-uid", o.podUID, "the pod's UID, which owns the report (default $POD_UID)")
}

// reporter returns the reporter (nil when off) and starts it; it stops with ctx.
func (o *reportOptions) reporter(ctx context.Context, kube *kubeOptions, namespace string, store *decider.Store, log *slog.Logger) (*decider.Reporter, error) {
	if !o.enabled {
		return nil, nil
	}
	cfg, err := kube.restConfig("tollgate-decider")
	if err != nil {
		return nil, err
	}
	scheme, err := newScheme()
	if err != nil {
		return nil, err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("creating the report client: %w", err)
	}
	r := decider.NewReporter(store, decider.ReporterOptions{Client: c, Namespace: namespace, Name: o.name,
		PodUID: types.UID(o.podUID), Interval: o.interval, Logger: log})
	go func() {
		if err := r.Run(ctx); err != nil {
			log.Error("decider reports stopped", "err", err)
		}
	}()
	return r, nil
}

// signingOptions configure signed decisions.
type signingOptions struct {
	keys string
}

// BindFlags registers --signing-keys.
func (o *signingOptions) BindFlags(fs *flag.FlagSet) {
	fs.StringVar(&o.keys, "signing-keys", o.keys,
		"sign every decision with Ed25519: a JWKS file (e.g. a mounted Secret; `tollgate keygen` writes one) whose first key with a private part signs; every key's public part is served at /.well-known/jwks.json")
}

// signer returns the signer, nil when signing is off.
func (o *signingOptions) signer() (*decider.Signer, error) {
	if o.keys == "" {
		return nil, nil
	}
	return decider.LoadSigner(o.keys)
}
