package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"sync/atomic"
	"time"

	"github.com/open-policy-agent/cert-controller/pkg/rotator"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	tgwebhook "github.com/tollgate-dev/tollgate/internal/webhook"
	"github.com/tollgate-dev/tollgate/internal/webhook/pod"
)

// webhookOptions are the manager's admission-webhook options.
type webhookOptions struct {
	enabled           bool
	port              int
	certPath          string
	certName          string
	keyName           string
	enableHTTP2       bool
	certRotation      bool
	certSecret        string
	serviceName       string
	mutatingName      string
	validatingName    string
	operatorNamespace string
	deciderURL        string
	tokenExpiration   time.Duration
	mcpProxyImage     string
}

// BindFlags registers the webhook flags on fs.
func (w *webhookOptions) BindFlags(fs *flag.FlagSet) {
	fs.BoolVar(&w.enabled, "enable-webhooks", true,
		"Serve the admission webhooks (policy/passport validation and defaulting, pod injection).")
	fs.IntVar(&w.port, "webhook-port", webhook.DefaultPort, "Port the admission webhook server listens on.")
	fs.StringVar(&w.certPath, "webhook-cert-path", "/tmp/k8s-webhook-server/serving-certs",
		"Directory holding the webhook serving certificate (reloaded on change); written by cert-manager's Secret mount, or by --cert-rotation.")
	fs.StringVar(&w.certName, "webhook-cert-name", "tls.crt", "Webhook certificate file name in --webhook-cert-path.")
	fs.StringVar(&w.keyName, "webhook-cert-key", "tls.key", "Webhook key file name in --webhook-cert-path.")
	fs.BoolVar(&w.enableHTTP2, "webhook-enable-http2", false,
		"Serve the webhooks over HTTP/2 as well (off by default: HTTP/2 rapid-reset and stream-cancellation CVEs).")
	fs.BoolVar(&w.certRotation, "cert-rotation", false,
		"Manage the webhook certificate without cert-manager: generate a CA and serving certificate into --cert-secret, "+
			"rotate them, and inject the CA into the webhook configurations (open-policy-agent/cert-controller).")
	fs.StringVar(&w.certSecret, "cert-secret", "webhook-server-cert",
		"Secret (in --operator-namespace) holding the self-managed webhook certificate; mount it at --webhook-cert-path.")
	fs.StringVar(&w.serviceName, "webhook-service", "tollgate-webhook-service",
		"Service (in --operator-namespace) in front of the webhook server; names the certificate's DNS names.")
	fs.StringVar(&w.mutatingName, "mutating-webhook-configuration", tgwebhook.MutatingConfigurationName,
		"MutatingWebhookConfiguration whose CA bundle --cert-rotation keeps current.")
	fs.StringVar(&w.validatingName, "validating-webhook-configuration", tgwebhook.ValidatingConfigurationName,
		"ValidatingWebhookConfiguration whose CA bundle --cert-rotation keeps current.")
	fs.StringVar(&w.operatorNamespace, "operator-namespace", "",
		"Namespace Tollgate runs in (default $POD_NAMESPACE, else "+tgwebhook.DefaultOperatorNamespace+"). "+
			"The webhook configurations exclude it; label other namespaces "+tgwebhook.LabelWebhook+"="+tgwebhook.WebhookIgnore+" to exclude them.")
	fs.StringVar(&w.deciderURL, "decider-url", "",
		"Decision endpoint URL injected into opted-in pods as TOLLGATE_URL (default http://tollgate-decider.<operator-namespace>.svc:8080).")
	fs.DurationVar(&w.tokenExpiration, "token-expiration", pod.MinTokenExpiration,
		"Lifetime of the projected ServiceAccount token (audience tollgate) injected into opted-in pods; at least 10m, refreshed by the kubelet.")
	fs.StringVar(&w.mcpProxyImage, "mcp-proxy-image", "",
		"Image of the MCP gateway sidecar (the tollgate image) added to pods annotated tollgate.dev/mcp-upstreams; empty refuses such pods.")
}

// namespace is the operator's namespace.
func (w *webhookOptions) namespace() string {
	if w.operatorNamespace != "" {
		return w.operatorNamespace
	}
	if ns := os.Getenv("POD_NAMESPACE"); ns != "" {
		return ns
	}
	return tgwebhook.DefaultOperatorNamespace
}

func (w *webhookOptions) podOptions() pod.Options {
	url := w.deciderURL
	if url == "" {
		url = "http://tollgate-decider." + w.namespace() + ".svc:8080"
	}
	return pod.Options{DeciderURL: url, TokenExpiration: w.tokenExpiration, MCPProxyImage: w.mcpProxyImage}
}

// managerOptions configures the manager's webhook server; call it before ctrl.NewManager.
func (w *webhookOptions) managerOptions(o *ctrl.Options) error {
	if !w.enabled {
		return nil
	}
	if err := w.podOptions().Validate(); err != nil {
		return fmt.Errorf("webhook flags: %w", err)
	}
	if w.certRotation && w.certSecret == "" {
		return errors.New("webhook flags: --cert-rotation needs --cert-secret")
	}
	var tlsOpts []func(*tls.Config)
	if !w.enableHTTP2 {
		tlsOpts = append(tlsOpts, func(c *tls.Config) { c.NextProtos = []string{"http/1.1"} })
	}
	o.WebhookServer = tgwebhook.InstrumentServer(webhook.NewServer(webhook.Options{
		Port:     w.port,
		CertDir:  w.certPath,
		CertName: w.certName,
		KeyName:  w.keyName,
		TLSOpts:  tlsOpts,
	}))
	return nil
}

// setup registers the webhooks on mgr; call it after ctrl.NewManager and before mgr.Start. With
// --cert-rotation the webhooks (and so the webhook server) start only once the rotator has written
// and the kubelet has mounted the certificate; until then the readiness check "webhook-server" fails.
// The manager must not call mgr.GetWebhookServer itself: that would start the server early.
func (w *webhookOptions) setup(ctx context.Context, mgr ctrl.Manager) error {
	if !w.enabled {
		return nil
	}
	opts := tgwebhook.Options{Pod: w.podOptions()}
	if !w.certRotation {
		if err := tgwebhook.Setup(ctx, mgr, opts); err != nil {
			return fmt.Errorf("setting up webhooks: %w", err)
		}
		if err := mgr.AddReadyzCheck("webhook-server", mgr.GetWebhookServer().StartedChecker()); err != nil {
			return fmt.Errorf("adding the webhook readiness check: %w", err)
		}
		return nil
	}

	ns := w.namespace()
	ready := make(chan struct{})
	if err := rotator.AddRotator(mgr, &rotator.CertRotator{
		SecretKey:      types.NamespacedName{Namespace: ns, Name: w.certSecret},
		CertDir:        w.certPath,
		CertName:       w.certName,
		KeyName:        w.keyName,
		CAName:         "tollgate-webhook-ca",
		CAOrganization: "tollgate",
		DNSName:        fmt.Sprintf("%s.%s.svc", w.serviceName, ns),
		ExtraDNSNames:  []string{fmt.Sprintf("%s.%s.svc.cluster.local", w.serviceName, ns)},
		IsReady:        ready,
		Webhooks: []rotator.WebhookInfo{
			{Name: w.mutatingName, Type: rotator.Mutating},
			{Name: w.validatingName, Type: rotator.Validating},
		},
		// Every replica serves webhooks, so every replica needs the certificate mounted.
		RequireLeaderElection: false,
	}); err != nil {
		return fmt.Errorf("adding the webhook certificate rotator: %w", err)
	}
	d := &deferredWebhooks{mgr: mgr, opts: opts, ready: ready}
	if err := mgr.Add(d); err != nil {
		return fmt.Errorf("adding the deferred webhook setup: %w", err)
	}
	if err := mgr.AddReadyzCheck("webhook-server", d.readyz); err != nil {
		return fmt.Errorf("adding the webhook readiness check: %w", err)
	}
	return nil
}

// deferredWebhooks registers the webhooks once the rotator's certificate is in place; it runs on
// every replica, leader or not.
type deferredWebhooks struct {
	mgr        ctrl.Manager
	opts       tgwebhook.Options
	ready      <-chan struct{}
	registered atomic.Bool
}

// NeedLeaderElection is false: every replica serves webhooks.
func (d *deferredWebhooks) NeedLeaderElection() bool { return false }

// Start waits for the certificate, then registers the webhooks (which starts the webhook server).
func (d *deferredWebhooks) Start(ctx context.Context) error {
	select {
	case <-ctx.Done():
		return nil
	case <-d.ready:
	}
	if err := tgwebhook.Setup(ctx, d.mgr, d.opts); err != nil {
		return fmt.Errorf("setting up webhooks after certificate rotation: %w", err)
	}
	d.registered.Store(true)
	return nil
}

func (d *deferredWebhooks) readyz(req *http.Request) error {
	if !d.registered.Load() {
		return errors.New("webhook certificate not ready yet")
	}
	return d.mgr.GetWebhookServer().StartedChecker()(req)
}
